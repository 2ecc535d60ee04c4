"""latency-slos-goodput: TTFT and TPOT at a percentile, the fraction of requests meeting both, and
what tokens per second hides.

The closed forms bound the simulation: the KV budget (utils.serving: a share of the driver-reported
memory less the weights) and the running-sequence cap set the batch; a request alone sets the floors
under TTFT (a mean prompt's prefill) and TPOT (one read of the weights); at saturation each request
needs one prefill and o tokens' share of decode steps at batch B, which gives the highest rate the
replica can serve and the tokens per second it reports there. The seeded queue simulation
(utils.serving.batching.Replica) gives the percentiles, the attainment, goodput and the maximum goodput rate.
"""
from __future__ import annotations

import functools

import numpy as np

from utils import catalog, models, serving
from utils.chain import Chain, as_float, memoised
from utils.params import Param, ParameterError, Result, Spec
from utils.roofline import FRACTIONS as ACHIEVED
from utils.roofline import add_fraction_inputs, fraction_params
from utils.serving import batching
from utils.units import fmt, pct, q
from utils.verdicts import UNCHECKABLE, Claim

_CONF = catalog.entry("software", "mlperf-inference")     # MLPerf's latency limits, from the catalog
SLO_SOURCE = serving.mlperf_limits_source()
MLPERF = {scenario: (as_float(_CONF.q(f"llama2_70b_{scenario}_ttft"), "s"),
                     as_float(_CONF.q(f"llama2_70b_{scenario}_tpot"), "s")) for scenario in ("interactive", "server")}
MLPERF["percentile"] = as_float(_CONF.q("target_latency_percentile"))
DEFINITIONS_SOURCE = ("vLLM benchmarks/serve.py, calculate_metrics: tpot = (latency - ttft) / (output_len - 1); "
                      "a request counts toward request_goodput only if it meets every SLO; vllm-project/vllm at "
                      "commit 009e6d4a, https://github.com/vllm-project/vllm/blob/"
                      "009e6d4a1cd6ba3fb2a9fc00f4ec06f5297232a1/vllm/benchmarks/serve.py, read 2026-11-29")
GOODPUT_SOURCE = ("DistServe (Zhong et al., OSDI 2024, arXiv:2401.09670): goodput, the request rate served "
                  "within both the TTFT and the TPOT objective; https://hao-ai-lab.github.io/blogs/distserve, "
                  "read 2026-11-29")
SCHED_SOURCE = ("vLLM vllm/config.py, SchedulerConfig: enable_chunked_prefill = False, policy 'fcfs', and without "
                "chunking max_num_batched_tokens = max(max_model_len, 2048); vllm-project/vllm at commit 00044383, "
                "https://github.com/vllm-project/vllm/blob/0004438383ee731a6e44708609d175c48528a8d0/vllm/config.py, "
                "read 2026-11-29")
SEQS_SOURCE = ("vLLM vllm/engine/arg_utils.py, EngineArgs: max_num_seqs = 256 on the V0 engine, 1024 on V1; "
               "vllm-project/vllm at commit 001999d2, https://github.com/vllm-project/vllm/blob/"
               "001999d2f360c2c5da23a916510c273b1a73d06c/vllm/engine/arg_utils.py, read 2026-11-29")
MIX_SOURCE = ("this book's assumption: a chat turn of about a page in and half a page out (as in the replica "
              "sizing chapter), lengths exponentially distributed")
MODELS_SOURCE = "counted from the catalog config by utils.models"
MIN_BUDGET = 2048      # vLLM without chunking: max_num_batched_tokens = max(max_model_len, 2048)
FRACTIONS = np.round(np.arange(0.2, 2.01, 0.1), 2)     # the sweep, as fractions of the saturation rate
# The most work a reader's benchmarks may simulate, in the queue loop's steps (utils.serving.batching's `work`): two
# seconds or so on the book's CI machine, so a re-derivation ends within a simulation's three-second target. Every
# batch cap fits it at the defaults: the worst, two to eight sequences, need about 3.7 million on each seed tried (one
# sequence at a time is batching.one_at_a_time, a small fraction of a million; the defaults about 1).
WORK_BUDGET = 4_000_000
# n_requests past which the defaults' benchmarks (about 260 steps of work a request) need more than WORK_BUDGET:
# refused at once; below it, the budget decides.
MAX_REQUESTS = 15_000

SIMULATION = "seeded queue benchmarks of one replica at each batch cap (utils.serving.batching)"

PARAMETERS = (
    Param("model", "llama-3-70b", "the model (served in bf16: weights and KV cache): a catalog key or a config.json",
          check="model", source="catalog: Llama-3-70B, the page's reading of the claim"),
    Param("gpu", "h100-sxm", "the accelerator: a catalog key or a spec file", check="accelerator",
          source="catalog: H100 SXM, the page's reading of the claim"),
    Param("gpus_per_replica", 8, "GPUs holding one copy of the model (tensor parallel)", unit="GPU", check="whole",
          source="this book's assumption: one node"),
    Param("arrival_rate", 20.0, "the operating point: requests per second offered to the replica (Poisson)",
          unit="request/s", source="this book's assumption: below the maximum goodput rate"),
    Param("mean_prompt_tokens", 1024, "mean prompt per request (exponentially distributed)", unit="token",
          check="whole", source=MIX_SOURCE),
    Param("mean_output_tokens", 512, "mean reply per request (exponentially distributed)", unit="token",
          check="whole", source=MIX_SOURCE),
    Param("max_batch", 256, "most sequences running at once (vLLM's max_num_seqs)", unit="sequence", check="whole",
          source=SEQS_SOURCE),
    Param("slo_ttft_s", 0.45, "time-to-first-token objective", unit="s", source=SLO_SOURCE),
    Param("slo_tpot_s", 0.04, "time-per-output-token objective", unit="s", source=SLO_SOURCE),
    Param("percentile", 0.99, "share of requests each objective is held to (0.99 = p99)", check="fraction",
          source=SLO_SOURCE),
    *fraction_params(),
    Param("n_requests", 4000, "requests in each simulated benchmark", unit="request", check="whole",
          source="this book's choice: forty requests beyond the p99 of the window"),
    Param("seed", 0, "seed of the workload's random draws", check="non_negative", source="this book's choice"),
)

RESULTS = (
    Result("ttft_p", "s", "TTFT at the percentile, at the operating point", of="ttft_p"),
    Result("tpot_p", "s", "TPOT at the percentile, at the operating point", of="tpot_p"),
    Result("ttft_p50", "s", "Median TTFT at the operating point", of="ttft_50"),
    Result("tpot_p50", "s", "Median TPOT at the operating point", of="tpot_50"),
    Result("slo_attainment", "", "Share of requests meeting both objectives", of="A", percent=True),
    Result("goodput", "request/s", "Goodput at the operating point", of="G"),
    Result("throughput", "token/s", "Output tokens per second at the operating point", of="X"),
    Result("max_goodput_rate", "request/s",
           "Highest arrival rate at which the percentile of requests meets both objectives", of="lambda_good"),
    Result("peak_goodput", "request/s", "Highest goodput in the sweep", of="G_peak"),
    Result("saturation_throughput", "token/s", "Tokens per second at saturation (closed form)", of="X_max"),
)


def validate(p):
    validate_replica(p, MAX_REQUESTS, "about thirty benchmarks", WORK_BUDGET)


def validate_replica(p, most: int, runs: str, budget: int):
    """What a replica's simulation needs of its inputs (this page's and tail-latency's): `most` requests at the
    most, past which the page's `runs` of them would exceed its `budget` of simulated steps."""
    if p.n_requests < 500:
        raise ParameterError(f"n_requests must be at least 500 for percentiles to mean anything, got {p.n_requests}")
    if p.n_requests > most:
        raise ParameterError(f"n_requests must be at most {most:,}: the page runs {runs} of that many requests, past "
                             f"its budget of {budget:,} steps of simulation, got {p.n_requests}")
    heads = models._n(p.model, "n_heads", 0)
    if heads and p.gpus_per_replica > heads:
        raise ParameterError(f"gpus_per_replica must be at most {p.model.name}'s {heads} query heads: tensor "
                             f"parallelism splits the heads, and past one a GPU there is nothing left to split, got "
                             f"{p.gpus_per_replica}")
    ctx = int(p.model.q("max_context").m)
    if p.mean_prompt_tokens + p.mean_output_tokens > ctx:
        raise ParameterError(f"mean_prompt_tokens + mean_output_tokens = {p.mean_prompt_tokens + p.mean_output_tokens}"
                             f" is more than {p.model.name}'s context of {ctx} tokens")


def workload(p):
    return batching.workload(p.n_requests, p.mean_prompt_tokens, p.mean_output_tokens,
                             int(p.model.q("max_context").m), p.seed)


def slo_chain(p, wl, *, source: str = "parameters cell", cite=None) -> Chain:
    """The closed forms on checked inputs p and the drawn workload wl (its mean lengths). Each input cites
    `source`, or cite(parameter name) where given (the page's SPEC.source)."""
    cite = cite or (lambda _name: source)
    m, acc = p.model, p.gpu
    n = models.param_count(m)
    per_gpu = q(1, "GPU")
    g = p.gpus_per_replica
    kv = serving.vllm_kv_budget(acc, serving.weights_per_gpu(m, g, 2.0))
    mem = kv["memory"]
    ch = Chain(f"One replica of {m.name} on {g} x {acc.name}")
    # --- Memory: the KV budget, in tokens, and the batch the two caps allow.
    ch.given("C", mem.total.to("GB") / per_gpu, mem.label, kind=mem.kind, source=mem.source)
    ch.given("g", q(g, "GPU"), "GPUs per replica", kind="assumption", source=cite("gpus_per_replica"))
    ch.given("u", serving.vllm_utilization_value(), "share of that memory the engine manages (vLLM's default)")
    ch.given("N_s", n["total"], "weights stored", kind="derived", source=MODELS_SOURCE)
    ch.given("b_w", q(2.0, "byte/parameter"), "bytes per weight (bf16)", kind="assumption",
             source="this page serves bf16 weights and cache")
    ch.step("M_w", "N_s*b_w", "GB", "weights")
    ch.step("M_kv", "g*C*u - M_w", "GB", "KV budget, at most")
    ch.given("kappa", models.kv_bytes_per_token(m, 2.0), "KV per token, all layers", kind="derived",
             source="utils.models.kv_bytes_per_token, bf16")
    ch.given("rho", models.kv_copies(m, g), "copies of each token's KV the replica keeps", kind="derived",
             source="utils.models.kv_copies")
    ch.step("K", "M_kv/(rho*kappa)", "token", "tokens of KV the replica holds")
    ch.given("L_c", m["max_context"], "longest request (the model's context)")
    if ch["K"] < ch["L_c"]:
        raise ParameterError(f"the KV budget holds {fmt(ch['K'])}, less than one request of {m.name}'s full context "
                             f"({fmt(ch['L_c'])}): raise gpus_per_replica")
    drawn = f"the mean of the {fmt(len(wl[0]))} requests drawn"
    ch.given("p", q(float(np.mean(wl[1])), "token"), f"mean prompt (drawn with mean {fmt(p.mean_prompt_tokens)})",
             kind="assumption", source=f"{cite('mean_prompt_tokens')}; {drawn}")
    ch.given("o", q(float(np.mean(wl[2])), "token"), f"mean reply (drawn with mean {fmt(p.mean_output_tokens)})",
             kind="assumption", source=f"{cite('mean_output_tokens')}; {drawn}")
    ch.step("B_kv", "floor(K/(p + o))", "", "requests whose whole cache fits, at the mean lengths")
    ch.given("B_s", p.max_batch, "running-sequence cap", kind="assumption", source=cite("max_batch"))
    ch.step("B", "Min(B_s, B_kv)", "", "running batch at saturation: the cap that binds")
    # --- The roofline: a pass takes the larger of bytes over bandwidth and FLOPs over the dense rate.
    ch.given("P", acc.q("bf16_dense").to("TFLOP/s") / per_gpu, "dense bf16 rate per GPU", kind=acc["bf16_dense"].kind,
             source=acc["bf16_dense"].cite)
    ch.given("W", acc.q("hbm_bandwidth").to("TB/s") / per_gpu, "HBM bandwidth per GPU",
             kind=acc["hbm_bandwidth"].kind, source=acc["hbm_bandwidth"].cite)
    # Passes run at the achieved shares of the peaks (utils.roofline).
    add_fraction_inputs(ch, p.compute_fraction, p.bandwidth_fraction, source=source)
    bw, pk = "eta_W*g*W", "eta_P*g*P"
    ch.given("k", q(2, "FLOP/parameter/token"), "FLOPs per weight per token", kind="derived", source="a matrix product")
    ch.given("N_a", n["active"], "weights multiplied per token", kind="derived", source=MODELS_SOURCE)
    ch.given("N_r", n["total"] - n["embedding"], "weights read per pass (all but the embedding lookup)",
             kind="derived", source=MODELS_SOURCE)
    ch.given("I_kv", models.kv_term_intensity(m, 2.0), "attention FLOPs per KV byte", kind="derived",
             source="utils.models.kv_term_intensity")
    ch.given("tau", q(1, "token"), "tokens per sequence per decode step", kind="derived", source="decode")
    ch.step("t_w", f"N_r*b_w/({bw})", "ms", "decode step at batch 1: the floor under TPOT")
    ch.step("t_pf", f"p*(k*N_a + I_kv*kappa*p/(2*tau))/({pk})", "ms",
            "prefill of a mean prompt (compute-bound): the floor under TTFT")
    ch.step("S_c", "B*(p + o/2)", "token", "cached tokens a decode step reads at saturation")
    ch.step("t_dec", f"Max((N_r*b_w + rho*kappa*S_c)/({bw}), (k*N_a*B*tau + I_kv*kappa*S_c)/({pk}))", "ms",
            "decode step at saturation")
    ch.given("nu", q(1, "request"), "one request", kind="derived", source="one prompt, one reply")
    ch.solve("lambda_max", "lambda_max*(t_pf + o*t_dec/(B*tau)) = nu", "request/s",
             "arrival rate the replica can serve at all: one prefill and o tokens of decode per request")
    ch.step("X_max", "lambda_max*o/nu", "token/s", "tokens per second at saturation: the dashboard's ceiling")
    ch.step("f_pf", "lambda_max*t_pf/nu", "", "share of each second in prefill passes at saturation")
    ch.step("q_sat", "t_dec/(1 - f_pf)", "ms", "mean TPOT at saturation: decode steps stretched by prefill passes")
    ch.given("L_ttft", q(p.slo_ttft_s, "s").to("ms"), "TTFT objective", kind="assumption",
             source=cite("slo_ttft_s"))
    ch.given("L_tpot", q(p.slo_tpot_s, "s").to("ms"), "TPOT objective", kind="assumption",
             source=cite("slo_tpot_s"))
    ch.step("h_ttft", "L_ttft/t_pf", "", "TTFT objective over the prefill floor: the room left for queueing")
    ch.step("h_tpot", "L_tpot/q_sat", "", "TPOT objective over the mean TPOT at saturation")
    return ch


def queue_engine(ch) -> batching.QueueEngine:
    e_w, e_p = as_float(ch["eta_W"]), as_float(ch["eta_P"])
    g = as_float(ch["g"], "GPU")
    ctx = int(as_float(ch["L_c"], "token"))
    return batching.QueueEngine(
        wbytes=as_float(ch["N_r"] * ch["b_w"], "byte"), akv=as_float(ch["rho"] * ch["kappa"], "byte/token"),
        W=e_w * g * as_float(ch["W"], "byte/s/GPU"), P=e_p * g * as_float(ch["P"], "FLOP/s/GPU"),
        kNa=as_float(ch["k"] * ch["N_a"], "FLOP/token"), att=as_float(ch["I_kv"] * ch["kappa"], "FLOP/token"),
        cap=int(as_float(ch["K"], "token")), bmax=int(as_float(ch["B_s"])), budget=max(ctx, MIN_BUDGET))


def replica(p, *, source: str = "parameters cell", cite=None) -> batching.Replica:
    """The chain and its simulated replica (rep.chain), runs cached by engine and workload."""
    wl = workload(p)
    ch = slo_chain(p, wl, source=source, cite=cite)
    key = (p.model.key, p.gpu.key, p.gpus_per_replica, p.mean_prompt_tokens, p.mean_output_tokens, p.max_batch,
           p.compute_fraction, p.bandwidth_fraction, p.n_requests, p.seed)
    rep = batching.Replica(key, wl, queue_engine(ch), p.slo_ttft_s, p.slo_tpot_s, p.percentile,
                           as_float(ch["lambda_max"], "request/s"))
    rep.chain = ch
    return rep


def benchmark(rep) -> dict:
    """The sweep and both bisections on a replica, in a fixed order (so its curve is the same each run)."""
    rates, sweep = rep.sweep(FRACTIONS)
    lo, hi = rep.max_rate(rep.joint)
    lo_sep, hi_sep = rep.max_rate(rep.separate)
    peak_rate, peak = rep.peak_goodput()
    return dict(rates=rates, sweep=sweep, lo=lo, hi=hi, lo_sep=lo_sep, peak_rate=peak_rate, peak=peak, top=sweep[-1])


def compute(p) -> Chain:
    """The closed forms, then the simulated benchmark: the operating point, the sweep, the maximum
    goodput rate (rows ttft_p ... G_peak)."""
    rep = replica(p, cite=functools.partial(SPEC.source, p))
    rep.budget = WORK_BUDGET
    try:
        op = rep.at(p.arrival_rate)
        bm = benchmark(rep)
    except batching.Overloaded:
        raise ParameterError(f"arrival_rate={p.arrival_rate!r} is so high that every request arrives within one "
                             "engine pass: raise n_requests or lower arrival_rate") from None
    except batching.TooLong:
        raise ParameterError(f"these inputs need more than {WORK_BUDGET:,} steps of queue simulation (many requests "
                             "with a small batch cap, or objectives met only at a small share of the saturation "
                             "rate, where requests decode nearly alone), which would run past a few seconds: lower "
                             "n_requests") from None
    ch, how = rep.chain, f"utils.serving.batching: {fmt(p.n_requests)} seeded requests through the queue"
    for name, value, label in (
            ("ttft_50", q(op["ttft_50"], "s").to("ms"), "median TTFT at the operating point"),
            ("ttft_p", q(op["ttft_p"], "s").to("ms"), "TTFT at the percentile"),
            ("tpot_50", q(op["tpot_50"], "s").to("ms"), "median TPOT"),
            ("tpot_p", q(op["tpot_p"], "s").to("ms"), "TPOT at the percentile"),
            ("A", q(op["attainment"], ""), "share of requests meeting both objectives"),
            ("G", q(op["goodput"], "request/s"), "goodput at the operating point"),
            ("X", q(op["throughput"], "token/s"), "output tokens per second at the operating point"),
            ("lambda_good", q(bm["lo"], "request/s"), "maximum goodput rate (bisection)"),
            ("G_peak", q(bm["peak"]["goodput"], "request/s"), "highest goodput in the sweep")):
        ch.given(name, value, label, kind="derived", source=how)
    ch.data.update(replica=rep, op=op, bench=bm)
    return ch


# --- the claim ------------------------------------------------------------------------------------
QUOTE = ("Tokens per second flatters a system that is failing its users. The metrics that matter are two "
         "latencies at a percentile and the fraction of requests that meet both.")
CLAIM = {prm.name: prm.default for prm in PARAMETERS}   # the book's example: the defaults
HALF = dict(compute_fraction=ACHIEVED[0] / 2, bandwidth_fraction=ACHIEVED[1] / 2)   # an engine at half the shares
SEEDS = range(5)    # the check's benchmark is drawn on each of these seeds; what it asserts holds on every one
LONG = dict(mean_prompt_tokens=4 * CLAIM["mean_prompt_tokens"])                      # the long-prompt mix


def claim_replica(**changes) -> batching.Replica:
    return replica(SPEC.check(**{**CLAIM, **changes}), source="the claim's reading")


def nth(p: float) -> str:
    """A share as a percentile's name: 0.99 -> '99th', 0.999 -> '99.9th'."""
    text = pct(p).rstrip("%")
    suffix = {"1": "st", "2": "nd", "3": "rd"}.get(text[-1], "th") if not text.endswith(("11", "12", "13")) else "th"
    return text + suffix


@memoised
def checks() -> dict:
    """Everything the check section asserts, on the claim's reading."""
    import sympy as sp
    rep = claim_replica()
    bm = benchmark(rep)
    r_top, r_light = rep.run(bm["rates"][-1]), rep.run(bm["rates"][0])
    sel = r_light["arrival"] >= r_light["window"][0]
    light = bm["sweep"][0]["throughput"] / (bm["sweep"][0]["rate"] * float(np.mean(r_light["output"][sel])))
    half = claim_replica(**HALF)
    h_lo, h_hi = half.max_rate(half.joint)
    h_lo_sep, _ = half.max_rate(half.separate)
    long = claim_replica(**LONG)
    l_lo, l_hi = long.max_rate(long.joint)
    seeds = [seed_check(s) for s in SEEDS]
    lam_, tpf_, o_, td_, B_ = sp.symbols("lambda t_pf o t_dec B", positive=True)
    lam_closed = sp.solve(sp.Eq(lam_ * (tpf_ + o_ * td_ / B_), 1), lam_)[0]
    return dict(rep=rep, chain=rep.chain, bench=bm,
                little=r_top["batch_time"] / float(np.sum(r_top["finish"] - r_top["first"])), light=light,
                sat_ratio=bm["top"]["throughput"] / as_float(rep.chain["X_max"], "token/s"),
                tpot_ratio=bm["top"]["tpot_50"] / as_float(rep.chain["q_sat"], "s"),
                half=half, h_lo=h_lo, h_hi=h_hi, h_lo_sep=h_lo_sep, h_gap=half.at(h_lo_sep),
                long=long, l_lo=l_lo, l_hi=l_hi, misses=long.tpot_misses(l_hi),
                closed_ok=sp.simplify(lam_closed - B_ / (B_ * tpf_ + o_ * td_)) == 0, seeds=seeds)


def seed_check(seed: int) -> dict:
    """One seed's benchmark, for the chat mix and the long prompts: what the check asserts on every seed."""
    rep = claim_replica(seed=seed)
    bm = benchmark(rep)
    top, peak, pc = bm["top"], bm["peak"], CLAIM["percentile"]
    long = claim_replica(seed=seed, **LONG)
    l_lo, l_hi = long.max_rate(long.joint)
    return dict(seed=seed, lo=bm["lo"], l_lo=l_lo, first=rep.fails_first(bm["hi"]), l_first=long.fails_first(l_hi),
                shape=(top["goodput"] < 0.1 * peak["goodput"] and top["throughput"] > 1.03 * peak["throughput"]
                       and top["attainment"] < pc and bm["lo"] <= bm["lo_sep"] * (1 + 1e-9)))


def check_holds(ck: dict) -> bool:
    bm, pc = ck["bench"], CLAIM["percentile"]
    top, peak = bm["top"], bm["peak"]
    sweep_ok = all(s["attainment"] >= s["att_ttft"] + s["att_tpot"] - 1 - 1e-12 for s in bm["sweep"])
    sep_ok = all(s["ttft_p"] <= CLAIM["slo_ttft_s"] and s["tpot_p"] <= CLAIM["slo_tpot_s"]
                 for s in bm["sweep"] if s["attainment"] >= pc)
    return all([abs(ck["little"] - 1) < 1e-9, abs(ck["light"] - 1) < 0.03, abs(ck["sat_ratio"] - 1) < 0.1,
                abs(ck["tpot_ratio"] - 1) < 0.15, bm["rates"][0] < bm["peak_rate"] < bm["rates"][-1],
                top["goodput"] < 0.1 * peak["goodput"], top["throughput"] > 1.03 * peak["throughput"],
                top["attainment"] < pc, max(s["throughput"] for s in bm["sweep"]) <= 1.02 * top["throughput"],
                bm["lo"] <= bm["lo_sep"] * (1 + 1e-9), sweep_ok, sep_ok, ck["h_lo_sep"] > 1.02 * ck["h_lo"],
                ck["half"].separate(ck["h_lo_sep"]), ck["h_gap"]["attainment"] < pc,
                all(sd["shape"] for sd in ck["seeds"]), ck["misses"][0] < 0.1 * ck["misses"][1], ck["closed_ok"]])


def first_counts(ck: dict, key: str) -> str:
    """How many seeds each objective failed first on: 'TPOT on 2 of 5 seeds, TTFT on 3'."""
    firsts = [sd[key] for sd in ck["seeds"]]
    a, b = sorted({"TTFT", "TPOT"}, key=lambda o: -firsts.count(o))
    return f"{a} on {firsts.count(a)} of {len(firsts)} seeds, {b} on {firsts.count(b)}"


def seed_range(ck: dict, key: str) -> str:
    v = [sd[key] for sd in ck["seeds"]]
    return f"{rps(min(v))} to {rps(max(v))}"


def rps(x) -> str:
    return fmt(q(x, "request/s"))


def tps(x) -> str:
    return fmt(q(x, "token/s"))


def dur(seconds) -> str:
    return fmt(q(seconds, "s").to("ms")) if seconds < 1 else fmt(q(seconds, "s"))


def claims() -> list[Claim]:
    ck = checks()
    bm, pc = ck["bench"], CLAIM["percentile"]
    top, peak = bm["top"], bm["peak"]
    return [Claim(
        "goodput", quote=QUOTE, source="spec/001, paragraph on latency SLOs",
        claimed="tokens/s keeps rising while users are failed; the metrics are TTFT and TPOT at a percentile "
                "and the fraction meeting both",
        derived=(f"the book's example: goodput peaks at {rps(peak['goodput'])} (offered {rps(bm['peak_rate'])}, "
                 f"{tps(peak['throughput'])}); offered {rps(bm['rates'][-1])}: {tps(top['throughput'])}, goodput "
                 f"{rps(top['goodput'])}, {pct(top['attainment'])} meet both; maximum goodput rate "
                 f"{seed_range(ck, 'lo')} over {len(SEEDS)} seeds"),
        verdict=UNCHECKABLE,
        reason=(f"The source names no objectives, percentile, model or traffic, so there is nothing of its own to "
                f"check; the book's example (Llama-3-70B on {fmt(CLAIM['gpus_per_replica'])} H100 SXM at the "
                f"catalog's achieved shares, a chat mix, MLPerf's interactive objectives at the {nth(pc)} "
                f"percentile) shows the shape on every one of {len(SEEDS)} seeds: past goodput's peak "
                f"({rps(peak['goodput'])} on the first) throughput rises a "
                f"further {pct(top['throughput'] / peak['throughput'] - 1)} while goodput falls to "
                f"{rps(top['goodput'])}, and at half the achieved shares two separate percentiles admit "
                f"{rps(ck['h_lo_sep'])}, where only {pct(ck['h_gap']['attainment'])} of requests meet both."))]


# --- the page's tables and prose numbers ----------------------------------------------------------
def cap_name(ch) -> str:
    return "running-sequence cap" if ch["B_s"] <= ch["B_kv"] else "KV budget"


def sources_table() -> str:
    budget = fmt(q(MIN_BUDGET, "token"))
    rows = [("objectives of the claim's reading", f"TTFT {dur(MLPERF['interactive'][0])}, TPOT "
             f"{dur(MLPERF['interactive'][1])}, at the {nth(MLPERF['percentile'])} percentile (MLPerf's interactive "
             "pair)", "assumption", SLO_SOURCE),
            ("TTFT, TPOT, goodput", "TPOT over the tokens after the first; a good request meets every objective",
             "spec", DEFINITIONS_SOURCE),
            ("maximum goodput rate", "highest rate at which the share of good requests reaches the target", "spec",
             GOODPUT_SOURCE),
            ("scheduler", f"first come, first served; no chunked prefill; prefill passes of up to the model's context "
             f"(at least {budget})", "spec", SCHED_SOURCE),
            ("running-sequence cap", f"{fmt(CLAIM['max_batch'])} (V0)", "spec", SEQS_SOURCE),
            ("traffic", "Poisson arrivals; exponential prompt and reply lengths", "assumption", MIX_SOURCE),
            ("engine speed", f"the roofline floor at achieved shares of the peaks ({pct(ACHIEVED[0])} of the dense "
             f"rate, {pct(ACHIEVED[1])} of HBM bandwidth)", "measured-by-others", "catalog: software.achieved-fraction")]
    return ("| input | value | kind · source |\n|---|---|---|\n"
            + "\n".join(f"| {a} | {b} | {c} · {d} |" for a, b, c, d in rows))


def chain_texts(ch, p) -> dict:
    """The prose numbers of the chain and simulation sections, for the reader's parameters."""
    rep, op, bm = ch.data["replica"], ch.data["op"], ch.data["bench"]
    top, peak, lo, lo_sep = bm["top"], bm["peak"], bm["lo"], bm["lo_sep"]
    at_sat = rep.at(rep.lam)
    budget = fmt(q(max(int(p.model.q("max_context").m), MIN_BUDGET), "token"))
    return {
        "claim-gpus": str(CLAIM["gpus_per_replica"]), "claim-eta-p": pct(CLAIM["compute_fraction"]),
        "claim-eta-w": pct(CLAIM["bandwidth_fraction"]), "claim-bmax": fmt(CLAIM["max_batch"]), "claim-budget": budget,
        "claim-prompt": fmt(q(CLAIM["mean_prompt_tokens"], "token")),
        "claim-output": fmt(q(CLAIM["mean_output_tokens"], "token")), "claim-ttft": dur(CLAIM["slo_ttft_s"]),
        "claim-tpot": dur(CLAIM["slo_tpot_s"]), "claim-pct": pct(CLAIM["percentile"]),
        "claim-pct-2": pct(CLAIM["percentile"]),
        "c-weights": fmt(ch["M_w"]), "c-kv": fmt(ch["M_kv"]), "c-tokens": fmt(ch["K"]), "c-bkv": fmt(ch["B_kv"]),
        "c-bs": fmt(ch["B_s"]), "c-b": fmt(ch["B"]), "c-cap": cap_name(ch), "c-tw": fmt(ch["t_w"]),
        "c-tpf": fmt(ch["t_pf"]), "c-tdec": fmt(ch["t_dec"]), "c-lam": fmt(ch["lambda_max"]), "c-x": fmt(ch["X_max"]),
        "c-fpf": pct(as_float(ch["f_pf"], "")), "c-qsat": fmt(ch["q_sat"]), "c-tpot-slo": fmt(ch["L_tpot"]),
        "c-tpot-verdict": "below" if ch["h_tpot"] > 1 else "above", "c-h-ttft": fmt(ch["h_ttft"], digits=2),
        "c-ttft-slo": fmt(ch["L_ttft"]),
        "intro-model": p.model.name, "intro-gpus": str(p.gpus_per_replica), "intro-gpu": p.gpu.name,
        "intro-ttft": dur(p.slo_ttft_s), "intro-tpot": dur(p.slo_tpot_s), "intro-pct": pct(p.percentile),
        "intro-top-rate": rps(bm["rates"][-1]), "intro-top-thr": tps(top["throughput"]),
        "intro-top-which": "more than" if top["throughput"] > peak["throughput"] else "no more than",
        "intro-peak-thr": tps(peak["throughput"]), "intro-top-att": pct(top["attainment"]),
        "s-rate": rps(p.arrival_rate), "s-ttft50": dur(op["ttft_50"]), "s-tpot50": dur(op["tpot_50"]),
        "s-pct": nth(p.percentile), "s-ttftp": dur(op["ttft_p"]), "s-tpotp": dur(op["tpot_p"]),
        "s-verdict": "meets" if op["attainment"] >= p.percentile else "fails", "s-binds": rep.fails_first(bm["hi"]),
        "s-sat": fmt(ch["lambda_max"]), "s-att-sat": pct(at_sat["attainment"]), "s-ttft-sat": dur(at_sat["ttft_p"]),
        "s-sep": rps(lo_sep),
        "s-sep-note": "the same rate, here" if abs(lo_sep - lo) <= 0.01 * max(lo, 1e-9) else
                      f"{rps(lo_sep - lo)} more, because at rates between the two the slow first tokens and the "
                      "slow streams belong to different requests",
        "s-peak": rps(peak["goodput"]), "s-peak-rate": rps(bm["peak_rate"]), "s-peak-thr": tps(peak["throughput"]),
        "s-top-rate": rps(bm["rates"][-1]), "s-top-thr": tps(top["throughput"]), "s-top-gp": rps(top["goodput"]),
        "s-top-ttft": dur(top["ttft_p"]), "s-lam-share": pct(lo / rep.lam)}


def notes(ch, p) -> list[str]:
    """Warnings for a reader's parameters that stretch the benchmark."""
    out, op, lo, lam = [], ch.data["op"], ch.data["bench"]["lo"], ch.data["replica"].lam
    if op["n"] * (1 - p.percentile) < 10:
        out.append(f"only {fmt(op['n'] * (1 - p.percentile), digits=2)} requests lie beyond the percentile; raise n_requests")
    if lo == 0 and not ch.data["replica"].joint(0.0):
        out.append(f"even each alone, in a batch of one, fewer than {pct(p.percentile)} of requests would meet both "
                   "objectives: they are below what the replica does for a request alone, so no arrival rate meets them")
    elif lo == 0:
        out.append(f"even at 1/{batching.FLOOR:,} of the saturation rate fewer than {pct(p.percentile)} of requests "
                   "meet both objectives")
    elif lo > lam:
        out.append("the maximum goodput rate is above the saturation rate: the TTFT objective is longer than the "
                   "queue this benchmark builds, and a longer benchmark (more requests) lowers it")
    return out


def operating_point_table(ch, p) -> str:
    op = ch.data["op"]
    rows = [("TTFT", dur(op["ttft_50"]), dur(op["ttft_p"]), dur(p.slo_ttft_s), pct(op["att_ttft"])),
            ("TPOT", dur(op["tpot_50"]), dur(op["tpot_p"]), dur(p.slo_tpot_s), pct(op["att_tpot"])),
            ("both", "", "", "", pct(op["attainment"]))]
    note = "".join(f"\n\nNote: {n}." for n in notes(ch, p))
    return (f"At {rps(p.arrival_rate)} ({fmt(op['n'])} requests in the window):\n\n"
            f"| | median | {pct(p.percentile)} of requests within | objective | requests within the objective |\n"
            "|---|---|---|---|---|\n" + "\n".join(f"| {' | '.join(r)} |" for r in rows)
            + f"\n\nGoodput {rps(op['goodput'])}; throughput {tps(op['throughput'])}." + note)


def sweep_table(ch, p) -> str:
    bm = ch.data["bench"]
    rows = "\n".join(f"| {rps(r)} | {tps(s['throughput'])} | {rps(s['goodput'])} | {pct(s['attainment'])} | "
                     f"{dur(s['ttft_p'])} | {dur(s['tpot_p'])} |" for r, s in zip(bm["rates"][::2], bm["sweep"][::2]))
    return (f"Every other rate of the sweep ({nth(p.percentile)} percentiles):\n\n| arrival rate | throughput | goodput | "
            "meet both | TTFT | TPOT |\n|---|---|---|---|---|---|\n" + rows)


def check_texts(ck: dict) -> dict:
    bm, cch, long, hg = ck["bench"], ck["chain"], ck["long"], ck["h_gap"]
    top, peak = bm["top"], bm["peak"]
    return {"k-little": "holds to rounding", "k-light": pct(abs(ck["light"] - 1), digits=1),
            "k-sat-sim": tps(top["throughput"]), "k-sat-cf": fmt(cch["X_max"]),
            "k-sat-ratio": pct(abs(ck["sat_ratio"] - 1), digits=2), "k-tpot-sim": dur(top["tpot_50"]),
            "k-tpot-cf": fmt(cch["q_sat"]), "k-peak": rps(peak["goodput"]), "k-peak-rate": rps(bm["peak_rate"]),
            "k-peak-thr": tps(peak["throughput"]), "k-top-rate": rps(bm["rates"][-1]), "k-top-thr": tps(top["throughput"]),
            "k-top-gain": pct(top["throughput"] / peak["throughput"] - 1), "k-top-gp": rps(top["goodput"]),
            "k-top-att": pct(top["attainment"]), "k-lo": rps(bm["lo"]), "k-half-lo": rps(ck["h_lo"]),
            "k-half-sep": rps(ck["h_lo_sep"]), "k-half-att": pct(hg["attainment"]), "k-half-ttft": pct(hg["att_ttft"]),
            "k-half-tpot": pct(hg["att_tpot"]), "k-pct": nth(CLAIM["percentile"]),
            "k-long-prompt": fmt(q(4 * CLAIM["mean_prompt_tokens"], "token")), "k-long-mean": fmt(long.chain["p"]),
            "k-long-lo": rps(ck["l_lo"]), "k-long-lam": fmt(long.chain["lambda_max"]),
            "k-long-share": pct(ck["l_lo"] / long.lam, digits=2), "k-long-pass": fmt(long.chain["t_pf"]),
            "k-long-miss": fmt(q(ck["misses"][0], "token"), digits=2), "k-long-all": fmt(q(ck["misses"][1], "token")),
            "k-seeds": fmt(len(SEEDS)), "k-lo-range": seed_range(ck, "lo"), "k-long-lo-range": seed_range(ck, "l_lo"),
            "k-first": first_counts(ck, "first"), "k-long-first": first_counts(ck, "l_first")}


def variants_table(p) -> str:
    """The 'what changes the answer' table for the reader's parameters."""

    raw = {name: (v.key if hasattr(v, "key") else v) for name, v in p.items()}
    server = MLPERF["server"]
    cases = [("the parameters", {}),
             (f"MLPerf server objectives ({dur(server[0])}, {dur(server[1])})",
              dict(slo_ttft_s=server[0], slo_tpot_s=server[1])),
             (f"{pct(0.9)} instead of {pct(p.percentile)}", dict(percentile=0.9)),
             (f"{pct(0.999)} instead of {pct(p.percentile)}", dict(percentile=0.999)),
             ("engine at half the achieved shares", dict(compute_fraction=p.compute_fraction / 2,
                                                         bandwidth_fraction=p.bandwidth_fraction / 2)),
             ("batch cap x 4", dict(max_batch=4 * p.max_batch)),
             ("prompts x 4 (cut at the context)", dict(mean_prompt_tokens=4 * p.mean_prompt_tokens))]
    cases += [(f"on {SPEC.check(gpu=k).gpu.name}", dict(gpu=k))
              for k in ("h100-sxm", "h200", "b200") if k != p.gpu.key]
    rows = []
    for label, changes in cases:
        try:
            r = replica(SPEC.check(**{**raw, **changes}), source="this page's variant")
        except ParameterError as err:
            rows.append(f"| {label} | {err} | | | |")
            continue
        v_lo, v_hi = r.max_rate(r.joint)
        rows.append(f"| {label} | {rps(v_lo)} | {r.fails_first(v_hi)} | "
                    f"{tps(r.at(v_lo)['throughput']) if v_lo else '-'} | {fmt(r.chain['X_max'])} |")
    return ("| change | maximum goodput rate | fails first | throughput there | throughput at saturation |\n"
            "|---|---|---|---|---|\n" + "\n".join(rows))


def what_changes(p, ch) -> dict:
    """The prose's variants, on the claim's reading (so it reads the same whatever the parameters)."""
    ck = checks()
    c_lo, cch = ck["bench"]["lo"], ck["chain"]

    def variant(**changes):
        r = claim_replica(**changes)
        return (r, *r.max_rate(r.joint))
    srv, srv_lo, srv_hi = variant(slo_ttft_s=MLPERF["server"][0], slo_tpot_s=MLPERF["server"][1])
    p999, p999_lo, p999_hi = variant(percentile=0.999)
    _, p90_lo, _ = variant(percentile=0.9)
    big, big_lo, big_hi = variant(max_batch=4 * CLAIM["max_batch"])
    _, h200_lo, _ = variant(gpu="h200")
    misses = p999.tpot_misses(p999_hi)
    assert srv_lo >= c_lo and p999_lo < c_lo <= p90_lo
    assert p999.fails_first(p999_hi) == "TPOT" and misses[0] < 0.1 * misses[1]
    # One sequence at a time: a single-server queue. A Poisson arrival finds the server busy a share of the time
    # equal to its utilization, and then waits the rest of the service in progress: E[S^2] / (2 E[S]) on average.
    def single(seed):           # one sequence at a time, on a seed
        one, one_lo, _ = variant(max_batch=1, seed=seed)
        service = np.add(*batching.alone(one.engine, one.wl[1], one.wl[2]))
        return one, one_lo, service, one_lo * float(np.mean(service))     # ..., the utilization at the good rate
    one, one_lo, service, util = single(SEEDS[0])
    residual = float(np.mean(service ** 2) / (2 * np.mean(service)))
    busy = [util] + [single(sd)[3] for sd in SEEDS[1:]]
    assert residual > 2 * CLAIM["slo_ttft_s"]
    assert all(0.5 * (1 - CLAIM["percentile"]) < u < 2 * (1 - CLAIM["percentile"]) for u in busy)
    return {"w-lo": rps(c_lo), "w-srv-ttft": dur(MLPERF["server"][0]), "w-srv-tpot": dur(MLPERF["server"][1]),
            "w-srv-lo": rps(srv_lo), "w-srv-binds": srv.fails_first(srv_hi),
            "w-srv-xt": fmt(MLPERF["server"][0] / CLAIM["slo_ttft_s"], digits=2),
            "w-srv-xp": fmt(MLPERF["server"][1] / CLAIM["slo_tpot_s"], digits=2),
            "w-srv-gain": pct(srv_lo / c_lo - 1, digits=2), "w-p999": pct(0.999), "w-p999-lo": rps(p999_lo),
            "w-p999-cost": pct(1 - p999_lo / c_lo), "w-p90": pct(0.9), "w-p90-lo": rps(p90_lo),
            "w-half-lo": rps(ck["h_lo"]), "w-half-share": pct(ck["h_lo"] / c_lo, digits=2),
            "w-half-binds": ck["half"].fails_first(ck["h_hi"]), "w-p999-binds": p999.fails_first(p999_hi),
            "w-big-b": fmt(q(4 * CLAIM["max_batch"], "sequence")), "w-big-cap": cap_name(big.chain),
            "w-big-b-eff": fmt(big.chain["B"]), "w-big-x": fmt(big.chain["X_max"]), "w-x": fmt(cch["X_max"]),
            "w-big-lo": rps(big_lo), "w-big-binds": big.fails_first(big_hi), "w-h200-lo": rps(h200_lo),
            "w-one-x": fmt(one.chain["X_max"]), "w-one-lo": rps(one_lo), "w-one-util": pct(util, digits=2),
            "w-one-util-range": f"{pct(min(busy), digits=2)} to {pct(max(busy), digits=2)} over {len(SEEDS)} seeds",
            "w-one-wait": dur(residual), "w-one-service": dur(float(np.mean(service))), "w-one-pct": nth(CLAIM["percentile"])}


def exercises(p, ch) -> dict:
    """Worked answers, glued into hidden dropdowns (on the claim's reading, like the check)."""
    ck = checks()
    rep, c_lo, pc = ck["rep"], ck["bench"]["lo"], CLAIM["percentile"]
    p999 = claim_replica(percentile=0.999)
    p999_lo, _ = p999.max_rate(p999.joint)
    ex1_rate = 1.2 * rep.lam
    ex1_n = (CLAIM["n_requests"], 2 * CLAIM["n_requests"])
    ex1 = [claim_replica(n_requests=n_).at(ex1_rate) for n_ in ex1_n]
    assert ex1[1]["ttft_p"] > 1.5 * ex1[0]["ttft_p"] and max(e_["attainment"] for e_ in ex1) < 0.5 * pc
    ex2_rate = 1.04 * c_lo
    ex2 = rep.at(ex2_rate)
    assert ex2["ttft_50"] <= CLAIM["slo_ttft_s"] < ex2["ttft_p"]
    load = 200.0
    x_max = as_float(ck["chain"]["X_max"], "token/s")
    load_tps = load * float(np.mean(rep.wl[2]))
    r_tok = int(np.ceil(load_tps / x_max))
    ex3 = rep.at(load / r_tok)
    return {"ex1-rate": rps(ex1_rate), "ex1-n1": fmt(ex1_n[0]), "ex1-n2": fmt(ex1_n[1]), "ex1-pct": nth(pc),
            "ex1-ttft1": dur(ex1[0]["ttft_p"]), "ex1-ttft2": dur(ex1[1]["ttft_p"]), "ex1-att1": pct(ex1[0]["attainment"]),
            "ex1-att2": pct(ex1[1]["attainment"]), "ex2-rate": rps(ex2_rate), "ex2-pct": nth(pc),
            "ex2-ttft50": dur(ex2["ttft_50"]), "ex2-slo": dur(CLAIM["slo_ttft_s"]), "ex2-ttftp": dur(ex2["ttft_p"]),
            "ex2-att": pct(ex2["attainment"]), "ex3-load": rps(load), "ex3-pct": nth(pc), "ex3-p999": pct(0.999),
            "ex3-r": fmt(int(np.ceil(load / c_lo))), "ex3-lo": rps(c_lo), "ex3-r999": fmt(int(np.ceil(load / p999_lo))),
            "ex3-tps": tps(load_tps), "ex3-x": tps(x_max), "ex3-r-tok": fmt(r_tok), "ex3-per": rps(load / r_tok),
            "ex3-att": pct(ex3["attainment"]), "ex3-lo999": rps(p999_lo),
            "ex3-verdict": "short of the objective" if ex3["attainment"] < 0.999 else "enough, this time"}


SPEC = Spec("latency-slos-goodput", PARAMETERS, RESULTS, compute, validate=validate)
