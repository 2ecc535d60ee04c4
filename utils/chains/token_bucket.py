"""token-bucket: capacity against rate, the monotonic clock, and retry-after, by running the bucket.

A bucket of capacity C (tokens: the largest burst) refilled at r tokens per second admits at most
C + r T requests in any window of T seconds. The scenario: a client idle long enough to fill the bucket
sends a burst, then keeps asking at an offered rate above r for the rest of the window. Every count
below comes from utils.components.token_bucket run on a fake clock, beside the arithmetic that predicts it.
"""
from __future__ import annotations

import math
import threading
from bisect import bisect_left

from utils.chain import Chain, as_float, memoised
from utils.components.token_bucket import FakeClock, TokenBucket, UnguardedBucket, drive, max_admitted, retry_after_header
from utils.params import Param, ParameterError, Result, Spec
from utils.units import fmt, num, q
from utils.verdicts import HOLDS, UNCHECKABLE, Claim

PARAMETERS = (
    Param("rate", 10.0, "r: the sustained limit, requests per second", unit="request/s",
          source="this book's assumption: a per-key limit of an inference API"),
    Param("burst", 50, "C: the burst the policy allows an idle client (the bucket's capacity)", unit="request",
          check="whole", source="this book's assumption"),
    Param("offered_rate", 20.0, "the rate the client keeps asking at after its burst", unit="request/s",
          source="this book's assumption: twice the limit"),
    Param("window", 10.0, "T: the window the admitted requests are counted over", unit="s",
          source="this book's choice"),
    Param("clock_step", 3600.0, "the size of the wall clock's step (an NTP or operator correction)", unit="s",
          source="this book's assumption: a one-hour correction"),
    Param("step_at", 5.0, "when, inside the window, the wall clock steps", unit="s", check="non_negative",
          source="this book's choice"),
)

RESULTS = (
    Result("max_in_window", "request", "Most admitted in the window, C + rT", of="A_max"),
    Result("admitted", "request", "Admitted in the window (the bucket, monotonic clock)", of="A_run"),
    Result("burst_refused_conflated", "request", "Burst refused by a bucket built with capacity = rate", of="R_conf"),
    Result("over_admitted_forward_step", "request", "Admitted beyond C + rT after a forward wall-clock step",
           of="A_over"),
    Result("refusal_backward_step", "s", "Refusal an unguarded bucket quotes after the backward step", of="t_debt"),
    Result("retry_after", "s", "Retry-after quoted at an empty bucket", of="t_ra"),
)


RUN_MAX = 30_000     # requests one scenario runs through the bucket, at most (validate says why)


def validate(p):
    if p.step_at >= p.window:
        raise ParameterError(f"step_at must be inside the window (< {p.window:g} s), got {p.step_at!r}")
    if p.burst + p.offered_rate * p.window > RUN_MAX:
        raise ParameterError(f"burst + offered_rate x window must be at most {RUN_MAX:,} requests (each is run through "
                             f"the bucket under four clocks, past a second beyond that), got "
                             f"{p.burst + p.offered_rate * p.window:g}")


# --- running the bucket ---------------------------------------------------------------------------
def arrivals(burst: int, offered_rate: float, window: float) -> list[float]:
    """A burst at t = 0, then one request every 1/offered_rate seconds up to the end of the window."""
    steady = [i / offered_rate for i in range(1, int(math.floor(offered_rate * window + 1e-9)) + 1)]
    return [0.0] * int(burst) + steady


def run(capacity, rate, times, *, readings=None, bucket=TokenBucket) -> dict:
    """Offer a request at each time; the clock shows `readings` (default: the times themselves)."""
    clock = FakeClock(0.0)
    b = bucket(capacity, rate, clock=clock)
    shown = times if readings is None else readings
    d = drive(b, clock, shown)
    admitted = [x.admitted for x in d]
    return dict(admitted=admitted, n=sum(admitted), decisions=d, times=list(times),
                longest_refusal=max((x.retry_after for x in d), default=0.0))


def wall_readings(times, step: float, at: float) -> list[float]:
    """What a wall clock shows at each (monotonic) time when it steps by `step` seconds at `at`."""
    return [float(t) + step if t >= at else float(t) for t in times]


def scenarios(rate, burst, offered_rate, window, clock_step, step_at) -> dict:
    """The bucket on one arrival pattern under each clock, and a bucket built with capacity = rate."""
    t = arrivals(burst, offered_rate, window)
    conflated_capacity = max(1.0, float(rate))                # "capacity = rate": one second's worth
    fwd, back = wall_readings(t, clock_step, step_at), wall_readings(t, -clock_step, step_at)
    out = dict(times=t, bound=max_admitted(burst, rate, window),
               monotonic=run(burst, rate, t),
               conflated=run(conflated_capacity, rate, t),
               forward=run(burst, rate, t, readings=fwd),
               backward=run(burst, rate, t, readings=back),
               backward_unguarded=run(burst, rate, t, readings=back, bucket=UnguardedBucket),
               conflated_capacity=conflated_capacity)
    first_after = bisect_left(t, step_at)
    if first_after < len(t):
        out["debt_retry_after"] = out["backward_unguarded"]["decisions"][first_after].retry_after
    else:                       # no request comes after the step: ask once, at the step, what a request would hear
        probe = run(burst, rate, [*t, step_at], readings=[*back, step_at - clock_step], bucket=UnguardedBucket)
        out["debt_retry_after"] = probe["decisions"][-1].retry_after
    return out


def strict_runs(rate, conflated_capacity) -> dict:
    """A strict policy ("never more than r in any second", capacity 1) against capacity = rate, on four times the
    limit for one second (the claim's check; its length grows with the rate, so the chain does not run it)."""
    one_second = [i / (4 * rate) for i in range(int(rate) * 4)]
    return dict(strict=run(1.0, rate, one_second + [1.0] * int(rate)),
                strict_conflated=run(conflated_capacity, rate, one_second + [1.0] * int(rate)))


def retry_after_check(rate: float, cost: float = 1.0) -> dict:
    """Empty the bucket, get refused, wait exactly retry_after (admitted) or a millisecond less (refused)."""
    res = {}
    for label, early in (("exact", 0.0), ("early", 1e-3)):
        clock = FakeClock(0.0)
        b = TokenBucket(max(cost, 1.0), rate, clock=clock, tokens=0.0)
        first = b.try_acquire(cost)
        clock.advance(max(first.retry_after - early, 0.0))
        res[label] = b.try_acquire(cost).admitted
        res["retry_after"] = first.retry_after
    res["header"] = retry_after_header(res["retry_after"])
    return res


def concurrent_admitted(capacity: int, threads: int = 8, calls: int = 50) -> int:
    """Threads racing on a frozen clock: the lock must admit exactly the capacity, never more."""
    b = TokenBucket(capacity, 1.0, clock=FakeClock(0.0))
    got, start = [], threading.Barrier(threads)

    def worker():
        start.wait(timeout=5)
        got.extend(d.admitted for d in (b.try_acquire() for _ in range(calls)))

    ts = [threading.Thread(target=worker) for _ in range(threads)]
    for th in ts:
        th.start()
    for th in ts:
        th.join(timeout=5)
    return sum(got)


def bucket_chain(rate, burst, offered_rate, window, clock_step, step_at, *, sources=None) -> Chain:
    """The arithmetic beside the bucket run on a fake clock; the runs ride along in ch.data["scenarios"].
    `sources` maps a parameter to its source (a string: every input's)."""
    def source(name: str) -> str:
        return sources if isinstance(sources, str) else (sources or {}).get(name, "parameters cell")
    s = scenarios(rate, burst, offered_rate, window, clock_step, step_at)
    ran = "counted: utils.components.token_bucket, run on a fake clock"
    ch = Chain("A token bucket: the limit, the conflation, the clock and the retry-after")
    ch.given("C", q(burst, "request"), "capacity: the burst the policy allows", kind="assumption",
             source=source("burst"))
    ch.given("r", q(rate, "request/s"), "rate: the sustained limit", kind="assumption", source=source("rate"))
    ch.given("T", q(window, "s"), "window", kind="assumption", source=source("window"))
    ch.step("A_max", "C + r*T", "request", "most a full bucket admits in the window")
    ch.given("A_run", q(s["monotonic"]["n"], "request"), "admitted by the bucket (monotonic clock)",
             kind="derived", source=ran)
    ch.given("C_conf", q(s["conflated_capacity"], "request"), "capacity of a bucket built with capacity = rate",
             kind="assumption", source="the usual bug")
    ch.step("R_conf", "Max(C - C_conf, 0)", "request", "the policy's burst that bucket refuses")
    ch.given("S", q(clock_step, "s"), "the wall clock's step", kind="assumption", source=source("clock_step"))
    ch.given("A_fwd", q(s["forward"]["n"], "request"), "admitted, wall clock stepped forward",
             kind="derived", source=ran)
    ch.step("A_over", "Max(A_fwd - A_max, 0)", "request", "admitted beyond the limit: a refill nobody earned")
    ch.given("n", q(1, "request"), "one request's cost", kind="assumption", source="one token a request")
    ch.step("t_pred", "S + n/r", "s", "an unguarded refill's debt r S, repaid at r, then one token")
    ch.given("t_debt", q(s["debt_retry_after"], "s"), "retry-after the unguarded bucket quotes just after the step",
             kind="derived", source="counted: utils.components.token_bucket.UnguardedBucket, run on a fake clock",
             digits=5)
    ch.step("t_ra", "n/r", "s", "retry-after at an empty bucket: the deficit over the rate")
    ch.data["scenarios"] = s
    return ch


def compute(p) -> Chain:
    return bucket_chain(p.rate, p.burst, p.offered_rate, p.window, p.clock_step, p.step_at,
                        sources={prm.name: SPEC.source(p, prm.name) for prm in PARAMETERS})


# --- the claim ------------------------------------------------------------------------------------
CLAIM = dict(rate=10.0, burst=50, offered_rate=20.0, window=10.0, clock_step=3600.0, step_at=5.0)
QUOTE = ("Two parameters, one lazy refill and one lock. What capacity and rate each control and why "
         "conflating them is the usual bug, the clock choice that avoids a whole class of failure, and the "
         "retry-after value that turns a rejection into something a client can act on.")
USUAL_QUOTE = "why conflating them is the usual bug"      # how often: judged on its own


@memoised                         # the runs are deterministic: the page and the claim share one
def checks() -> dict:
    C = CLAIM
    res = bucket_chain(**C, sources="this book's scenario")
    s = res.data["scenarios"]
    ra = retry_after_check(C["rate"])
    ra_cost = retry_after_check(C["rate"], cost=5.0)
    unguarded_ra = s["debt_retry_after"]
    strict = strict_runs(C["rate"], s["conflated_capacity"])
    return dict(res=res, s=s, ra=ra, ra_cost=ra_cost, concurrent=concurrent_admitted(C["burst"]),
                unguarded_ra=unguarded_ra,
                bound=s["bound"], mono=s["monotonic"]["n"], conflated=s["conflated"]["n"],
                forward=s["forward"]["n"], backward=s["backward"]["n"],
                backward_unguarded=s["backward_unguarded"]["n"],
                strict_max=_max_in_any_second(strict["strict"]),
                strict_conf_max=_max_in_any_second(strict["strict_conflated"]))


def _max_in_any_second(r: dict) -> int:
    t = [x for x, a in zip(r["times"], r["admitted"]) if a]
    return max(bisect_left(t, x + 1.0) - i for i, x in enumerate(t))


def claims() -> list[Claim]:
    ck = checks()
    C = CLAIM
    conflation = ck["conflated"] < ck["bound"] and ck["strict_conf_max"] > C["rate"] >= ck["strict_max"]
    clock = ck["mono"] <= ck["bound"] < ck["forward"] and ck["backward_unguarded"] < ck["mono"]
    retry = ck["ra"]["exact"] and not ck["ra"]["early"] and ck["concurrent"] == C["burst"]
    ok = conflation and clock and retry
    rt = f"{num(C['rate'])} requests per second"
    return [Claim(
        "capacity-rate-clock", quote=QUOTE, source="spec/001 (the token-bucket paragraph)",
        claimed="capacity and rate control different things and conflating them is a bug; a monotonic clock "
                "avoids a class of failure; retry-after is actionable",
        derived=f"a limit of {rt} with a burst of {num(C['burst'])}: capacity = rate admits {ck['conflated']:,} of "
                f"{fmt(ck['bound'])}; a forward wall-clock step admits {ck['forward']:,}; waiting the retry-after "
                f"of {fmt(ck['ra']['retry_after'])} s is admitted",
        # Each part run on the book's scenario (the source names none): a part that failed to show would be the
        # scenario's limit, not the claim's, so that branch leaves the claim unchecked rather than refuted.
        verdict=HOLDS if ok else UNCHECKABLE,
        reason=f"built with capacity = rate the bucket admits {ck['conflated']:,} of the {fmt(ck['bound'])} the policy "
               f"allows, and under a one-second limit lets {ck['strict_conf_max']:,} through in one second; a wall clock "
               f"stepped forward admits {ck['forward']:,} and an unguarded one stepped back refuses for "
               f"{fmt(ck['unguarded_ra'], digits=4)} s, the monotonic clock keeps {ck['mono']:,}; a client that waits the "
               f"quoted {fmt(ck['ra']['retry_after'])} s is admitted and one that comes a millisecond early is not "
               f"(that the conflation is the usual bug is judged on its own)."),
        Claim(
        "usual-bug", quote=USUAL_QUOTE, source="spec/001 (the token-bucket paragraph)",
        claimed="conflating capacity and rate is the usual rate-limiter bug",
        derived="not derived: the source counts no rate limiters and no bugs",
        verdict=UNCHECKABLE,
        reason="'the usual bug' says how often, and the source counts no rate limiters, incidents or other bugs to "
               "rank it against; this page's runs show the conflation is a bug, not that it is the most common one.")]


# --- the page's tables, figure, what changes, exercises --------------------------------------------
def clock_rows(ck: dict) -> list[list[str]]:
    s = ck["s"]
    rows = [("monotonic (time.monotonic)", "this bucket", s["monotonic"]),
            ("wall clock, stepped forward", "this bucket", s["forward"]),
            ("wall clock, stepped back", "this bucket (ignores a negative elapsed)", s["backward"]),
            ("wall clock, stepped back", "unguarded refill", s["backward_unguarded"])]
    return [[c, b, f"{r['n']:,}", fmt(ck["bound"]), fmt(r["longest_refusal"], digits=4) + " s"] for c, b, r in rows]


def case_rows() -> list[list[str]]:
    """The cases tests/chains/test_token_bucket.py holds, run live."""
    ra = retry_after_check(10.0)
    c = FakeClock()
    b = TokenBucket(5, 1.0, clock=c, tokens=0.0)
    for _ in range(10):
        c.advance(0.1)
        tenths = b.try_acquire().admitted
    idle = TokenBucket(5, 10.0, clock=(c2 := FakeClock()))
    c2.advance(1e6)
    return [["idle for a long time", "fills to capacity, no further", f"{num(idle.tokens())} tokens of {num(5)}"],
            ["ten refills of a tenth of a token", "one request admitted (float tolerance)", str(tenths)],
            ["wait exactly the retry-after", "admitted", str(ra["exact"])],
            ["come back a millisecond early", "refused", str(not ra["early"])],
            ["Retry-After header of the quoted wait", "rounded up to whole seconds", f"`{ra['header']}`"],
            ["threads racing on a frozen clock", "exactly the capacity admitted",
             f"{concurrent_admitted(50):,} of {num(50)}"],
            ["a request larger than the capacity", "ValueError (never admissible)", "raised"]]


def admitted_curves(ck: dict) -> dict:
    import numpy as np
    s = ck["s"]
    return {k: (np.asarray(s[k]["times"]), np.cumsum(s[k]["admitted"]))
            for k in ("monotonic", "conflated", "forward", "backward_unguarded")}


def what_changes(p, ch: Chain) -> dict:
    burst_big = 200
    wide = bucket_chain(p.rate, burst_big, p.offered_rate, p.window, p.clock_step, p.step_at)
    longer = bucket_chain(p.rate, p.burst, p.offered_rate, 60.0, p.clock_step, p.step_at)
    return {"wc-burst": q(p.burst, "request"), "wc-burst-big": q(burst_big, "request"),
            "wc-refused": ch["R_conf"], "wc-refused-big": wide["R_conf"],
            "wc-window-long": fmt(q(60.0, "s")), "wc-max-long": longer["A_max"],
            "wc-burst-share": fmt(p.burst / as_float(longer["A_max"]) * 100, digits=2) + "%",
            "wc-step": fmt(q(p.clock_step, "s")), "wc-debt": fmt(q(p.clock_step * p.rate, "request"))}


def exercises(p, ch: Chain) -> dict:
    per_minute, burst = 600, 100
    r = per_minute / 60
    cost, have, rate = 8.0, 3.0, 10.0
    step, rate3 = 90.0, 5.0
    return {"ex1-per-minute": q(per_minute, "request"), "ex1-burst": q(burst, "request"),
            "ex1-rate": fmt(q(r, "request/s")), "ex1-max": q(max_admitted(burst, r, 60), "request"),
            "ex2-cost": fmt(cost), "ex2-have": fmt(have), "ex2-rate": num(rate),
            "ex2-wait": fmt(q((cost - have) / rate, "s")), "ex2-header": retry_after_header((cost - have) / rate),
            "ex3-step": fmt(q(step, "s")), "ex3-rate": fmt(q(rate3, "request/s")),
            "ex3-debt": fmt(q(step * rate3, "request")), "ex3-wait": fmt(q(step + 1 / rate3, "s"))}


# --- the mechanism's contract, run small and in-process ---------------------------------------------
HOSTILE_SIZES = (None, float("nan"), float("inf"), -1, 0, True, "1", 51)   # 51: above a capacity of 50
HOSTILE_READINGS = (float("nan"), float("inf"), None)
N_REQUESTS = 400                  # the seeded sequence: arrivals every 20 ms on average, sizes 1, 2 or 5


def hammered(capacity: int = 50, rate: float = 100.0, threads: int = 7, calls: int = 500) -> tuple[int, float]:
    """Threads asking at once while another moves the clock on by a second: (admitted, seconds elapsed)."""
    clock = FakeClock()
    b, got, go = TokenBucket(capacity, rate, clock=clock), [], threading.Barrier(threads + 1)

    def ask():
        go.wait(timeout=5)
        got.extend(b.try_acquire().admitted for _ in range(calls))

    def tick():
        go.wait(timeout=5)
        for _ in range(100):
            clock.advance(0.01)
    ts = [threading.Thread(target=ask) for _ in range(threads)] + [threading.Thread(target=tick)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=10)
    return sum(got), clock.t


def windows_over(capacity: float = 20.0, rate: float = 10.0, seed: int = 0, bucket=TokenBucket) -> tuple[int, int]:
    """A seeded sequence of requests of several sizes on a fake clock, then every window between two of
    them: (windows, windows that admitted more than capacity + rate x their length)."""
    import numpy as np
    rng = np.random.default_rng(seed)
    times = np.cumsum(rng.exponential(0.02, N_REQUESTS))
    sizes = rng.choice(np.array([1.0, 2.0, 5.0]), N_REQUESTS)
    clock = FakeClock()
    b = bucket(capacity, rate, clock=clock)
    got = []
    for t, n in zip(times, sizes):
        clock.t = float(t)
        got.append(n if b.try_acquire(float(n)).admitted else 0.0)
    total = np.concatenate([[0.0], np.cumsum(got)])
    i, j = np.triu_indices(N_REQUESTS)
    over = total[j + 1] - total[i] > capacity + rate * (times[j] - times[i]) + 1e-6
    return len(i), int(over.sum())


@memoised   # deterministic counts: the page and the tests share them
def contract_checks() -> dict:
    """The mechanism's contract, run small and in-process: {scenarios, held, windows, over}. The scenarios:
    threads asking at once while the clock moves, every window of a seeded sequence of requests, a clock
    stepped back, hostile request sizes and clock readings (refused, the bucket unchanged). The full set is
    tests/components/test_token_bucket_adversarial.py."""
    admitted, elapsed = hammered()
    held = 50 <= admitted <= max_admitted(50, 100.0, elapsed) + 1e-9
    windows, over = windows_over()
    held += over == 0
    clock = FakeClock(100.0)
    b = TokenBucket(10, 1.0, clock=clock)
    while b.try_acquire().admitted:
        pass
    clock.step(-50.0)                     # a wall clock stepped back: no debt, refills from the new reading
    wait = b.try_acquire().retry_after
    clock.advance(wait)
    held += wait <= 1.0 / b.rate and b.try_acquire().admitted
    for n in HOSTILE_SIZES:
        b = TokenBucket(50, 1.0, clock=FakeClock())
        try:
            b.try_acquire(n)
        except ValueError:
            held += b.tokens() == 50
    for bad in HOSTILE_READINGS:
        clock = FakeClock()
        b = TokenBucket(10, 1.0, clock=clock)
        for _ in range(10):
            b.try_acquire()
        clock.t = bad
        try:
            b.try_acquire()
        except ValueError:
            clock.t = 5.0
            held += math.isclose(b.tokens(), 5.0)      # the garbage reading was not kept
    return dict(scenarios=3 + len(HOSTILE_SIZES) + len(HOSTILE_READINGS), held=int(held), windows=windows, over=over)


def contract_text() -> dict:
    ck = contract_checks()
    return {f"contract-{k}": f"{ck[k]:,}" for k in ("scenarios", "held", "windows", "over")}


SPEC = Spec("token-bucket", PARAMETERS, RESULTS, compute, validate=validate, closed_form=True)
