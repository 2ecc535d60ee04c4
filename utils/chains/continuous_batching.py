"""continuous-batching: what sets the running batch of a replica, what caps it, and what it earns.

Three caps bound the batch B: the KV budget (utils.serving: the engine's share of the driver-reported
memory less the weights, over one sequence's cache), the TPOT target (the batch at which a decode step
that carries a prefill chunk takes the target, solved on both sides of the roofline), and the prefill
supply (chunks of c prompt tokens refill at most c o / p slots a step). The step time, the tokens per
second and the streaming path follow; the same seeded trace served by static and continuous batching
(utils.serving.batching) gives continuous batching's gain.
"""
from __future__ import annotations

import dataclasses
import math

from utils import catalog, models, serving
from utils.chain import Chain, as_float, memoised
from utils.params import Param, ParameterError, Result, Spec
from utils.roofline import add_fraction_inputs, fraction_params
from utils.serving import batching
from utils.units import fmt, num, pct, q
from utils.verdicts import UNCHECKABLE, Claim

MIX_SOURCE = ("this book's assumption: a chat turn of about a page of new prompt and half a page of reply "
              "(as in the replica-sizing chapter), earlier turns in the prefix cache, within a held context")
TPOT_SOURCE = ("this book's assumption: between MLPerf Inference's Llama-2-70B interactive (40 ms) and server "
               "(200 ms) TPOT limits, mlcommons/inference loadgen/mlperf.conf at commit 001712e9, "
               "https://github.com/mlcommons/inference/blob/001712e9daf80386e0dda43f97b8f36981d792c4/loadgen/"
               "mlperf.conf, read 2026-11-29")
CHUNK_SOURCE = ("this book's assumption: a chunk of the size Sarathi-Serve evaluates (token budgets of 512 to "
                "2,048; Agrawal et al., OSDI 2024, arXiv:2403.02310), read 2026-11-29")
HOST_SOURCE = ("this book's assumption: incremental detokenisation and one server-sent event per token in a "
               "Python server, tens of microseconds at most; vLLM V1 moved this work out of the engine's process "
               "because in V0 it ran on the engine loop (vLLM V1 alpha release, "
               "https://blog.vllm.ai/2025/01/27/v1-alpha-release.html, read 2026-11-29)")
SOURCES = (("iteration-level scheduling", "Orca: Yu et al., OSDI 2022, 'Orca: A Distributed Serving System for "
            "Transformer-Based Generative Models'"),
           ("chunked prefill folded into decode steps", "Sarathi-Serve: Agrawal et al., OSDI 2024, arXiv:2403.02310"),
           ("streaming off the engine loop", HOST_SOURCE))
MODELS_SOURCE = "counted from the catalog config by utils.models"

SIMULATION = "a seeded request trace served by static and by continuous batching (utils.serving.batching)"

PARAMETERS = (
    Param("model", "llama-3-70b", "the model: a catalog key or the path of a Hugging Face config.json",
          check="model", source="catalog: Llama-3-70B, the page's reading of the claim"),
    Param("gpu", "h100-sxm", "the accelerator: a catalog key or a spec file", check="accelerator",
          source="catalog: H100 SXM, the page's reading of the claim"),
    Param("gpus_per_replica", 8, "GPUs holding one copy of the model (tensor parallel)", unit="GPU",
          check="whole", source="this book's assumption: one node"),
    Param("context_tokens", 4096, "tokens of KV cache each running sequence may hold", unit="token",
          check="whole", source=MIX_SOURCE),
    Param("mean_prompt_tokens", 1024, "mean new prompt per request (exponentially distributed)", unit="token",
          check="whole", source=MIX_SOURCE),
    Param("mean_output_tokens", 512, "mean reply per request (exponentially distributed)", unit="token",
          check="whole", source=MIX_SOURCE),
    Param("tpot_target_s", 0.05, "target time per output token, held at the 95th percentile", unit="s",
          source=TPOT_SOURCE),
    Param("chunk_tokens", 512, "prompt tokens one decode step may carry (chunked prefill)", unit="token",
          check="whole", source=CHUNK_SOURCE),
    Param("host_us_per_token", 10.0, "host time to detokenise and send one token to one client", unit="µs",
          check="non_negative", source=HOST_SOURCE),
    Param("seed", 0, "seed of the simulated trace", check="non_negative", source="this book's choice"),
    *fraction_params(),
)

RESULTS = (
    Result("batch_kv_cap", "sequence", "KV cap: sequences whose caches fit", of="U"),
    Result("batch_for_tpot", "sequence", "Batch at which the p95 step meets the TPOT target", of="B_L"),
    Result("batch_prefill_cap", "sequence", "Batch the prefill chunks can keep refilled", of="B_pf"),
    Result("batch", "sequence", "Running batch: the smallest of the three caps", of="B"),
    Result("tokens_per_second", "token/s", "Tokens per second the replica earns at that batch", of="X"),
    Result("tpot_p95", "s", "p95 TPOT: the p95 step, with prefill chunks interleaved", of="t_95"),
    Result("tpot_p95_blocking", "s", "p95 TPOT if streaming blocks the engine loop", of="t_blk"),
    Result("continuous_over_static", "", "Continuous over static batching, tokens per second (simulated)",
           of="sim_ratio"),
    Result("tpot_p95_simulated", "s", "p95 of requests' TPOT, continuous batching (simulated)", of="sim_tpot"),
    Result("tokens_per_second_simulated", "token/s", "Tokens per second, continuous batching (simulated)",
           of="sim_x"),
)
CAP_NAMES = {"U": "the KV budget", "B_L": "the TPOT target", "B_pf": "the prefill chunk"}


def validate(p):
    if p.mean_output_tokens < 2:
        raise ParameterError(f"mean_output_tokens must be at least 2 (a TPOT needs two tokens), got "
                             f"{p.mean_output_tokens}")
    ctx = int(p.model.q("max_context").m)
    if p.context_tokens > ctx:
        raise ParameterError(f"context_tokens={p.context_tokens} is more than {p.model.name}'s context of {ctx} tokens")
    if p.mean_prompt_tokens + p.mean_output_tokens > p.context_tokens:
        raise ParameterError(f"mean_prompt_tokens + mean_output_tokens = {p.mean_prompt_tokens + p.mean_output_tokens}"
                             f" must fit in context_tokens={p.context_tokens}")


def batching_chain(p, *, source: str | None = None) -> Chain:
    """The chain on checked inputs p (model and gpu as catalog Entries): caps, batch, step, streaming. Each input
    cites `source` where given (the claim's reading), else its parameter's own source (SPEC.source)."""
    cite = (lambda _name: source) if source else (lambda name: SPEC.source(p, name))
    m, acc = p.model, p.gpu
    n = models.param_count(m)
    per_gpu = q(1, "GPU")
    b = serving.budget(m, acc, p.gpus_per_replica, 2.0, 2.0, p.context_tokens)
    ch = Chain(f"Continuous batching of {m.name} on {p.gpus_per_replica} x {acc.name}")
    serving.add_budget_steps(ch, b, utilization_value=serving.vllm_utilization_value(),
                             source={"g": cite("gpus_per_replica"), "T": cite("context_tokens"),
                                     "b_w": source or "this page's assumption: bf16 weights, 2 bytes each"})
    # --- The step on the roofline.
    ch.given("P", acc.q("bf16_dense").to("TFLOP/s") / per_gpu, "dense bf16 rate per GPU", kind=acc["bf16_dense"].kind,
             source=acc["bf16_dense"].cite)
    ch.given("W", acc.q("hbm_bandwidth").to("TB/s") / per_gpu, "HBM bandwidth per GPU", kind=acc["hbm_bandwidth"].kind,
             source=acc["hbm_bandwidth"].cite)
    # No step runs at the datasheet's roof: the achieved shares (catalog, or the reader's) scale both peaks.
    add_fraction_inputs(ch, p.compute_fraction, p.bandwidth_fraction, source=source or "parameters cell")
    ch.step("W_e", "eta_W*W", "TB/s/GPU", "achieved HBM bandwidth per GPU")
    ch.step("P_e", "eta_P*P", "TFLOP/s/GPU", "achieved dense bf16 rate per GPU")
    ch.given("k", q(2, "FLOP/parameter/token"), "FLOPs per weight per token", kind="derived", source="a matrix product")
    ch.given("N_a", n["active"], "weights multiplied per token", kind="derived", source=MODELS_SOURCE)
    ch.given("N_r", n["total"] - n["embedding"], "weights read per step (all but the embedding lookup)",
             kind="derived", source=MODELS_SOURCE)
    ch.given("I_kv", models.kv_term_intensity(m, 2.0), "attention FLOPs per KV byte read", kind="derived",
             source="utils.models.kv_term_intensity")
    ch.given("tau", q(1, "token/sequence"), "tokens each running sequence gains per step", kind="derived",
             source="decode")
    ch.step("f", "k*N_a*tau + I_kv*kappa*T", "GFLOP/sequence", "FLOPs per running sequence per step")
    ch.given("p", q(p.mean_prompt_tokens, "token/sequence"), "mean prompt per request", kind="assumption",
             source=cite("mean_prompt_tokens"))
    ch.given("o", q(p.mean_output_tokens, "token/sequence"), "mean reply per request", kind="assumption",
             source=cite("mean_output_tokens"))
    ch.given("c", q(p.chunk_tokens, "token"), "prompt tokens a step may carry (the chunk)", kind="assumption",
             source=cite("chunk_tokens"))
    ch.given("nu", q(1, "sequence"), "the request a chunk belongs to", kind="derived", source="one prompt at a time")
    ch.step("M_ch", "rho*kappa*(c + nu*p/2)", "GB", "bytes a chunk adds: its KV written, half a prompt's KV read")
    ch.step("F_ch", "c*k*N_a + c/tau*I_kv*kappa*p/2", "TFLOP",
            "FLOPs a chunk adds: its weights' products, attention over half a prompt on average")
    # --- The batch the TPOT target allows, on each side of the roofline.
    ch.given("L", q(p.tpot_target_s, "s").to("ms"), "TPOT target (p95)", kind="assumption",
             source=cite("tpot_target_s"))
    ch.solve("B_m", "L = (N_r*b_w + B_m*kv_u + M_ch)/(g*W_e)", "sequence", "batch at which a chunk step's reads take L")
    ch.solve("B_c", "L = (B_c*f + F_ch)/(g*P_e)", "sequence", "batch at which a chunk step's FLOPs take L")
    ch.step("B_L", "floor(Min(B_m, B_c))", "sequence", "TPOT batch: the most sequences whose step meets L")
    if ch["B_L"].m < 1:
        t1 = max(as_float((ch["N_r"] * ch["b_w"] + ch["kv_u"] * ch["nu"] + ch["M_ch"]) / (ch["g"] * ch["W_e"]), "ms"),
                 as_float((ch["f"] * ch["nu"] + ch["F_ch"]) / (ch["g"] * ch["P_e"]), "ms"))
        raise ParameterError(f"tpot_target_s={p.tpot_target_s!r} is below a step at batch one with a chunk "
                             f"({fmt(q(t1, 'ms'))}): raise tpot_target_s, lower chunk_tokens or raise gpus_per_replica")
    ch.step("B_pf", "floor(c*o/(tau*p))", "sequence", "prefill cap: the batch chunks of c can keep refilled")
    if ch["B_pf"].m < 1:
        raise ParameterError(f"chunk_tokens={p.chunk_tokens} cannot refill even one slot (a reply of "
                             f"{p.mean_output_tokens} tokens ends before a prompt of {p.mean_prompt_tokens} is "
                             "prefilled): raise chunk_tokens")
    ch.step("B", "Min(U, B_L, B_pf)", "sequence", "the running batch: the cap that binds")
    ch.step("phi", "Min(1, B*tau*p/(o*c))", "", "share of steps that carry a chunk")
    ch.step("t_d", "Max((N_r*b_w + B*kv_u)/(g*W_e), B*f/(g*P_e))", "ms", "decode step without a chunk")
    ch.step("t_c", "Max((N_r*b_w + B*kv_u + M_ch)/(g*W_e), (B*f + F_ch)/(g*P_e))", "ms", "decode step with a chunk")
    ch.step("t_bar", "(1 - phi)*t_d + phi*t_c", "ms", "mean step")
    ch.step("X", "B*tau/t_bar", "token/s", "tokens per second the replica earns")
    if ch["phi"] > 0.05:
        ch.step("t_95", "t_c", "ms", "p95 TPOT: more than a twentieth of steps carry a chunk")
    else:
        ch.step("t_95", "t_d", "ms", "p95 TPOT: fewer than a twentieth of steps carry a chunk")
    # --- The streaming path.
    ch.given("h", q(p.host_us_per_token, "µs/token"), "host time per streamed token", kind="assumption",
             source=cite("host_us_per_token"))
    ch.step("H", "B*tau*h", "ms", "host time per step: every running sequence's token")
    ch.step("s_H", "H/t_bar", "", "host time over the mean step")
    ch.step("t_blk", "t_95 + H", "ms", "p95 TPOT if the host work blocks the engine loop")
    ch.step("X_blk", "B*tau/(t_bar + H)", "token/s", "tokens per second if it blocks")
    ch.solve("h_max", "B*tau*h_max = t_bar", "µs/token", "host time per token at which one streaming thread falls behind")
    return ch


def engine(ch) -> batching.Engine:
    """The chain's engine for utils.serving.batching, at the achieved rates (W_e, P_e), not the datasheet's."""
    return dataclasses.replace(batching.Engine.of(ch), W=as_float(ch["g"] * ch["W_e"], "byte/s"),
                               P=as_float(ch["g"] * ch["P_e"], "FLOP/s"))


def batch_size(ch) -> int:
    return int(as_float(ch["B"], "sequence"))


def binds(ch) -> str:
    """Which cap sets the batch."""
    return CAP_NAMES[min(CAP_NAMES, key=lambda k: as_float(ch[k], "sequence"))]


def bound(ch) -> str:
    """Which side of the roofline sets the decode-only step at the chain's batch."""
    return "memory bandwidth" if batching.memory_bound(engine(ch), batch_size(ch)) else "compute"


def simulate(ch, p) -> dict:
    """The same seeded trace served by static and continuous batching at the chain's batch."""
    return batching.serve(engine(ch), batch_size(ch), p.context_tokens, p.mean_prompt_tokens,
                          p.mean_output_tokens, p.chunk_tokens, p.seed)


def compute(p) -> Chain:
    """The chain, then the simulation at its batch (rows sim_x, sim_tpot, sim_ratio)."""
    ch = batching_chain(p)
    sim = simulate(ch, p)
    how = f"utils.serving.batching: one seeded trace of {sim['n']} requests served both ways"
    ch.given("sim_x", q(sim["continuous"]["throughput"], "token/s"), "tokens per second, continuous (simulated)",
             kind="derived", source=how)
    ch.given("sim_tpot", q(sim["continuous"]["tpot_p95"], "s").to("ms"), "p95 of requests' TPOT (simulated)",
             kind="derived", source=how)
    ch.given("sim_ratio", q(sim["ratio"], ""), "continuous over static batching, tokens per second (simulated)",
             kind="derived", source=how)
    ch.data["simulation"] = sim
    return ch


# --- the claim ------------------------------------------------------------------------------------
QUOTE = ("From an admission queue to a streamed token, the batching system that decides how many tokens per "
         "second a replica earns and what its p95 TPOT is. The decode arithmetic that sets the batch, the KV "
         "budget that caps it, and the streaming path that must never stall the engine.")
CLAIM = {prm.name: prm.default for prm in PARAMETERS}   # the page's reading of the claim: the defaults


def claim_inputs(**changes):
    return SPEC.check(**{**CLAIM, **changes})


def claim_chain(**changes) -> Chain:
    return batching_chain(claim_inputs(**changes), source="the claim's reading")


def kv_binding_chunk(ch) -> int:
    """The smallest chunk at which the prefill supply refills as many slots as the KV budget holds."""
    return int(math.ceil(as_float(ch["U"] * ch["tau"] * ch["p"] / ch["o"], "token")))


SEEDS = 5   # the check's simulation runs on this many seeded traces, and every link must hold on each


@memoised
def checks() -> dict:
    """The check section's numbers, on the claim's reading: chain, simulation (on SEEDS traces), closed form."""
    p = claim_inputs()
    cc = batching_chain(p, source="the claim's reading")
    sims = [simulate(cc, p.replace(seed=s)) for s in range(SEEDS)]
    sim = sims[0]
    e, B = engine(cc), batch_size(cc)
    cf = batching.static_closed_form(e, B, p.mean_prompt_tokens, p.mean_output_tokens, p.context_tokens)
    c_star = kv_binding_chunk(cc)
    cs = claim_chain(chunk_tokens=c_star)
    return dict(chain=cc, sim=sim, sims=sims, closed=cf, ratio_cf=as_float(cc["X"], "token/s") / cf["throughput"],
                c_star=c_star, kv_chain=cs, engine=e, B=B)


def claims() -> list[Claim]:
    ck = checks()
    cc = ck["chain"]
    caps = f"KV cap {fmt(cc['U'])}, TPOT batch {fmt(cc['B_L'])}, prefill cap {fmt(cc['B_pf'])}"
    lo, hi = (f(s["ratio"] for s in ck["sims"]) for f in (min, max))
    # The paragraph names no model, hardware, traffic, TPOT target or chunk: every number below is the book's
    # own, and which cap binds turns on the chunk, an input the source never gives. Nothing to check.
    return [Claim(
        "batching", quote=QUOTE, source="spec/000, the paragraph on the batching system",
        claimed="the decode arithmetic sets the batch, the KV budget caps it, and streaming must not stall the engine",
        derived=(f"{caps}: batch {fmt(cc['B'])}, {fmt(cc['X'])}, p95 TPOT {fmt(cc['t_95'])}; continuous/static "
                 f"{fmt(lo, digits=3)} to {fmt(hi, digits=3)} over {num(SEEDS)} seeds (simulated); a blocking host "
                 f"path adds {fmt(cc['H'])} per step"),
        verdict=UNCHECKABLE,
        reason=(f"The source names no model, hardware, traffic, TPOT target or chunk, so it gives nothing to check; "
                f"at the book's own inputs the KV budget ({fmt(cc['U'])}) is below the {fmt(cc['L'])} TPOT batch "
                f"({fmt(cc['B_L'])}), yet the batch that runs is {fmt(cc['B'])}, set by how many slots chunks of "
                f"{fmt(cc['c'])} refill; the KV budget would bind only with chunks of "
                f"{fmt(q(ck['c_star'], 'token'))} or more."))]


# --- figure, variants, exercises ------------------------------------------------------------------
def batch_curves(ch, p, points: int = 400) -> dict:
    """Tokens per second and step times against the batch, with and without chunks and host blocking."""
    import numpy as np  # arrays for the figure only: compute() needs none

    e = engine(ch)
    caps = {k: as_float(ch[k], "sequence") for k in CAP_NAMES}
    top = 1.4 * max(caps["U"], caps["B_pf"], min(caps["B_L"], 3 * caps["U"]))
    bb = np.linspace(1, top, points)
    t_dec = batching.step_time(e, bb)
    t_chk = batching.step_time(e, bb, as_float(ch["M_ch"], "byte"), as_float(ch["F_ch"], "FLOP"))
    phi = np.minimum(1, bb * p.mean_prompt_tokens / (p.mean_output_tokens * p.chunk_tokens))
    t_mean = (1 - phi) * t_dec + phi * t_chk
    host = bb * p.host_us_per_token * 1e-6
    return dict(b=bb, top=top, caps=caps, t_dec=t_dec, t_mean=t_mean, t_p95=np.where(phi > 0.05, t_chk, t_dec),
                host=host, batch=as_float(ch["B"], "sequence"), x=as_float(ch["X"], "token/s"),
                t95=as_float(ch["t_95"], "s"), target=p.tpot_target_s)


def variants(p) -> list[tuple[str, object]]:
    """(label, chain or the one-line reason it cannot be built) for the 'what changes' table."""
    ctx = int(p.model.q("max_context").m)
    cases = [("the parameters", {}), ("chunk x 2", dict(chunk_tokens=2 * p.chunk_tokens)),
             ("chunk x 4", dict(chunk_tokens=4 * p.chunk_tokens)),
             (f"TPOT target {fmt(q(20, 'ms'))}", dict(tpot_target_s=0.02)),
             ("context x 2", dict(context_tokens=min(2 * p.context_tokens, ctx))),
             (f"host {fmt(q(5 * p.host_us_per_token, 'µs'))} per token", dict(host_us_per_token=5 * p.host_us_per_token))]
    cases += [(f"on {catalog.accelerator(k).name}", dict(gpu=k)) for k in ("h100-sxm", "h200", "b200") if k != p.gpu.key]
    out = []
    for label, changes in cases:
        try:
            raw = {name: (v.key if hasattr(v, "key") else v) for name, v in p.items()}
            out.append((label, batching_chain(SPEC.check(**{**raw, **changes}),
                                              source="this page's variant")))
        except ParameterError as err:
            out.append((label, str(err)))
    return out


def what_changes(p, ch) -> dict:
    """The prose's variants, on the claim's reading (so it reads the same whatever the parameters)."""
    base = claim_chain()
    w_h200, w_tight = claim_chain(gpu="h200"), claim_chain(tpot_target_s=0.02)
    w_big = claim_chain(tpot_target_s=0.02, chunk_tokens=3 * CLAIM["chunk_tokens"] // 2)
    w_ctx = claim_chain(context_tokens=2 * CLAIM["context_tokens"])
    assert binds(w_h200) == "the prefill chunk" and w_h200["U"] > base["U"]
    assert binds(w_tight) == "the TPOT target" and binds(w_big) == "the TPOT target" and binds(w_ctx) == "the KV budget"
    return {"w-h200-kv": fmt(w_h200["U"]), "w-h200-x": fmt(w_h200["X"]), "w-h200-t": fmt(w_h200["t_95"]),
            "w-tight": fmt(w_tight["L"]), "w-tight-L": fmt(w_tight["B_L"]), "w-tight-x": fmt(w_tight["X"]),
            "w-tight-chunk": fmt(w_big["c"]), "w-tight-big-b": fmt(w_big["B"]),
            "w-tight-chunk-t": fmt((w_big["F_ch"] / (w_big["g"] * w_big["P_e"])).to("ms")),
            "w-tight-big-x": fmt(w_big["X"]), "w-ctx": fmt(q(2 * CLAIM["context_tokens"], "token")),
            "w-ctx-b": fmt(w_ctx["B"]), "w-ctx-x": fmt(w_ctx["X"])}


def exercises(p, ch) -> dict:
    """Worked answers, glued into hidden dropdowns (on the claim's reading, like the check)."""
    ck = checks()
    cc, B, e = ck["chain"], ck["B"], ck["engine"]
    hb = batching.harmonic(B)
    t_pf = ck["closed"]["t_pf"]
    pf_share = t_pf / (t_pf + (CLAIM["mean_output_tokens"] - 1) * float(batching.step_time(e, B)))
    ex2 = claim_chain(host_us_per_token=5 * CLAIM["host_us_per_token"])
    n_threads = math.ceil(as_float(ex2["s_H"], ""))
    assert cc["B_m"] < cc["B_c"]
    return {"ex1-share": pct(1 / hb), "ex1-sim": pct(ck["sim"]["static"]["slot_use"]), "ex1-pf-share": pct(pf_share),
            "ex2-h": fmt(q(5 * CLAIM["host_us_per_token"], "µs")), "ex2-H": fmt(ex2["H"]), "ex2-t": fmt(ex2["t_blk"]),
            "ex2-x": fmt(ex2["X_blk"]), "ex2-ratio": fmt(as_float(ex2["s_H"], ""), digits=2),
            "ex2-threads": f"{n_threads} thread keeps up" if n_threads == 1 else f"{n_threads} threads keep up",
            "ex3-bm": fmt(q(as_float(cc["B_m"], "sequence"), "sequence"), digits=4),
            "ex3-bc": fmt(q(as_float(cc["B_c"], "sequence"), "sequence"), digits=4),
            "ex3-chunk": fmt((cc["B_L"] * cc["tau"] * cc["p"] / cc["o"]).to("token"))}


def chain_texts(ch, p) -> dict:
    """The prose numbers of the chain and simulation sections, for the reader's parameters."""
    sim, B = ch.data["simulation"], batch_size(ch)
    st, co = sim["static"], sim["continuous"]
    return {"tpot-ms": fmt(ch["t_95"]), "tpot-ms-2": fmt(ch["t_95"]), "tpot-ms-3": fmt(ch["t_95"]),
            "tpot-blk-ms": fmt(ch["t_blk"]), "tpot-blk-ms-2": fmt(ch["t_blk"]), "intro-model": p.model.name,
            "intro-gpus": str(p.gpus_per_replica), "intro-gpu": p.gpu.name,
            "intro-context": fmt(q(p.context_tokens, "token")), "intro-target": fmt(ch["L"]),
            "intro-chunk": fmt(q(p.chunk_tokens, "token")), "intro-pf-cap": fmt(ch["B_pf"]), "intro-binds": binds(ch),
            "c-weights": fmt(ch["M_w"]), "c-kv": fmt(ch["M_kv"]), "c-managed": fmt(ch["c_u"]),
            "c-kvs": fmt(q(as_float(ch["kv_u"], "GB/sequence"), "GB")),
            "c-bm": fmt(q(as_float(ch["B_m"], "sequence"), "sequence"), digits=4),
            "c-bc": fmt(q(as_float(ch["B_c"], "sequence"), "sequence"), digits=4),
            "c-phi": pct(as_float(ch["phi"], "")), "c-td": fmt(ch["t_d"]), "c-tc": fmt(ch["t_c"]), "c-bound": bound(ch),
            "c-H": fmt(ch["H"]), "c-sH": pct(as_float(ch["s_H"], "")),
            "c-hmax": fmt(q(as_float(ch["h_max"], "µs/token"), "µs")), "c-xblk": fmt(ch["X_blk"]),
            "c-xloss": pct(1 - as_float(ch["X_blk"] / ch["X"], "")),
            "hb-batch": fmt(ch["B"]), "hb-value": fmt(batching.harmonic(B), digits=3),
            "hb-use": pct(1 / batching.harmonic(B)),
            "s-n": fmt(sim["n"]), "sim-tpot-ms": fmt(ch["sim_tpot"]), "s-static-x": fmt(q(st["throughput"], "token/s")),
            "s-use": pct(st["slot_use"]), "s-dec": fmt(co["mean_decoding"]), "s-share": pct(co["chunk_share"]),
            "s-step95": fmt(q(co["step_p95"], "s").to("ms"))}


def simulation_rows(ch) -> list[tuple[str, str, str, str]]:
    """The simulation table: (what, static, continuous, chain)."""
    sim, B = ch.data["simulation"], fmt(batch_size(ch))
    st, co = sim["static"], sim["continuous"]
    return [("tokens per second", fmt(q(st["throughput"], "token/s")), fmt(ch["sim_x"]), fmt(ch["X"])),
            ("p95 TPOT over requests", fmt(q(st["tpot_p95"], "s").to("ms")), fmt(ch["sim_tpot"]),
             f"{fmt(ch['t_95'])} (p95 step)"),
            ("slots producing tokens", pct(st["slot_use"]), f"{fmt(co['mean_decoding'])} of {B} on average", B),
            ("steps carrying a chunk", "none (one prefill pass per batch)", pct(co["chunk_share"]),
             pct(as_float(ch["phi"], ""))),
            ("continuous / static", "", f"**{fmt(sim['ratio'], digits=3)}**", "")]


def check_texts(ck: dict) -> dict:
    """The check section's numbers, on the claim's reading."""
    cc, cs, cf, sim = ck["chain"], ck["kv_chain"], ck["closed"], ck["sim"]
    return {"claim-gpus": str(CLAIM["gpus_per_replica"]), "claim-context": fmt(q(CLAIM["context_tokens"], "token")),
            "claim-prompt": fmt(q(CLAIM["mean_prompt_tokens"], "token")),
            "claim-output": fmt(q(CLAIM["mean_output_tokens"], "token")), "claim-tpot": fmt(cc["L"]),
            "claim-chunk": fmt(cc["c"]), "claim-host": fmt(q(CLAIM["host_us_per_token"], "µs")),
            "k-kv": fmt(cc["U"]), "k-L": fmt(cc["B_L"]), "k-pf": fmt(cc["B_pf"]), "k-b": fmt(cc["B"]),
            "k-x": fmt(cc["X"]), "k-t95": fmt(cc["t_95"]), "k-sim-t95": fmt(q(sim["continuous"]["tpot_p95"], "s").to("ms")),
            "k-ratio": fmt(sim["ratio"], digits=3), "k-ratio-cf": fmt(ck["ratio_cf"], digits=3),
            "k-seeds": num(SEEDS), "k-ratio-lo": fmt(min(s["ratio"] for s in ck["sims"]), digits=3),
            "k-ratio-hi": fmt(max(s["ratio"] for s in ck["sims"]), digits=3),
            "k-emax": fmt(cf["e_max"], digits=3), "k-mean-o": fmt(cf["mean_o"], digits=3),
            "k-hb": fmt(batching.harmonic(ck["B"]) * CLAIM["mean_output_tokens"], digits=3),
            "k-cstar": fmt(q(ck["c_star"], "token")), "k-cstar-x": fmt(cs["X"]), "k-cstar-t95": fmt(cs["t_95"]),
            "k-cstar-db": pct(as_float(cs["B"] / cc["B"], "") - 1), "k-cstar-dx": pct(as_float(cs["X"] / cc["X"], "") - 1),
            "k-H": fmt(cc["H"]), "k-blk": fmt(cc["t_blk"])}


def check_holds(ck: dict) -> bool:
    """Every link of the claim on the book's inputs, on every one of the SEEDS traces (the page asserts this)."""
    cc, cs, cf = ck["chain"], ck["kv_chain"], ck["closed"]
    chain_ok = all([bound(cc) == "memory bandwidth", cc["t_95"] <= cc["L"], cc["U"] < cc["B_L"],
                    cc["B_pf"] < cc["U"], binds(cs) == "the KV budget", cc["H"] < cc["t_bar"],
                    cc["t_blk"] > cc["t_95"]])
    # eight static batches a trace: the mean longest reply, and so the ratio, lands within about a seventh of
    # its expectation on every seed
    return chain_ok and all(all([sim["ratio"] > 1, abs(sim["ratio"] / ck["ratio_cf"] - 1) < 0.15,
                                 abs(sim["static"]["slot_use"] / cf["slot_use"] - 1) < 0.15,
                                 sim["continuous"]["tpot_p95"] <= CLAIM["tpot_target_s"],
                                 abs(sim["continuous"]["throughput"] / as_float(cc["X"], "token/s") - 1) < 0.1])
                            for sim in ck["sims"])


GEMM_SWEEP_K = 8192   # the harness's gemm-batch-sweep: one bf16 weight of K x K against M rows


def measurement_predictions(gpu) -> dict:
    """The roofline's predictions for the GEMM batch sweep on `gpu` (a catalog Entry): the time at one
    row (the weight read) and the knee in rows (the ridge)."""
    bw, peak = gpu.q("hbm_bandwidth"), gpu.q("bf16_dense")
    return dict(time_m1=(q(2 * GEMM_SWEEP_K ** 2, "byte") / bw).to("s"), knee_m=float((peak / bw).to("FLOP/byte").m))


def variants_table(p) -> str:
    """The 'what changes the answer' table (markdown), one row per variant of the reader's parameters."""
    head = ("| change | KV cap | TPOT batch | prefill cap | batch | tokens per second | p95 TPOT | "
            "p95 TPOT, host on the engine loop |\n|---|---|---|---|---|---|---|---|\n")
    rows = []
    for label, c in variants(p):
        if isinstance(c, str):
            rows.append(f"| {label} | {c} | | | | | | |")
        else:
            rows.append(f"| {label} | {fmt(c['U'])} | {fmt(c['B_L'])} | {fmt(c['B_pf'])} | {fmt(c['B'])} "
                        f"({binds(c)}) | {fmt(c['X'])} | {fmt(c['t_95'])} | {fmt(c['t_blk'])} |")
    return head + "\n".join(rows)


SPEC = Spec("continuous-batching", PARAMETERS, RESULTS, compute, validate=validate)
