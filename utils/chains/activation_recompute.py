"""activation-recompute: what one layer stores for its backward pass, what full and selective
recomputation keep and cost, and when a smaller micro-batch is the cheaper way out.

Korthikanti et al. count a GPT-style layer (pre-norm attention, a 4h GELU MLP, dropout after the
probabilities and each block) at sbh(34 + 5as/h) bytes with two-byte activations; full recomputation
keeps the layer input, 2sbh, and adds one forward pass to a step of three: 8N against 6N per token.
A Llama layer (RMSNorm, grouped K and V, SwiGLU, no dropout) keeps sbh(12 + 4g + 8f + 2as/h), given
beside the paper's formula. The model is one parameter: width, heads, layers and counts follow from it.
"""
from __future__ import annotations

import math

from utils import catalog
from utils.chain import Chain, as_float, memoised
from utils.models import is_mla, is_moe, param_count
from utils.params import Param, ParameterError, Result, Spec
from utils.roofline import FRACTIONS, add_fraction_inputs, fraction_params
from utils.training import flops_per_parameter_token
from utils.units import fmt, num, pct, q
from utils.verdicts import READING, WRONG, Claim

PARAMETERS = (
    Param("model", "llama-3-70b", "the model: a catalog key or the path of a Hugging Face config.json",
          check="model", source="catalog: Llama-3-70B, the claim's model (the book's chain index)"),
    Param("seq_len", 8192, "tokens per sequence, s", unit="token", check="whole",
          source="Llama 3 pre-training context (Llama 3 paper, sec. 3.4.1)"),
    Param("micro_batch", 1, "sequences per micro-batch, b", check="whole", source="this book's assumption"),
    Param("tensor_parallel", 8, "tensor-parallel degree, t (with sequence parallelism)", check="whole",
          source="one eight-GPU node (Llama 3 paper, Table 4)"),
    Param("pipeline_parallel", 4, "pipeline stages (1F1B schedule)", check="whole",
          source="this book's assumption (the training-state-memory chapter's four-node replica)"),
    Param("gpu", "h100-sxm", "accelerator catalog key", check="accelerator", source="catalog: H100 SXM"),
    Param("bytes_per_activation", 2, "bytes per stored activation element (bf16: 2)", unit="byte",
          check="whole", source="bf16 training"),
    Param("state_bytes_per_param", 16.0, "training state per parameter (mixed-precision Adam: 16)",
          unit="byte/parameter", source="ZeRO (arXiv:1910.02054) sec. 3.1; the training-state-memory chapter"),
    Param("hbm_usable", 0.90, "share of each GPU's HBM a training job can fill", check="fraction",
          source="this book's assumption, as in the training-state-memory chapter"),
    *fraction_params(),
)

RESULTS = (
    Result("activation_bytes_per_layer", "GB", "Activations of one layer, stored for backward", of="A_l"),
    Result("activation_bytes_full_recompute", "GB", "Kept per layer under full recompute", of="A_k"),
    Result("memory_ratio", "", "Activation memory ratio per layer, stored / full recompute (Korthikanti's layer)",
           of="r"),
    Result("memory_ratio_llama", "", "The same ratio for the model's own Llama layer (no dropout, GQA, SwiGLU)",
           of="r_ll"),
    Result("compute_overhead_full", "", "Extra compute of full recompute", of="o_f", percent=True),
    Result("compute_overhead_selective", "", "Extra compute of selective recompute", of="o_s", percent=True),
    Result("activations_per_gpu", "GB", "Activations per GPU, nothing recomputed", of="G_0"),
    Result("activations_per_gpu_selective", "GB", "Activations per GPU, selective recompute", of="G_s"),
    Result("activations_per_gpu_full", "GB", "Activations per GPU, full recompute", of="G_f"),
    Result("hbm_left_per_gpu", "GB", "HBM per GPU left after the training state", of="H"),
    Result("max_micro_batch_selective", "", "Largest micro-batch with selective recompute", of="b_s"),
    Result("max_seq_len_selective", "token", "Longest sequence with selective recompute", of="s_s"),
    Result("min_micro_batch_tokens", "token", "Tokens per micro-batch where shrinking it ties with full recompute",
           of="M_st"),
)

KORTHIKANTI = "Korthikanti et al., arXiv:2205.05198, sec. 4.1 (the table above)"
USABLE_SRC = ("this book's assumption, as in the training-state-memory chapter: the CUDA context, NCCL "
              "buffers and allocator fragmentation take about a tenth")
K_FWD = flops_per_parameter_token()["forward"]   # forward FLOPs per parameter per token
K_ATT = 4        # forward QK^T + AV FLOPs per token, per context token, per unit of attention width

CLAIM_QUOTE = ("Full recomputation costs a third more compute to cut activation memory by an order of "
               "magnitude. The per-layer arithmetic that says whether you need it at all, the selective "
               "variant that costs almost nothing, and the point at which a smaller micro-batch is the "
               "cheaper way out.")
# What the claim asserts: +1/3 compute for at least 10x less activation memory; selective costs "almost
# nothing" (read as: under a twentieth). Its inputs, from the book's chain index: a Llama-3-70B layer at
# 8k context on H100, 2-byte activations.
CLAIM = dict(compute_overhead=1 / 3, memory_ratio=10, selective_below=0.05,
             model="llama-3-70b", seq_len=8192, micro_batch=1, tensor_parallel=8, pipeline_parallel=4,
             gpu="h100-sxm", bytes_per_activation=2, state_bytes_per_param=16.0, hbm_usable=0.90)

# --- what a GPT-style layer stores (Korthikanti's table) ----------------------------------------------
# Each entry's bytes as a function of (p bytes per element, s sequence, b micro-batch, h width, a heads):
# called with sympy symbols for the page's table, with integers for the coefficients the chain uses.
STORED = (
    ("attention", "layernorm input", lambda p, s, b, h, a: p * s * b * h),
    ("attention", "QKV projection input (the norm's output)", lambda p, s, b, h, a: p * s * b * h),
    ("attention", "$Q$ and $K$, for $QK^\\top$", lambda p, s, b, h, a: 2 * p * s * b * h),
    ("attention", "softmax output, $a$ maps of $s \\times s$", lambda p, s, b, h, a: p * a * s**2 * b),
    ("attention", "dropout mask on the probabilities", lambda p, s, b, h, a: a * s**2 * b),
    ("attention", "dropout output, for $AV$", lambda p, s, b, h, a: p * a * s**2 * b),
    ("attention", "$V$, for $AV$", lambda p, s, b, h, a: p * s * b * h),
    ("attention", "output projection input", lambda p, s, b, h, a: p * s * b * h),
    ("attention", "dropout mask after the projection", lambda p, s, b, h, a: s * b * h),
    ("MLP", "layernorm input", lambda p, s, b, h, a: p * s * b * h),
    ("MLP", "first linear input", lambda p, s, b, h, a: p * s * b * h),
    ("MLP", "GELU input, width $4h$", lambda p, s, b, h, a: 4 * p * s * b * h),
    ("MLP", "second linear input (GELU output), width $4h$", lambda p, s, b, h, a: 4 * p * s * b * h),
    ("MLP", "dropout mask after the MLP", lambda p, s, b, h, a: s * b * h),
)


def layer_bytes(p, s, b, h, a):
    """The layer's stored bytes: the table's entries summed (integers in, an integer out; symbols, a sympy sum)."""
    return sum(e(p, s, b, h, a) for _, _, e in STORED)


def layer_terms() -> dict:
    """The layer's bytes split into the width term sbh(16p + 2) and the score term as^2b(2p + 1). Every entry is
    one monomial, either in s b h (width) or in a s^2 b (score, the ones that vanish without heads), so each
    term's coefficient at p is the entries' sum at s = b = h = 1 (tests/chains/test_activation_recompute.py expands
    the symbolic sum and checks Korthikanti's 34 + 5as/h)."""
    score = [e for _, _, e in STORED if e(1, 1, 1, 1, 0) == 0]
    width = [e for _, _, e in STORED if e(1, 1, 1, 1, 0) != 0]

    def c_width(p):
        return sum(e(p, 1, 1, 1, 1) for e in width)

    def c_score(p):
        return sum(e(p, 1, 1, 1, 1) for e in score)
    return dict(n_width=c_width(1) - c_width(0), n_mask_w=c_width(0), n_score=c_score(1) - c_score(0),
                n_mask_s=c_score(0), c_w2=c_width(2), c_s2=c_score(2))


TERMS = layer_terms()


def _symbols() -> tuple:
    import sympy as sp
    return sp.symbols("p s b h a", positive=True)


def layer_expression():
    """The layer's stored bytes as one sympy expression, expanded (for the page)."""
    import sympy as sp
    return sp.expand(layer_bytes(*_symbols()))


def stored_table() -> list[tuple]:
    """(block, what, the entry's sympy expression) for the page."""
    syms = _symbols()
    return [(blk, what, e(*syms)) for blk, what, e in STORED]


def llama_coefficients(m, p=2) -> tuple[float, float]:
    """Bytes per token per unit width, and per token per head per context token, a Llama layer keeps
    (RMSNorm, grouped K and V, SwiGLU, no dropout): two norm inputs, the QKV input, Q, K and V (g wide
    each), the O input; the MLP input, gate, up, SiLU output and product (f wide each); the softmax output."""
    g = as_float(m.q("n_kv_heads")) / as_float(m.q("n_heads"))
    f = as_float(m.q("d_ff")) / as_float(m.q("d_model"))
    return p * (2 + 1 + 1 + 2 * g + 1 + 1 + 4 * f), float(p)


def check_model(m, tensor_parallel, pipeline_parallel):
    if is_moe(m) or is_mla(m) or "head_dim" not in m:
        raise ParameterError(f"model={m.key!r} is not a dense decoder with multi-head or grouped attention "
                             "(this page's layer formula does not cover experts or latent attention)")
    if int(m.q("n_heads").m) % tensor_parallel:
        raise ParameterError(f"tensor_parallel={tensor_parallel} must divide the {int(m.q('n_heads').m)} "
                             f"attention heads of {m.name}")
    if pipeline_parallel > int(m.q("n_layers").m):
        raise ParameterError(f"pipeline_parallel={pipeline_parallel} exceeds the "
                             f"{int(m.q('n_layers').m)} layers of {m.name}")


def recompute_chain(model, seq_len, micro_batch, tensor_parallel, pipeline_parallel, gpu,
                    bytes_per_activation, state_bytes_per_param, hbm_usable, compute_fraction=FRACTIONS[0],
                    bandwidth_fraction=FRACTIONS[1], *, source="parameters cell", sources=None) -> Chain:
    """sources: the inputs' own sources by symbol (s, b, p, t, P), where they are not `source`. The tie
    point's ridge is at the achieved shares of the two peaks, never at the datasheet's."""
    src = {k: source for k in ("s", "b", "p", "t", "P")} | (sources or {})
    m, acc = catalog.model(model), catalog.accelerator(gpu)
    check_model(m, tensor_parallel, pipeline_parallel)
    p, T = bytes_per_activation, TERMS
    ch = Chain(f"Activations of {m.name}: {fmt(q(seq_len, 'token'))} x {micro_batch} on {acc.name}")
    # --- one layer ---
    ch.given("s", q(seq_len, "token"), "sequence length", kind="assumption", source=src["s"])
    ch.given("b", micro_batch, "micro-batch, sequences", kind="assumption", source=src["b"])
    ch.given("h", m["d_model"], "width")
    ch.given("a", m["n_heads"], "attention heads")
    ch.given("L", m["n_layers"], "layers")
    ch.given("c_w", q(T["n_width"] * p + T["n_mask_w"], "byte/token"),
             f"width term per token per unit width: {T['n_width']} tensors at p bytes + {T['n_mask_w']} masks",
             kind="derived", source=KORTHIKANTI)
    ch.given("c_s", q(T["n_score"] * p + T["n_mask_s"], "byte/token**2"),
             f"score term per token per head per context token: {T['n_score']} maps at p bytes + "
             f"{T['n_mask_s']} mask", kind="derived", source=KORTHIKANTI)
    ch.step("A_l", "s*b*(c_w*h + c_s*a*s)", "GB", "one layer, everything stored")
    ch.step("A_sel", "s*b*c_w*h", "GB", "one layer, selective recompute (no scores)")
    ch.given("p", q(p, "byte/token"), "bytes per activation, per token per unit width", kind="assumption",
             source=src["p"])
    ch.step("A_k", "p*s*b*h", "GB", "one layer, full recompute: its input")
    ch.step("r", "A_l/A_k", "", "memory ratio, per layer (Korthikanti's layer)")
    cw_ll, cs_ll = llama_coefficients(m, p)
    ch.given("c_wl", q(cw_ll, "byte/token"), "the model's own layer: width term (no dropout, GQA, SwiGLU)",
             kind="derived", source="this page's count of a Llama layer")
    ch.given("c_sl", q(cs_ll, "byte/token**2"), "the model's own layer: score term (softmax output only)",
             kind="derived", source="this page's count of a Llama layer")
    ch.step("r_ll", "(c_wl*h + c_sl*a*s)/(p*h)", "", "memory ratio, per layer (the model's own layer)")
    # --- per GPU, against what the training state leaves ---
    ch.given("t", tensor_parallel, "tensor-parallel degree (sequence-parallel activations)",
             kind="assumption", source=src["t"])
    ch.given("P", pipeline_parallel, "pipeline stages (1F1B: the first stage holds L layers' worth)",
             kind="assumption", source=src["P"])
    ch.step("G_0", "L*A_l/t", "GB", "activations per GPU, nothing recomputed")
    ch.step("G_s", "L*A_sel/t", "GB", "activations per GPU, selective recompute")
    ch.step("G_f", "(L*A_k + A_l)/t", "GB", "per GPU, full: kept inputs + the layer being rebuilt")
    ch.step("G_ff", "(L*A_k + A_sel)/t", "GB", "per GPU, full with a fused attention kernel")
    counts = param_count(m)
    ch.given("N", counts["total"], "parameters (counted from the configuration)", kind="derived",
             source="utils.models.param_count")
    ch.given("k_s", q(state_bytes_per_param, "byte/parameter"), "training state per parameter",
             kind="assumption", source="16 = mixed-precision Adam (training-state-memory chapter)")
    ch.step("S_g", "k_s*N/(t*P)", "GB", "training state per GPU")
    ch.given("M", acc["hbm_capacity"], "HBM per GPU, nominal")
    ch.given("f", hbm_usable, "usable share of HBM", kind="assumption", source=USABLE_SRC)
    ch.step("H", "f*M - S_g", "GB", "HBM left for activations")
    if why := state_shortfall(counts["total"], state_bytes_per_param, tensor_parallel, pipeline_parallel, acc,
                              hbm_usable):
        raise ParameterError(why)
    ch.solve("b_0", "L*s*b_0*(c_w*h + c_s*a*s)/t = H", "", "largest micro-batch, nothing recomputed")
    ch.solve("b_s", "L*s*b_s*c_w*h/t = H", "", "largest micro-batch, selective recompute")
    ch.solve("s_s", "L*s_s*b*c_w*h/t = H", "token", "longest sequence, selective recompute")
    # --- compute ---
    ch.given("N_m", counts["active"], "parameters in matrix products (all but the input embedding)",
             kind="derived", source="utils.models.param_count")
    ch.given("k_f", q(K_FWD, "FLOP/parameter/token"), "forward FLOPs per parameter per token",
             kind="derived", source="the 6ND chapter")
    ch.given("d_a", int((m.q("n_heads") * m.q("head_dim")).m), "attention width, heads x head dim",
             kind="derived", source=f"{m.name}: n_heads x head_dim")
    ch.given("k_a", q(K_ATT, "FLOP/token**2"), "forward QK^T and AV FLOPs per token, context token, unit width",
             kind="derived", source="two products of 2 s d_attn each per token (full square)")
    ch.step("F_a", "k_a*L*s*d_a", "FLOP/token", "attention core, forward")
    ch.step("F", "k_f*N_m + F_a", "FLOP/token", "forward pass")
    ch.step("C", "3*F", "FLOP/token", "forward and backward (backward = twice forward)")
    ch.step("o_f", "F/C", "", "full recompute: one more forward")
    ch.step("o_s", "F_a/C", "", "selective recompute: the attention core again")
    # --- the micro-batch alternative ---
    ch.given("R", acc["bf16_dense"], "dense bf16 peak")
    ch.given("B", acc["hbm_bandwidth"], "HBM bandwidth")
    add_fraction_inputs(ch, compute_fraction, bandwidth_fraction, source=source)
    ch.step("I_r", "(eta_P*R)/(eta_W*B)", "FLOP/byte", "ridge at the achieved rates")
    ch.given("K_o", int(as_float(ch["h"]) / tensor_parallel), "narrowest weight's input width, h/t",
             kind="derived", source="attention output projection, one tensor-parallel shard")
    ch.given("N_o", int(as_float(ch["h"])), "its output width, h", kind="derived", source="the same")
    ch.given("k_m", q(2, "FLOP"), "FLOPs per multiply-add", kind="derived", source="definition")
    ch.given("p_e", q(p, "byte"), "bytes per element", kind="assumption", source=src["p"])
    ch.solve("M_s", "k_m*M_s*K_o*N_o/(p_e*(M_s*K_o + K_o*N_o + M_s*N_o)) = I_r/(1 + o_f)", "",
             "tokens per micro-batch where a smaller micro-batch ties with full recompute")
    ch.value("M_st", ch["M_s"].m * q(1, "token"))   # the same, in tokens, as the Result publishes it
    return ch


def _args(p) -> dict:
    return {k: p[k] for k in ("model", "seq_len", "micro_batch", "tensor_parallel", "pipeline_parallel", "gpu",
                              "bytes_per_activation", "state_bytes_per_param", "hbm_usable", "compute_fraction",
                              "bandwidth_fraction")}


def compute(p) -> Chain:
    # Each input shows its parameter's own source while it holds the default (SPEC is defined below).
    return recompute_chain(**_args(p), sources={
        k: SPEC.source(p, name) for k, name in (("s", "seq_len"), ("b", "micro_batch"), ("p", "bytes_per_activation"),
                                                ("t", "tensor_parallel"), ("P", "pipeline_parallel"))})


def state_shortfall(n_params, state_bytes_per_param, tensor_parallel, pipeline_parallel, acc, hbm_usable) -> str:
    """Why the training state leaves no HBM for activations (the shortfall per GPU, the largest model this
    layout holds and the fewest pipeline stages that hold this one), or "". A plan that does not fit gets
    no activation budget, micro-batch or sequence."""
    k_s, gpus = q(state_bytes_per_param, "byte/parameter"), tensor_parallel * pipeline_parallel
    per_gpu, usable = (k_s * n_params / gpus).to("GB"), (hbm_usable * acc.q("hbm_capacity")).to("GB")
    if per_gpu < usable:
        return ""
    n_max = (usable * gpus / k_s).to("parameter")
    p_min = math.floor(as_float(k_s * n_params / (tensor_parallel * usable), "")) + 1
    return (f"the training state does not fit: it takes {fmt(per_gpu)} per GPU, {fmt(per_gpu - usable)} more than "
            f"the usable {fmt(usable)} of a {acc.name}; the largest model whose state fits {tensor_parallel} x "
            f"{pipeline_parallel} GPUs is {fmt(n_max)} (with no room left for activations), and this one needs "
            f"pipeline_parallel >= {p_min} at tensor_parallel={tensor_parallel}")


def validate(p):
    """The layout must fit the model, and the state must leave HBM for activations."""
    check_model(p.model, p.tensor_parallel, p.pipeline_parallel)
    if why := state_shortfall(param_count(p.model)["total"], p.state_bytes_per_param, p.tensor_parallel,
                              p.pipeline_parallel, p.gpu, p.hbm_usable):
        raise ParameterError(why)


# --- reading the chain ----------------------------------------------------------------------------
VERDICT_TEXT = {
    "none": "nothing needs recomputing: every activation fits",
    "selective": "recomputing the attention scores (selective recomputation, or a fused attention kernel) "
                 "is enough, and full recomputation is not needed",
    "full": "even without the scores the activations do not fit, and full recomputation does",
    "full, fused attention": "only full recomputation with a fused attention kernel fits (the scores of "
                             "the one layer being rebuilt do not fit on their own)",
    "nothing fits": "not even full recomputation fits: the model needs more GPUs per copy "
                    "(more tensor or pipeline stages, or context parallelism)",
}


def strategy(ch: Chain) -> str:
    """The cheapest way to fit: the first of these whose activations fit in what the state leaves."""
    H = as_float(ch["H"], "GB")
    for name, key in (("none", "G_0"), ("selective", "G_s"), ("full", "G_f"), ("full, fused attention", "G_ff")):
        if as_float(ch[key], "GB") <= H:
            return name
    return "nothing fits"


def micro_batch_way_out(ch: Chain) -> tuple[int, float, bool]:
    """(whole micro-batch that fits with selective recompute, its tokens, cheaper than full recompute?)"""
    b_fit = math.floor(as_float(ch["b_s"]) + 1e-9)
    tokens = b_fit * as_float(ch["s"], "token")
    return b_fit, tokens, b_fit >= 1 and tokens >= as_float(ch["M_s"])


def full_recompute_limit(ch: Chain) -> tuple:
    """(shortfall per GPU, longest whole sequence that fits) with full recomputation and a fused attention
    kernel at this micro-batch: G_ff grows linearly in s, so the limit is s H / G_ff."""
    g_ff, room = ch["G_ff"].to("GB"), ch["H"].to("GB")
    return g_ff - room, math.floor(as_float(ch["s"] * room / g_ff, "token"))


def prose(ch: Chain, p) -> dict:
    st = strategy(ch)
    verdict = VERDICT_TEXT[st]
    if st == "nothing fits":   # the shortfall and the longest sequence that fits, never a plan that does not
        short, s_f = full_recompute_limit(ch)
        verdict += (f"; with full recomputation and a fused attention kernel each GPU is still {fmt(short)} "
                    f"short, and the longest sequence that fits that way at a micro-batch of {p.micro_batch} is "
                    f"{fmt(q(s_f, 'token'))}")
    b_fit, tokens, cheaper = micro_batch_way_out(ch)
    if st in ("full", "full, fused attention", "nothing fits"):
        mb = (f"A whole micro-batch of {b_fit} would fit with selective recomputation instead, "
              f"{fmt(q(tokens, 'token'))}, " + ("which is above" if cheaper else "which is below")
              + f" the tie point, so the smaller micro-batch is {'the cheaper' if cheaper else 'not the cheaper'} "
              "way out." if b_fit >= 1 else "No whole micro-batch fits with selective recomputation, so "
              "shrinking the micro-batch is no way out here: the sequence itself is too long for the memory left.")
    else:
        mb = f"The micro-batch could grow to {num(ch['b_s'])} sequences before selective recomputation stops fitting."
    return {"intro-verdict": verdict, "state-b": fmt(q(p.state_bytes_per_param, "byte")),
            "p-al": fmt(ch["A_l"]), "p-asel": fmt(ch["A_sel"]), "p-gf": fmt(ch["G_f"]), "p-gff": fmt(ch["G_ff"]),
            "p-sg": fmt(ch["S_g"]), "p-b0": num(ch["b_0"]), "p-verdict": verdict, "p-mb": mb,
            "n-width": str(TERMS["n_width"]), "n-mask-w": str(TERMS["n_mask_w"]),
            "n-score": str(TERMS["n_score"]), "n-mask-s": str(TERMS["n_mask_s"])}


def per_gpu_curves(ch: Chain, seqs) -> dict:
    """Activations per GPU (GB) against sequence length, for each strategy (the figure's left panel)."""
    import numpy as np
    L, t, b = as_float(ch["L"]), as_float(ch["t"]), as_float(ch["b"])
    h, a = as_float(ch["h"]), as_float(ch["a"])
    cw, cs = as_float(ch["c_w"], "byte/token"), as_float(ch["c_s"], "byte/token**2")
    p = as_float(ch["p"], "byte/token")
    seqs = np.asarray(seqs, dtype=float)
    layer, sel, kept = seqs * b * (cw * h + cs * a * seqs), seqs * b * cw * h, p * seqs * b * h
    return {"nothing recomputed": L * layer / t / 1e9, "selective": L * sel / t / 1e9,
            "full (rebuilt layer stores its scores)": (L * kept + layer) / t / 1e9,
            "full, fused attention": (L * kept + sel) / t / 1e9}


def slowdown(ch: Chain, tokens):
    """Step time relative to a compute-bound step: the roofline of the narrowest product at M tokens."""
    import numpy as np
    K, N, p = as_float(ch["K_o"]), as_float(ch["N_o"]), as_float(ch["p_e"], "byte")
    tokens = np.asarray(tokens, dtype=float)
    intensity = 2 * tokens * K * N / (p * (tokens * K + K * N + tokens * N))
    return np.maximum(1.0, as_float(ch["I_r"], "FLOP/byte") / intensity)


# --- the claim ------------------------------------------------------------------------------------
def claim_chain() -> Chain:
    return recompute_chain(**{k: CLAIM[k] for k in ("model", "seq_len", "micro_batch", "tensor_parallel",
                                                    "pipeline_parallel", "gpu", "bytes_per_activation",
                                                    "state_bytes_per_param", "hbm_usable")}, source="the claim")


@memoised
def checks() -> dict:
    """The readings of the memory cut and of "almost nothing", on the claim's inputs."""
    c = claim_chain()
    m = catalog.model(CLAIM["model"])
    cw_ll, cs_ll = llama_coefficients(m)
    readings = [
        ("per layer, scores stored (Korthikanti's formula, GPT layer with dropout)", as_float(c["r"])),
        ("per layer, scores stored (the model's own Llama layer, no dropout)", as_float(c["r_ll"])),
        ("per layer, scores never stored, Korthikanti's layer (fused attention or selective)",
         as_float(c["A_sel"] / c["A_k"], "")),
        ("per layer, scores never stored, the Llama layer", cw_ll / CLAIM["bytes_per_activation"]),
        ("per GPU, all layers, with the layer being rebuilt, scores stored", as_float(c["G_0"] / c["G_f"], "")),
        ("per GPU, all layers, with the layer being rebuilt, fused attention", as_float(c["G_s"] / c["G_ff"], "")),
    ]
    o_sel = as_float(c["o_s"])
    o_sel_causal = as_float(c["F_a"] / 2 / (3 * (c["F"] - c["F_a"] / 2)), "")
    s, h = CLAIM["seq_len"], as_float(c["h"])
    gpt_o = (s / (18 * h)) / (1 + s / (6 * h))               # Korthikanti's closed form for a GPT layer
    gpt_chain_o = (K_ATT * s * h) / (3 * (K_FWD * 12 * h**2 + K_ATT * s * h))
    return dict(chain=c, readings=readings, o_sel=o_sel, o_sel_causal=o_sel_causal, gpt_o=gpt_o,
                gpt_chain_o=gpt_chain_o, llama_cw=cw_ll, llama_cs=cs_ll, glue={
                    "c-of": pct(c["o_f"]), "c-r-scores": num(readings[0][1]), "c-r-llama": num(readings[1][1]),
                    "c-r-fused": num(readings[2][1]), "c-r-llama-fused": num(readings[3][1]),
                    "c-r-model": num(readings[4][1]), "c-r-model-fused": num(readings[5][1]),
                    "c-os": pct(o_sel, 2), "c-os-causal": pct(o_sel_causal, 2), "c-gpt-os": pct(gpt_o, 2),
                    "c-strategy": VERDICT_TEXT[strategy(c)], "c-ctx": fmt(q(CLAIM["seq_len"], "token"))})


MEMORY_WORDS = "cut activation memory by an order of magnitude"
CHEAP_WORDS = "the selective variant that costs almost nothing"


def orders(ratio: float) -> int:
    """A factor in orders of magnitude, to the nearest: 17x and 20x are one, 84x and 177x are two."""
    return round(math.log10(ratio))


def claims() -> list[Claim]:
    ck = checks()
    c, rs = ck["chain"], dict(ck["readings"])
    third = abs(as_float(c["o_f"]) - CLAIM["compute_overhead"]) < 1e-12
    fused = [r for name, r in rs.items() if "never stored" in name or "fused attention" in name]
    scores = [r for name, r in rs.items() if r not in fused]
    one_order = all(orders(r) == orders(CLAIM["memory_ratio"]) for r in fused)
    cheap = ck["o_sel"] < CLAIM["selective_below"]
    ok = third and one_order and cheap
    r = [x for _, x in ck["readings"]]
    return [Claim(
        "recompute", quote=CLAIM_QUOTE, source="spec/001, paragraph on activation recomputation",
        claimed="a third more compute for an order of magnitude less activation memory; selective costs almost nothing",
        derived=f"+{pct(c['o_f'])} compute; memory {num(r[3])}x per Llama layer without the scores, {num(r[1])}x "
                f"with them ({num(r[2])}x and {num(r[0])}x by Korthikanti's formula); selective +{pct(ck['o_sel'], 2)}",
        verdict=READING if ok else WRONG,
        reading=f"\"{MEMORY_WORDS}\" read as the activations of a layer whose attention is one fused kernel "
                f"(FlashAttention: no stored score matrix), the cut rounded to whole powers of ten; \"{CHEAP_WORDS}\" "
                f"read as under {pct(CLAIM['selective_below'])} of the step's compute",
        nearest_true="" if ok else f"full recomputation adds {pct(c['o_f'])} of compute for a {num(min(r))}x cut",
        reason=f"Re-running the forward pass adds {K_FWD}N to {3 * K_FWD}N FLOPs per token, exactly "
               f"{pct(c['o_f'])}. With a fused attention kernel, keeping only the layer input cuts a Llama-3-70B "
               f"layer's activations {num(r[3])}x at {fmt(q(CLAIM['seq_len'], 'token'))} ({num(r[2])}x by "
               f"Korthikanti's formula, {num(r[5])}x per GPU with the layer being rebuilt): one order of magnitude. "
               f"Where the attention scores are stored the cut is {num(min(scores))}x to {num(max(scores))}x, "
               f"{orders(min(scores))} orders, more than the claim says. Selective recomputation costs "
               f"{pct(ck['o_sel'], 2)} of compute.")]


# --- what changes the answer, and the exercises ---------------------------------------------------
S_LONG = 32768


def what_changes(p, ch: Chain) -> dict:
    long = recompute_chain(**{**_args(p), "seq_len": S_LONG})
    cw, _ = llama_coefficients(p.model, 2)
    return {"w-s-long": fmt(q(S_LONG, "token")), "w-g0-long": fmt(long["G_0"]), "w-gs-long": fmt(long["G_s"]),
            "w-gf-long": fmt(long["G_f"]), "w-gff-long": fmt(long["G_ff"]),
            "w-verdict-long": VERDICT_TEXT[strategy(long)],
            "w-score-share": pct(as_float((ch["A_l"] - ch["A_sel"]) / ch["A_l"], "")),
            "w-llama-cw": num(cw), "w-llama-ratio": num(cw / 2), "w-gpt-ratio": num(TERMS["c_w2"] / 2)}


EX1 = dict(seq_len=2048, micro_batch=8)


def exercises(p, ch: Chain) -> dict:
    """Worked answers, glued into hidden dropdowns."""
    import sympy as sp
    ex1 = recompute_chain(**{**_args(p), **EX1})
    b1, _, cheaper1 = micro_batch_way_out(ex1)
    ex2 = recompute_chain("llama-3-8b", 8192, 1, 8, 1, "h100-sxm", 2, 16.0, 0.90, source="exercise 2")
    m70 = catalog.model("llama-3-70b")
    s_x = sp.symbols("s_x", positive=True)
    n_m = as_float(param_count(m70)["active"], "parameter")
    L70, d70 = as_float(m70.q("n_layers")), as_float(m70.q("n_heads") * m70.q("head_dim"))
    f_att = K_ATT * L70 * s_x * d70
    s10 = sp.solve(sp.Eq(f_att, sp.Rational(1, 10) * 3 * (K_FWD * n_m + f_att)), s_x)[0]
    return {
        "ex1-s": fmt(q(EX1["seq_len"], "token")), "ex1-b": str(EX1["micro_batch"]), "ex1-g0": fmt(ex1["G_0"]),
        "ex1-gs": fmt(ex1["G_s"]), "ex1-gf": fmt(ex1["G_f"]), "ex1-h": fmt(ex1["H"]),
        "ex1-verdict": VERDICT_TEXT[strategy(ex1)], "ex1-bs": num(ex1["b_s"]),
        "ex1-bfit": f"a micro-batch of {b1}" if b1 >= 1 else "no whole micro-batch fits",
        "ex1-tokens": fmt(q(b1 * EX1["seq_len"], "token")),
        "ex1-cheaper": "above the tie, so the smaller micro-batch is the cheaper way out" if cheaper1
        else "not above the tie, so the smaller micro-batch is not the cheaper way out",
        "ex1-ms": fmt(ex1["M_st"]), "ex1-os": pct(ex1["o_s"], 2), "ex1-of": pct(ex1["o_f"]),
        "ex2-s": fmt(q(8192, "token")), "ex2-sg": fmt(ex2["S_g"]), "ex2-h": fmt(ex2["H"]), "ex2-g0": fmt(ex2["G_0"]),
        "ex2-verdict": VERDICT_TEXT[strategy(ex2)], "ex2-b0": num(ex2["b_0"]),
        "ex3-s": fmt(q(float(s10), "token"))}


TINY = dict(h=64, heads=8, seq=512, batch=1, layers=2)   # a*s/h equal to Llama-3-70B's at its 8k context


def tiny_prediction(ln_stat_bytes: int) -> dict:
    """What the table predicts autograd saves for TINY's stack: the formula at p = 2 plus the layernorms'
    per-token mean and 1/std, which the formula rounds away (no factor h)."""
    sb, h, a, s = TINY["seq"] * TINY["batch"], TINY["h"], TINY["heads"], TINY["seq"]
    per_layer = layer_bytes(2, s, TINY["batch"], h, a)
    stats = 2 * 2 * sb * ln_stat_bytes
    return dict(per_layer=per_layer, stats=TINY["layers"] * stats, stored=TINY["layers"] * (per_layer + stats),
                kept=TINY["layers"] * 2 * sb * h, formula_ratio=per_layer / (2 * sb * h))


SPEC = Spec("activation-recompute", PARAMETERS, RESULTS, compute, validate=validate,
            closed_form=True)
