"""utils.serving.token_limits and utils.serving.resp on a real redis-server and Redis's own clock (TIME): a
reservation outlives the bucket's idle time (2 s here), no two (tenant, model) pairs share a key, hostile
names and counts are refused with nothing written, four gateway processes on one server (one killed
mid-admission, SIGKILL) never admit more than the burst plus the refill, and a connection that timed out
mid-reply is never read again (its late reply would answer the next command)."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests import redis_fixture
from utils.serving.resp import Resp
from utils.serving.token_limits import Limits, RedisTokenLimiter

redis_server = redis_fixture.redis_server
# The token bucket fills in 1 s, so an untouched pair's state expires 2 s after its last use.
QUICK = Limits(requests_per_s=100.0, request_burst=100, tokens_per_s=1000.0, token_burst=1000, idle_margin_s=1.0)


@pytest.fixture
def conn(redis_server):
    with Resp(*redis_server) as r:
        r.call("FLUSHALL")
        yield r


def test_a_reply_that_streams_past_the_idle_time_still_gets_its_refund(conn):
    lim = RedisTokenLimiter(conn, QUICK)                      # Redis's clock: no clock passed
    assert QUICK.idle_ms() == 2000
    a = lim.admit("acme", "m", "long-reply", prompt_tokens=100, max_tokens=800)
    assert a.admitted and a.tokens_left == pytest.approx(100, abs=5)
    time.sleep(2.4)                                           # the reply streams past the idle time
    assert conn.call("EXISTS", lim._keys("acme", "m", "x")[0]) == 0      # the idle bucket expired
    s = lim.settle("acme", "m", "long-reply", output_tokens=50)
    assert s.settled and s.refunded == 750 and s.tokens_left == pytest.approx(1000)
    assert not lim.settle("acme", "m", "long-reply", output_tokens=50).settled    # once


def test_no_two_tenant_model_pairs_share_a_key(conn):
    lim = RedisTokenLimiter(conn, QUICK)
    pairs = [("a:b", "c"), ("a", "b:c"), ("a}", "{b"), ("a", "}{b"), ("a%3Ab", "c")]
    assert len({lim._keys(t, m, "r")[0] for t, m in pairs}) == len(pairs)
    assert lim.admit("a:b", "c", "r1", 900, 0).admitted
    assert lim.admit("a", "b:c", "r1", 900, 0).admitted              # its own full bucket
    base, res = lim._keys("a}", "{b", "r1")
    assert base[base.index("{") + 1:base.index("}")] == res[res.index("{") + 1:res.index("}")]  # one slot


@pytest.mark.parametrize("tenant, model, rid, prompt, mx", [
    (None, "m", "r", 1, 1), ("", "m", "r", 1, 1), ("\ud800", "m", "r", 1, 1), ("a", 7, "r", 1, 1),
    ("a", "m", None, 1, 1), ("a", "m", "\udc00", 1, 1), ("a", "m", "r" * 1000, 1, 1),
    ("a", "m", "r", float("nan"), 1), ("a", "m", "r", 1, float("inf")), ("a", "m", "r", -1, 1),
    ("a", "m", "r", True, 1), ("a", "m", "r", None, 1)])
def test_hostile_admissions_are_refused_and_nothing_is_written(conn, tenant, model, rid, prompt, mx):
    lim = RedisTokenLimiter(conn, QUICK)
    with pytest.raises(ValueError):
        lim.admit(tenant, model, rid, prompt, mx)
    with pytest.raises(ValueError):
        lim.settle(tenant, model, rid, mx if type(prompt) is int and prompt >= 0 else prompt)
    assert conn.call("DBSIZE") == 0


GATEWAY = r"""
import sys
from utils.serving.resp import Resp
from utils.serving.token_limits import Limits, RedisTokenLimiter
host, port, me, n = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
L = Limits(requests_per_s=10000.0, request_burst=10000, tokens_per_s=100.0, token_burst=1000, idle_margin_s=1.0)
with Resp(host, port) as r:
    lim = RedisTokenLimiter(r, L)
    for i in range(n):
        a = lim.admit("acme", "m", f"{me}-{i}", prompt_tokens=5, max_tokens=5)
        print(int(a.admitted), flush=True)
"""


def test_four_gateway_processes_one_killed_never_admit_more_than_burst_plus_refill(conn, redis_server):
    host, port = redis_server
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    t0 = time.monotonic()
    procs = [subprocess.Popen([sys.executable, "-c", GATEWAY, host, str(port), f"g{k}", "100000" if k == 0 else "150"],
                              stdout=subprocess.PIPE, text=True, env=env) for k in range(4)]
    victim = procs[0]
    admitted = sum(int(victim.stdout.readline()) for _ in range(100))
    os.kill(victim.pid, signal.SIGKILL)
    victim.wait(10)
    admitted += sum(int(x) for x in victim.stdout.read().split())
    for p in procs[1:]:
        out, _ = p.communicate(timeout=30)
        assert p.returncode == 0
        admitted += sum(int(x) for x in out.split())
    elapsed = time.monotonic() - t0
    assert admitted <= (1000 + 100.0 * elapsed) / 10 + 1         # 10 tokens a request
    assert admitted >= 1000 / 10                                  # the burst itself was admitted
    level = float(conn.call("HGET", "tl:{acme:m}", "tok"))
    assert 0 <= level <= 1000


def test_a_connection_that_timed_out_mid_reply_is_never_read_again(redis_server):
    r = Resp(*redis_server, timeout=0.2)
    with pytest.raises(OSError):                             # socket.timeout: BLPOP answers after 1 s
        r.call("BLPOP", "no-such-list", 1)
    time.sleep(1.2)                                          # its late reply is in the socket now
    try:
        answer = r.call("PING")
    except ConnectionError:
        answer = "refused"
    assert answer in (b"PONG", "refused")                    # never the late nil of BLPOP
    r.close()


def test_hostile_arguments_are_refused_before_anything_is_sent(conn):
    for bad in (float("nan"), "\ud800", None, True, [1]):
        with pytest.raises((TypeError, ValueError)):
            conn.call("SET", "k", bad)
    assert conn.call("PING") == b"PONG" and conn.call("DBSIZE") == 0
    assert json.loads(json.dumps(conn.call("ECHO", "x").decode())) == "x"
