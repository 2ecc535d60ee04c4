"""utils/components/token_bucket.py and the token-bucket chapter: capacity and rate, the lazy refill, the clock,
retry-after and the lock, each held with a fake clock (and threads for the lock)."""
import threading

import pytest

from utils import chains
from utils.chains import token_bucket as chapter
from utils.components.token_bucket import FakeClock, TokenBucket, UnguardedBucket, drive, max_admitted, retry_after_header


def bucket(capacity=5, rate=10.0, **kw):
    c = FakeClock()
    return TokenBucket(capacity, rate, clock=c, **kw), c


def test_capacity_is_the_burst_and_rate_the_sustained_throughput():
    b, c = bucket(capacity=50, rate=10.0)
    assert sum(b.try_acquire().admitted for _ in range(60)) == 50         # the burst: exactly capacity
    times = [i / 20 for i in range(1, 201)]                                # then 20/s offered for 10 s
    assert sum(d.admitted for d in drive(b, c, times)) == 100             # rate * T
    assert max_admitted(50, 10.0, 10.0) == 150


def test_conflating_capacity_and_rate_refuses_the_burst_or_admits_one():
    # the policy allows a burst of 50 at 10/s; a bucket built with capacity = rate refuses 40 of it
    b, _ = bucket(capacity=10, rate=10.0)
    assert sum(b.try_acquire().admitted for _ in range(50)) == 10
    # the policy is "never more than 10 in a second": capacity = rate lets nearly twice that through
    strict, c1 = bucket(capacity=1, rate=10.0)
    loose, c2 = bucket(capacity=10, rate=10.0)
    times = [i / 40 for i in range(40)]                                     # 40 requests inside one second
    assert sum(d.admitted for d in drive(strict, c1, times)) == 10
    assert sum(d.admitted for d in drive(loose, c2, times)) > 15


def test_lazy_refill_fills_to_capacity_and_no_further():
    b, c = bucket(capacity=5, rate=10.0, tokens=0.0)
    c.advance(0.25)
    assert b.tokens() == pytest.approx(2.5)
    c.advance(1e6)
    assert b.tokens() == 5


def test_ten_tenths_of_a_token_admit_one_request():
    b, c = bucket(capacity=5, rate=1.0, tokens=0.0)
    for _ in range(9):
        c.advance(0.1)
        assert not b.try_acquire().admitted                               # 0.1 token earned each time
    c.advance(0.1)
    assert c.t < 1.0 and b.try_acquire().admitted                         # 0.1 summed ten times is 0.999...


@pytest.mark.parametrize("cost", [1.0, 2.5, 5.0])
def test_retry_after_is_the_deficit_over_the_rate(cost):
    b, c = bucket(capacity=5, rate=10.0, tokens=0.5)
    d = b.try_acquire(cost)
    assert not d.admitted and d.retry_after == pytest.approx((cost - 0.5) / 10.0)
    c.advance(d.retry_after - 1e-3)
    assert not b.try_acquire(cost).admitted                               # early: refused
    c.advance(1e-3)
    assert b.try_acquire(cost).admitted                                   # exactly then: admitted


def test_retry_after_header_rounds_up():
    assert [retry_after_header(s) for s in (0.0, 0.1, 1.0, 1.0000001, 2.5)] == ["0", "1", "1", "2", "3"]
    with pytest.raises(ValueError, match="seconds"):
        retry_after_header(-1)


def test_a_forward_wall_clock_step_refills_the_bucket():
    b, c = bucket(capacity=5, rate=1.0)
    assert sum(b.try_acquire().admitted for _ in range(5)) == 5
    c.step(3600)                                                          # NTP steps the wall clock
    assert sum(b.try_acquire().admitted for _ in range(10)) == 5          # a burst nobody earned


def test_a_backward_step_is_a_debt_only_to_an_unguarded_refill():
    for cls, refused_for in ((TokenBucket, 0.0), (UnguardedBucket, 3500.0)):
        c = FakeClock(100.0)
        b = cls(5, 1.0, clock=c)
        c.step(-3600)
        d = b.try_acquire()
        if refused_for:
            assert not d.admitted and d.retry_after > refused_for
        else:
            assert d.admitted


def test_monotonic_is_the_default_clock():
    import time
    assert TokenBucket(1, 1.0).clock is time.monotonic


def test_the_clock_is_read_under_the_lock():
    seen = []
    holder = {}

    def clock():
        seen.append(holder["b"]._lock.locked() if "b" in holder else None)
        return 0.0

    holder["b"] = b = TokenBucket(3, 1.0, clock=clock)
    b.try_acquire()
    b.tokens()
    assert seen[1:] == [True, True]


def test_threads_admit_exactly_the_capacity():
    b = TokenBucket(100, 1.0, clock=FakeClock())
    admitted, start = [], threading.Barrier(8)

    def worker():
        start.wait(timeout=5)
        admitted.append(sum(b.try_acquire().admitted for _ in range(200)))

    ts = [threading.Thread(target=worker) for _ in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=5)
    assert not any(t.is_alive() for t in ts) and sum(admitted) == 100


def test_threads_with_a_moving_clock_never_exceed_capacity_plus_refill():
    lock, now = threading.Lock(), [0.0]

    def clock():
        with lock:
            now[0] += 1e-4                                                # every reading moves time on
            return now[0]

    b = TokenBucket(20, 50.0, clock=clock)
    admitted = []
    ts = [threading.Thread(target=lambda: admitted.append(sum(b.try_acquire().admitted for _ in range(500))))
          for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=5)
    assert sum(admitted) <= max_admitted(20, 50.0, now[0]) + 1e-9


@pytest.mark.parametrize("kw,msg", [(dict(capacity=0), "capacity"), (dict(rate=-1.0), "rate"),
                                    (dict(rate=float("inf")), "rate"), (dict(tokens=9.0), "tokens")])
def test_bad_arguments_raise_naming_the_argument(kw, msg):
    args = dict(capacity=5, rate=1.0, clock=FakeClock()) | kw
    with pytest.raises(ValueError, match=msg):
        TokenBucket(**args)


def test_a_request_larger_than_the_capacity_is_refused_outright():
    b, _ = bucket(capacity=5)
    with pytest.raises(ValueError, match="never be admitted"):
        b.try_acquire(6)


# --- the chapter's chain (utils/chains/token_bucket.py) --------------------------------------------

def test_chapter_claim_holds_with_each_part_reproduced_and_usual_is_judged_apart():
    from utils.chains import token_bucket as chapter
    c, usual = chapter.claims()
    assert c.verdict == "holds" and "usual" not in c.claimed
    # how often the conflation is the bug: the source counts nothing, so its own claim, never judged by the runs
    assert usual.verdict == "cannot be checked" and usual.quote in chapter.QUOTE and "usual" in usual.quote
    ck = chapter.checks()
    assert ck["mono"] == ck["bound"] == 150 and ck["conflated"] == 110
    assert ck["forward"] > ck["bound"] and ck["backward_unguarded"] < ck["mono"] and ck["concurrent"] == 50
    assert ck["unguarded_ra"] == pytest.approx(3600, rel=1e-3)


def test_chapter_results():
    from utils import chains
    r = chains.derive("token-bucket")
    assert r["admitted"].m == r["max_in_window"].m == 150
    assert r["burst_refused_conflated"].m == 40 and r["retry_after"].m == pytest.approx(0.1)


@pytest.mark.parametrize("name, value", [("rate", 0.0), ("burst", 2.5), ("window", -1.0), ("step_at", 20.0),
                                         ("offered_rate", float("nan")), ("clock_step", 0.0)])
def test_chapter_bad_input_is_refused_with_its_name(name, value):
    from utils import chains
    from utils.params import ParameterError
    with pytest.raises(ParameterError, match=name):
        chains.derive("token-bucket", **{name: value})


@pytest.mark.parametrize("burst", [10, 50, 200])
def test_chapter_property_admitted_is_burst_plus_rate_times_window(burst):
    from utils import chains
    r = chains.derive("token-bucket", burst=burst, window=5.0, step_at=1.0)
    assert r["admitted"].m == r["max_in_window"].m == burst + 50


@pytest.mark.parametrize("changes", [dict(rate=0.01), dict(offered_rate=2e-5), dict(rate=1e12)])
def test_a_slow_limit_a_sparse_client_and_a_huge_rate_are_answered(changes):
    from utils import chains
    r = chains.derive("token-bucket", **changes)
    assert all(v.m >= 0 for v in r.values())
    assert r["refusal_backward_step"].m > 3500                # the hour's debt, heard even with no request after it


def test_a_run_past_its_size_is_refused_naming_the_inputs():
    from utils import chains
    from utils.params import ParameterError
    with pytest.raises(ParameterError, match="burst"):
        chains.derive("token-bucket", burst=10**6)


def test_the_bucket_keeps_its_contract_in_every_scenario():
    from utils.chains import token_bucket as chapter
    ck = chapter.contract_checks()
    assert ck["scenarios"] == 3 + len(chapter.HOSTILE_SIZES) + len(chapter.HOSTILE_READINGS)
    assert ck["held"] == ck["scenarios"] and ck["over"] == 0
    assert ck["windows"] == chapter.N_REQUESTS * (chapter.N_REQUESTS + 1) // 2
    # the window check can fail: a bucket twice as deep as the bound it is held to overshoots it
    deep = lambda capacity, rate, clock: TokenBucket(2 * capacity, rate, clock=clock)   # noqa: E731
    assert chapter.windows_over(bucket=deep)[1] > 0


def test_counts_from_the_run_are_derived_and_sources_follow_the_defaults():
    rows = {r.name: r for r in chapter.compute(chains.check("token-bucket")).rows}
    assert {rows[n].kind for n in ("A_run", "A_fwd", "t_debt")} == {"derived"}
    rate = next(p for p in chapter.PARAMETERS if p.name == "rate")
    assert rows["r"].source == rate.source
    changed = {r.name: r for r in chapter.compute(chains.check("token-bucket", rate=12.0)).rows}
    assert changed["r"].source == "parameters cell" and changed["C"].source == rows["C"].source
