"""circuit-breaker: a rate over a sliding window against a consecutive-failure count, and the load that
retries put on a backend that is trying to come back.

The rate rule trips when a window of W seconds at R requests per second (n_W = R W calls) holds at least
m = ceil(theta n_W) failures; it checks on each failure, so a healthy backend failing with probability
p_h gives it R p_h checks an hour, each a binomial tail: the union bound on false trips. The consecutive
rule trips on k failures in a row; its probability over n calls is a Markov chain over the run length
(utils.components.circuit_breaker.run_probability), with a Poisson approximation as a second route. The breaker
itself runs on a fake clock against a seeded flaky backend (utils.components.circuit_breaker.simulate).

Retries: during a sustained failure every attempt fails, so a request makes (1 + r) attempts per layer
of retries, (1 + r)^L in all; a backend that comes back at a fraction of its capacity meets that
multiple of its normal load. An open breaker sends it only the half-open probes.
"""
from __future__ import annotations

import heapq
import math
import random

from utils.chain import Chain, memoised
from utils.components.circuit_breaker import (
    CLOSED,
    HALF_OPEN,
    OPEN,
    CircuitBreaker,
    ConsecutiveBreaker,
    FakeClock,
    FlakyBackend,
    binomial_tail,
    run_probability,
    run_probability_approx,
    simulate,
    step_error_rate,
)
from utils.params import Param, ParameterError, Result, Spec
from utils.units import duration, fmt, pct, q
from utils.verdicts import READING, UNCHECKABLE, WRONG, Claim

ASSUMED = "this book's assumption"
PARAMETERS = (
    Param("request_rate", 10.0, "requests per second from this caller to the backend", unit="request/s",
          source=ASSUMED),
    Param("healthy_error", 0.05, "failure probability of the healthy backend", check="share",
          source="this chapter's brief: a healthy backend with a 5% error rate"),
    Param("degraded_error", 0.3, "failure probability of the degraded backend", check="fraction",
          source="this chapter's brief: a backend failing 30% at random"),
    Param("failure_rate", 0.2, "failure rate over the window that opens the breaker", check="fraction",
          source=f"{ASSUMED}: between the healthy and the degraded rate"),
    Param("window_s", 30.0, "sliding window of the failure rate", unit="s", source=ASSUMED),
    Param("min_requests", 20, "calls the window must hold before the rate is judged", check="whole",
          source=ASSUMED),
    Param("open_timeout_s", 30.0, "time open before the next call may probe", unit="s", source=ASSUMED),
    Param("probe_limit", 5, "calls let through in one half-open period", check="whole", source=ASSUMED),
    Param("close_after", 3, "successful probes that close the breaker", check="whole", source=ASSUMED),
    Param("consecutive_k", 5, "failures in a row that open the consecutive-count breaker", check="whole",
          source=f"{ASSUMED}: the comparison rule"),
    Param("detect_within_s", 60.0, "how soon a degradation should open the breaker", unit="s",
          source=f"{ASSUMED}: within a minute"),
    Param("onset_s", 600.0, "when the backend degrades, in the simulation", unit="s", source=ASSUMED),
    Param("outage_s", 300.0, "how long it stays degraded", unit="s", source=ASSUMED),
    Param("retries", 3, "retries per attempt at each layer (1 + r attempts)", check="non_negative",
          source=f"{ASSUMED}: a common client default"),
    Param("retry_layers", 1, "layers that each retry (client, gateway, service ...)", check="whole",
          source=ASSUMED),
    Param("load_fraction", 0.7, "normal load as a fraction of the backend's full capacity", check="fraction",
          source=ASSUMED),
    Param("recovering_capacity", 0.8, "capacity the backend comes back with, as a fraction of full",
          check="fraction", source=f"{ASSUMED}: cold caches, some replicas still starting"),
    Param("seed", 0, "seed of the flaky backend", check="non_negative", source="this book's choice"),
)

RESULTS = (
    Result("rate_opens_after", "s", "Rate breaker opens after the onset (simulated)", of="t_open"),
    Result("rate_hours_between_false_trips", "hour", "Rate rule: hours between false trips (union bound)",
           of="H_rate"),
    Result("consecutive_false_trips_per_hour", "", "Consecutive rule: P(trip) per healthy hour", of="P_k_h",
           percent=True),
    Result("consecutive_detects_in_time", "", "Consecutive rule: P(trip) within the detection time",
           of="P_k_d", percent=True),
    Result("retry_load_multiplier", "", "Attempts per request during the failure", of="M"),
    Result("recovering_overload", "", "Offered load on the recovering backend, over its capacity", of="O"),
    Result("probe_load_share", "", "Open breaker's probes, as a share of capacity", of="s_probe", percent=True),
)

SIMULATION = "the breaker on a fake clock against a seeded flaky backend (utils.components.circuit_breaker.simulate)"
HOUR = 3600.0
FALSE_TARGET, DETECT_TARGET = 0.01, 0.99     # this book's bar: under 1% a healthy hour, 99% within a minute
K_RANGE = range(1, 21)
K_MAX = 100                       # the consecutive rule's k, at most (validate says why)
WINDOW_CALLS_MAX = 10_000_000     # calls in the rate rule's window, at most (validate says why)


def validate(p):
    for name in ("retries", "seed"):
        if float(p[name]) != int(p[name]):
            raise ParameterError(f"{name} must be a whole number, got {p[name]!r}")
    if p.close_after > p.probe_limit:
        raise ParameterError(f"close_after ({p.close_after}) must be <= probe_limit ({p.probe_limit}), "
                             "or the breaker can never close")
    if p.degraded_error <= p.healthy_error:
        raise ParameterError("degraded_error must be above healthy_error")
    if p.consecutive_k > K_MAX:
        raise ParameterError(f"consecutive_k must be at most {K_MAX}: the run-length chain is a (k + 1)-square matrix "
                             "raised to an hour's calls, past a second beyond that (the page compares k up to 20)")
    if p.request_rate * p.window_s > WINDOW_CALLS_MAX:
        raise ParameterError(f"window_s: a window of over {WINDOW_CALLS_MAX:,} calls (request_rate x window_s) makes "
                             "the binomial tail, summed term by term, run past a second")
    if p.request_rate * (p.onset_s + 2 * p.outage_s) > 200_000:
        raise ParameterError("request_rate: the simulation would run over 200,000 requests; "
                             "lower request_rate, onset_s or outage_s")


def breaker(p, clock, kind: str = "rate", k: int | None = None) -> CircuitBreaker:
    kw = dict(failure_rate=p.failure_rate, window_s=p.window_s, min_requests=int(p.min_requests),
              open_timeout_s=p.open_timeout_s, probe_limit=int(p.probe_limit), close_after=int(p.close_after),
              clock=clock)
    return CircuitBreaker(**kw) if kind == "rate" else ConsecutiveBreaker(k or int(p.consecutive_k), **kw)


def run(p, kind: str = "rate", k: int | None = None, healthy_s: float | None = None) -> dict:
    """One seeded timeline: healthy until the onset, degraded for outage_s, healthy for as long again."""
    onset = p.onset_s if healthy_s is None else healthy_s
    clock = FakeClock()
    cb = breaker(p, clock, kind, k)
    backend = FlakyBackend(step_error_rate(p.healthy_error, p.degraded_error, onset, onset + p.outage_s),
                           seed=int(p.seed))
    out = simulate(cb, backend, clock, rate=p.request_rate, duration_s=onset + 2 * p.outage_s)
    tr = out["transitions"]
    out["false_trips"] = sum(1 for t, s in tr if s == OPEN and t < onset)
    out["first_open_after"] = next((t - onset for t, s in tr if s == OPEN and t >= onset), math.inf)
    closes = [t for t, s in tr if s == CLOSED and t >= onset + p.outage_s]
    out["closed_after_recovery"] = (closes[0] - onset - p.outage_s) if closes else math.inf
    out["onset"] = onset
    return out


def rule_numbers(p) -> dict:
    """The two rules' probabilities at the parameters: per healthy hour, and within the detection time."""
    R = p.request_rate
    n_w = int(round(R * p.window_s))
    m = math.ceil(p.failure_rate * n_w)
    checks = R * HOUR * p.healthy_error                 # the rate rule looks only when a call fails
    tail_h = binomial_tail(n_w - 1, p.healthy_error, m - 1)   # the failure that triggers the check counts
    miss = 1 - binomial_tail(n_w - 1, p.degraded_error, m - 1)
    n_h, n_d = int(R * HOUR), int(R * p.detect_within_s)
    ks = {k: dict(false=run_probability(n_h, k, p.healthy_error), detect=run_probability(n_d, k, p.degraded_error),
                  false_approx=run_probability_approx(n_h, k, p.healthy_error))
          for k in sorted({*K_RANGE, int(p.consecutive_k)})}
    return dict(n_w=n_w, m=m, checks=checks, tail_h=tail_h, miss=miss, n_h=n_h, n_d=n_d, ks=ks,
                union=min(1.0, checks * tail_h))


def compute(p) -> Chain:
    """The chain; the seeded run and the two rules' probabilities ride along in ch.data ("run", "nums")."""
    r, nums = run(p), rule_numbers(p)
    k = int(p.consecutive_k)
    ch = Chain("Rate over a window against k in a row, and the retry multiplier")
    ch.given("R", q(p.request_rate, "request/s"), "request rate", kind="assumption", source=SPEC.source(p, "request_rate"))
    ch.given("p_h", p.healthy_error, "failure probability, healthy", kind="assumption", source=SPEC.source(p, "healthy_error"))
    ch.given("p_d", p.degraded_error, "failure probability, degraded", kind="assumption", source=SPEC.source(p, "degraded_error"))
    ch.given("theta", p.failure_rate, "failure rate that opens the breaker", kind="assumption",
             source=SPEC.source(p, "failure_rate"))
    ch.given("W", q(p.window_s, "s"), "sliding window", kind="assumption", source=SPEC.source(p, "window_s"))
    ch.step("n_W", "R*W", "request", "calls in a full window")
    ch.given("m", nums["m"], "failures in a full window that trip it, ceil(theta n_W)", kind="derived",
             source="the rule")
    ch.step("t_exp", "W*(theta - p_h)/(p_d - p_h)", "s", "expected time after the onset for the rate to cross theta")
    ch.given("t_open", q(min(r["first_open_after"], p.outage_s), "s"),
             "time after the onset the rate breaker opened (the outage's length if it never did)", kind="derived",
             source="utils.components.circuit_breaker.simulate, seeded")
    ch.given("c_h", q(nums["checks"], "1/hour"), "rate-rule checks a healthy hour (one per failure)",
             kind="derived", source="R p_h")
    ch.given("H_rate", q(1 / max(nums["checks"] * nums["tail_h"], 1e-300), "hour"),
             "hours between false trips: one over checks times the binomial tail (union bound)", kind="derived",
             source="utils.components.circuit_breaker.binomial_tail")
    ch.given("P_miss", nums["miss"], "P(a check on a fully degraded window does not trip)", kind="derived",
             source="utils.components.circuit_breaker.binomial_tail")
    ch.given("k", k, "failures in a row for the consecutive rule", kind="assumption", source=SPEC.source(p, "consecutive_k"))
    ch.given("P_k_h", nums["ks"][k]["false"], "consecutive rule: P(trip) in a healthy hour", kind="derived",
             source="utils.components.circuit_breaker.run_probability")
    ch.given("P_k_d", nums["ks"][k]["detect"], "consecutive rule: P(trip) within the detection time",
             kind="derived", source="utils.components.circuit_breaker.run_probability")
    ch.given("r", int(p.retries), "retries per attempt, at each layer", kind="assumption", source=SPEC.source(p, "retries"))
    ch.given("L", int(p.retry_layers), "layers that retry", kind="assumption", source=SPEC.source(p, "retry_layers"))
    ch.step("M", "(1 + r)**L", "", "attempts per request when every attempt fails")
    ch.given("lamda", p.load_fraction, "normal load, fraction of full capacity", kind="assumption",
             source=SPEC.source(p, "load_fraction"))
    ch.given("C_rec", p.recovering_capacity, "capacity the backend comes back with", kind="assumption",
             source=SPEC.source(p, "recovering_capacity"))
    ch.step("O", "lamda*M/C_rec", "", "offered load over the recovering capacity, with retries")
    ch.step("O_0", "lamda/C_rec", "", "the same without retries")
    ch.given("n_probe", q(int(p.probe_limit), "request"), "probes per half-open period", kind="assumption",
             source=SPEC.source(p, "probe_limit"))
    ch.given("T_open", q(p.open_timeout_s, "s"), "open timeout", kind="assumption", source=SPEC.source(p, "open_timeout_s"))
    ch.step("s_probe", "n_probe/T_open/(R/lamda)", "", "an open breaker's load, share of full capacity")
    ch.data["run"], ch.data["nums"] = r, nums
    return ch


# --- the claims -----------------------------------------------------------------------------------
QUOTE_RETRY = ("Three states and one insight: after a sustained failure, retrying is worse than not calling at all, "
               "and the only way to learn whether the backend recovered is to send a small number of probes.")
QUOTE_RATE = ("The state machine, the two thresholds, and why a rate over a window beats a consecutive-failure count.")
SOURCE = "spec/001 (the circuit breaker paragraph)"


def claim_inputs():
    """The claims' own inputs: this chapter's defaults (the brief's 5% and 30%; the source gives no numbers)."""

    return SPEC.check()


def k_bounds(nums: dict) -> dict:
    ks = nums["ks"]
    detect = [k for k in K_RANGE if ks[k]["detect"] >= DETECT_TARGET]      # the book's range, not the reader's k
    quiet = [k for k in K_RANGE if ks[k]["false"] <= FALSE_TARGET]
    return dict(k_max_detect=max(detect) if detect else 0, k_min_quiet=min(quiet) if quiet else math.inf,
                both=[k for k in detect if k in quiet])


SEEDS = range(10)                 # the flaky backend redrawn: the rate rule's run checked on every seed


@memoised                         # the seeded run is deterministic: the page and the claims share one
def checks() -> dict:
    """The claims' chain, on the claims' own inputs, and the rate rule's run on every seed."""
    p = claim_inputs()
    seeded = [run(p.replace(seed=s)) for s in SEEDS]
    return dict(chain=compute(p), opened=[min(r["first_open_after"], p.outage_s) for r in seeded],
                false_trips=[r["false_trips"] for r in seeded])


def claims() -> list[Claim]:
    p = claim_inputs()
    ch = checks()["chain"]
    nums = ch.data["nums"]
    kb = k_bounds(nums)
    union, miss = nums["union"], nums["miss"]
    ck = checks()
    rate_ok = (union <= FALSE_TARGET and miss <= 1 - DETECT_TARGET and not any(ck["false_trips"])
               and max(ck["opened"]) < p.detect_within_s)       # on every seed: no false trip, opened in time
    beats = rate_ok and not kb["both"]
    M, O, O0, s = (float(ch[x].m) for x in ("M", "O", "O_0", "s_probe"))
    worse = M > 1 and O > O0 and s < 1
    return [
        Claim("retry-worse", quote=QUOTE_RETRY, source=SOURCE,
              claimed="retrying after a sustained failure is worse than not calling; probes are the way to learn",
              derived=f"{fmt(M)} attempts per request; {fmt(O)} times the recovering capacity against "
                      f"{fmt(O0)} without retries; probes {pct(s)} of capacity",
              verdict=READING if worse else WRONG,
              reading="'the only way to learn whether the backend recovered' read as the only way for the breaker, "
                      "a caller whose only signal is the outcome of its own calls (no health endpoint or load balancer "
                      "to ask); 'retrying is worse than not calling at all' needs no reading: the arithmetic is the "
                      "load each choice puts on the backend",
              nearest_true="" if worse else "retries add no load here",
              reason=f"when every attempt fails a request makes {fmt(M)} attempts and gets the same failure, so a "
                     f"backend coming back at {pct(p.recovering_capacity)} of its capacity meets {fmt(O)} times that "
                     f"capacity instead of {fmt(O0)}, while an open breaker's probes are {pct(s)} of it."),
        Claim("rate-beats-count", quote=QUOTE_RATE, source=SOURCE,
              claimed="a failure rate over a window beats a consecutive-failure count",
              derived=f"no k both trips on {pct(p.degraded_error)} within {duration(p.detect_within_s)} "
                      f"({pct(DETECT_TARGET)}) and spares a {pct(p.healthy_error)} backend an hour "
                      f"({pct(FALSE_TARGET)}); the rate rule does both",
              # A comparison with no rates, failure shares or targets named: the book's own scenario shows whether the
              # rate rule can do what no count does there, which is the book checked against its own numbers, so
              # neither outcome judges the source (one where a count does as well refutes nothing the source said).
              verdict=UNCHECKABLE,
              reason=f"the source names no request rate, failure shares or targets; in the book's own scenario, at "
                     f"{fmt(q(p.request_rate, 'request/s'))} a k-in-a-row rule catches a {pct(p.degraded_error)} "
                     f"failure within {duration(p.detect_within_s)} with probability {pct(DETECT_TARGET)} only for k up "
                     f"to {fmt(kb['k_max_detect'])}, and spares a healthy {pct(p.healthy_error)} backend for an hour "
                     f"with probability {pct(1 - FALSE_TARGET)} only from k = {fmt(kb['k_min_quiet'])}; "
                     + (f"the rate of {pct(p.failure_rate)} over {duration(p.window_s)} does both, opening "
                        f"{duration(min(ck['opened']))} to {duration(max(ck['opened']))} after the onset over "
                        f"{len(SEEDS)} seeds, with no false trip on any." if beats else
                        f"there a count does as well as the rate of {pct(p.failure_rate)} over "
                        f"{duration(p.window_s)}, which is this scenario's answer, not the source's.")),
    ]


# --- tables, figure, what changes, exercises -------------------------------------------------------
def prob(x: float) -> str:
    """A probability for a table: a percentage, or scientific notation once it is below one in ten thousand."""
    return pct(x) if x >= 1e-4 else fmt(x, style="sci")


def k_rows(nums: dict, ks=range(2, 13)) -> list[list[str]]:
    return [[fmt(k), prob(nums["ks"][k]["false"]), prob(nums["ks"][k]["false_approx"]), prob(nums["ks"][k]["detect"])]
            for k in ks]


def timelines(p, healthy_s: float = HOUR) -> dict:
    """The three breakers over a healthy hour, the outage and the recovery (for the figure)."""
    runs = {"rate": run(p, "rate", healthy_s=healthy_s)}
    for k in (3, 10):
        runs[f"k={k}"] = run(p, "consecutive", k=k, healthy_s=healthy_s)
    return runs


STATE_LEVEL = {CLOSED: 0, HALF_OPEN: 1, OPEN: 2}


def state_steps(transitions, end_s: float) -> tuple[list[float], list[int]]:
    ts, ys = [0.0], [0]
    for t, s in transitions:
        ts.append(t)
        ys.append(STATE_LEVEL[s])
    ts.append(end_s)
    ys.append(ys[-1])
    return ts, ys


def feed(cb: CircuitBreaker, outcomes) -> None:
    """Calls answered at once, one outcome each (a refused call is skipped)."""
    for ok in outcomes:
        permit = cb.allow()
        if permit is not None:
            cb.record(permit, ok)


def case_rows() -> list[list[str]]:
    """The state machine's cases, run live on a fake clock (tests/chains/test_circuit_breaker.py holds them)."""
    rows = []

    def fresh(**kw):
        clock = FakeClock()
        return clock, CircuitBreaker(**{**dict(failure_rate=0.5, window_s=10, min_requests=4, open_timeout_s=30,
                                               probe_limit=2, close_after=2), **kw, "clock": clock})

    clock, cb = fresh()
    feed(cb, (False,) * 3)
    rows.append(["three failures, fewer calls than min_requests", cb.state])
    feed(cb, (False,))
    rows.append(["a fourth: the window is judged, rate at or above the threshold", cb.state])
    rows.append(["a call while open", "refused" if cb.allow() is None else "let through"])
    clock.advance(29.9)
    rows.append(["just before the open timeout", cb.state])
    clock.advance(0.1)
    probes = [x for x in (cb.allow() for _ in range(4)) if x is not None]
    rows.append(["at the timeout: four calls at once", f"{cb.state}, {len(probes)} let through as probes"])
    for permit in probes:
        cb.record(permit, True)
    rows.append(["both probes succeed", cb.state])
    clock, cb = fresh()
    feed(cb, (False,) * 4)
    clock.advance(30)
    feed(cb, (False,))
    rows.append(["a probe fails", f"{cb.state} again, for another full timeout"])
    clock, cb = fresh()
    feed(cb, (False, False, False, True))               # three of four fail, but no failure saw four calls
    clock.advance(11)
    feed(cb, (True, True, True, False))                 # one of four now; all eight would be at the threshold
    rows.append(["old failures have left the window, new rate below the threshold", f"{cb.state}"])
    return rows


def what_changes(p, ch: Chain) -> dict:
    kb = k_bounds(ch.data["nums"])
    slow = rule_numbers(p.replace(request_rate=1.0))
    kb_slow = k_bounds(slow)
    two = float((1 + p.retries) ** 2)
    return {"wc-k-detect": fmt(kb["k_max_detect"]), "wc-k-quiet": fmt(kb["k_min_quiet"]),
            "wc-slow-rate": fmt(q(1.0, "request/s")), "wc-slow-detect": fmt(kb_slow["k_max_detect"]),
            "wc-slow-quiet": fmt(kb_slow["k_min_quiet"]),
            "wc-two-layers": fmt(two), "wc-two-overload": fmt(p.load_fraction * two / p.recovering_capacity),
            "wc-texp": duration(p.window_s * (p.failure_rate - p.healthy_error) / (p.degraded_error - p.healthy_error)),
            "wc-window": duration(p.window_s)}


def exercises(p, ch: Chain) -> dict:
    n_h = int(p.request_rate * HOUR)
    k_ex = 4
    p_day = 1 - (1 - run_probability(n_h, k_ex, p.healthy_error)) ** 24
    layers = 3
    m3 = (1 + p.retries) ** layers
    healthy_attempts = sum(p.healthy_error ** i for i in range(int(p.retries) + 1))   # 1 + p + p^2 + ...
    return {"ex1-k": fmt(k_ex), "ex1-p": pct(p.healthy_error), "ex1-rate": fmt(q(p.request_rate, "request/s")),
            "ex1-day": pct(p_day), "ex2-layers": fmt(layers), "ex2-r": fmt(int(p.retries)), "ex2-m": fmt(m3),
            "ex2-load": fmt(p.load_fraction * m3, digits=3),
            "ex3-attempts": fmt(healthy_attempts, digits=4), "ex3-extra": pct(healthy_attempts - 1, digits=3)}


def check_text(p, ch: Chain) -> dict:
    from utils.units import bound
    nums = ch.data["nums"]
    kb = k_bounds(nums)
    return {"check-k-detect": fmt(kb["k_max_detect"]), "check-k-quiet": fmt(kb["k_min_quiet"]),
            "check-detect-target": pct(DETECT_TARGET), "check-false-target": pct(FALSE_TARGET),
            "check-nw": fmt(nums["n_w"]), "check-m": fmt(nums["m"]), "check-checks": fmt(nums["checks"]),
            "check-union": bound(nums["union"]), "check-miss": fmt(nums["miss"], digits=2, style="sci"),
            "check-texp": duration(float(ch["t_exp"].m)), "check-n-hour": fmt(nums["n_h"]),
            "check-n-detect": fmt(nums["n_d"]), "check-o0": fmt(ch["O_0"])}


def timeline_text(runs: dict, p) -> dict:
    r, k3, k10 = runs["rate"], runs["k=3"], runs["k=10"]
    never = lambda x: "never" if math.isinf(x) else duration(x)
    return {"fig-rate-false": fmt(r["false_trips"]), "fig-k3-false": fmt(k3["false_trips"]),
            "fig-k10-false": fmt(k10["false_trips"]), "fig-rate-open": never(r["first_open_after"]),
            "fig-k10-open": never(k10["first_open_after"]), "fig-rate-close": never(r["closed_after_recovery"]),
            "fig-rate-refused": pct(r["refused"] / max(1, r["requests"]))}


# --- the mechanism's contract, run small and in-process ---------------------------------------------
BAD_ARGS = (dict(failure_rate=float("nan")), dict(window_s=float("nan")), dict(open_timeout_s=float("inf")),
            dict(min_requests=1.5), dict(probe_limit=True), dict(failure_rate=0), dict(probe_timeout_s=-1),
            dict(close_after=6, probe_limit=5))
BAD_K = (0, 1.5, True)                     # ConsecutiveBreaker's k: a whole number >= 1, not a bool
BAD_OUTCOMES = (None, 0, 1, "yes", float("nan"))
BAD_PERMITS = ("answered twice", "another breaker's", None, True)
FUZZ = dict(failure_rate=0.5, window_s=10.0, min_requests=4, open_timeout_s=30.0, probe_limit=3, close_after=2,
            probe_timeout_s=20.0)
FUZZ_CALLS, FUZZ_STEP_S = 5000, 1.0        # calls offered, at most a second apart
FUZZ_PHASE_S = 60.0                        # the backend is broken every other minute
FUZZ_SLOW_SHARE, FUZZ_SLOW_S = 0.3, 90.0    # answers that take up to a minute and a half: past the open timeout


def opened(late: int = 0, **kw) -> tuple[FakeClock, CircuitBreaker, list]:
    """A breaker opened by two failures (two probes, two to close, a timeout of thirty seconds), with `late`
    more calls let through while it was closed and not answered yet."""
    clock = FakeClock()
    cb = CircuitBreaker(**{**dict(failure_rate=0.5, window_s=10, min_requests=2, open_timeout_s=30, probe_limit=2,
                                  close_after=2), **kw, "clock": clock})
    first = [cb.allow() for _ in range(2 + late)]
    for permit in first[:2]:
        cb.record(permit, False)
    return clock, cb, first[2:]


def silent_probes_reopen() -> bool:
    """Both probes taken and never answered: open again after the probe timeout; when they answer at last,
    in the next half-open spell, they are not its probes; its own two close it."""
    clock, cb, _ = opened()
    clock.advance(30)
    silent = [cb.allow(), cb.allow()]
    ok = all(silent) and cb.allow() is None
    clock.advance(29.9)
    ok = ok and cb.state == HALF_OPEN and cb.allow() is None
    clock.advance(0.1)
    ok = ok and cb.state == OPEN
    clock.advance(30)
    probe = cb.allow()
    for old in silent:
        cb.record(old, True)
    ok = ok and probe is not None and cb.state == HALF_OPEN
    cb.record(probe, True)
    feed(cb, (True,))
    return ok and cb.state == CLOSED


def late_answers_are_not_probes() -> bool:
    """Two probes out, then two successes answering calls let through before it opened: still half-open
    (they are not probes); the probes' own two answers close it."""
    clock, cb, late = opened(late=2)
    clock.advance(30)
    probes = [cb.allow(), cb.allow()]
    for permit in late:
        cb.record(permit, True)
    ok = cb.state == HALF_OPEN and cb.probe_successes == 0 and cb.stale == len(late)
    for permit in probes:
        cb.record(permit, True)
    return ok and cb.state == CLOSED


def bad_permit_refused(kind) -> bool:
    """A permit answered twice, another breaker's, or no permit at all: ValueError, and nothing changed."""
    clock, cb, _ = opened()
    clock.advance(30)
    probe = cb.allow()
    cb.record(probe, True)
    permit = {"answered twice": probe, "another breaker's": opened()[1].allow()}.get(kind, kind)
    try:
        cb.record(permit, True)
    except ValueError:
        return cb.state == HALF_OPEN and cb.probe_successes == 1
    return False


def fuzz(seed: int = 0, breaker: type[CircuitBreaker] = CircuitBreaker, **kw) -> dict:
    """Seeded calls at random gaps against a backend that breaks and recovers every minute. Each call let
    through answers after its own delay (most within seconds, some after up to FUZZ_SLOW_S, some never),
    so answers come out of order and late, across state changes. Counts the calls let through in each
    half-open spell, the longest time no call was let through, and the closes, each checked against its own
    bookkeeping: the successes answered to permits given in that half-open spell."""
    rng, clock = random.Random(seed), FakeClock()
    cfg = {**FUZZ, **kw}
    cb = breaker(**cfg, clock=clock)
    due, per_spell, ok_in_spell, last_through, gap = [], {}, {}, 0.0, 0.0
    closes = unproven = 0
    for n in range(FUZZ_CALLS):
        clock.advance(rng.uniform(0, FUZZ_STEP_S))
        while due and due[0][0] <= clock.t:        # the answers that arrive by now, in arrival order
            _, _, permit, probe_of, ok = heapq.heappop(due)
            if ok and probe_of is not None:
                ok_in_spell[probe_of] = ok_in_spell.get(probe_of, 0) + 1
            before = len(cb.transitions)
            cb.record(permit, ok)
            if cb.transitions[before:] and cb.transitions[-1][1] == CLOSED:
                closes += 1
                unproven += ok_in_spell.get(sum(s == HALF_OPEN for _, s in cb.transitions), 0) < cfg["close_after"]
        half = cb.state == HALF_OPEN
        spell = sum(s == HALF_OPEN for _, s in cb.transitions)
        permit = cb.allow()
        if permit is None:
            continue
        gap, last_through = max(gap, clock.t - last_through), clock.t
        if half:
            per_spell[spell] = per_spell.get(spell, 0) + 1
        fate = rng.random()
        if fate < 0.2:
            continue                                 # never answers
        delay = rng.expovariate(1.0) if fate < 1 - FUZZ_SLOW_SHARE else rng.uniform(0, FUZZ_SLOW_S)
        broken = int(clock.t // FUZZ_PHASE_S) % 2 == 1
        heapq.heappush(due, (clock.t + delay, n, permit, spell if half else None,
                             rng.random() >= (0.9 if broken else 0.02)))
    gap = max(gap, clock.t - last_through)       # a breaker that refuses for good ends on its longest gap
    return dict(spells=len(per_spell), most=max(per_spell.values(), default=0), gap=gap,
                bound=cfg["open_timeout_s"] + cfg["probe_timeout_s"] + FUZZ_STEP_S, closes=closes,
                unproven=unproven, stale=cb.stale)


@memoised   # deterministic counts: the page and the tests share them
def contract_checks() -> dict:
    """The mechanism's contract, run small and in-process: {scenarios, held, calls, spells, most, gap, bound,
    closes, unproven, stale}. The scenarios: probes that never answer, late answers while probes are out, a
    seeded fuzz of calls whose answers come late or never (permits counted, no refusal for good, every close
    earned by that spell's own probes), bad arguments, outcomes and permits (refused, nothing changed). The
    full set is tests/components/test_circuit_breaker_adversarial.py."""
    fz = fuzz()
    held = silent_probes_reopen() + late_answers_are_not_probes()
    held += (fz["most"] <= FUZZ["probe_limit"] and fz["spells"] > 0) + (fz["gap"] <= fz["bound"])
    held += fz["closes"] > 0 and fz["unproven"] == 0
    for kw in BAD_ARGS:
        try:
            CircuitBreaker(**kw)
        except ValueError:
            held += 1
    for k in BAD_K:
        try:
            ConsecutiveBreaker(k)
        except ValueError:
            held += 1
    for ok in BAD_OUTCOMES:
        cb = CircuitBreaker(min_requests=1, failure_rate=1.0, clock=FakeClock())
        permit = cb.allow()
        try:
            cb.record(permit, ok)
        except ValueError:
            held += cb.state == CLOSED and len(cb.window) == 0
    held += sum(bad_permit_refused(kind) for kind in BAD_PERMITS)
    return dict(scenarios=5 + len(BAD_ARGS) + len(BAD_K) + len(BAD_OUTCOMES) + len(BAD_PERMITS), held=int(held),
                calls=FUZZ_CALLS, limit=FUZZ["probe_limit"], **fz)


def contract_text() -> dict:
    ck = contract_checks()
    return {"contract-scenarios": f"{ck['scenarios']:,}", "contract-held": f"{ck['held']:,}",
            "contract-calls": f"{ck['calls']:,}", "contract-spells": f"{ck['spells']:,}",
            "contract-most": f"{ck['most']:,}", "contract-limit": f"{ck['limit']:,}",
            "contract-closes": f"{ck['closes']:,}", "contract-stale": f"{ck['stale']:,}",
            "contract-gap": fmt(q(ck["gap"], "s")), "contract-bound": fmt(q(ck["bound"], "s"))}


SPEC = Spec("circuit-breaker", PARAMETERS, RESULTS, compute, validate=validate)
