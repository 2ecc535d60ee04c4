"""retry-jitter: a thousand clients failing together, the peak arrival rate at the server under each
backoff policy, the two budgets that bound the retries, and what may be retried at all.

The herd: n clients send one request each at t = 0 to a server that is down until the outage ends;
each failure is retried under the policy, up to max_attempts attempts. utils.components.retry simulates it with a
seed (a CPU simulation, not a GPU measurement) and bins the retries' arrivals in time; the peak is the
fullest bin over its width. Plain exponential backoff sends every client's k-th retry at the same
instant, so each wave lands in one bin: n per bin. Full jitter spreads retry k over its window w_k,
n * bin / w_k per bin in expectation: the closed form the simulation is checked against.
"""
from __future__ import annotations

import numpy as np

from utils.chain import Chain, as_float, memoised
from utils.components.retry import POLICIES, classify, full_jitter_expected, histogram, simulate, window
from utils.params import Param, ParameterError, Result, Spec
from utils.units import fmt, num, q
from utils.verdicts import READING, WRONG, Claim

SIMULATION = "a seeded herd of clients retrying against a server that is down (utils.components.retry.simulate), binned in time"

BLOG_DATE = "2015-03-04"
BROOKER = (f"M. Brooker, 'Exponential Backoff And Jitter', AWS Architecture Blog, {BLOG_DATE}, "
           "https://aws.amazon.com/blogs/architecture/exponential-backoff-and-jitter/, and its simulator "
           "github.com/aws-samples/aws-arch-backoff-simulator (read 2026-12-01)")
SRE = ("Google, Site Reliability Engineering, ch. 21 'Handling Overload', https://sre.google/sre-book/"
       "handling-overload/ (read 2026-12-01): a per-client retry budget keeps retries below 10% of requests")

PARAMETERS = (
    Param("n_clients", 1000, "clients that fail together", unit="request", check="whole",
          source="the spec's thousand clients"),
    Param("base", 1.0, "base: the first retry's window", unit="s", source="this book's assumption"),
    Param("cap", 30.0, "cap: the largest window", unit="s", source="this book's assumption"),
    Param("max_attempts", 8, "attempts per request, the first included", check="whole",
          source="this book's assumption: enough for most clients to outlast the outage"),
    Param("outage", 10.0, "how long the server stays down", unit="s", check="non_negative",
          source="this book's assumption"),
    Param("bin_s", 0.1, "the width of a time bin the arrivals are counted in", unit="s",
          source="this book's choice: a tenth of the base"),
    Param("ratio_cap", 0.1, "retry ratio cap: retries as a fraction of requests", check="share",
          source=SRE),
    Param("client_tokens", 2.0, "per-client retry tokens (the bucket's capacity)", source="this book's assumption"),
    Param("client_refill", 0.1, "per-client retry tokens earned per second", unit="1/s", check="non_negative",
          source="this book's assumption"),
    Param("seed", 0, "numpy Generator seed", check="non_negative", source="this book's choice"),
)

RESULTS = (
    Result("peak_exponential", "request/s", "Peak retry arrivals, plain exponential backoff", of="P_exp"),
    Result("peak_full_jitter", "request/s", "Peak retry arrivals, full jitter (simulated)", of="P_full"),
    Result("peak_decorrelated", "request/s", "Peak retry arrivals, decorrelated jitter (simulated)", of="P_dec"),
    Result("expected_first_wave", "request/s", "Full jitter's first wave, closed form n / w_0", of="E_1"),
    Result("peak_reduction_full", "", "Peak reduction by full jitter (simulated)", of="X_full", digits=2),
    Result("peak_reduction_decorrelated", "", "Peak reduction by decorrelated jitter (simulated)", of="X_dec",
           digits=2),
    Result("retries_ratio_cap", "request", "Retries sent under the ratio cap", of="R_cap"),
    Result("retries_client_budget", "request", "Retries sent under the per-client token budget", of="R_tok"),
)

LABELS = {"constant": "constant interval", "exponential": "exponential", "equal_jitter": "equal jitter",
          "full_jitter": "full jitter", "decorrelated": "decorrelated jitter"}


MAX_BINS = 100_000      # bins of the horizon (the defaults count a few hundred): past it a re-derivation runs seconds


def validate(p):
    for name in ("n_clients", "max_attempts", "seed"):
        if float(p[name]) != int(p[name]):
            raise ParameterError(f"{name} must be a whole number, got {p[name]!r}")
    if p.n_clients > 100000:
        raise ParameterError(f"n_clients must be at most 100,000 (a fraction of a second), got {p.n_clients}")
    if p.max_attempts < 2 or p.max_attempts > 30:
        raise ParameterError(f"max_attempts must be between 2 and 30, got {p.max_attempts}")
    if p.cap < p.base:
        raise ParameterError(f"cap must be >= base ({p.base:g} s), got {p.cap!r}")
    if p.bin_s > p.base:
        raise ParameterError(f"bin_s must be at most base ({p.base:g} s), or one bin holds a whole wave; got {p.bin_s!r}")
    if horizon(p.base, p.cap, p.max_attempts, p.outage) / p.bin_s > MAX_BINS:
        raise ParameterError(f"bin_s is too small for the horizon: over {MAX_BINS:,} bins (the expected arrivals are "
                             f"convolved on a grid of twenty steps a bin, past a second), got {p.bin_s!r}")
    if p.client_tokens < 1:
        raise ParameterError(f"client_tokens must be >= 1 (a retry costs one), got {p.client_tokens!r}")


def latest_retry(base, cap, max_attempts, outage) -> float:
    """No retry comes later than the sum of the windows, nor later than one capped window after the
    outage (a retry follows a failure, and every failure comes before the outage ends)."""
    return float(min(sum(window(k, base, cap) for k in range(max_attempts - 1)), outage + cap))


def horizon(base, cap, max_attempts, outage) -> float:
    """The span the arrivals are binned over: the latest retry, plus one base to spare."""
    return latest_retry(base, cap, max_attempts, outage) + base


def population(n_clients, base, cap, max_attempts, outage, bin_s, seed, ratio_cap, client_tokens,
               client_refill) -> dict:
    """Every policy simulated on the same seed, binned; and full jitter under each budget."""
    h = horizon(base, cap, max_attempts, outage)
    out = {"horizon": h, "latest": latest_retry(base, cap, max_attempts, outage)}
    for pol in POLICIES:
        s = simulate(pol, n_clients, outage, max_attempts, base, cap, seed)
        counts, edges = histogram(s.times[s.attempt > 0], bin_s, h)
        out[pol] = dict(sim=s, counts=counts, edges=edges, peak=int(counts.max()), attempts=int(s.times.size))
    for name, kw in (("ratio", dict(ratio_cap=ratio_cap)),
                     ("tokens", dict(client_tokens=client_tokens, client_refill=client_refill))):
        s = simulate("full_jitter", n_clients, outage, max_attempts, base, cap, seed, **kw)
        counts, edges = histogram(s.times[s.attempt > 0], bin_s, h)
        out[name] = dict(sim=s, counts=counts, edges=edges, peak=int(counts.max()), attempts=int(s.times.size))
    out["expected_full"] = full_jitter_expected(n_clients, outage, max_attempts, base, cap, bin_s, h)
    return out


def herd_chain(n_clients, base, cap, max_attempts, outage, bin_s, seed, ratio_cap, client_tokens, client_refill,
               *, source="parameters cell") -> Chain:
    """The herd's peaks and budgets; the simulated population rides along in ch.data["pop"]."""
    def src(name: str) -> str:          # `source`: one string for every input, or a dict by parameter
        return source if isinstance(source, str) else source.get(name, "parameters cell")
    pop = population(n_clients, base, cap, max_attempts, outage, bin_s, seed, ratio_cap, client_tokens,
                     client_refill)
    sim = "utils.components.retry.simulate, seeded (a CPU simulation)"
    ch = Chain("A thousand clients failing together: peak retry arrivals and the budgets")
    ch.given("N", q(n_clients, "request"), "clients that fail together", kind="assumption", source=src("n_clients"))
    ch.given("w_0", q(base, "s"), "the first retry's window (base)", kind="assumption", source=src("base"))
    ch.given("b", q(bin_s, "s"), "the bin the arrivals are counted in", kind="assumption", source=src("bin_s"))
    ch.step("P_exp", "N/b", "request/s", "exponential: every client's retry in the same instant, so one bin")
    ch.given("M_exp", q(pop["exponential"]["peak"], "request"), "fullest bin, exponential (simulated)",
             kind="derived", source=sim)
    ch.step("E_1", "N/w_0", "request/s", "full jitter's first wave: N spread evenly over w_0")
    ch.given("M_E", q(float(pop["expected_full"].max()), "request"),
             "fullest bin of full jitter's expected arrivals (all waves)", kind="derived",
             source="utils.components.retry.full_jitter_expected (convolution, no sampling)")
    ch.step("E_full", "M_E/b", "request/s", "full jitter's expected peak, the waves overlapping")
    ch.given("M_full", q(pop["full_jitter"]["peak"], "request"), "fullest bin, full jitter (simulated)",
             kind="derived", source=sim)
    ch.step("P_full", "M_full/b", "request/s", "full jitter's peak (simulated)")
    ch.given("M_dec", q(pop["decorrelated"]["peak"], "request"), "fullest bin, decorrelated jitter (simulated)",
             kind="derived", source=sim)
    ch.step("P_dec", "M_dec/b", "request/s", "decorrelated jitter's peak (simulated)")
    ch.step("X_full", "P_exp/P_full", "", "peak reduction by full jitter", digits=2)
    ch.step("X_dec", "P_exp/P_dec", "", "peak reduction by decorrelated jitter", digits=2)
    ch.given("A", max_attempts - 1, "retries per request: the attempts less the first (the per-request budget)",
             kind="assumption", source=src("max_attempts"))
    ch.step("R_A", "N*A", "request", "retries the attempt limit alone allows")
    ch.given("rho", ratio_cap, "retry ratio cap", kind="assumption", source=src("ratio_cap"))
    ch.step("R_rho", "rho*N", "request", "retries the ratio cap allows (requests N)")
    ch.given("R_cap", q(pop["ratio"]["sim"].retries, "request"), "retries sent under the ratio cap (simulated)",
             kind="derived", source=sim)
    ch.given("k", client_tokens, "per-client retry tokens", kind="assumption", source=src("client_tokens"))
    ch.given("g", q(client_refill, "1/s"), "tokens earned per second", kind="assumption", source=src("client_refill"))
    ch.given("T", q(pop["latest"], "s"), "the latest a retry can be sent", kind="derived",
             source="the outage plus one capped window, or the sum of the windows if less")
    ch.step("R_k", "N*(k + g*T)", "request", "retries the per-client budget allows at most")
    ch.given("R_tok", q(pop["tokens"]["sim"].retries, "request"), "retries sent under the token budget (simulated)",
             kind="derived", source=sim)
    ch.data["pop"] = pop
    return ch


def compute(p) -> Chain:
    return herd_chain(p.n_clients, p.base, p.cap, p.max_attempts, p.outage, p.bin_s, p.seed, p.ratio_cap,
                      p.client_tokens, p.client_refill, source={n: SPEC.source(p, n) for n in
                                                                ("n_clients", "base", "bin_s", "max_attempts",
                                                                 "ratio_cap", "client_tokens", "client_refill")})


# --- the claim ------------------------------------------------------------------------------------
CLAIM = dict(n_clients=1000, base=1.0, cap=30.0, max_attempts=8, outage=10.0, bin_s=0.1, seed=0, ratio_cap=0.1,
             client_tokens=2.0, client_refill=0.1)
QUOTE = ("Exponential backoff spaces one client's retries and does nothing for a thousand clients that "
         "failed together, which is the case that matters. The measured difference jitter makes to the peak "
         "arrival rate, the two budgets that bound the damage, and the classification of what is safe to "
         "retry at all.")
SEEDS = range(20)


def seed_spread() -> dict:
    """The claim's peaks over twenty seeds: the reduction is not one lucky draw."""
    C = CLAIM
    h = horizon(C["base"], C["cap"], C["max_attempts"], C["outage"])
    out = {}
    for pol in ("exponential", "full_jitter", "decorrelated"):
        peaks = []
        for s in SEEDS:
            sim = simulate(pol, C["n_clients"], C["outage"], C["max_attempts"], C["base"], C["cap"], s)
            peaks.append(int(histogram(sim.times[sim.attempt > 0], C["bin_s"], h)[0].max()))
        out[pol] = (min(peaks), max(peaks))
    return out


@memoised                         # the simulations are seeded: the page and the claim share one run
def checks() -> dict:
    C = CLAIM
    res = herd_chain(**C, source="this book's herd")
    pop = res.data["pop"]
    one = simulate("exponential", 1, C["outage"], C["max_attempts"], C["base"], C["cap"], 0)
    return dict(res=res, pop=pop, spread=seed_spread(), one_client_gaps=np.diff(one.times),
                constant_attempts=pop["constant"]["attempts"], exp_attempts=pop["exponential"]["attempts"],
                constant_last=float(pop["constant"]["sim"].times.max()),
                exp_peak=pop["exponential"]["peak"], constant_peak=pop["constant"]["peak"])


def claims() -> list[Claim]:
    ck = checks()
    C, res, sp = CLAIM, ck["res"], ck["spread"]

    def rate(span) -> str:                  # a (min, max) of arrivals a bin as a range of request/s
        lo, hi = (fmt(q(v / C["bin_s"], "request/s")) for v in span)
        return lo if lo == hi else f"{lo.split(' ')[0]} to {hi}"
    n = C["n_clients"]
    # one bin per wave, with or without backoff, on every seed; jitter below the herd on every seed
    herd = ck["exp_peak"] == ck["constant_peak"] == n and sp["exponential"] == (n, n)
    spaced = bool(np.all(np.diff(ck["one_client_gaps"]) > 0))                # one client's gaps grow
    jitter = sp["full_jitter"][1] < n and sp["decorrelated"][1] < n
    ok = herd and spaced and jitter
    X_full, X_dec = as_float(res["X_full"]), as_float(res["X_dec"])
    return [Claim(
        "herd", quote=QUOTE, source="spec/001 (the retry paragraph); policies from " + BROOKER,
        claimed="exponential backoff does nothing for a thousand clients failing together; jitter changes the peak",
        derived=f"peak retry arrivals over {len(SEEDS)} seeds (a CPU simulation): {rate(sp['exponential'])} with "
                f"exponential backoff, {rate(sp['full_jitter'])} with full jitter, {rate(sp['decorrelated'])} with "
                f"decorrelated jitter",
        verdict=READING if ok else WRONG,
        reading="'does nothing for a thousand clients that failed together' read as nothing for the peak arrival "
                "rate, the quantity the next sentence names: backoff does cut the attempts the herd makes while the "
                "server is down, but every wave still arrives as one spike",
        nearest_true="" if ok else "jitter does not lower the simulated peak",
        reason=f"with exponential backoff all {n:,} clients' retries land in one bin of {fmt(q(C['bin_s'], 's'))} "
               f"on every wave, {fmt(res['P_exp'])}, the same peak as retrying at a constant interval; full jitter "
               f"lowers the simulated peak to {fmt(res['P_full'])} (closed form for its first wave "
               f"{fmt(res['E_1'])}), a reduction of {fmt(X_full, digits=2)} times, and decorrelated jitter to "
               f"{fmt(res['P_dec'])}, {fmt(X_dec, digits=2)} times, on the page's seed; over {len(SEEDS)} seeds "
               f"full jitter peaks at {rate(sp['full_jitter'])} and decorrelated jitter at {rate(sp['decorrelated'])}, "
               f"every seed below the herd's {fmt(res['P_exp'])}.")]


# --- the page's tables, figure, what changes, exercises --------------------------------------------
def policy_rows(ck: dict) -> list[list[str]]:
    pop, C = ck["pop"], CLAIM
    rows = []
    for pol in POLICIES:
        r = pop[pol]
        s = r["sim"]
        rows.append([LABELS[pol], f"{r['peak']:,}", fmt(q(r["peak"] / C["bin_s"], "request/s")),
                     f"{r['attempts']:,}", f"{s.succeeded:,}", fmt(q(float(s.times.max()), "s"))])
    return rows


def budget_rows(ck: dict) -> list[list[str]]:
    pop, res, C = ck["pop"], ck["res"], CLAIM
    return [["attempt limit only", f"{pop['full_jitter']['sim'].retries:,}", fmt(res["R_A"]),
             f"{pop['full_jitter']['peak']:,}", f"{pop['full_jitter']['sim'].succeeded:,}"],
            [f"ratio cap {fmt(C['ratio_cap'] * 100)}%", f"{pop['ratio']['sim'].retries:,}", fmt(res["R_rho"]),
             f"{pop['ratio']['peak']:,}", f"{pop['ratio']['sim'].succeeded:,}"],
            [f"per-client tokens ({num(C['client_tokens'])}, refill {num(C['client_refill'])}/s)",
             f"{pop['tokens']['sim'].retries:,}", fmt(res["R_k"]), f"{pop['tokens']['peak']:,}",
             f"{pop['tokens']['sim'].succeeded:,}"]]


CASES = (("GET", 503, True, False), ("POST", 429, True, False), ("POST", 400, True, False),
         ("GET", 404, True, False), ("PUT", 500, True, False), ("POST", 500, True, False),
         ("POST", 504, True, True), ("POST", None, True, False), ("DELETE", None, True, False),
         ("POST", None, False, False))


def classify_rows() -> list[list[str]]:
    rows = []
    for method, status, sent, key in CASES:
        what = "timeout after sending" if status is None and sent else ("connection refused" if not sent
                                                                         else f"`{status}`")
        retry, why = classify(method, status, sent=sent, idempotency_key=key)
        rows.append([f"`{method}`" + (" + idempotency key" if key else ""), what, "retry" if retry else "no",
                     why])
    return rows


def arrival_curves(ck: dict) -> dict:
    pop, C = ck["pop"], CLAIM
    edges = pop["exponential"]["edges"]
    centres = (edges[:-1] + edges[1:]) / 2
    curves = {LABELS[p]: pop[p]["counts"] / C["bin_s"] for p in ("exponential", "full_jitter", "decorrelated")}
    return dict(t=centres, curves=curves, expected=pop["expected_full"] / C["bin_s"])


def what_changes(p, ch: Chain) -> dict:
    inputs = {name: p[name] for name in CLAIM}         # herd_chain's arguments, the reader's values
    out = {}
    for label, kw in (("bin", dict(bin_s=0.01)), ("base", dict(base=0.1, bin_s=0.01)), ("n", dict(n_clients=10000))):
        r = herd_chain(**{**inputs, **kw})
        out[f"wc-{label}-full"], out[f"wc-{label}-exp"] = fmt(r["P_full"]), fmt(r["P_exp"])
        out[f"wc-{label}-x"] = fmt(as_float(r["X_full"]), digits=2)
    out.update({"wc-bin-small": fmt(q(0.01, "s")), "wc-base-small": fmt(q(0.1, "s")),
                "wc-n-big": fmt(q(10000, "request"))})
    return out


def exercises(p, ch: Chain) -> dict:
    n, w, b = 5000, 2.0, 0.05
    A, rho, rate = 3, 0.1, 2000.0
    return {"ex1-n": fmt(q(n, "request")), "ex1-w": fmt(q(w, "s")), "ex1-b": fmt(q(b, "s")),
            "ex1-per-bin": fmt(n * b / w), "ex1-rate": fmt(q(n / w, "request/s")),
            "ex2-a": num(A), "ex2-rho": fmt(rho * 100) + "%", "ex2-rate": fmt(q(rate, "request/s")),
            "ex2-attempts": fmt(q(A * rate, "request/s")), "ex2-capped": fmt(q((1 + rho) * rate, "request/s"))}


CASE_DRAWS = 100000


def case_rows() -> list[list[str]]:
    """The policy cases tests/components/test_retry.py holds, run live on a seeded generator."""
    from utils.components.retry import decorrelated_jitter, equal_jitter, exponential, full_jitter
    rng, n, k = np.random.default_rng(0), CASE_DRAWS, 3
    w = float(window(k, 1.0, 30.0))
    fj, ej = full_jitter(k, rng, 1.0, 30.0, n), equal_jitter(k, rng, 1.0, 30.0, n)
    dj = decorrelated_jitter(np.full(n, 2.0), rng, 1.0, 30.0)
    rng_ = lambda x: f"{fmt(x.min(), digits=2, style='plain')} to {fmt(x.max(), digits=2)} s, mean {fmt(x.mean(), digits=3)} s"  # noqa: E731
    big = decorrelated_jitter(np.full(10, 100.0), rng, 1.0, 30.0)
    return [["exponential, retries k = 0 to 6", "base 2^k, capped",
             ", ".join(num(x) for x in exponential(np.arange(7), 1.0, 30.0)) + " s"],
            [f"full jitter, k = {k} (window {num(w)} s)", f"uniform on [0, {num(w)}], mean {num(w / 2)}", rng_(fj)],
            [f"equal jitter, k = {k}", f"uniform on [{num(w / 2)}, {num(w)}], mean {num(3 * w / 4)}", rng_(ej)],
            ["decorrelated, previous sleep 2 s", "uniform on [1, 6], mean 3.5", rng_(dj)],
            ["decorrelated, previous sleep 100 s", "capped at 30 s", f"largest {num(big.max())} s"]]


SPEC = Spec("retry-jitter", PARAMETERS, RESULTS, compute, validate=validate)
