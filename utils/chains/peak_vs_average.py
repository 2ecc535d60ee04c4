"""peak-vs-average: a diurnal peak several times the mean, the static fleet it sets, the utilisation and
idle money that follow, and what a scheduled autoscaler recovers given the time a replica takes to start.

The day's curve, the fleets and the window arithmetic live in utils.serving.autoscale; this module holds the
chapter's chain, its claim, and the data its tables and figures draw.
"""
from __future__ import annotations

import numpy as np

from utils import catalog, models, roofline
from utils.chain import Chain, as_float, memoised
from utils.params import Param, ParameterError, Result, Spec
from utils.serving import autoscale
from utils.serving.autoscale import DT_S, breakdown, fleet, gpu_hours, load_curve, steepest_rise
from utils.units import fmt, pct, q
from utils.verdicts import UNCHECKABLE, Claim

PARAMETERS = (
    Param("peak_to_mean", 3.0, "busiest moment of the day over the day's mean load",
          source="the claim (spec/001): a 3x diurnal peak"),
    Param("trough_to_peak", 0.1, "quietest moment over the busiest (below 1 / peak_to_mean)", check="non_negative",
          source="this book's assumption: the night's trough at a tenth of the peak"),
    Param("mean_tokens_per_second", 1e5, "fleet-wide output tokens per second, averaged over the day",
          unit="token/s", source="this book's assumption: a service averaging this output rate"),
    Param("replica_tokens_per_second", 6480.0, "output tokens/s one replica sustains at its latency target",
          unit="token/s", source="the replica-sizing chapter's replica (Llama-3-70B, 8 x H100 SXM), recomputed here"),
    Param("gpus_per_replica", 8, "GPUs in one replica", unit="GPU", check="whole",
          source="the replica-sizing chapter's replica (one 8-GPU node)"),
    Param("headroom", 0.2, "extra capacity above the load, as a fraction", check="non_negative",
          source="this book's assumption: a replica down and bursts above the curve (as in replica sizing)"),
    Param("load_minutes", 5.0, "replica start-up time: request to serving", unit="minute",
          source="this book's assumption: a cold engine on a node already held (the start-up table)"),
    Param("min_replicas", 2, "fleet floor the autoscaler never goes below", check="whole",
          source="this book's assumption: one replica in each of two zones"),
    Param("gpu_hour_usd", 2.35, "price of a GPU-hour", unit="USD/GPU/hour",
          source="catalog h100-rental.contract_1y: one-year H100 contract, March 2026"),
)

RESULTS = (
    Result("replicas_static", "", "Replicas in a static fleet sized for the peak, with headroom", of="R_s"),
    Result("gpus_static", "GPU", "GPUs in the static fleet", of="G_s"),
    Result("average_utilisation", "", "Average utilisation of the static fleet", of="u", percent=True),
    Result("idle_gpu_hours_per_day", "GPU*hour", "Idle GPU-hours per day, static fleet", of="H_idle"),
    Result("idle_usd_per_day", "USD", "Idle money per day, static fleet", of="D_idle"),
    Result("autoscaled_gpu_hours_saved_per_day", "GPU*hour",
           "GPU-hours per day a scheduled autoscaler saves against the static fleet", of="H_sv"),
    Result("autoscaled_share_of_idle_recovered", "", "Share of the idle GPU-hours autoscaling recovers", of="r",
           percent=True),
    Result("peak_slope", "token/s/min", "Steepest rise of the load", of="S_max"),
)

LT = {"a": 0.5, "b": 5.0, "c": 20.0}        # the three start-up times the page compares, minutes


def validate(p):
    if not p.peak_to_mean > 1:
        raise ParameterError(f"peak_to_mean must be > 1 (a load with a peak above its mean), got {p.peak_to_mean!r}")
    if not p.trough_to_peak * p.peak_to_mean < 1:
        raise ParameterError(f"trough_to_peak={p.trough_to_peak!r} must be below 1 / peak_to_mean = "
                             f"{1 / p.peak_to_mean:.4g}: the trough cannot reach the mean")
    if p.load_minutes > 12 * 60:
        raise ParameterError(f"load_minutes must be at most half a day (720), got {p.load_minutes!r}")


def peak_chain(peak_to_mean, trough_to_peak, mean_tokens_per_second, replica_tokens_per_second, gpus_per_replica,
               headroom, load_minutes, min_replicas, gpu_hour_usd, *, source="parameters cell") -> Chain:
    """The static fleet, its utilisation and idle money; then the scheduled autoscaler over the day. source:
    one string for every input, or a function of the parameter's name (compute passes SPEC.source)."""
    src = source if callable(source) else (lambda _name: source)
    ch = Chain(f"A day peaking at {peak_to_mean:.3g} x its mean, on replicas of {fmt(replica_tokens_per_second)} token/s")
    ch.given("P", peak_to_mean, "peak over mean of the day's load", kind="assumption", source=src("peak_to_mean"))
    ch.given("mu", q(mean_tokens_per_second, "token/s"), "fleet-wide output rate, the day's mean", kind="assumption",
             source=src("mean_tokens_per_second"))
    ch.given("c", q(replica_tokens_per_second, "token/s"), "output rate one replica sustains at its latency target",
             kind="assumption", source=src("replica_tokens_per_second"))
    ch.given("h", headroom, "headroom above the load", kind="assumption", source=src("headroom"))
    ch.given("g", q(gpus_per_replica, "GPU"), "GPUs per replica", kind="assumption", source=src("gpus_per_replica"))
    ch.given("R_min", min_replicas, "fleet floor", kind="assumption", source=src("min_replicas"))
    ch.step("L_pk", "P*mu", "token/s", "peak load")
    ch.step("R_s", "Max(ceiling(L_pk*(1 + h)/c), R_min)", "", "replicas: the peak, with headroom, in whole replicas")
    ch.step("G_s", "R_s*g", "GPU", "GPUs in the static fleet")
    ch.step("u_0", "mu/L_pk", "", "utilisation of a fleet exactly the peak's size: 1/P")
    ch.step("u", "mu/(R_s*c)", "", "average utilisation of the static fleet")
    ch.given("T_d", q(24, "hour"), "one day", kind="definition")
    price = catalog.price("h100-rental")["contract_1y"]
    if gpu_hour_usd == price.q.m:
        ch.given("p", price, "price of a GPU-hour (one-year contract)")
    else:
        ch.given("p", q(gpu_hour_usd, "USD/GPU/hour"), "price of a GPU-hour", kind="assumption", source=src("gpu_hour_usd"))
    ch.step("H_s", "G_s*T_d", "GPU*hour", "GPU-hours the static fleet runs per day")
    ch.step("H_idle", "H_s*(1 - u)", "GPU*hour", "idle GPU-hours per day")
    ch.step("D_s", "H_s*p", "USD", "the static fleet's bill per day (set by the peak)")
    ch.step("D_use", "mu*g*T_d*p/c", "USD", "the bill of a fleet that followed the load exactly (set by the average)")
    ch.step("D_idle", "H_idle*p", "USD", "idle money per day")
    # The autoscaler: how fast the load rises against how long a replica takes to start.
    sh = autoscale.shape(float(peak_to_mean), float(trough_to_peak))
    slope, how = steepest_rise(peak_to_mean, trough_to_peak, mean_tokens_per_second)
    ch.given("n", sh["n"], "exponent of the day's curve", kind="derived", source="sympy nsolve on the peak-to-mean ratio")
    ch.given("S_max", q(slope, "token/s/min"), "steepest rise of the load", kind="derived", source=how)
    ch.given("tau", q(load_minutes, "min"), "replica start-up time", kind="assumption", source=src("load_minutes"))
    ch.step("dR", "S_max*tau*(1 + h)/c", "", "replicas the load climbs by in one start-up time, at the steepest point")
    L = load_curve(peak_to_mean, trough_to_peak, mean_tokens_per_second)
    R_a = fleet(L, replica_tokens_per_second, headroom, load_minutes, min_replicas)
    ch.given("H_a", q(gpu_hours(R_a, gpus_per_replica), "GPU*hour"), "GPU-hours per day of the scheduled autoscaler",
             kind="derived", source=f"R_a(t) integrated over the day in {fmt(q(DT_S, 's'))} steps")
    ch.step("H_sv", "H_s - H_a", "GPU*hour", "GPU-hours autoscaling saves per day")
    ch.step("r", "H_sv/H_idle", "", "share of the idle hours it recovers")
    ch.step("D_sv", "H_sv*p", "USD", "money it saves per day, if the saved hours are not paid for")
    ch.data.update(load=L, R_a=R_a, shape=sh)
    return ch


def compute(p) -> Chain:
    return peak_chain(**p, source=lambda name: SPEC.source(p, name))


# --- one replica's capacity and start-up time ------------------------------------------------------
def replica_capacity(model="llama-3-70b", gpu="h100-sxm", gpus=8, context=4096, rate=20.0, bytes_per=2.0) -> dict:
    """The replica-sizing reading: users whose full caches fit (memory binds), times the promised rate, with
    the decode step at that batch, at the achieved share of HBM bandwidth (utils.roofline), as a check that the
    rate is met."""
    m, acc, chip = catalog.model(model), catalog.accelerator(gpu), roofline.chip(gpu)
    util = catalog.entry("software", "vllm")["gpu_memory_utilization"].q
    weights = models.weight_bytes(m, bytes_per)
    budget = gpus * acc.q("hbm_capacity") * util - weights
    per_user = models.kv_copies(m, gpus) * models.kv_bytes_per_token(m, bytes_per) * q(context, "token")
    users = int(np.floor(as_float(budget / per_user, "")))
    share = roofline.FRACTIONS[1]            # no step reads at the datasheet's roof
    step = ((weights + users * per_user) / (gpus * share * chip.bandwidth)).to("ms")
    return dict(users=users, tps=q(users * rate, "token/s"), step=step, rate_floor=q(1, "token") / step, share=share,
                rate=q(rate, "token/s"), context=q(context, "token"), gpus=gpus, weights=weights.to("GB"))


SLLM = ("ServerlessLLM (Fu et al., OSDI 2024, arXiv:2401.14351): downloads at about 5 GB/s; "
        "LLaMA-2-70B takes about 84 s to load into GPU memory with standard loaders")
BOOK = "this book's assumption"


def start_up_paths() -> list[tuple[str, list[tuple[str, object, str]]]]:
    """Three ways a replica starts: (name, [(component, seconds, source)])."""
    cap = replica_capacity()
    w, pcie = cap["weights"], catalog.interconnect("pcie5-x16")["bandwidth_unidirectional"]
    paths = [
        ("warm pool: engine initialised, weights in host memory", [
            ("weights host to GPU, each GPU over its own PCIe 5.0 x16", (w / cap["gpus"], pcie.q), pcie.cite),
            ("wake, warm-up pass, join the load balancer", q(30, "s"),
             BOOK + ": a pre-started engine with its weights offloaded (vLLM's sleep mode)")]),
        ("cold engine on a node already held", [
            ("weights from a shared store", (w, q(5, "GB/s")), SLLM),
            ("weights into GPU memory (standard loader)", q(84, "s"), SLLM),
            ("engine start: CUDA init, compile, graph capture, warm-up", q(3, "min"),
             BOOK + ": minutes for a 70B engine without a compile cache")]),
        ("new cloud node", [
            ("provision and boot a GPU node", q(10, "min"), BOOK + ": on-demand capacity, when the region has it"),
            ("pull a container image of about 20 GB at 1 GB/s", (q(20, "GB"), q(1, "GB/s")), BOOK),
            ("weights from an object store at 1 GB/s per node", (w, q(1, "GB/s")), BOOK),
            ("weights into GPU memory (standard loader)", q(84, "s"), SLLM),
            ("engine start: CUDA init, compile, graph capture, warm-up", q(3, "min"), BOOK)]),
    ]
    return [(name, [(what, ((t[0] / t[1]) if isinstance(t, tuple) else t).to("s"), src) for what, t, src in parts])
            for name, parts in paths]


def start_up_table() -> tuple[str, dict]:
    rows, totals = [], {}
    for name, parts in start_up_paths():
        for what, t, src in parts:
            rows.append(f"| {name} | {what} | {fmt(t)} | {src} |")
        totals[name] = sum((t for _, t, _ in parts), q(0, "s")).to("min")
        rows.append(f"| {name} | **total** | **{fmt(totals[name])}** | |")
    return "| path | component | time | source |\n|---|---|---|---|\n" + "\n".join(rows), totals


# --- the claim ------------------------------------------------------------------------------------
QUOTE = ("Peak sets the fleet, average sets the bill, and the ratio between them is idle money. The chain "
         "from a 3x diurnal peak to a replica count, the utilization it implies, what autoscaling can and "
         "cannot recover given model load times, and what to do with the trough.")
SOURCE = "spec/001, paragraph on peak and average"
# The claim names the ratio (3) and a fleet sized for the peak; the rest is this page's reading.
CLAIM = dict(peak_to_mean=3.0, trough_to_peak=0.1, mean_tokens_per_second=1e5, replica_tokens_per_second=6480.0,
             gpus_per_replica=8, headroom=0.2, load_minutes=5.0, min_replicas=2,
             gpu_hour_usd=float(catalog.price("h100-rental").q("contract_1y").m))


def claim_chain(**changes) -> Chain:
    return peak_chain(**{**CLAIM, **changes}, source="the claim")


@memoised
def checks() -> dict:
    cc = claim_chain()
    P0 = CLAIM["peak_to_mean"]
    whole = claim_chain(headroom=0.0, mean_tokens_per_second=20 * CLAIM["replica_tokens_per_second"])
    shapes = {}
    for trough in (0.0, 0.05, CLAIM["trough_to_peak"], 0.3):     # the ratio holds whatever the trough
        L = load_curve(P0, trough, CLAIM["mean_tokens_per_second"])
        shapes[trough] = (L.mean() / CLAIM["mean_tokens_per_second"], L.max() / L.mean(), L.min() / L.max())
    return dict(cc=cc, whole=whole, u_h=1 / (P0 * (1 + CLAIM["headroom"])), shapes=shapes,
                slow=claim_chain(load_minutes=20.0))


def claims() -> list[Claim]:
    ck = checks()
    cc, P0 = ck["cc"], CLAIM["peak_to_mean"]
    ratio_bill = (cc["D_s"] / cc["D_use"]).m
    # The source's one number is the ratio, and a fleet the peak's size averaging one over it is that ratio by
    # definition (the page asserts the identity: a residual by construction, not a check). "Average sets the bill"
    # is false of the static fleet the sentence sizes, whose invoice the peak sets, and true only of a fleet that
    # follows the load, which the source does not describe: no reading of its own words makes the sentence checkable.
    return [Claim(
        "peak-average", quote=QUOTE, source=SOURCE,
        claimed=f"a static fleet for a {P0:g}x peak averages {pct(1 / P0)} before headroom",
        derived=f"{pct(cc['u_0'])} before headroom (one over the ratio, by definition), {pct(cc['u'])} with this "
                f"book's {pct(CLAIM['headroom'])} headroom and whole replicas; {pct(1 - cc['u'].m)} of its GPU-hours idle",
        verdict=UNCHECKABLE,
        reason=f"A fleet exactly the size of a {P0:g}x peak averages {pct(cc['u_0'])} by the definition of the ratio, "
               f"so the arithmetic restates the source's one number; and \"average sets the bill\" is not true of "
               f"that static fleet, whose invoice the peak sets, only of a fleet that follows the load, which the "
               f"source does not describe. The book's own figures: {pct(cc['u'])} with its {pct(CLAIM['headroom'])} "
               f"headroom and whole replicas, a cost {ratio_bill:.2f} times what the average load is worth.")]


def check_texts() -> dict:
    ck = checks()
    cc = ck["cc"]
    return {"chk-u0": pct(cc["u_0"]), "chk-whole-r": fmt(ck["whole"]["R_s"]), "chk-whole-u": pct(ck["whole"]["u"]),
            "chk-uh": pct(ck["u_h"]), "chk-u": pct(cc["u"]), "chk-r": fmt(cc["R_s"]), "chk-idle": pct(1 - cc["u"].m),
            "chk-ratio": fmt((cc["D_s"] / cc["D_use"]).m) + " x", "chk-idle-usd": "$" + fmt(cc["D_idle"].to("USD").m),
            "claim-ratio": f"{CLAIM['peak_to_mean']:.3g} x", "claim-u0": pct(1 / CLAIM["peak_to_mean"]),
            "claim-idle0": pct(1 - 1 / CLAIM["peak_to_mean"]), "claim-gpus": str(CLAIM["gpus_per_replica"])}


# --- the page's tables and figures --------------------------------------------------------------------
def chain_texts(p, ch) -> dict:
    return {"intro-ratio": f"{p.peak_to_mean:.3g} x", "intro-gpus": fmt(ch["G_s"]),
            "intro-idle-usd": "$" + fmt(ch["D_idle"].to("USD").m), "intro-load": fmt(ch["tau"]),
            "intro-recovered": pct(ch["r"]), "grid-step": fmt(q(DT_S, "s")), "p-peak": fmt(ch["L_pk"]),
            "p-mean": fmt(ch["mu"]), "p-c": fmt(ch["c"]), "p-exact": fmt((ch["L_pk"] * (1 + ch["h"]) / ch["c"]).m),
            "p-u0": pct(ch["u_0"]), "p-h": pct(p.headroom), "p-hs": fmt(ch["H_s"]),
            "p-ds": "$" + fmt(ch["D_s"].to("USD").m), "p-duse": "$" + fmt(ch["D_use"].to("USD").m),
            "p-slope": fmt(ch["S_max"].to("token/s/min").m) + " token/s per minute", "p-dr": fmt(ch["dR"]),
            "p-ha": fmt(ch["H_a"]), "p-dsv": "$" + fmt(ch["D_sv"].to("USD").m),
            "shape-ratio": f"{p.peak_to_mean:.3g} x", "shape-sine-max": "twice", "shape-b": fmt(ch.data["shape"]["b"]),
            "shape-n": fmt(ch.data["shape"]["n"])}


def breakdown_table(p, ch) -> tuple[str, dict]:
    H_s, idle = ch["H_s"].m, ch["H_idle"].m
    R_s = ch["R_s"].m
    BD = {k: breakdown(ch.data["load"], p.replica_tokens_per_second, p.gpus_per_replica, p.headroom, p.min_replicas, R_s, v)
          for k, v in LT.items()}
    b0 = BD["b"]
    lt = {k: fmt(q(v, "min")) if v >= 1 else fmt(q(v * 60, "s")) for k, v in LT.items()}
    gh = lambda x: fmt(q(x, "GPU*hour"))   # noqa: E731
    rows = [f"| the average (the bill if the fleet followed the load) | {gh(b0['avg'])} | | |",
            f"| + headroom | {gh(b0['head'])} | | |", f"| + whole replicas | {gh(b0['rounded'])} | | |",
            f"| + floor of {fmt(p.min_replicas)} replicas | {gh(b0['floored'])} | | |"]
    rows += [f"| + start-up lead of {lt[k]}, scheduled / reactive | {gh(b['sched'])} / {gh(b['react'])} | "
             f"{gh(H_s - b['sched'])} / {gh(H_s - b['react'])} | {pct((H_s - b['sched']) / idle)} / "
             f"{pct((H_s - b['react']) / idle)} |" for k, b in BD.items()]
    rows.append(f"| static fleet | {gh(H_s)} | 0 | 0% |")
    texts = {f"lt-{k}": v for k, v in lt.items()}
    for k, b in BD.items():
        texts[f"rec-sched-{k}"] = pct((H_s - b["sched"]) / idle)
        texts[f"rec-react-{k}"] = pct((H_s - b["react"]) / idle)
    texts.update({"bd-head-share": pct((b0["head"] - b0["avg"]) / (H_s - b0["avg"])),
                  "bd-head": gh(b0["head"] - b0["avg"]), "bd-round": gh(b0["rounded"] - b0["head"]),
                  "bd-lead": gh(BD["c"]["sched"] - b0["floored"]), "wc-ceiling": pct((H_s - b0["floored"]) / idle)})
    head = "| fleet | GPU-hours per day | saved against static | share of idle recovered |\n|---|---|---|---|\n"
    return head + "\n".join(rows), texts


def payment_table(p, ch) -> tuple[str, dict]:
    price = catalog.price("h100-rental")
    p_res, p_od = ch["p"], price["lambda_on_demand"].q
    H_base = q(ch.data["R_a"].min() * p.gpus_per_replica * 24, "GPU*hour")
    cost = {"static fleet, all reserved": ch["H_s"] * p_res, "autoscaled, all on-demand": ch["H_a"] * p_od,
            "reserve the trough, rent the swing on demand": H_base * p_res + (ch["H_a"] - H_base) * p_od}
    usd = lambda x: "$" + fmt(as_float(x, "USD"))   # noqa: E731
    best = min(cost, key=lambda k: as_float(cost[k], "USD"))
    table = (f"Per day, at the parameters' start-up time; reserved at {fmt(p_res)}, on demand at {fmt(p_od)} "
             f"({price['lambda_on_demand'].cite}):\n\n| fleet | cost per day |\n|---|---|\n"
             + "\n".join(f"| {k} | {usd(v)} |" for k, v in cost.items()))
    return table, {"pay-od": "$" + fmt(as_float(p_od, "USD/GPU/hour")), "pay-res": "$" + fmt(as_float(p_res, "USD/GPU/hour")),
                   "pay-breakeven": "$" + fmt(as_float(p_res * ch["H_s"] / ch["H_a"], "USD/GPU/hour")),
                   "pay-base": fmt(ch.data["R_a"].min()), "pay-best": best,
                   "pay-mixed": usd(cost["reserve the trough, rent the swing on demand"]),
                   "pay-static": usd(cost["static fleet, all reserved"])}


def trough_texts(p, ch) -> dict:
    """What the trough leaves free on the static fleet, and the longest stretch with half of it free."""
    free = (ch["R_s"].m - ch.data["R_a"]) * p.gpus_per_replica
    half = ch["R_s"].m * p.gpus_per_replica / 2
    run_len, run_free = autoscale.longest_window(free >= half, free)
    p_res = as_float(ch["p"], "USD/GPU/hour")
    return {"tr-total": fmt(q(free.mean() * 24, "GPU*hour")), "tr-usd": "$" + fmt(free.mean() * 24 * p_res),
            "tr-half": fmt(q(half, "GPU")), "tr-window": fmt(q(run_len * DT_S / 3600, "hour"), digits=2),
            "tr-window-gpuh": fmt(q(run_free.sum() * DT_S / 3600, "GPU*hour")), "tr-max-free": fmt(q(free.max(), "GPU"))}


def recovered_curves(p, ch, taus) -> dict[str, np.ndarray]:
    """Share of the idle hours recovered against the start-up time, scheduled and reactive."""
    H_s, idle = ch["H_s"].m, ch["H_idle"].m
    b = [breakdown(ch.data["load"], p.replica_tokens_per_second, p.gpus_per_replica, p.headroom, p.min_replicas,
                   ch["R_s"].m, t) for t in taus]
    return {"scheduled (forecast the day)": np.array([(H_s - x["sched"]) / idle for x in b]),
            "reactive (no forecast)": np.array([(H_s - x["react"]) / idle for x in b])}


def what_changes(p, ch) -> dict:
    """The peak, the trough and the headroom, on the claim's inputs (so the prose reads the same)."""
    cc = claim_chain()
    wc = {"2": claim_chain(peak_to_mean=2.0), "5": claim_chain(peak_to_mean=5.0, trough_to_peak=min(0.1, 0.9 / 5)),
          "0h": claim_chain(headroom=0.0)}
    return {"wc-u2": pct(wc["2"]["u"]), "wc-u5": pct(wc["5"]["u"]), "wc-u3": pct(cc["u"]), "wc-r2": pct(wc["2"]["r"]),
            "wc-r5": pct(wc["5"]["r"]), "wc-r3": pct(cc["r"]), "wc-r0": pct(wc["0h"]["r"]), "wc-u0h": pct(wc["0h"]["u"])}


def exercises(p, ch) -> dict:
    ex1 = claim_chain(peak_to_mean=1.8, trough_to_peak=0.2)
    cc = claim_chain()
    Lc = cc.data["load"]

    def share(scaler):
        def f(tau):
            R = fleet(Lc, CLAIM["replica_tokens_per_second"], CLAIM["headroom"], tau, CLAIM["min_replicas"], scaler,
                      cap=cc["R_s"].m)
            return (cc["H_s"].m - gpu_hours(R, CLAIM["gpus_per_replica"])) / cc["H_idle"].m
        return f
    out = {"ex1-p": f"{1.8:g} x", "ex1-t": pct(0.2), "ex1-r": fmt(ex1["R_s"]), "ex1-u": pct(ex1["u"]),
           "ex1-idle": fmt(ex1["H_idle"]), "ex1-usd": "$" + fmt(ex1["D_idle"].to("USD").m), "ex1-u0": pct(ex1["u_0"])}
    for key, scaler in (("ex2-s", "scheduled"), ("ex2-r", "reactive")):
        t = autoscale.start_up_for_share(share(scaler))
        out[key] = ("beyond half a day (it never falls below half)" if t is None else
                    fmt(q(t, "min").to("hour") if t > 120 else q(t, "min"), digits=2))
    ex3 = claim_chain(trough_to_peak=0.0, min_replicas=1, load_minutes=LT["c"])
    lo = ex3.data["R_a"].min()
    out.update({"lt-c-2": fmt(q(LT["c"], "min")), "lt-c-3": fmt(q(LT["c"], "min")),
                "ex3-min": fmt(lo) + " replica" + ("" if lo == 1 else "s"),
                "ex3-hours": fmt(q((ex3.data["R_a"] == lo).mean() * 24, "hour"), digits=2), "ex3-saved": fmt(ex3["H_sv"]),
                "ex3-share": pct(ex3["r"])})
    return out


SPEC = Spec("peak-vs-average", PARAMETERS, RESULTS, compute, validate=validate)
