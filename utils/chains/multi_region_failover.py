"""multi-region-failover: two regions at 60% are not one region with a spare; N-1 sizing; the seconds
after a region drops; routing with a residency override; weights warm everywhere.

The closed forms: N regions at utilisation u leave N u / (N - 1) on the survivors; a survivor past 100%
grows its queue by the excess every second; N - 1 sizing caps u at (N - 1) / N. The seeded simulation
(utils.serving.failover.simulate, with utils.components.retry's policies and budget) runs the survivor's first seconds three
ways: clients retrying on a fixed interval into a queue that refuses nothing; jittered retries under a
retry budget; and the same with admission control.
"""
from __future__ import annotations

import math
import statistics

from utils import catalog, models
from utils.chain import Chain, memoised
from utils.params import Param, ParameterError, Result, Spec
from utils.serving import autoscale, failover
from utils.units import fmt, pct, q
from utils.verdicts import UNCHECKABLE, Claim

SIMULATION = "the surviving region's seconds after the other drops, three client and server policies (utils.serving.failover)"
BOOK = "this book's assumption"
PRICE = catalog.price("h100-rental")["contract_1y"]
SEEDS = 5    # every run is repeated on seeds seed .. seed + 4: the goodputs are a median and a range over them
POLICIES = (("naive", "g_naive", "goodput share, fixed-interval retries, nothing refused"),
            ("jitter", "g_jit", "goodput share, jittered retries under a budget"),
            ("admission", "g_ac", "goodput share, jitter, budget and admission control"))

PARAMETERS = (
    Param("regions", 2, "regions serving the same model", check="whole", source="the claim: two regions"),
    Param("utilisation", 0.6, "each region's load over its capacity before the drop", check="fraction",
          source="the claim: 60%"),
    Param("replicas_per_region", 20, "serving replicas in each region", check="whole", source=BOOK),
    Param("replica_rps", 12.0, "requests per second one replica serves within its objectives", unit="request/s",
          source=BOOK + ": about the tail-latency chapter's healthy replica (a test holds the two to two figures)"),
    Param("model", "llama-3-70b", "the model whose weights every region keeps warm", check="model",
          source="catalog: Llama-3-70B"),
    Param("gpus_per_replica", 8, "GPUs per replica", unit="GPU", check="whole", source=BOOK + ": one node"),
    Param("gpu_hour_usd", PRICE.q.m, "price of a GPU-hour", unit="USD/GPU/hour", source=PRICE.cite),
    Param("detect_s", 5.0, "health checks and routing change after the drop", unit="s", source=BOOK),
    Param("in_flight_s", 2.0, "the dead region's in-flight requests, in seconds of its arrivals", unit="s",
          source=BOOK),
    Param("client_timeout_s", 5.0, "how long a client waits for an attempt before retrying", unit="s", source=BOOK),
    Param("max_attempts", 4, "attempts per request, the first included", check="whole", source=BOOK),
    Param("retry_base_s", 1.0, "retry interval (fixed) or first backoff window (jittered)", unit="s",
          source="utils.components.retry: Brooker's base"),
    Param("retry_cap_s", 20.0, "longest backoff window", unit="s", source=BOOK),
    Param("retry_budget", 0.1, "retries allowed as a share of requests", check="fraction",
          source="Google SRE book, ch. 22: a per-client retry budget of 10%"),
    Param("admission_s", 2.0, "admission control: refuse a request that would wait longer than this", unit="s",
          source=BOOK),
    Param("scale_lag_s", 30.0, "autoscaler's metrics window before it asks for replicas", unit="s", source=BOOK),
    Param("start_s", 300.0, "a new replica's start-up, request to serving", unit="s",
          source="peak-vs-average chapter: a cold engine on a held node, about five minutes"),
    Param("window_s", 30.0, "the seconds after the drop the page reports", unit="s", source="the chapter's brief"),
    Param("paid_share", 0.3, "share of the traffic that is paid (served first when capacity is short)",
          check="share", source=BOOK),
    Param("seed", 0, "seed of the arrivals and the jitter", check="non_negative", source="this book's choice"),
)

RESULTS = (
    Result("survivor_utilisation", "", "Survivor's utilisation after one region drops", of="U_s", percent=True),
    Result("n_minus_one_ceiling", "", "Highest utilisation N-1 sizing allows", of="u_max", percent=True),
    Result("queue_wait_after_window", "s", "Queue wait after the window, nothing refused", of="w_T"),
    Result("spare_cost_per_year", "USD/year", "Cost of the replicas N-1 sizing adds", of="D_spare"),
    Result("weights_everywhere", "GB", "Weight bytes held warm across the regions' replicas", of="M_all"),
    Result("goodput_naive", "", "Goodput share, fixed-interval retries, no admission control (median of 5 seeds)",
           of="g_naive", percent=True),
    Result("goodput_naive_low", "", "The same, lowest of the 5 seeds", of="g_naive_lo", percent=True),
    Result("goodput_naive_high", "", "The same, highest of the 5 seeds", of="g_naive_hi", percent=True),
    Result("goodput_jitter", "", "Goodput share, jittered retries and a budget (median of 5 seeds)", of="g_jit",
           percent=True),
    Result("goodput_admission", "", "Goodput share, jitter, budget and admission control (median of 5 seeds)",
           of="g_ac", percent=True),
    Result("goodput_admission_low", "", "The same, lowest of the 5 seeds", of="g_ac_lo", percent=True),
    Result("goodput_admission_high", "", "The same, highest of the 5 seeds", of="g_ac_hi", percent=True),
    Result("wasted_naive", "", "Survivor capacity spent on abandoned requests, naive (median of 5 seeds)",
           of="x_naive", percent=True),
)


POISSON_MAX = 1e18         # requests one Poisson draw may hold (numpy refuses a mean past about 9.2e18)
WINDOW_REQUESTS_MIN = 30   # requests a region takes in the window, at least: a seed draws none once in e^30


def validate(p):
    if p.regions < 2:
        raise ParameterError(f"regions must be at least 2 to fail over, got {p.regions}")
    if p.retry_cap_s < p.retry_base_s:
        raise ParameterError(f"retry_cap_s must be at least retry_base_s ({p.retry_base_s}), got {p.retry_cap_s}")
    if p.window_s > 120:
        raise ParameterError(f"window_s must be at most 120 (the simulation is seconds, not hours), got {p.window_s}")
    capacity = p.replicas_per_region * p.replica_rps
    if capacity * max(p.in_flight_s, failover.DT) > POISSON_MAX:
        raise ParameterError(f"replicas_per_region x replica_rps x in_flight_s: {capacity:g} request/s puts over "
                             f"{POISSON_MAX:.0e} requests in one Poisson draw of the simulation, past what numpy draws")
    if p.utilisation * capacity * p.window_s < WINDOW_REQUESTS_MIN:
        raise ParameterError(f"utilisation x replicas_per_region x replica_rps x window_s: under "
                             f"{WINDOW_REQUESTS_MIN} requests expected in the window, so a seed may draw none and "
                             "leave its goodput shares undefined")


def runs(p) -> dict:
    """The three seeded runs of the survivor (a pure function of p)."""
    cap = p.replicas_per_region * p.replica_rps
    d = failover.Drop(capacity=cap, utilisation=p.utilisation,
                      arriving=p.regions * p.utilisation / (p.regions - 1) - p.utilisation,
                      detect_s=p.detect_s, in_flight_s=p.in_flight_s,
                      scale_lag_s=p.scale_lag_s, start_s=p.start_s, horizon=5.0 + p.window_s + 5.0,
                      added=max(0.0, needed_replicas(p) - p.replicas_per_region) * p.replica_rps)
    common = dict(base=p.retry_base_s, cap=p.retry_cap_s, timeout_s=p.client_timeout_s, max_attempts=p.max_attempts)
    out = {"naive": failover.simulate(d, failover.Clients("constant", **common), seed=p.seed),
           "jitter": failover.simulate(d, failover.Clients("full_jitter", budget=p.retry_budget, **common),
                                       seed=p.seed),
           "admission": failover.simulate(d, failover.Clients("full_jitter", budget=p.retry_budget, **common),
                                          admission_s=p.admission_s, seed=p.seed)}
    return {k: (r, r.window(d.t_drop, d.t_drop + p.window_s)) for k, r in out.items()}


def needed_replicas(p) -> int:
    """Replicas one survivor needs for its share of the whole load (utils.serving.autoscale.replicas_needed)."""
    load = p.regions * p.utilisation * p.replicas_per_region * p.replica_rps / (p.regions - 1)
    return int(autoscale.replicas_needed(load, p.replica_rps, 0.0))


def compute(p) -> Chain:
    def src(name: str) -> str:      # the parameter's own source while it holds the default
        return SPEC.source(p, name)

    ch = Chain(f"{p.regions} regions at {pct(p.utilisation)}, one drops")
    ch.given("N", p.regions, "regions", kind="assumption", source=src("regions"))
    ch.given("u", p.utilisation, "each region's utilisation before the drop", kind="assumption", source=src("utilisation"))
    ch.given("R", q(p.replicas_per_region, ""), "replicas per region", kind="assumption", source=src("replicas_per_region"))
    ch.given("r", q(p.replica_rps, "request/s"), "requests per second per replica", kind="assumption",
             source=src("replica_rps"))
    ch.step("C", "R*r", "request/s", "one region's capacity")
    ch.step("L", "N*u*C", "request/s", "the whole load")
    ch.step("U_s", "L/((N - 1)*C)", "", "survivor's utilisation: the load on N - 1 regions")
    ch.step("u_max", "(N - 1)/N", "", "N-1 sizing: the most each region may run at")
    ch.step("E", "L/(N - 1) - C", "request/s", "each survivor's excess arrivals: its queue's growth")
    ch.given("T", q(p.window_s, "s"), "the window after the drop", kind="assumption", source=src("window_s"))
    ch.step("w_T", "Max(E, 0)*T/C", "s", "queue wait at the window's end, if nothing is refused")
    ch.given("f_p", p.paid_share, "paid share of the traffic", kind="assumption", source=src("paid_share"))
    ch.step("s_free", "Max(L/(N - 1) - C, 0)/((1 - f_p)*L/(N - 1))", "",
            "share of the free traffic to refuse so the paid traffic is all served")
    # --- N-1 sizing's price, and the weights it keeps warm
    ch.given("R_n", q(math.ceil(p.regions * p.utilisation * p.replicas_per_region / (p.regions - 1) - 1e-9),
                      ""), "replicas per region so N - 1 carry the load at 100% (rounded up)",
             kind="derived", source="ceil(N u R / (N - 1))")
    ch.given("g", q(p.gpus_per_replica, "GPU"), "GPUs per replica", kind="assumption", source=src("gpus_per_replica"))
    ch.given("p_h", q(p.gpu_hour_usd, "USD/GPU/hour"), "price of a GPU-hour",
             kind=PRICE.kind if p.gpu_hour_usd == PRICE.q.m else "assumption", source=src("gpu_hour_usd"))
    ch.given("h_y", q(8766, "hour/year"), "hours in a year", kind="derived", source="365.25 x 24")
    ch.step("D_spare", "N*Max(R_n - R, 0)*g*p_h*h_y", "USD/year", "what N-1 sizing adds, a year")
    ch.given("M_w", models.weight_bytes(p.model, 2.0).to("GB"), f"{p.model.name} weights in bf16",
             kind="derived", source="utils.models.weight_bytes")
    ch.step("M_all", "N*Max(R_n, R)*M_w", "GB", "weights warm in every replica of every region")
    # --- the autoscaler
    ch.given("R_need", q(needed_replicas(p), ""), "replicas a survivor needs (utils.serving.autoscale)",
             kind="derived", source="utils.serving.autoscale.replicas_needed")
    ch.given("t_d", q(p.detect_s, "s"), "detection and routing change", kind="assumption", source=src("detect_s"))
    ch.given("t_l", q(p.scale_lag_s, "s"), "autoscaler's metrics window", kind="assumption", source=src("scale_lag_s"))
    ch.given("t_s", q(p.start_s, "s"), "replica start-up", kind="assumption", source=src("start_s"))
    ch.step("t_cap", "t_d + t_l + t_s", "s", "from the drop to the first added replica serving")
    # --- the simulation, on SEEDS seeds: a median and a range
    per_seed = [runs(p.replace(seed=p.seed + i)) for i in range(SEEDS)]
    how = f"utils.serving.failover.simulate, seeds {p.seed} to {p.seed + SEEDS - 1}"
    for key, name, label in POLICIES:
        got = [rs[key][1]["goodput"] for rs in per_seed]
        ch.given(name, q(statistics.median(got), ""), label + f", median of {SEEDS} seeds", kind="derived", source=how)
        ch.given(name + "_lo", q(min(got), ""), "the same, lowest of the seeds", kind="derived", source=how)
        ch.given(name + "_hi", q(max(got), ""), "the same, highest of the seeds", kind="derived", source=how)
    ch.given("x_naive", q(statistics.median(rs["naive"][1]["wasted"] for rs in per_seed), ""),
             f"capacity spent on abandoned requests, naive, median of {SEEDS} seeds", kind="derived", source=how)
    ch.data["runs"] = per_seed[0]          # the page's figure and table draw the first seed's runs
    ch.data["seeds"] = per_seed
    return ch


# --- the claim ------------------------------------------------------------------------------------
QUOTE = ("A candidate who proposes dropping requests during a spike signals a lack of understanding of the "
         "product mission. Instead, the expected design includes queueing mechanisms with priority weighting, "
         "where paid enterprise traffic bypasses the backlog of free-tier users without losing the state of "
         "the in-flight generation.")
CLAIM = {prm.name: prm.default for prm in PARAMETERS}


@memoised
def claim_chain(**changes) -> Chain:
    """The chain (and its seeded runs) on the claim's inputs, with `changes`."""
    return compute(SPEC.check(**{**CLAIM, **changes}))


def claims() -> list[Claim]:
    ch = claim_chain()
    # the book's case must come out on every seed, not on the one the figure draws
    queue_loses = all(rs["naive"][1]["goodput"] < rs["admission"][1]["goodput"]
                      and rs["naive"][1]["worst_wait"] > CLAIM["client_timeout_s"] for rs in ch.data["seeds"])
    g_n, g_ac = spread(ch, "g_naive"), spread(ch, "g_ac")
    wait, wasted = over_seeds(ch, "naive", "worst_wait", "s"), over_seeds(ch, "naive", "wasted")
    return [Claim(
        "never-drop", quote=QUOTE, source="spec/003, the paragraph on volatile demand and backpressure",
        claimed="queue every request in a spike, paid first; drop none",
        derived=(f"survivor at {pct(ch['U_s'].m)}: nothing refused, goodput {g_n}, worst waits {wait}; refusing "
                 f"past {fmt(q(CLAIM['admission_s'], 's'))} of queue, {g_ac} (ranges over {SEEDS} seeds)"),
        # "During a spike" names no size, capacity or deadline, and a spike whose backlog drains within the
        # deadline queues without loss: refuting it with a region's loss (an input the source does not name)
        # would be too harsh, however the book's own case comes out. The book's case is its own figure.
        verdict=UNCHECKABLE,
        reason=(f"The source's 'during a spike' names no size, capacity or deadline, and a spike whose backlog "
                f"drains before the deadline queues without dropping anything, so the claim cannot be checked; the "
                f"book's own case is not a spike but a region lost: two regions at {pct(CLAIM['utilisation'])} "
                f"leave the survivor at {pct(ch['U_s'].m)}, "
                + (f"a queue that refuses nothing grows by {fmt(ch['E'])} without bound, waits pass the clients' "
                   f"{fmt(q(CLAIM['client_timeout_s'], 's'))} timeout and they retry into it, so goodput over the "
                   f"{fmt(ch['T'])} after the drop is {g_n} over {SEEDS} seeds, with {wasted} of the capacity spent "
                   f"on abandoned requests, against {g_ac} with admission control that refuses what would wait past "
                   f"{fmt(q(CLAIM['admission_s'], 's'))}, on every seed." if queue_loses else
                   f"and over the {fmt(ch['T'])} after the drop a queue that refuses nothing reaches a goodput of "
                   f"{g_n} over {SEEDS} seeds, against {g_ac} with admission control that refuses what would wait "
                   f"past {fmt(q(CLAIM['admission_s'], 's'))}: not a loss on every seed.")))]


def spread(ch, name: str) -> str:
    """A goodput row's range over the seeds, as text."""
    lo, hi = ch[name + "_lo"].m, ch[name + "_hi"].m
    return f"{pct(lo)} to {pct(hi)}" if pct(lo) != pct(hi) else pct(lo)


def over_seeds(ch, policy: str, field: str, unit: str = "") -> str:
    """A run's window figure (goodput, waste, worst wait, ...) as its range over the seeds, as text."""
    got = [rs[policy][1][field] for rs in ch.data["seeds"]]
    if unit:
        lo, hi = fmt(q(min(got), unit)), fmt(q(max(got), unit))
    elif field == "amplification":
        lo, hi = fmt(min(got), digits=3), fmt(max(got), digits=3)
    else:
        lo, hi = pct(min(got)), pct(max(got))
    return lo if lo == hi else f"{lo} to {hi}"


# --- tables, prose numbers, figure data -----------------------------------------------------------
def policies_table(ch) -> str:
    names = {"naive": "fixed-interval retries, nothing refused", "jitter": "full jitter, retry budget, nothing refused",
             "admission": "full jitter, retry budget, admission control"}
    def gave_up(k):
        got = [rs[k][0].gave_up for rs in ch.data["seeds"]]
        return fmt(min(got)) if min(got) == max(got) else f"{fmt(min(got))} to {fmt(max(got))}"
    rows = [f"| {names[k]} | {over_seeds(ch, k, 'goodput')} | {over_seeds(ch, k, 'amplification')} | "
            f"{over_seeds(ch, k, 'wasted')} | {over_seeds(ch, k, 'worst_wait', 's')} | {over_seeds(ch, k, 'refused')} | "
            f"{gave_up(k)} |" for k in names]
    return (f"Each cell is a range over {SEEDS} seeds.\n\n"
            "| policy | goodput (share of demand) | attempts per request | capacity wasted | worst queue wait | "
            "attempts refused | clients that gave up |\n|---|---|---|---|---|---|---|\n" + "\n".join(rows))


def sizing_table() -> str:
    rows = []
    for n in (2, 3, 4, 6):
        rows.append(f"| {n} | {pct(failover.n_minus_one_ceiling(n))} | {pct(failover.survivor_utilisation(n, 0.6))} | "
                    f"{pct(n / (n - 1) - 1)} |")
    return ("| regions | N-1 ceiling | survivors after a drop from sixty per cent | capacity over the load |\n"
            "|---|---|---|---|\n" + "\n".join(rows))


RTT = {"us-east": 10.0, "us-west": 70.0, "eu-west": 80.0, "eu-central": 90.0}   # ms from a US east client
RESIDENCY = {"eu": ("eu-west", "eu-central"), "us": ("us-east", "us-west")}


def routing_table() -> str:
    cases = (("none", None, {}), ("none", None, {"us-east": False}), ("eu", "eu", {}),
             ("eu", "eu", {"eu-west": False}), ("eu", "eu", {"eu-west": False, "eu-central": False}))
    rows = []
    for label, res, down in cases:
        healthy = {r: r not in down for r in RTT}
        to = failover.route(res, healthy, RTT, RESIDENCY)
        rows.append(f"| {label} | {', '.join(down) or 'none'} | {to or 'refused: no allowed region is up'} |")
    return ("A client near us-east; round-trip times " + ", ".join(f"{k} {fmt(q(v, 'ms'))}" for k, v in RTT.items())
            + ".\n\n| residency | regions down | routed to |\n|---|---|---|\n" + "\n".join(rows))


BORDER = (("conversation history and prompts", "no", "personal data: stays in the user's region"),
          ("KV and prefix caches", "no", "the prompt's content in another form; rebuilt, never copied"),
          ("request logs and traces with payloads", "no", "strip payloads before they leave, or keep them home"),
          ("adapters fine-tuned on a customer's data", "no", "the customer's data in another form"),
          ("base-model weights", "yes", "no user data in them: copy them everywhere, ahead of time"),
          ("aggregate metrics, health, capacity", "yes", "counts, not content: the routing layer needs them"))


def border_table() -> str:
    return ("| state | may cross a border | why |\n|---|---|---|\n"
            + "\n".join(f"| {a} | {b} | {c} |" for a, b, c in BORDER))


def chain_texts(ch) -> dict:
    return {"c-C": fmt(ch["C"]), "c-L": fmt(ch["L"]), "c-E": fmt(ch["E"]), "c-Rn": fmt(ch["R_n"]),
            "c-R": fmt(ch["R"]), "c-need": fmt(ch["R_need"]), "c-tcap": fmt(ch["t_cap"].to("s")),
            "c-T": fmt(ch["T"]), "c-Mw": fmt(ch["M_w"]), "c-free": pct(ch["s_free"].m),
            "c-paid": pct(ch["f_p"].m), "c-jit-wait": over_seeds(ch, "jitter", "worst_wait", "s"),
            "c-naive-wait": over_seeds(ch, "naive", "worst_wait", "s"),
            "c-amp": over_seeds(ch, "naive", "amplification"), "c-seeds": fmt(SEEDS)}


def series(ch, per: int = 10) -> dict:
    """The figure's data: per run, time since the drop, goodput, offered attempts and capacity, each a
    mean over `per` bins (one second)."""
    def mean(x):
        m = len(x) // per * per
        return x[:m].reshape(-1, per).mean(axis=1)
    return {k: (mean(r.t) - 5.0, mean(r.good), mean(r.offered), mean(r.capacity)) for k, (r, _) in ch.data["runs"].items()}


def what_changes(p, ch) -> dict:
    a, b, c = claim_chain(client_timeout_s=15.0), claim_chain(regions=3), claim_chain(utilisation=0.5)
    return {"wc-timeout": fmt(q(15.0, "s")), "wc-timeout-g": spread(a, "g_naive"),
            "wc-three": pct(b["U_s"].m), "wc-three-g": spread(b, "g_naive"),
            "wc-half": pct(0.5), "wc-half-u": pct(c["U_s"].m), "wc-half-g": spread(c, "g_naive")}


def exercises(p, ch) -> dict:
    a = claim_chain(start_s=30.0)
    return {"ex1-n": fmt(4), "ex1-u": pct(failover.n_minus_one_ceiling(4)), "ex1-extra": pct(4 / 3 - 1),
            "ex2-start": fmt(q(30.0, "s")), "ex2-tcap": fmt(a["t_cap"].to("s")),
            "ex2-g": spread(a, "g_naive"), "ex2-g-ac": spread(a, "g_ac"),
            "ex3-bytes": fmt(claim_chain()["M_all"]), "ex3-cost": fmt(claim_chain()["D_spare"])}


SPEC = Spec("multi-region-failover", PARAMETERS, RESULTS, compute, validate=validate)
