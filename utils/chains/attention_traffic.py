"""attention-traffic: the N x N score matrix that standard attention sends through HBM, and what tiling
buys back.

Standard attention writes S = QK^T, the softmax reads S and writes P, the second product reads P: the
square matrix crosses HBM four times (counted on the page from eager torch by utils.gpu.byte_counter). The
tiled kernel keeps S and P on chip; with B_r query rows per program it reads K and V once per query block.
Both are placed on the GPU's roofline (the harness's measured ceilings where a record exists).
"""
from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING

from utils import catalog, measured, roofline
from utils.chain import Chain, as_float, memoised
from utils.params import Param, Result, Spec
from utils.units import auto_bytes, fmt, pct, q
from utils.verdicts import READING, Claim

if TYPE_CHECKING:
    import sympy as sp

PARAMETERS = (
    Param("gpu", "h200", "the accelerator: a catalog key or a spec file", check="accelerator",
          source="catalog: H200, the GPU the book measures on"),
    Param("context_tokens", 8192, "sequence length N", unit="token", check="whole",
          source="the claim (8k context)"),
    Param("head_dim", 128, "head dimension d", check="whole", source="Llama 3 and most current models"),
    Param("bytes_per_element", 2.0, "bytes per element of Q, K, V, O and the scores (2 = bf16 or fp16)",
          unit="B", source="bf16, the precision attention runs in"),
    Param("block_q", 128, "query rows per program of the tiled kernel, B_r", check="whole",
          source="utils/gpu/kernels/attention.py, the harness's block"),
    Param("block_k", 64, "keys per step of the tiled kernel's inner loop, B_c", check="whole",
          source="utils/gpu/kernels/attention.py"),
)

RESULTS = (
    Result("score_matrix_bytes", "MB", "One head's N x N score matrix", of="S_b"),
    Result("bytes_materialised", "MB", "Bytes one head moves before tiling (S and P written and read back)",
           of="M_m"),
    Result("bytes_tiled", "MB", "Bytes one head moves after tiling (K and V re-read once per query block)",
           of="M_t"),
    Result("traffic_ratio", "", "Bytes before tiling over bytes after", of="r"),
    Result("intensity_tiled", "FLOP/B", "Intensity of the tiled forward, every re-read from HBM", of="I_t"),
)

# Counted on the page (and in tests/chains/test_attention_traffic.py) from the operations eager torch dispatches
# for materialised attention: S written, S read by the softmax, P written, P read by the second product.
SQUARE_WRITES, SQUARE_READS = 2, 2
# The register file of the chapter's GPU (the gpu Param's default), from the catalog's per-SM limits.
REGFILE = q(int(catalog.entry("sm_limit", PARAMETERS[0].default).q("registers").m) * 4, "B")
REGFILE_SOURCE = ("NVIDIA, Tuning CUDA Applications for Hopper GPU Architecture (Hopper Tuning Guide), "
                  "section Occupancy: 'The register file size is 64K 32-bit registers per SM', "
                  "https://docs.nvidia.com/cuda/hopper-tuning-guide/index.html, read 2026-11-29")
MEMORY_CONTEXTS = (2048, 8192, 32768, 131072)     # the memory table's rows
LAYER_MODEL = "llama-3-70b"                       # the layer whose heads the memory side counts


def roofs(acc) -> tuple:
    """(matrix rate, bandwidth, kind, source): the harness's measured ceilings for this GPU where they
    exist, the datasheet's until then."""
    ceil = measured.ceilings(acc.key)
    if ceil is not None:
        src = f"the harness's ceilings, {ceil.record}"
        return ceil.bf16_matmul_rate.to("TFLOP/s"), ceil.copy_bandwidth.to("TB/s"), "measured", src
    return acc["bf16_dense"], acc["hbm_bandwidth"], None, None


def attention_chain(gpu, n_ctx, d, e, b_r, b_c, *, source="parameters cell", cite=None) -> Chain:
    """One head's attention forward before and after tiling, on the roofline of `gpu`. Each input cites `source`,
    or cite(parameter name) where given (the page's SPEC.source)."""
    cite = cite or (lambda _name: source)
    acc = gpu if hasattr(gpu, "key") else catalog.accelerator(gpu)
    ch = Chain(f"One head's attention forward at N = {int(n_ctx):,}, d = {int(d)}, on {acc.name}")
    ch.given("N", int(n_ctx), "context: query and key positions", kind="assumption", source=cite("context_tokens"))
    ch.given("d", int(d), "head dimension", kind="assumption", source=cite("head_dim"))
    ch.given("e", q(e, "B"), "bytes per element in HBM", kind="assumption", source=cite("bytes_per_element"))
    ch.step("S_b", "N**2*e", "MB", "one head's score matrix")
    ch.given("n_w", SQUARE_WRITES, "N x N matrices written: S, then P", kind="derived",
             source="counted from the operations eager torch dispatches (utils.gpu.byte_counter)")
    ch.given("n_r", SQUARE_READS, "N x N matrices read back: S by the softmax, P by the second product",
             kind="derived", source="counted, as above")
    ch.step("M_m", "(n_w + n_r)*S_b + 4*N*d*e", "MB", "bytes before tiling: the square passes, plus Q, K, V, O")
    ch.given("B_r", int(b_r), "query rows per program of the tiled kernel", kind="assumption", source=cite("block_q"))
    ch.step("T_q", "ceiling(N/B_r)", "", "query blocks: K and V are read once per block")
    ch.step("M_t", "2*N*d*e + 2*N*d*e*T_q", "MB", "bytes after tiling: Q and O once, K and V once per query block")
    ch.step("M_0", "4*N*d*e", "MB", "the floor: Q, K, V read once, O written once")
    ch.step("r", "M_m/M_t", "", "traffic ratio: before over after")
    ch.given("c", q(4, "FLOP"), "FLOPs per (query, key, dimension): two products of 2 FLOPs each",
             kind="derived", source="QK^T and PV, each a multiply and an add per term")
    ch.step("F", "c*N**2*d", "GFLOP", "FLOPs of the forward (softmax not counted)")
    ch.step("I_m", "F/M_m", "FLOP/B", "intensity before tiling")
    ch.step("I_t", "F/M_t", "FLOP/B", "intensity after tiling, every K and V re-read from HBM")
    ch.step("I_0", "F/M_0", "FLOP/B", "intensity after tiling, every re-read served by the L2 cache")
    peak, bw, kind, src = roofs(acc)
    if kind:
        ch.given("P", peak, "bf16 dense matrix rate", kind=kind, source=src)
        ch.given("W", bw, "HBM bandwidth", kind=kind, source=src)
    else:
        ch.given("P", peak, "bf16 dense matrix rate (datasheet)")
        ch.given("W", bw, "HBM bandwidth (datasheet)")
    ch.step("I_s", "P/W", "FLOP/B", "ridge: the intensity at which the two roofs meet")
    ch.step("t_F", "F/P", "us", "compute floor")
    ch.step("t_m", "Max(t_F, M_m/W)", "us", "roofline time before tiling")
    ch.step("t_t", "Max(t_F, M_t/W)", "us", "roofline time after tiling, re-reads from HBM")
    ch.step("t_0", "Max(t_F, M_0/W)", "us", "roofline time after tiling, re-reads from L2")
    ch.step("g", "t_m/t_t", "", "speedup from tiling, re-reads from HBM")
    ch.step("g_0", "t_m/t_0", "", "speedup from tiling, re-reads from L2")
    ch.solve("B_min", "I_s = c*B_min/(2*e)", "",
             "query rows that put the tiled kernel at the ridge with no L2 help (long context)")
    ch.given("B_c", int(b_c), "keys per step of the inner loop", kind="assumption", source=cite("block_k"))
    ch.given("a", q(4, "B"), "bytes per fp32 value on chip", kind="derived", source="the kernel accumulates in fp32")
    ch.step("f", "B_r*d*e + 2*B_c*d*e + B_r*B_c*a + B_r*d*a", "KiB",
            "one program's working set: Q, K, V tiles, the scores and the accumulator")
    ch.given("R", REGFILE, "register file of one SM", kind="spec", source=REGFILE_SOURCE)
    ch.step("phi", "f/R", "", "the working set over one SM's register file")
    ch.step("X", "2*N*a", "KiB", "what the tiled kernel keeps per head instead of S and P: m and l per row")
    return ch


def compute(p) -> Chain:
    return attention_chain(p.gpu, p.context_tokens, p.head_dim, p.bytes_per_element, p.block_q, p.block_k,
                           cite=functools.partial(SPEC.source, p))


def chip(ch: Chain, acc) -> roofline.Chip:
    return roofline.Chip(acc.key, acc.name, ch["P"], ch["W"])


def reading(ch: Chain, acc) -> dict:
    """The prose around the chain: which roof, which side of the ridge, the cache's share."""
    measured_roof = as_float(ch["P"], "FLOP/s") != as_float(acc.q("bf16_dense"), "FLOP/s")
    l2 = acc.get("l2_cache")
    return {
        "c-materialised-square": ch["S_b"] * (ch["n_w"] + ch["n_r"]), "c-qkvo": ch["M_0"],
        "c-blocks": fmt(ch["T_q"]), "c-floor": ch["M_0"], "c-floor-ratio": fmt(as_float(ch["M_m"] / ch["M_0"], "")),
        "c-flops": ch["F"], "c-im": ch["I_m"], "c-it": ch["I_t"], "c-i0": ch["I_0"], "c-ridge": ch["I_s"],
        "c-roof-kind": "the harness's measured ceilings for this GPU" if measured_roof
                       else "the datasheet's figures, until the harness measures this GPU",
        "c-tf": fmt(ch["t_F"], style="eng"), "c-tm": fmt(ch["t_m"], style="eng"),
        "c-tt": fmt(ch["t_t"], style="eng"), "c-t0": fmt(ch["t_0"], style="eng"),
        "c-g": fmt(ch["g"]), "c-g0": fmt(ch["g_0"]),
        "c-bound-m": "memory-bound" if ch["I_m"] < ch["I_s"] else "compute-bound",
        "c-bound-t": "below the ridge: memory-bound" if ch["I_t"] < ch["I_s"]
                     else "at or above the ridge: compute-bound",
        "c-bmin": fmt(ch["B_min"].m), "c-ws": ch["f"], "c-ws-share": pct(ch["phi"]), "c-x": ch["X"],
        "c-kv-head": (2 * ch["N"] * ch["d"] * ch["e"]).to("MB"),
        "c-l2": l2.to("MB") if l2 is not None else "not in the catalog",
    }


# --- the claim ------------------------------------------------------------------------------------
CLAIM = dict(context=8192, score_mb=134, reads_back=2, writes=1, head_dim=128, bytes_per_element=2,
             block_q=128, block_k=64)
QUOTE = ("Standard attention writes an N by N score matrix to HBM and reads it back twice. At 8k context that "
         "is 134 MB per head. The traffic arithmetic before and after tiling, the online-softmax identity that "
         "makes one pass possible, where the kernel lands on the roofline, and why the memory saving matters "
         "more than the speed.")
CLAIM_GPUS = ("h200", "h100-sxm")


def claim_chain(gpu: str = "h200") -> Chain:
    return attention_chain(gpu, CLAIM["context"], CLAIM["head_dim"], CLAIM["bytes_per_element"],
                           CLAIM["block_q"], CLAIM["block_k"], source="the claim")


def long_context() -> int:
    """The longest context in the catalog's Llama 3 models: where the memory side is shown."""
    return int(catalog.model("llama-3-405b").q("max_context").m)


@memoised
def checks() -> dict:
    """The check section's numbers: the claim's chain on both GPUs, the readings, speed against memory."""
    chains_ = {g: claim_chain(g) for g in CLAIM_GPUS}
    cc = chains_["h200"]
    exact = as_float(cc["S_b"], "B")
    fp32 = q(CLAIM["context"] ** 2 * 4, "B")
    return dict(chains=chains_, chips={g: chip(c, catalog.accelerator(g)) for g, c in chains_.items()},
                exact=exact, fp32=fp32, speed_gain=as_float(cc["g_0"], ""),
                memory_gain=as_float(cc["n_w"] * cc["S_b"] / cc["X"], ""),
                long_head=q(long_context() ** 2 * CLAIM["bytes_per_element"], "B").to("GB"))


def claims() -> list[Claim]:
    ck = checks()
    cc = ck["chains"]["h200"]
    claimed = q(CLAIM["score_mb"], "MB")
    lands = round(ck["exact"] / 1e6) == CLAIM["score_mb"] and cc["n_r"] == CLAIM["reads_back"]
    small_gain = 1 < as_float(cc["g"], "") < ck["speed_gain"] < 5 and ck["memory_gain"] > 1000
    return [Claim(
        "score-matrix", quote=QUOTE, source="spec/001, paragraph on attention's memory traffic",
        claimed=f"an N x N score matrix written once and read back twice; {fmt(claimed)} per head at "
                f"{fmt(CLAIM['context'])} context",
        derived=f"{fmt(cc['S_b'])} ({fmt(cc['S_b'].to('MiB'))}) per head in two-byte elements, "
                f"{fmt(ck['fp32'].to('MB'))} in fp32; read back {fmt(cc['n_r'])} times and written "
                f"{fmt(cc['n_w'])} times, {fmt(cc['M_m'])} per head against {fmt(cc['M_t'])} tiled",
        verdict=READING if lands and small_gain else "wrong as stated",
        reading=f"one {fmt(CLAIM['context'])} x {fmt(CLAIM['context'])} matrix of two-byte (bf16 or fp16) "
                "elements in decimal megabytes, 'it' being the square matrix as scores and then as "
                "probabilities",
        nearest_true="" if lands and small_gain else
                     f"one head's scores are {fmt(cc['S_b'])} in two-byte elements",
        reason=f"{fmt(CLAIM['context'])} squared two-byte elements are {fmt(cc['S_b'])} "
               f"({fmt(cc['S_b'].to('MiB'))}; {fmt(ck['fp32'].to('MB'))} in fp32); the softmax reads S and "
               f"the second product reads P, and both are written too, so the square crosses HBM "
               f"{fmt(cc['n_w'] + cc['n_r'])} times; tiling cuts the traffic {fmt(cc['r'])} times and the "
               f"roofline time by {fmt(cc['g'])} to {fmt(cc['g_0'])} times, while the memory it removes grows "
               f"as N squared: {fmt(ck['long_head'])} per head at {fmt(long_context())} tokens.")]


def check_table(ck: dict) -> list[list[str]]:
    """The check section's table: each GPU's bytes, intensities, ridge and times at the claim's inputs."""
    return [[catalog.accelerator(g).name, fmt(c["S_b"]), fmt(c["M_m"]), fmt(c["M_t"]), fmt(c["M_0"]),
             fmt(c["I_m"]), fmt(c["I_t"]), fmt(c["I_0"]), fmt(c["I_s"]), fmt(c["t_m"].to("s"), style="eng"),
             fmt(c["t_0"].to("s"), style="eng")] for g, c in ck["chains"].items()]


# --- the online-softmax identity ------------------------------------------------------------------
def online_softmax_identity() -> sp.Expr:
    """Two blocks (two scores, then one) under free running maxima m_1, m_2, against the direct softmax:
    the residual sympy simplifies to."""
    import sympy as sp
    s1, s2, s3, v1, v2, v3, m1, m2 = sp.symbols("s_1 s_2 s_3 v_1 v_2 v_3 m_1 m_2", real=True)
    l_1 = sp.exp(s1 - m1) + sp.exp(s2 - m1)                      # block 1 under its running max m1
    a_1 = sp.exp(s1 - m1) * v1 + sp.exp(s2 - m1) * v2
    l_2 = sp.exp(m1 - m2) * l_1 + sp.exp(s3 - m2)                 # block 2: rescale by exp(m1 - m2)
    a_2 = sp.exp(m1 - m2) * a_1 + sp.exp(s3 - m2) * v3
    direct = sum(sp.exp(s) * v for s, v in ((s1, v1), (s2, v2), (s3, v3))) / sum(sp.exp(s) for s in (s1, s2, s3))
    return sp.simplify(a_2 / l_2 - direct)


def one_pass_attention(Q, K, V, block):
    """The kernel's recurrence in numpy: running max m, running sum l, unnormalised output a, per row."""
    import numpy as np
    n = Q.shape[0]
    m = np.full(n, -np.inf)
    l = np.zeros(n)
    a = np.zeros((n, V.shape[1]))
    for j in range(0, K.shape[0], block):
        S = Q @ K[j:j + block].T
        m_new = np.maximum(m, S.max(axis=1))
        alpha = np.exp(m - m_new)
        P = np.exp(S - m_new[:, None])
        l = alpha * l + P.sum(axis=1)
        a = alpha[:, None] * a + P @ V[j:j + block]
        m = m_new
    return a / l[:, None]


def one_pass_check(n: int = 1000, d: int = 64, scale: float = 40.0, blocks=(1, 64, 128, 1000), seed: int = 0):
    """The recurrence against softmax(QK^T)V with the maximum subtracted, in float64, at logits large
    enough that exp overflows float64 without it. Returns the errors by block and the overflow facts."""
    import numpy as np
    rng = np.random.default_rng(seed)
    Q, K, V = (rng.standard_normal((n, d)) for _ in range(3))
    Q *= scale                                                    # logits up to about a thousand
    S = Q @ K.T
    P = np.exp(S - S.max(axis=1, keepdims=True))
    direct = (P / P.sum(axis=1, keepdims=True)) @ V
    with np.errstate(over="ignore", invalid="ignore"):
        naive = (np.exp(S) / np.exp(S).sum(axis=1, keepdims=True)) @ V
    errs = {b: float(np.linalg.norm(one_pass_attention(Q, K, V, b) - direct) / np.linalg.norm(direct))
            for b in blocks}
    return dict(errors=errs, max_logit=float(S.max()), exp_limit=float(np.log(np.finfo(np.float64).max)),
                naive_nan_rows=int(np.isnan(naive).any(axis=1).sum()), rows=n)


# --- memory, the figure, what changes the answer, exercises ----------------------------------------
def memory_rows(p) -> list[list[str]]:
    """One head's and one layer's score matrices at several contexts, against the GPU's HBM."""
    m, hbm = catalog.model(LAYER_MODEL), p.gpu.q("hbm_capacity")
    heads = int(m.q("n_heads").m)
    out = []
    for n in MEMORY_CONTEXTS:
        head = q(n ** 2 * p.bytes_per_element, "B")
        out.append([fmt(n), auto_bytes(head), auto_bytes(head * heads), pct(as_float(head * heads / hbm, "")),
                    auto_bytes(q(2 * n * 4 * heads, "B"))])
    return out


def memory_side(p) -> dict:
    """The memory section's prose numbers: the longest context, and training's kept P matrices."""
    m, hbm = catalog.model(LAYER_MODEL), p.gpu.q("hbm_capacity")
    heads, layers, n = int(m.q("n_heads").m), int(m.q("n_layers").m), long_context()
    head = q(n ** 2 * p.bytes_per_element, "B")
    train = q(CLAIM["context"] ** 2 * CLAIM["bytes_per_element"], "B") * heads * layers
    return {"intro-long": fmt(n), "intro-long-bytes": head.to("GB"), "m-long-layer": (head * heads).to("TB"),
            "m-long-share": fmt(as_float(head * heads / hbm, "")), "m-heads-fit": fmt(int(as_float(hbm / head, ""))),
            "m-model": m.name, "m-layers": fmt(layers), "m-train": train.to("GB"),
            "m-train-gpus": fmt(as_float(train / hbm, "")), "m-hbm": hbm.to("GB"), "m-heads": fmt(heads)}


def figure_data(p, ch: Chain) -> dict:
    """The roofline with the chain's three placements, and the memory curves against HBM."""
    import numpy as np
    c = chip(ch, p.gpu)
    intensities = np.logspace(0, 4.5, 300)
    m = catalog.model(LAYER_MODEL)
    heads = int(m.q("n_heads").m)
    ctx = np.logspace(np.log10(1024), np.log10(131072), 100)
    per_head = ctx ** 2 * p.bytes_per_element / 1e9
    points = {key: (as_float(ch[key], "FLOP/B"), as_float(roofline.attainable(ch[key], c), "TFLOP/s"))
              for key in ("I_m", "I_t", "I_0")}
    return dict(intensity=intensities, roof=roofline.attainable(q(intensities, "FLOP/B"), c).to("TFLOP/s").m,
                ridge=as_float(ch["I_s"], "FLOP/B"), peak=as_float(ch["P"], "TFLOP/s"), points=points,
                labels={k: fmt(ch[k]) for k in points}, gpu=p.gpu.short_name, model=m.name, heads=heads,
                context=ctx, per_head_gb=per_head, per_layer_gb=per_head * heads,
                tiled_gb=2 * ctx * 4 * heads / 1e9, hbm_gb=as_float(p.gpu.q("hbm_capacity"), "GB"))


def what_changes(p, ch: Chain) -> dict:
    def at(**kw):
        a = dict(n_ctx=p.context_tokens, d=p.head_dim, e=p.bytes_per_element, b_r=p.block_q, b_c=p.block_k)
        a.update(kw)
        return attention_chain(p.gpu, **a)
    c32 = at(e=4.0)
    return {
        "wc-bq": "; ".join(f"blocks of {b} rows give {fmt(c['M_t'])} and {fmt(c['I_t'])}"
                           for b, c in ((b, at(b_r=b)) for b in (64, 128, 256))),
        "wc-fp32": f"{fmt(c32['S_b'])} per head, {fmt(c32['I_m'])} before tiling",
        "wc-d": "; ".join(f"d = {dd}: {fmt(c['I_m'])} before, a ratio of {fmt(c['r'])}"
                          for dd, c in ((dd, at(d=dd)) for dd in (64, 128, 256))),
        "wc-n": "; ".join(f"at {n:,} tokens, {auto_bytes(c['S_b'])} per head and a ratio of {fmt(c['r'])}"
                          for n, c in ((n, at(n_ctx=n)) for n in (2048, 32768))),
    }


def exercises(p, ch: Chain) -> dict:
    n, d, e, b_r = p.context_tokens, p.head_dim, p.bytes_per_element, p.block_q
    t = int(as_float(ch["T_q"], ""))
    causal_blocks = t * (t + 1) // 2
    ex1_bytes = q(2 * n * d * e + 2 * b_r * d * e * causal_blocks, "B")
    ex1_flops = q(4 * b_r * b_r * d * causal_blocks, "FLOP")
    bmin = as_float(ch["B_min"], "")
    b_pow = 1 << math.ceil(math.log2(bmin))
    c2 = attention_chain(p.gpu, n, d, e, b_pow, p.block_k)
    m8 = catalog.model("llama-3-8b")
    h8, l8, ctx8 = int(m8.q("n_heads").m), int(m8.q("n_layers").m), int(m8.q("max_context").m)
    return {
        "ex1-t": fmt(t), "ex1-skip": pct(1 - causal_blocks / t ** 2), "ex1-bytes": ex1_bytes.to("MB"),
        "ex1-flops": ex1_flops.to("GFLOP"), "ex1-i": (ex1_flops / ex1_bytes).to("FLOP/B"),
        "ex2-gpu": p.gpu.name, "ex2-bmin": fmt(bmin), "ex2-b": fmt(b_pow), "ex2-bc": fmt(p.block_k),
        "ex2-d": fmt(d), "ex2-ws": c2["f"], "ex2-share": pct(c2["phi"]), "ex2-acc": q(b_pow * d * 4, "B").to("KiB"),
        "ex3-model": m8.name, "ex3-ctx": fmt(ctx8), "ex3-heads": fmt(h8), "ex3-layers": fmt(l8),
        "ex3-p": q(ctx8 ** 2 * 2 * h8 * l8, "B").to("GB"), "ex3-lse": q(ctx8 * 4 * h8 * l8, "B").to("MB"),
    }


def measured_predictions(gpu, sizes: list[dict], element_bytes: dict, block_q: int) -> list[dict]:
    """The chain's roofline times for the harness's sizes (all the heads of each), per variant."""
    out = []
    for s in sizes:
        c = attention_chain(gpu, s["n"], s["d"], element_bytes[s["dtype"]], block_q, 64,
                            source="the harness's sizes")
        heads = s["batch"] * s["heads"]
        out.append(dict(size=s, chain=c, heads=heads,
                        times={v: (c[k] * heads).to("s") for v, k in
                               (("triton", "t_t"), ("materialised", "t_m"), ("sdpa", "t_0"))}))
    return out


SPEC = Spec("attention-traffic", PARAMETERS, RESULTS, compute, closed_form=True)
