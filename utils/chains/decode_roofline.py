"""decode-roofline: a decode step on the roofline; the batch is the weight term's intensity.

A decode step reads every weight once whatever the batch and does two FLOPs per weight per sequence, so
the weight traffic's intensity is k N_a / (N_r b_w) per sequence: the batch B with bf16 weights. The
ridge I* = P / W is where compute and memory tie; the ridge batch solves I_1 B* = I*. The KV cache, sized
by the serving memory budget (utils.serving: vLLM's share of what the driver reports, less the weights),
caps the batch at the sequences whose caches fit; the crossover context is where that cap equals B*.
"""
from __future__ import annotations

import functools
import math

from utils import catalog, models, roofline, serving
from utils.chain import Chain, as_float, memoised
from utils.params import Param, Result, Spec
from utils.roofline import ACHIEVED, FRACTIONS, add_fraction_inputs, fraction_params  # noqa: F401 - FRACTIONS: the chapter's defaults
from utils.units import fmt, pct, q, short
from utils.verdicts import HOLDS, WRONG, Claim, rounds_to

PARAMETERS = (
    Param("model", "llama-3-70b", "the model: a catalog key or the path of a Hugging Face config.json",
          check="model", source="catalog: Llama-3-70B, the claim's 70B model"),
    Param("gpu", "h100-sxm", "the accelerator: a catalog key", check="accelerator", source="catalog: H100 SXM, the claim's GPU"),
    Param("weight_bytes_per_param", 2.0, "bytes per stored weight: 2 = bf16, 1 = fp8", unit="byte/parameter",
          source="bf16 weights (this book's reading)"),
    Param("kv_bytes_per_element", 2.0, "bytes per cached K or V element: 2 = bf16, 1 = fp8", unit="byte",
          source="bf16 cache (this book's reading)"),
    Param("context_tokens", 8192, "tokens of context each sequence may hold in the KV cache", unit="token",
          check="whole", source="catalog: Llama-3-70B's context window (the claim gives none)"),
    Param("gpus_per_replica", 8, "GPUs holding one copy of the model (tensor parallel), e.g. one node",
          check="whole", source="one HGX H100 node (the claim's 'on H100')"),
    Param("gpu_memory_utilization", 0.9, "share of each GPU's memory the engine manages (vLLM's default)",
          check="fraction", source="catalog: vLLM's default gpu_memory_utilization"),
    Param("memory_reading", "driver", "which total the share multiplies: driver (what vLLM multiplies), "
          "nvidia-smi or datasheet", check="choice", choices=serving.READINGS,
          source="vLLM multiplies the total the CUDA runtime reports (utils.serving)"),
    *fraction_params(),
)

RESULTS = (
    Result("ridge_intensity", "FLOP/B", "Ridge: dense bf16 rate / HBM bandwidth", of="I_star"),
    Result("ridge_batch", "sequence", "Batch at which the weight term reaches the ridge", of="B_star"),
    Result("kv_batch_ceiling", "sequence", "Sequences whose KV cache fits (the KV ceiling)", of="U"),
    Result("decode_step_time", "ms", "Decode step time at the KV ceiling, at the achieved shares", of="t"),
    Result("decode_throughput", "token/s", "Decode throughput of the replica at the KV ceiling", of="R"),
    Result("crossover_context", "token/sequence", "Context at which the KV ceiling equals the ridge batch", of="T_x"),
)

MODELS_SOURCE = "counted from the catalog config by utils.models"
RIDGE_FIGURES = 3             # "about 295": three significant figures
# The claim's numbers: 2 FLOPs per weight byte, intensity equal to the batch, a ridge of about 295 FLOP/byte
# on H100, and a KV ceiling for a 70B model on H100 (read: one node of eight, before the ridge).
CLAIM = dict(flops_per_weight=2, intensity_per_sequence=1.0, ridge=295.0, n_params=70e9,
             model="llama-3-70b", gpu="h100-sxm", gpus_per_node=8, weight_bytes=2.0, kv_bytes=2.0)
QUOTES = dict(
    intensity="At batch 1 a decode step reads every weight byte to do two FLOPs with it. "
              "The intensity is the batch size,",
    ridge="the ridge is about 295,",
    kv="and the KV cache puts a ceiling on how far batching can push you. "
       "The full chain for a 70B model on H100.")
SOURCE = "spec/001, paragraph on decode and the roofline"


def validate(p):
    serving.budget(p.model, p.gpu, p.gpus_per_replica, p.weight_bytes_per_param, p.kv_bytes_per_element,
                   p.context_tokens, p.gpu_memory_utilization, p.memory_reading)




def decode_chain(m, acc, weight_bytes_per_param, kv_bytes_per_element, context_tokens, gpus_per_replica,
                 gpu_memory_utilization=0.9, memory_reading="driver", compute_fraction=FRACTIONS[0],
                 bandwidth_fraction=FRACTIONS[1], *, source="parameters cell", cite=None) -> Chain:
    """Decode of model `m` on a replica of `gpus_per_replica` x `acc` (catalog Entries) at its KV ceiling.
    Each input cites `source`, or cite(parameter name) where given (the page's SPEC.source)."""
    cite = cite or (lambda _name: source)
    c = roofline.Chip(acc.key, acc.name, acc.q("bf16_dense").to("FLOP/s"), acc.q("hbm_bandwidth").to("byte/s"))
    n = models.param_count(m)
    per_gpu = q(1, "GPU")
    b = serving.budget(m, acc, gpus_per_replica, weight_bytes_per_param, kv_bytes_per_element, context_tokens,
                       gpu_memory_utilization, memory_reading)
    ch = Chain(f"Decode of {m.name} on {gpus_per_replica} x {acc.name}")
    ch.given("P", c.peak / per_gpu, "dense bf16 tensor rate per GPU", kind=acc["bf16_dense"].kind,
             source=acc["bf16_dense"].cite)
    ch.given("W", c.bandwidth / per_gpu, "HBM bandwidth per GPU", kind=acc["hbm_bandwidth"].kind,
             source=acc["hbm_bandwidth"].cite)
    ch.step("I_star", "P/W", "FLOP/byte", "ridge: the intensity where the two ceilings meet")
    add_fraction_inputs(ch, compute_fraction, bandwidth_fraction, source)
    default_u = gpu_memory_utilization == serving.vllm_utilization()
    serving.add_budget_steps(ch, b, source={"g": cite("gpus_per_replica"), "u": cite("gpu_memory_utilization"),
                                            "b_w": cite("weight_bytes_per_param"), "T": cite("context_tokens")},
                             utilization_value=serving.vllm_utilization_value() if default_u else None)
    ch.given("k", q(CLAIM["flops_per_weight"], "FLOP/parameter/token"), "FLOPs per weight per token",
             kind="derived", source="one multiply-add per weight per token")
    ch.given("N_a", n["active"], "weights multiplied per token", kind="derived", source=MODELS_SOURCE)
    ch.given("N_r", n["total"] - n["embedding"], "weights read per step (all but the embedding table, a lookup)",
             kind="derived", source=MODELS_SOURCE + ("; every expert is read once the batch reaches each of them"
                                                     if models.is_moe(m) else ""))
    ch.given("tau", q(1, "token/sequence"), "tokens each sequence adds per step", kind="derived",
             source="decode: one token per sequence per step")
    ch.step("I_1", "k*N_a*tau/(N_r*b_w)", "FLOP/byte/sequence", "weight-term intensity per sequence")
    ch.solve("B_star", "I_star = I_1*B_star", "sequence", "ridge batch: where the weight term meets the ridge")
    ch.given("I_kv", models.kv_term_intensity(m, kv_bytes_per_element), "attention FLOPs per KV byte read",
             kind="derived", source="utils.models.kv_term_intensity")
    ch.solve("T_x", "B_star = M_kv/(rho*kappa*T_x)", "token/sequence",
             "context at which the KV ceiling (U) equals the ridge batch")
    ch.step("f", "k*N_a*tau + I_kv*kappa*T", "GFLOP/sequence", "FLOPs per sequence per step")
    ch.step("I_inf", "f/kv_u", "FLOP/byte", "whole step's intensity as the batch grows without bound")
    if ch["rho"] * ch["I_star"] > ch["I_kv"]:
        ch.solve("T_r", "I_star = (k*N_a*tau + I_kv*kappa*T_r)/(rho*kappa*T_r)", "token/sequence",
                 "longest context at which a whole step can reach the ridge at all")
    ch.step("F", "U*f", "TFLOP", "FLOPs of a step at the ceiling")
    ch.step("M", "N_r*b_w + U*kv_u", "GB", "bytes a step at the ceiling reads")
    ch.step("I_c", "F/M", "FLOP/byte", "the step's intensity at the ceiling")
    ch.step("t_F", "F/(g*eta_P*P)", "ms", "compute time at the achieved rate, spread over the replica")
    ch.step("t_M", "M/(g*eta_W*W)", "ms", "memory time at the achieved bandwidth, spread over the replica")
    ch.step("t", "Max(t_F, t_M)", "ms", "decode step time at the ceiling")
    ch.step("R", "U*tau/t", "token/s", "decode throughput of the replica")
    ch.given("B_1", q(1, "sequence"), "a batch of one", kind="assumption", source="for comparison")
    ch.step("t_1", "Max(B_1*f/(g*eta_P*P), (N_a*b_w + B_1*kv_u)/(g*eta_W*W))", "ms",
            "step time at batch one, which reads only the weights it multiplies: the latency floor")
    return ch


def compute(p) -> Chain:
    return decode_chain(p.model, p.gpu, p.weight_bytes_per_param, p.kv_bytes_per_element, p.context_tokens,
                        p.gpus_per_replica, p.gpu_memory_utilization, p.memory_reading, p.compute_fraction,
                        p.bandwidth_fraction, cite=functools.partial(SPEC.source, p))


def has(ch, name) -> bool:
    return any(r.name == name for r in ch.rows)


# --- the two intensities, symbolically ---------------------------------------------------------------
def intensities() -> dict:
    """The GEMM's intensity and its weight term (d >> B), and the KV term's, derived with sympy."""
    import sympy as sp
    B, d_in, d_out, b_w, b_a = sp.symbols("B d_in d_out b_w b_a", positive=True)
    gemm = 2 * B * d_in * d_out / (b_w * d_in * d_out + b_a * B * (d_in + d_out))
    weight = sp.limit(gemm.subs(d_out, d_in), d_in, sp.oo)
    H, H_kv, d_h, b_kv = sp.symbols("H H_kv d_h b_kv", positive=True)
    kv = sp.simplify(4 * H * d_h / (2 * H_kv * d_h * b_kv))
    m = catalog.model(CLAIM["model"])
    kv_claim = kv.subs({H: int(m.q("n_heads").m), H_kv: int(m.q("n_kv_heads").m), b_kv: sp.nsimplify(CLAIM["kv_bytes"])})
    rows = [(r"bf16 weights, $b_w = 2$", weight.subs(b_w, 2)), (r"fp8 weights, $b_w = 1$", weight.subs(b_w, 1)),
            (r"fp4 weights, $b_w = 1/2$", weight.subs(b_w, sp.Rational(1, 2)))]
    gemm_md = (f"Full GEMM: $I = {sp.latex(gemm)}$; weight term ($d \\gg B$): $I = {sp.latex(weight)}$ FLOP/byte\n\n"
               "| weights | intensity of the weight term (FLOP/byte) |\n|---|---|\n"
               + "\n".join(f"| {name} | ${sp.latex(v)}$ |" for name, v in rows))
    kv_md = f"$I_{{kv}} = {sp.latex(kv)}$ FLOP/byte, whatever the batch; {m.name} in bf16: $I_{{kv}} = {sp.latex(kv_claim)}$"
    return dict(weight_is_2B_over_bw=sp.simplify(weight - 2 * B / b_w) == 0, gemm_md=gemm_md, kv_md=kv_md,
                kv_claim=float(kv_claim), model=m.name,
                glue={"k-flops": str(CLAIM["flops_per_weight"]), "kv-intensity-llama70": fmt(q(float(kv_claim), "FLOP/byte")),
                      "llama70-name": m.name})


# --- prose ---------------------------------------------------------------------------------------------
def prose(p, ch) -> dict:
    capped = ch["U"] < ch["B_star"]
    bound = "memory bandwidth" if ch["t_M"] >= ch["t_F"] else "compute"
    per_seq = q(1, "sequence")
    return {
        "intro-ridge-batch": fmt(ch["B_star"].m), "intro-model": p.model.name,
        "intro-gpus": f"{p.gpus_per_replica} {p.gpu.name}", "intro-context": fmt(q(p.context_tokens, "token")),
        "intro-ceiling": fmt(ch["U"].m),
        "intro-verdict": "so memory caps the batch before the ridge" if capped
        else "more than the ridge batch, so the weight term can reach the ridge before memory runs out",
        "intro-bound": bound, "chip-name": p.gpu.name,
        "eta-p": pct(p.compute_fraction), "eta-w": pct(p.bandwidth_fraction), "peak": fmt(ch["P"] * q(1, "GPU"), "TFLOP/s"),
        "bandwidth": fmt(ch["W"] * q(1, "GPU"), "TB/s"), "intensity-per-seq": fmt(ch["I_1"]),
        "n-read": short(ch["N_r"].m), "bytes-per-weight": fmt(p.weight_bytes_per_param),
        "weights-gb": fmt(ch["M_w"]), "memory-total": fmt(ch["C"] * ch["g"]), "engine-share": pct(ch["u"]),
        "memory-label": ch.rows[[r.name for r in ch.rows].index("C")].label.replace("HBM per GPU, ", ""),
        "kv-budget": fmt(ch["M_kv"]), "kv-per-token": fmt(ch["kappa"], "kB/token"), "kv-per-seq": fmt(ch["kv_u"] * per_seq),
        "ceiling-vs-ridge": "below" if capped else "above", "i-ceiling": fmt(ch["I_c"]), "i-inf": fmt(ch["I_inf"]),
        "t-compute": fmt(ch["t_F"]), "t-memory": fmt(ch["t_M"]), "t-batch1": fmt(ch["t_1"]),
        "per-seq-rate": fmt((ch["tau"] * per_seq / ch["t"]).to("token/s")),
        "gain-vs-batch1": fmt(round(as_float(ch["R"] * ch["t_1"] / q(1, "token"), ""))),
        "slowdown-vs-batch1": fmt(as_float(ch["t"] / ch["t_1"], ""), digits=2),
        "read-share": pct(as_float(ch["M"] / (ch["C"] * ch["g"]), "")),
        "context-ridge-at-all": (f"only at contexts up to {fmt((ch['T_r'] * per_seq).to('token'))}" if has(ch, "T_r")
                                 else "at any context, because the cache's own intensity is above the ridge"),
        "crossover-tokens": fmt((ch["T_x"] * per_seq).to("token")),
    }


# --- the claims -----------------------------------------------------------------------------------------
def claim_chain(**changes) -> Chain:
    """The claim's reading: Llama-3-70B, bf16 weights and cache, one node of eight H100s, the model's window."""
    m = catalog.model(CLAIM["model"])
    args = dict(m=m, acc=catalog.accelerator(CLAIM["gpu"]), weight_bytes_per_param=CLAIM["weight_bytes"],
                kv_bytes_per_element=CLAIM["kv_bytes"], context_tokens=int(m.q("max_context").m),
                gpus_per_replica=CLAIM["gpus_per_node"], gpu_memory_utilization=serving.vllm_utilization(),
                memory_reading="driver")
    return decode_chain(**{**args, **changes}, source="the claim")


def memory_readings(cc) -> dict:
    """{label: (memory per GPU, share, KV ceiling, crossover context)} for three readings of the H100's memory."""
    out = {}
    for label, reading, share in [("driver (what vLLM multiplies), vLLM's share", "driver", None),
                                  ("datasheet, vLLM's share", "datasheet", None),
                                  ("nvidia-smi, all of it", "nvidia-smi", 1.0)]:
        ch = claim_chain(memory_reading=reading, **({} if share is None else {"gpu_memory_utilization": share}))
        out[label] = (ch["C"] * q(1, "GPU"), ch["u"].m, ch["U"], ch["T_x"] * q(1, "sequence"))
    return out


def claims() -> list[Claim]:
    cc, fp8 = claim_chain(), claim_chain(weight_bytes_per_param=1.0)
    acc = catalog.accelerator(CLAIM["gpu"])
    claimed_ridge = q(CLAIM["ridge"], "FLOP/byte")
    readings = memory_readings(cc)
    # A ceiling at every context from one token to the window: the sequences that fit stay finite and fall as
    # one over the context; at the window they sit below the ridge batch under every reading of the memory.
    ceiling_everywhere = bool(claim_chain(context_tokens=1)["U"] < q(1e7, "sequence")
                              and all(v[2] < cc["B_star"] for v in readings.values()))
    all_mem = readings["nvidia-smi, all of it"][3]
    achieved_ridge = cc["I_star"] * FRACTIONS[0] / FRACTIONS[1]
    return [
        Claim("intensity", quote=QUOTES["intensity"], source=SOURCE,
              claimed="two FLOPs per weight byte; intensity = batch size",
              derived=f"{fmt(cc['I_1'])} with bf16 weights (two FLOPs per two-byte weight); "
                      f"{fmt(fp8['I_1'])} with fp8 weights",
              verdict=WRONG,
              nearest_true=f"A decode step does {CLAIM['flops_per_weight']} FLOPs per weight it reads, so with bf16 "
                           f"weights the weight term's intensity is the batch size B ({fmt(cc['I_1'])}); two FLOPs per "
                           f"weight byte is the fp8 case, where it is twice the batch ({fmt(fp8['I_1'])}).",
              reason=f"Two FLOPs per weight byte gives {fmt(fp8['I_1'])} (one-byte weights), and an intensity equal to "
                     f"the batch needs two-byte weights ({fmt(cc['I_1'])}): the two halves need different weight "
                     f"widths; the KV reads stay at {fmt(cc['I_kv'])} whatever the batch."),
        Claim("ridge", quote=QUOTES["ridge"], source=SOURCE, claimed=f"about {fmt(claimed_ridge)}",
              derived=fmt(cc["I_star"]),
              verdict=HOLDS if rounds_to(cc["I_star"], claimed_ridge, RIDGE_FIGURES) else WRONG,
              reason=f"{acc.short_name} dense bf16 {fmt(acc.q('bf16_dense'), 'TFLOP/s', digits=4)} over "
                     f"{fmt(acc.q('hbm_bandwidth'), 'TB/s')} of HBM is {fmt(cc['I_star'], digits=4)}, which rounds "
                     f"to the stated {fmt(claimed_ridge)} at its own figures; the sparse rate would give twice that, "
                     f"and the shares others measured ({pct(FRACTIONS[0])} of the peak, {pct(FRACTIONS[1])} of the "
                     f"bandwidth) give {fmt(achieved_ridge, digits=3)}."),
        Claim("kv-ceiling", quote=QUOTES["kv"], source=SOURCE,
              claimed="the KV cache caps the batch, for 70B on one H100 node",
              derived=f"{fmt(cc['U'])} fit at {fmt(cc['T'] * q(1, 'sequence'))} of context vs a ridge batch of "
                      f"{fmt(cc['B_star'])}",
              verdict=HOLDS if ceiling_everywhere else WRONG,
              nearest_true="" if ceiling_everywhere else "the cache holds every batch the node could run at these inputs",
              reason=f"The words assert a ceiling, and the cache sets one at every context: {fmt(cc['U'])} at the "
                     f"model's window of {fmt(cc['T'] * q(1, 'sequence'))}, against a ridge batch of {fmt(cc['B_star'])}; "
                     f"the ceiling falls below the ridge batch above {fmt((cc['T_x'] * q(1, 'sequence')).to('token'))} "
                     f"of context ({fmt(all_mem.to('token'))} with all of nvidia-smi's memory), and below that context "
                     f"compute stops batching's gain first."),
    ]


@memoised
def checks() -> dict:
    cc, fp8 = claim_chain(), claim_chain(weight_bytes_per_param=1.0)
    chip = roofline.chip(CLAIM["gpu"])
    achieved = roofline.Chip(chip.key, chip.name, chip.peak * FRACTIONS[0], chip.bandwidth * FRACTIONS[1])
    readings = memory_readings(cc)
    t_floor, bound = roofline.time_floor(cc["F"] / CLAIM["gpus_per_node"], cc["M"] / CLAIM["gpus_per_node"], achieved)
    t_fill = (cc["C"] * cc["u"] / (cc["eta_W"] * cc["W"])).to("ms")
    roof = claim_chain(compute_fraction=1.0, bandwidth_fraction=1.0)
    smi = serving.gpu_memory(catalog.accelerator(CLAIM["gpu"]), "nvidia-smi").total
    per_seq = q(1, "sequence")
    table = ("| reading of an H100's memory | per GPU | share the engine manages | KV ceiling (sequences) | "
             "crossover context |\n|---|---|---|---|---|\n"
             + "\n".join(f"| {label} | {fmt(cap, 'GB')} | {pct(share)} | {fmt(ceil)} | {fmt(cross, 'token')} |"
                         for label, (cap, share, ceil, cross) in readings.items())
             + f"\n\nRidge batch: {fmt(cc['B_star'])}. Step at the ceiling: {fmt(cc['t'])} "
               f"(utils.roofline.time_floor at the achieved rates: {fmt(t_floor.to('ms'))}, {bound}-bound; "
               f"at the datasheet's roof it would be {fmt(roof['t'])}).")
    glue = {"claim-ridge-value": fmt(CLAIM["ridge"]), "claim-model-size": short(CLAIM["n_params"]),
            "check-gpus": str(CLAIM["gpus_per_node"]), "check-context": fmt(cc["T"] * per_seq),
            "check-ridge": fmt(cc["I_star"]), "check-i1": fmt(cc["I_1"]), "check-i1-fp8": fmt(fp8["I_1"]),
            "check-ridge-batch": fmt(cc["B_star"]), "check-ridge-batch-fp8": fmt(fp8["B_star"]),
            "check-ceiling": fmt(cc["U"]), "check-crossover": fmt((cc["T_x"] * per_seq).to("token")),
            "check-ikv": fmt(cc["I_kv"]), "check-step": fmt(cc["t"]), "check-fill-time": fmt(t_fill),
            "driver-gib": fmt(cc["C"].to("GiB/GPU") * q(1, "GPU"), digits=4), "driver-gb": fmt(cc["C"] * q(1, "GPU")),
            "smi-mib": fmt(smi.to("MiB")), "datasheet-capacity": fmt(catalog.accelerator(CLAIM["gpu"]).q("hbm_capacity")),
            "check-inf": fmt(cc["I_inf"]), "check-ridge-context": fmt((cc["T_r"] * per_seq).to("token")),
            "check-eta-w": pct(FRACTIONS[1]), "check-eta-p": pct(FRACTIONS[0]), "check-roof-step": fmt(roof["t"]),
            "check-roof-rate": fmt(roof["R"]), "check-rate": fmt(cc["R"])}
    return dict(chain=cc, fp8=fp8, readings=readings, t_floor=t_floor, bound=bound, t_fill=t_fill, table=table,
                glue=glue, ridge_route=as_float(chip.ridge, "FLOP/byte") / as_float(cc["I_star"], "FLOP/byte"))


# --- figures, what changes, exercises --------------------------------------------------------------------
def roofline_chips() -> list[str]:
    return [k for k in catalog.keys("accelerator")
            if "bf16_dense" in catalog.accelerator(k) and "hbm_bandwidth" in catalog.accelerator(k)]


def roofs(intensity) -> dict:
    """{display name: (attainable TFLOP/s over `intensity`, ridge FLOP/byte, peak TFLOP/s, key)} per chip."""
    import numpy as np
    out = {}
    for key in roofline_chips():
        ck = roofline.chip(key)
        roof = roofline.attainable(q(np.asarray(intensity), "FLOP/byte"), ck).to("TFLOP/s").m
        out[catalog.accelerator(key).short_name] = (roof, as_float(ck.ridge, "FLOP/byte"), as_float(ck.peak, "TFLOP/s"), key)
    return out


def decode_points(ch) -> list[tuple]:
    """(label, intensity FLOP/byte, attainable TFLOP/s) for the chosen setup's decode step."""
    peak, bw = as_float(ch["P"] * q(1, "GPU"), "TFLOP/s"), as_float(ch["W"] * q(1, "GPU"), "TB/s")
    pts = [("weight term, batch 1", as_float(ch["I_1"] * q(1, "sequence"), "FLOP/byte")),
           ("weight term at the KV ceiling", as_float(ch["I_1"] * ch["U"], "FLOP/byte")),
           ("whole step at the KV ceiling", as_float(ch["I_c"], "FLOP/byte"))]
    return [(label, i, min(peak, i * bw)) for label, i in pts]


def gemm_sweep_prediction(gpu, k, n, rows):
    """The roofline floor of y = x W (x: rows x k, W: k x n, bf16) in microseconds, for each row count."""
    import numpy as np
    c = roofline.chip(gpu.key) if gpu.key in catalog.keys("accelerator") else roofline.Chip(
        gpu.key, gpu.name, gpu.q("bf16_dense").to("FLOP/s"), gpu.q("hbm_bandwidth").to("byte/s"))
    mm = np.asarray(rows, dtype=float)
    return np.maximum(2 * mm * k * n / c.peak.to("FLOP/s").m,
                      2 * (k * n + mm * k + mm * n) / c.bandwidth.to("byte/s").m) * 1e6


def ceiling_curves(p, contexts) -> dict:
    """{display name: (KV ceiling before rounding, ridge batch, key)} against context, for each chip the
    reader's model fits on."""
    import numpy as np

    from utils.params import ParameterError
    out = {}
    ctx = np.asarray(contexts, dtype=float)
    for key in roofline_chips():
        try:
            ck = decode_chain(p.model, catalog.accelerator(key), p.weight_bytes_per_param, p.kv_bytes_per_element,
                              p.context_tokens, p.gpus_per_replica, p.gpu_memory_utilization, p.memory_reading,
                              p.compute_fraction, p.bandwidth_fraction)
        except ParameterError:
            continue
        ceiling = as_float(ck["M_kv"], "byte") / (as_float(ck["rho"] * ck["kappa"], "byte/token") * ctx)
        out[catalog.accelerator(key).short_name] = (np.where(ceiling >= 1, ceiling, np.nan),
                                                    as_float(ck["B_star"], "sequence"), key)
    return out


def what_changes(p, ch: Chain) -> dict:
    cc, fp8 = claim_chain(), claim_chain(weight_bytes_per_param=1.0)
    h200 = claim_chain(acc=catalog.accelerator("h200"))
    kv8 = claim_chain(kv_bytes_per_element=1.0)
    h100 = catalog.accelerator(CLAIM["gpu"])
    ridge_fp8 = (h100.q("fp8_dense") / h100.q("hbm_bandwidth")).to("FLOP/byte")
    w8a8_batch = (ridge_fp8 / fp8["I_1"]).to("sequence")
    short_c, long_c = claim_chain(context_tokens=2048), claim_chain(context_tokens=32768)
    per_seq = q(1, "sequence")
    holds = bool(h200["U"] > h200["B_star"] and kv8["U"] > cc["B_star"] and fp8["B_star"] < fp8["U"] < w8a8_batch)
    return dict(holds=holds, glue={
        "wc-h200-gpus": str(CLAIM["gpus_per_node"]), "wc-h200-ridge": fmt(h200["I_star"]),
        "wc-h200-ceiling": fmt(h200["U"].m), "wc-h200-crossover": fmt((h200["T_x"] * per_seq).to("token")),
        "wc-kv8-ceiling": fmt(kv8["U"]), "wc-kv8-crossover": fmt((kv8["T_x"] * per_seq).to("token")),
        "wc-w8-freed": fmt(cc["M_w"] - fp8["M_w"]), "wc-w8-ceiling": fmt(fp8["U"]),
        "wc-w8a8-ridge": fmt(ridge_fp8), "wc-w8a8-batch": fmt(w8a8_batch),
        "wc-ctx-short": fmt(q(2048, "token")), "wc-ctx-short-ceiling": fmt(short_c["U"]),
        "wc-ctx-long": fmt(q(32768, "token")), "wc-ctx-long-ceiling": fmt(long_c["U"])})


def exercises(p, ch: Chain) -> dict:
    cc = claim_chain()
    llama8 = catalog.model("llama-3-8b")
    ex1 = claim_chain(m=llama8, gpus_per_replica=1)
    m70 = catalog.model(CLAIM["model"])
    d_model, n_layers, g = int(m70.q("d_model").m), int(m70.q("n_layers").m), CLAIM["gpus_per_node"]
    allreduce = (cc["U"] * q(1, "token/sequence") * d_model * q(2, "byte/token")).to("MB")
    per_gpu_bytes = (2 * n_layers * 2 * (g - 1) / g * allreduce).to("MB")
    link = catalog.accelerator(CLAIM["gpu"]).q("scaleup_bandwidth_unidirectional")
    t_ar = (per_gpu_bytes / link).to("ms")
    at_x = claim_chain(context_tokens=math.floor(as_float(cc["T_x"], "token/sequence")))
    return {"ex1-model": llama8.name, "ex1-ridge-batch": fmt(ex1["B_star"]), "ex1-weights": fmt(ex1["M_w"]),
            "ex1-ceiling": fmt(ex1["U"]), "ex1-step": fmt(ex1["t"]), "ex1-rate": fmt(ex1["R"]),
            "ex2-batch": fmt(cc["U"].m), "ex2-width": str(d_model), "ex2-size": fmt(allreduce),
            "ex2-layers": str(n_layers), "ex2-bytes": fmt(per_gpu_bytes), "ex2-link": fmt(link), "ex2-time": fmt(t_ar),
            "ex2-share": pct(as_float(t_ar / cc["t"], "")), "ex3-ceiling": fmt(at_x["U"]), "ex3-step": fmt(at_x["t"]),
            "ex3-bound": "memory bandwidth" if at_x["t_M"] >= at_x["t_F"] else "compute",
            "ex3-intensity": fmt(at_x["I_c"])}


SPEC = Spec("decode-roofline", PARAMETERS, RESULTS, compute, validate=validate, closed_form=True)
