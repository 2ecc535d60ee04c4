"""utils.serving.token_limits and utils.serving.resp: the two-bucket limiter's rules on a fake clock, and the Redis
scripts against the reference on a real redis-server (tests/redis_fixture.py), decision for decision."""
import math
import threading
import time

import pytest

from tests import redis_fixture
from utils.serving.resp import Resp, RespError, encode
from utils.serving.token_limits import FakeClock, Limits, RedisTokenLimiter, TwoBucketLimiter, replay, request_sequence

redis_server = redis_fixture.redis_server       # the fixture: a real redis-server on loopback
L = Limits(requests_per_s=2.0, request_burst=5, tokens_per_s=1000.0, token_burst=10_000)


def ref(limits=L):
    c = FakeClock()
    return TwoBucketLimiter(limits, clock=c), c


# --- the reference -------------------------------------------------------------------------------
def test_both_buckets_or_neither():
    lim, c = ref()
    big = lim.admit("a", "m", "1", 9000, 900)                  # 9,900 of 10,000 tokens
    assert big.admitted and big.tokens_left == pytest.approx(100)
    short = lim.admit("a", "m", "2", 500, 0)                   # the token bucket is short: refused...
    assert not short.admitted and short.requests_left == pytest.approx(4)   # ...and no request taken
    assert short.retry_after == pytest.approx((500 - 100) / 1000)
    lim2, _ = ref()
    for i in range(5):
        assert lim2.admit("a", "m", f"s{i}", 10, 10).admitted
    r = lim2.admit("a", "m", "s5", 10, 10)                     # the request bucket is empty: refused...
    assert not r.admitted and r.tokens_left == pytest.approx(10_000 - 100)  # ...and no tokens taken
    assert r.retry_after == pytest.approx(1 / 2.0)


def test_waiting_the_retry_after_is_admitted_and_a_millisecond_less_is_not():
    for early, expect in ((0.0, True), (1e-3, False)):
        lim, c = ref()
        lim.admit("a", "m", "1", 9000, 1000)
        r = lim.admit("a", "m", "2", 3000, 0)
        c.advance(r.retry_after - early)
        assert lim.admit("a", "m", "2", 3000, 0).admitted is expect


def test_settle_refunds_the_unused_reservation_once():
    lim, c = ref()
    a = lim.admit("a", "m", "1", 1000, 4000)
    assert a.reserved == 5000 and a.tokens_left == pytest.approx(5000)
    s = lim.settle("a", "m", "1", 300)
    assert s.settled and s.refunded == 3700 and s.tokens_left == pytest.approx(8700)
    again = lim.settle("a", "m", "1", 300)                    # a retried settle refunds nothing
    assert not again.settled and again.tokens_left == pytest.approx(8700)
    assert not lim.settle("a", "m", "never", 0).settled


def test_refund_is_capped_at_capacity_and_an_overrun_is_charged():
    lim, c = ref()
    lim.admit("a", "m", "1", 0, 4000)
    c.advance(100.0)                                          # the bucket refilled meanwhile
    assert lim.settle("a", "m", "1", 0).tokens_left == pytest.approx(10_000)
    lim.admit("a", "m", "2", 0, 1000)
    s = lim.settle("a", "m", "2", 1500)                       # a reply past max_tokens pays the excess
    assert s.refunded == -500 and s.tokens_left == pytest.approx(10_000 - 1500)


def test_a_retried_admission_is_charged_once_and_too_large_is_never_admissible():
    lim, c = ref()
    assert lim.admit("a", "m", "1", 1000, 1000).reserved == 2000
    dup = lim.admit("a", "m", "1", 1000, 1000)
    assert dup.admitted and dup.reserved == 0 and dup.tokens_left == pytest.approx(8000)
    huge = lim.admit("a", "m", "2", 20_000, 0)
    assert not huge.admitted and math.isinf(huge.retry_after)


def test_pairs_are_independent_per_tenant_and_per_model():
    lim, c = ref()
    lim.admit("a", "m", "1", 9000, 1000)
    assert lim.admit("b", "m", "1", 9000, 1000).admitted
    assert lim.admit("a", "other", "1", 9000, 1000).admitted
    assert not lim.admit("a", "m", "2", 9000, 1000).admitted


def test_without_settle_a_tenant_is_held_to_its_reservations():
    seq = request_sequence(300, 3)
    counts = {}
    for settle in (True, False):
        lim, c = ref(Limits(2.0, 5, 3000.0, 60_000))
        out = replay(lim, c, seq, settle=settle)
        counts[settle] = sum(1 for kind, _, d in out if kind == "admit" and d.admitted)
    assert counts[True] > counts[False]


@pytest.mark.parametrize("bad", [dict(requests_per_s=0), dict(token_burst=-1), dict(request_burst=0.5),
                                 dict(tokens_per_s=float("nan")), dict(requests_per_s=True)])
def test_bad_limits_are_refused_naming_the_argument(bad):
    args = dict(requests_per_s=1.0, request_burst=1, tokens_per_s=1.0, token_burst=1.0) | bad
    with pytest.raises(ValueError, match=next(iter(bad))):
        Limits(**args)
    lim, _ = ref()
    with pytest.raises(ValueError, match="max_tokens"):
        lim.admit("a", "m", "1", 10, -1)


# --- the RESP client -----------------------------------------------------------------------------
def test_resp_encoding():
    assert encode("SET", "k", 1, 0.1) == b"*4\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\n1\r\n$3\r\n0.1\r\n"
    with pytest.raises(TypeError):
        encode(True)


def test_resp_replies(redis_server):
    with Resp(*redis_server) as r:
        assert r.call("SET", "k", "v") == b"OK"
        assert r.call("GET", "k") == b"v" and r.call("GET", "nope") is None
        assert r.call("INCR", "n") == 1 and r.call("LRANGE", "nolist", 0, -1) == []
        with pytest.raises(RespError) as e:
            r.call("INCR", "k")                              # not an integer: an error reply
        assert e.value.code == "ERR"
        got = r.pipeline([("INCR", "n"), ("INCR", "k"), ("INCR", "n")])
        assert got[0] == 2 and isinstance(got[1], RespError) and got[2] == 3   # nothing raised halfway
        assert r.call("PING") == b"PONG"                     # the connection is still in step


# --- the Redis scripts against the reference ------------------------------------------------------
@pytest.mark.parametrize("seed", [0, 1])
def test_redis_scripts_match_the_reference_decision_for_decision(redis_server, seed):
    limits = Limits(2.0, 5, 3000.0, 60_000)
    seq = request_sequence(400, seed, tenants=(f"a{seed}", f"b{seed}"))
    c1, c2 = FakeClock(), FakeClock()
    with Resp(*redis_server) as r:
        want = replay(TwoBucketLimiter(limits, clock=c1), c1, seq)
        got = replay(RedisTokenLimiter(r, limits, clock=c2), c2, seq)
    assert got == want                                      # same decisions, same levels, to the last bit
    kinds = {(k, d[0]) for k, _, d in want}
    assert kinds == {("admit", True), ("admit", False), ("settle", True)}   # the sequence exercises them all


def test_redis_is_atomic_across_gateways(redis_server):
    """Eight gateways (threads, a connection each) race on a frozen clock: exactly the burst is admitted."""
    limits = Limits(1.0, 40, 1e6, 1e6)
    clock = FakeClock(0.0)
    got, start = [], threading.Barrier(8)

    def gateway(g):
        with Resp(*redis_server) as r:
            lim = RedisTokenLimiter(r, limits, clock=clock)
            start.wait(timeout=5)
            got.extend(lim.admit("race", "m", f"{g}-{i}", 1, 1).admitted for i in range(20))

    ts = [threading.Thread(target=gateway, args=(g,)) for g in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=10)
    assert len(got) == 160 and sum(got) == 40


def test_script_cache_flush_falls_back_to_eval_and_server_time_refills(redis_server):
    with Resp(*redis_server) as r:
        lim = RedisTokenLimiter(r, Limits(1000.0, 1, 1e6, 1e6))     # clock=None: Redis's own TIME
        assert lim.admit("t", "m", "1", 1, 1).admitted
        r.call("SCRIPT", "FLUSH")
        time.sleep(0.01)                                         # ten requests' worth at 1,000 per second
        assert lim.admit("t", "m", "2", 1, 1).admitted           # NOSCRIPT, then EVAL: still works
        assert r.call("PTTL", "tl:{t:m}") > 0                    # an idle pair's state expires
        assert r.call("EXISTS", "tl:{t:m}:r:2") == 1             # the reservation, in the same hash slot


def test_redis_scripts_per_second(redis_server, capsys):
    """A CPU timing on this machine (never in a notebook): admissions per second, one connection, each
    waiting for its reply, and pipelined (the server's own rate, without the client's round trip)."""
    n = 4000
    with Resp(*redis_server) as r:
        lim = RedisTokenLimiter(r, Limits(1e6, 1e6, 1e9, 1e9))
        t0 = time.perf_counter()
        for i in range(n):
            lim.admit("bench", "m", f"s{i}", 10, 10)
        sequential = n / (time.perf_counter() - t0)
        sha = lim._sha["admit"]
        cmds = [("EVALSHA", sha, 2, "tl:{bench:m}", f"tl:{{bench:m}}:r:p{i}", *lim._args(20.0, 10.0, lim.limits.reservation_ms()))
                for i in range(n)]
        t0 = time.perf_counter()
        for k in range(0, n, 500):
            out = r.pipeline(cmds[k:k + 500])
        pipelined = n / (time.perf_counter() - t0)
    assert not any(isinstance(x, RespError) for x in out)
    with capsys.disabled():
        print(f"\n[CPU timing] Redis admit script: {sequential:,.0f}/s one connection, "
              f"{pipelined:,.0f}/s pipelined")
    assert sequential > 500 and pipelined > sequential
