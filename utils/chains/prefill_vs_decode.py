"""prefill-vs-decode: one forward pass reads every weight; the tokens in the pass decide the bottleneck.

A pass that appends n tokens to a cache of C does 2 N_a n FLOPs of weight products plus a (nC + n(n+1)/2)
of causal attention, and reads N_r b_w bytes of weights once, plus (C + 2n) kappa of cache and n alpha of
activations. Prefill (C = 0, n = P) is compute-bound once P passes the knee, where compute time equals
memory time: about I_a b_w / 2 tokens for a dense model, I_a the ridge at the achieved rates. A decode step
(n = 1 per sequence) is far below. Both rates run at the achieved shares of the datasheet peaks that
decode-roofline uses (catalog: software achieved-fraction); the datasheet roof is shown only as a bound.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace

from utils import catalog, models, roofline, serving
from utils.chain import Chain, as_float, memoised
from utils.params import Param, ParameterError, Result
from utils.params import Spec as ChapterSpec
from utils.roofline import FRACTIONS, add_fraction_inputs, fraction_params
from utils.units import fmt, pct, q, short
from utils.verdicts import HOLDS, WRONG, Claim

PARAMETERS = (
    Param("model", "llama-3-70b", "the model: a catalog key or the path of a Hugging Face config.json",
          check="model", source="catalog: Llama-3-70B (this book's reading of the claim)"),
    Param("gpu", "h100-sxm", "the accelerator: a catalog key", check="accelerator", source="catalog: H100 SXM"),
    Param("gpus_per_replica", 8, "GPUs holding one copy of the model (tensor parallel), e.g. one node", check="whole",
          source="one HGX H100 node (this book's reading)"),
    Param("weight_bytes_per_param", 2.0, "bytes per stored weight: 2 = bf16, 1 = fp8", unit="byte/parameter",
          source="bf16 weights (this book's reading)"),
    Param("kv_bytes_per_element", 2.0, "bytes per cached K or V element: 2 = bf16, 1 = fp8", unit="byte",
          source="bf16 cache (this book's reading)"),
    Param("prompt_tokens", 2048, "tokens in the prompt, all prefilled in one pass", unit="token", check="whole",
          source="this book's assumption: a prompt of a few pages"),
    Param("context_tokens", 4096, "tokens a decode step attends to (prompt plus tokens generated so far)",
          unit="token", check="whole", source="this book's assumption"),
    Param("decode_batch", 1, "sequences decoded together in one pass (one new token each)", unit="sequence",
          check="whole", source="batch one: the latency floor"),
    Param("chunk_tokens", 512, "prefill chunk in a mixed (chunked-prefill) pass", unit="token", check="whole",
          source="this book's assumption: a common chunked-prefill budget"),
    Param("mixed_decode_sequences", 64, "decode sequences riding in that mixed pass", unit="sequence", check="whole",
          source="this book's assumption"),
    *fraction_params(),
)

RESULTS = (
    Result("prefill_time", "ms", "Prefill pass time at the achieved rates", of="t_p"),
    Result("decode_step_time", "ms", "Decode step time at decode_batch, at the achieved rates", of="t_d"),
    Result("prefill_intensity", "FLOP/B", "Prefill arithmetic intensity", of="I_p"),
    Result("decode_intensity", "FLOP/B", "Decode step arithmetic intensity", of="I_d"),
    Result("knee_tokens", "token", "Knee: tokens per pass where compute time equals memory time", of="n_k"),
    Result("ridge_intensity", "FLOP/B", "Ridge: dense bf16 rate / HBM bandwidth (datasheet)", of="I_star"),
    Result("achieved_ridge_intensity", "FLOP/B", "Ridge at the achieved shares of the two peaks", of="I_a"),
    Result("prefill_time_per_token", "µs/token", "Prefill time per prompt token", of="c_p"),
    Result("decode_time_per_token", "µs/token", "Decode time per generated token", of="c_d"),
    Result("decode_token_cost_ratio", "", "Decode token time / prefill token time", of="rho"),
)

ACT_BYTES = 2.0                      # bytes per activation element: bf16, as serving engines run them
ACT_SOURCE = "this book's count: each kernel reads its inputs and writes its outputs once"
MODELS_SOURCE = "counted from the catalog config by utils.models"
SOURCE = "spec/001, paragraph on prefill and decode"
# The source names no model, chip, prompt or number. The book's own setting for its figures (not the
# source's): a 70B dense model in bf16 on one 8-GPU H100 node at the achieved shares of the peaks, a
# 2,048-token prompt, a decode step at 4,096 tokens of context, batch one; the MoE counterexample is
# DeepSeek-V3 in fp8 on one H200 node.
CLAIM = dict(model="llama-3-70b", gpu="h100-sxm", gpus=8, weight_bytes=2.0, kv_bytes=2.0,
             prompt=2048, context=4096, batch=1, flops_per_weight=2, short_prompt=128)
QUOTES = dict(reads="One forward pass reads every weight.",
              halves="Whether that read is the bottleneck depends on how many tokens ride along with "
                     "it, and the answer is different for the two halves of a request.")


def _n(m, name, default=0):
    return int(m.q(name).m) if name in m else default


def activation_elements_per_token(m) -> int:
    """Elements each token's activations move through HBM in one forward pass, all layers: the fused QKV
    product, the attention core, the output projection, two residual-add-and-RMSNorm kernels, the fused
    gate-and-up product, SiLU-and-multiply, the down product (experts and router for an MoE), the LM head."""
    d, L, H, V = _n(m, "d_model"), _n(m, "n_layers"), _n(m, "n_heads"), _n(m, "vocab_size")
    if models.is_mla(m):
        nope, rope, vd = _n(m, "qk_nope_head_dim"), _n(m, "qk_rope_head_dim"), _n(m, "v_head_dim")
        q_rank, kv_rank = _n(m, "q_lora_rank"), _n(m, "kv_lora_rank")
        qkv = ((d + q_rank) + (q_rank + H * (nope + rope)) if q_rank else d + H * (nope + rope))
        qkv += (d + kv_rank + rope) + (kv_rank + H * (nope + vd))     # latent down, then K and V up
        core, oproj = H * (nope + rope) + H * vd, H * vd + d
    else:
        hd, H_kv = _n(m, "head_dim"), _n(m, "n_kv_heads")
        qkv, core, oproj = d + (H + 2 * H_kv) * hd, 2 * H * hd, H * hd + d
    add_norm = 2 * (2 * d + 2 * d)                                    # two per layer: read x, r; write x, r

    def ffn(f):                                                        # gate-up, SiLU-and-multiply, down
        return (d + 2 * f) + (2 * f + f) + (f + d)

    if models.is_moe(m):
        E, k, shared = _n(m, "n_routed_experts"), _n(m, "n_experts_per_token"), _n(m, "n_shared_experts")
        n_dense = _n(m, "n_dense_layers")
        moe = (d + E) + (k + shared) * ffn(_n(m, "moe_d_ff")) + ((k + shared) * d + d)
        mlp = n_dense * ffn(_n(m, "d_ff")) + (L - n_dense) * moe
    else:
        mlp = L * ffn(_n(m, "d_ff"))
    return L * (qkv + core + oproj + add_norm) + mlp + (d + V)


def attention_flops_per_pair(m) -> int:
    """FLOPs per (query, key) pair summed over layers: 2 H (d_qk + d_v) per layer (MLA expanded per head)."""
    H, L = _n(m, "n_heads"), _n(m, "n_layers")
    if models.is_mla(m):
        d_qk, d_v = _n(m, "qk_nope_head_dim") + _n(m, "qk_rope_head_dim"), _n(m, "v_head_dim")
    else:
        d_qk = d_v = _n(m, "head_dim")
    return L * 2 * H * (d_qk + d_v)


@dataclass(frozen=True)
class Spec:
    """Everything a pass's cost depends on, for one model on one chip, as plain floats (for the sweeps)."""
    name: str
    chip: object
    g: int
    b_w: float          # bytes per weight
    N_a: float          # active weights, multiplied per token
    N_r: float          # weights read when every expert is touched (all but the embedding table)
    N_x: float          # routed-expert weights (0 for a dense model)
    E: int              # routed experts per layer
    k_e: int            # experts per token
    kappa: float        # KV bytes per token, all layers
    alpha: float        # activation bytes per token
    a_att: float        # attention FLOPs per query-key pair
    eta_P: float = FRACTIONS[0]     # achieved share of the dense peak
    eta_W: float = FRACTIONS[1]     # achieved share of HBM bandwidth

    def rates(self):
        """(FLOP/s, byte/s) one GPU achieves: the datasheet peaks times the achieved shares."""
        return (as_float(self.chip.peak, "FLOP/s") * self.eta_P, as_float(self.chip.bandwidth, "byte/s") * self.eta_W)

    def touched(self, tokens):
        """Share of routed-expert weights a pass of `tokens` reads: uniform, independent routing. A count gives a
        float (no numpy: the chain's own rows), an array of counts an array (the sweeps)."""
        if self.E == 0:
            return 1.0
        if isinstance(tokens, (int, float)):
            return 1 - (1 - self.k_e / self.E) ** float(tokens)
        import numpy as np
        return 1 - (1 - self.k_e / self.E) ** np.asarray(tokens, dtype=float)

    def cost(self, new, cached=0, seqs=1):
        """(FLOPs, bytes) of a pass in which `seqs` sequences each add `new` tokens to `cached` ones."""
        import numpy as np
        new, cached = np.asarray(new, dtype=float), np.asarray(cached, dtype=float)
        f = seqs * (2 * self.N_a * new + self.a_att * (new * cached + new * (new + 1) / 2))
        read = self.N_r - self.N_x * (1 - self.touched(seqs * new))
        return f, read * self.b_w + seqs * ((cached + 2 * new) * self.kappa + new * self.alpha)

    def time(self, new, cached=0, seqs=1):
        """(floor, compute time, memory time) in seconds, spread over the replica."""
        import numpy as np
        f, b = self.cost(new, cached, seqs)
        peak, bw = (r * self.g for r in self.rates())
        return np.maximum(f / peak, b / bw), f / peak, b / bw


def _chip(acc, dtype="bf16"):
    return roofline.Chip(acc.key, acc.name, acc.q(f"{dtype}_dense").to("FLOP/s"), acc.q("hbm_bandwidth").to("byte/s"))


def spec_for(m, acc, gpus, b_w, b_kv, fractions=FRACTIONS) -> Spec:
    n_ = models.param_count(m)
    moe = models.is_moe(m)
    routed = float((_n(m, "n_layers") - _n(m, "n_dense_layers")) * _n(m, "n_routed_experts") * 3 * _n(m, "d_model")
                   * _n(m, "moe_d_ff")) if moe else 0.0
    return Spec(m.name, _chip(acc), int(gpus), float(b_w), as_float(n_["active"], "parameter"),
                as_float(n_["total"] - n_["embedding"], "parameter"), routed,
                _n(m, "n_routed_experts") if moe else 0, _n(m, "n_experts_per_token") if moe else 0,
                as_float(models.kv_bytes_per_token(m, b_kv), "byte/token"),
                ACT_BYTES * activation_elements_per_token(m), float(attention_flops_per_pair(m)), *map(float, fractions))


def check_fits(m, acc, gpus, b_w, b_kv, prompt_tokens, cached_tokens):
    """The replica must hold the weights and the caches it serves, in all the memory the driver reports."""
    need = models.weight_bytes(m, b_w) + models.kv_bytes_per_token(m, b_kv) * q(cached_tokens, "token")
    have = serving.gpu_memory(acc).total * gpus
    if need > have:
        raise ParameterError(f"{m.name} needs {fmt(need, 'GB')} for weights and cache at {b_w:g} bytes per weight, "
                             f"more than {gpus} x {acc.name} hold ({fmt(have, 'GB')}): raise gpus_per_replica, "
                             "lower weight_bytes_per_param, or shorten the context")


def validate(p):
    check_fits(p.model, p.gpu, p.gpus_per_replica, p.weight_bytes_per_param, p.kv_bytes_per_element,
               p.prompt_tokens, max(p.prompt_tokens, p.decode_batch * p.context_tokens))


def pass_chain(m, acc, gpus_per_replica, weight_bytes_per_param, kv_bytes_per_element, prompt_tokens,
               context_tokens, decode_batch, compute_fraction=FRACTIONS[0], bandwidth_fraction=FRACTIONS[1], *,
               source="parameters cell", cite=None) -> Chain:
    """A prefill pass and a decode step of model `m` on `gpus_per_replica` x `acc` (catalog Entries), each at
    the achieved shares of the datasheet peaks. Each input cites `source`, or cite(parameter name) where given
    (the page's SPEC.source)."""
    cite = cite or (lambda _name: source)
    check_fits(m, acc, gpus_per_replica, weight_bytes_per_param, kv_bytes_per_element, prompt_tokens,
               max(prompt_tokens, decode_batch * context_tokens))
    s = spec_for(m, acc, gpus_per_replica, weight_bytes_per_param, kv_bytes_per_element,
                 (compute_fraction, bandwidth_fraction))
    c = s.chip
    per_gpu = q(1, "GPU")
    ch = Chain(f"{m.name} on {gpus_per_replica} x {acc.name}")
    ch.given("R", c.peak / per_gpu, "dense bf16 tensor rate per GPU", kind=acc["bf16_dense"].kind,
             source=acc["bf16_dense"].cite)
    ch.given("W", c.bandwidth / per_gpu, "HBM bandwidth per GPU", kind=acc["hbm_bandwidth"].kind,
             source=acc["hbm_bandwidth"].cite)
    ch.step("I_star", "R/W", "FLOP/byte", "datasheet ridge: where the two roofs meet")
    add_fraction_inputs(ch, compute_fraction, bandwidth_fraction, source)
    ch.step("I_a", "eta_P*R/(eta_W*W)", "FLOP/byte", "achieved ridge: where compute time equals memory time")
    ch.given("g", q(gpus_per_replica, "GPU"), "GPUs per replica", kind="assumption",
             source=cite("gpus_per_replica"))
    ch.given("k", q(CLAIM["flops_per_weight"], "FLOP/parameter/token"), "FLOPs per weight per token",
             kind="derived", source="one multiply-add")
    ch.given("N_a", q(s.N_a, "parameter"), "active weights (multiplied per token)", kind="derived", source=MODELS_SOURCE)
    ch.given("N_r", q(s.N_r, "parameter"), "weights a pass reads (all but the embedding table)",
             kind="derived", source=MODELS_SOURCE)
    ch.given("b_w", q(weight_bytes_per_param, "byte/parameter"), "bytes per weight", kind="assumption",
             source=cite("weight_bytes_per_param"))
    ch.given("kappa", q(s.kappa, "byte/token"), "K and V bytes per token, all layers", kind="derived",
             source=f"utils.models.kv_bytes_per_token at {fmt(kv_bytes_per_element)} bytes per element; "
                    + cite("kv_bytes_per_element"))
    ch.given("alpha", q(s.alpha, "byte/token"), "activation bytes per token", kind="assumption", source=ACT_SOURCE)
    ch.given("a", q(s.a_att, "FLOP/token**2"), "attention FLOPs per query-key pair, all layers", kind="derived",
             source="2 H (d_qk + d_v) per layer, from the config")
    moe = s.E > 0
    if moe:
        ch.given("N_x", q(s.N_x, "parameter"), "routed-expert weights", kind="derived", source="the config")
        ch.given("phi_P", float(s.touched(prompt_tokens)), "share of routed experts the prompt touches",
                 kind="assumption", source="uniform, independent routing")
        ch.given("phi_B", float(s.touched(decode_batch)), "share of routed experts a decode step touches",
                 kind="assumption", source="uniform, independent routing")
    read_p = "(N_r - N_x*(1 - phi_P))*b_w" if moe else "N_r*b_w"
    read_d = "(N_r - N_x*(1 - phi_B))*b_w" if moe else "N_r*b_w"
    ch.given("P", q(prompt_tokens, "token"), "prompt tokens (one prefill pass)", kind="assumption",
             source=cite("prompt_tokens"))
    ch.given("tau", q(1, "token"), "one token", kind="derived", source="a decode step adds one token per sequence")
    ch.step("F_p", "k*N_a*P + a*P*(P + tau)/2", "TFLOP", "prefill FLOPs (causal attention)")
    ch.step("M_p", f"{read_p} + P*(2*kappa + alpha)", "GB", "prefill bytes")
    ch.step("I_p", "F_p/M_p", "FLOP/byte", "prefill intensity")
    ch.step("t_pF", "F_p/(g*eta_P*R)", "ms", "prefill compute time")
    ch.step("t_pM", "M_p/(g*eta_W*W)", "ms", "prefill memory time")
    ch.step("t_p", "Max(t_pF, t_pM)", "ms", "prefill time at the achieved rates")
    ch.given("T", q(context_tokens, "token"), "context a decode step attends to", kind="assumption",
             source=cite("context_tokens"))
    ch.given("B", decode_batch, "sequences in the decode step", kind="assumption",
             source=cite("decode_batch"))
    ch.step("F_d", "B*tau*(k*N_a + a*T)", "GFLOP", "decode step FLOPs")
    ch.step("M_d", f"{read_d} + B*((T + tau)*kappa + tau*alpha)", "GB", "decode step bytes")
    ch.step("I_d", "F_d/M_d", "FLOP/byte", "decode intensity")
    ch.step("t_dF", "F_d/(g*eta_P*R)", "ms", "decode compute time")
    ch.step("t_dM", "M_d/(g*eta_W*W)", "ms", "decode memory time")
    ch.step("t_d", "Max(t_dF, t_dM)", "ms", "decode step time at the achieved rates")
    ch.step("c_p", "t_p/P", "µs/token", "prefill time per prompt token")
    ch.step("c_d", "t_d/(B*tau)", "µs/token", "decode time per generated token")
    ch.step("rho", "c_d/c_p", "", "a decode token's cost in prefill tokens")
    ch.solve("n_k", "k*N_a*n_k/(eta_P*R) = (N_r*b_w + n_k*(2*kappa + alpha))/(eta_W*W)", "token",
             "knee: tokens per pass where compute time equals memory time (every weight read)")
    ch.step("n_0", "I_a*b_w/k", "token", "the knee counting the weights alone (the rule of thumb)")
    return ch


def compute(p) -> Chain:
    return pass_chain(p.model, p.gpu, p.gpus_per_replica, p.weight_bytes_per_param, p.kv_bytes_per_element,
                      p.prompt_tokens, p.context_tokens, p.decode_batch, p.compute_fraction, p.bandwidth_fraction,
                      cite=functools.partial(SPEC.source, p))


def bound(ch, compute_key, memory_key) -> str:
    return "compute-bound" if ch[compute_key] >= ch[memory_key] else "memory-bound"


# --- the counting, symbolically -----------------------------------------------------------------------------
def pass_formulas() -> dict:
    """FLOPs and bytes of a pass of n new tokens on a cache of C, for prefill and decode (sympy), and checks."""
    import sympy as sp
    n, C, N_a, N_r, b_w, kappa, alpha, a_att = sp.symbols("n C N_a N_r b_w kappa alpha a_att", positive=True)
    flops = 2 * N_a * n + a_att * (n * C + n * (n + 1) / 2)
    bytes_ = N_r * b_w + (C + 2 * n) * kappa + n * alpha
    P_, T_ = sp.symbols("P T", positive=True)
    rows = [("prefill ($C = 0$, $n = P$)", flops.subs({C: 0, n: P_}), bytes_.subs({C: 0, n: P_})),
            ("decode ($C = T - 1$, $n = 1$)", sp.expand(flops.subs({C: T_ - 1, n: 1})),
             sp.expand(bytes_.subs({C: T_ - 1, n: 1})))]
    weight_intensity = (2 * N_a * n) / (N_r * b_w)
    ok = (sp.simplify(flops.subs({C: 0, n: P_}) - (2 * N_a * P_ + a_att * P_ * (P_ + 1) / 2)) == 0
          and sp.simplify(sp.expand(flops.subs({C: T_ - 1, n: 1})) - (2 * N_a + a_att * T_)) == 0
          and sp.simplify(weight_intensity.subs(N_r, N_a) - 2 * n / b_w) == 0)
    table = ("| pass | FLOPs | bytes |\n|---|---|---|\n"
             + "\n".join(f"| {name} | ${sp.latex(f)}$ | ${sp.latex(b)}$ |" for name, f, b in rows)
             + f"\n\nIntensity of the weight term alone: $I_w = {sp.latex(weight_intensity)}$ FLOP/byte")
    return dict(ok=ok, table=table)


def model_table(p) -> str:
    s = spec_for(p.model, p.gpu, p.gpus_per_replica, p.weight_bytes_per_param, p.kv_bytes_per_element)
    return (f"| {p.model.name} | per token |\n|---|---|\n"
            f"| active weights $N_a$ | {short(s.N_a)} |\n| weights read $N_r$ (all experts touched) | {short(s.N_r)} |\n"
            f"| KV cache $\\kappa$ | {fmt(q(s.kappa, 'byte/token'), 'kB/token')} |\n"
            f"| activations $\\alpha$ | {fmt(q(s.alpha, 'byte/token'), 'MB/token')} |\n"
            f"| attention per query-key pair $a$ | {fmt(q(s.a_att, 'FLOP'), 'MFLOP')} |")


def prose(p, ch) -> dict:
    n_ = models.param_count(p.model)
    pre, dec = bound(ch, "t_pF", "t_pM"), bound(ch, "t_dF", "t_dM")
    roof = pass_chain(p.model, p.gpu, p.gpus_per_replica, p.weight_bytes_per_param, p.kv_bytes_per_element,
                      p.prompt_tokens, p.context_tokens, p.decode_batch, 1.0, 1.0)
    gpu = q(1, "GPU")
    return {
        "eta-p": pct(as_float(ch["eta_P"], "")), "eta-w": pct(as_float(ch["eta_W"], "")),
        "peak-a": fmt(ch["R"] * ch["eta_P"] * gpu, "TFLOP/s"), "bandwidth-a": fmt(ch["W"] * ch["eta_W"] * gpu, "TB/s"),
        "ridge-a": fmt(ch["I_a"]), "roof-tp": fmt(roof["t_p"]), "roof-td": fmt(roof["t_d"]),
        "lm-head-share": pct(as_float(n_["lm_head"] / n_["active"], "")),
        "intro-setup": f"{p.model.name} on {p.gpus_per_replica} {p.gpu.name}", "intro-prompt": fmt(p.prompt_tokens, "token"),
        "intro-prefill-ms": fmt(ch["t_p"]), "intro-prefill-bound": pre, "intro-decode-ms": fmt(ch["t_d"]),
        "intro-decode-bound": dec, "intro-knee": fmt(ch["n_k"], "token"), "chip-name": p.gpu.name,
        "peak": fmt(ch["R"] * q(1, "GPU"), "TFLOP/s"), "bandwidth": fmt(ch["W"] * q(1, "GPU"), "TB/s"),
        "prefill-flops": fmt(ch["F_p"]), "prefill-bytes": fmt(ch["M_p"]), "prefill-tF": fmt(ch["t_pF"]),
        "prefill-tM": fmt(ch["t_pM"]), "prefill-bound": pre,
        "decode-batch": f"{fmt(p.decode_batch)} sequence" + ("" if p.decode_batch == 1 else "s"),
        "decode-context": fmt(p.context_tokens, "token"), "decode-flops": fmt(ch["F_d"]), "decode-bytes": fmt(ch["M_d"]),
        "decode-tF": fmt(ch["t_dF"]), "decode-tM": fmt(ch["t_dM"]), "decode-bound": dec, "knee-rule": fmt(ch["n_0"], "token"),
        "knee-vs-rule": pct(as_float(ch["n_k"] / ch["n_0"], "") - 1),
        "prefill-vs-knee": "above" if ch["P"] >= ch["n_k"] else "below",
        "decode-weight-share": pct(as_float(ch["N_r"] * ch["b_w"] / ch["M_d"], "")),
    }


# --- the claims ---------------------------------------------------------------------------------------------
def claim_chain(**changes) -> Chain:
    args = dict(m=catalog.model(CLAIM["model"]), acc=catalog.accelerator(CLAIM["gpu"]), gpus_per_replica=CLAIM["gpus"],
                weight_bytes_per_param=CLAIM["weight_bytes"], kv_bytes_per_element=CLAIM["kv_bytes"],
                prompt_tokens=CLAIM["prompt"], context_tokens=CLAIM["context"], decode_batch=CLAIM["batch"])
    return pass_chain(**{**args, **changes}, source="the claim")


def claim_spec() -> Spec:
    return spec_for(catalog.model(CLAIM["model"]), catalog.accelerator(CLAIM["gpu"]), CLAIM["gpus"],
                    CLAIM["weight_bytes"], CLAIM["kv_bytes"])


def knee_by_bisection(s: Spec, lo=1.0, hi=1e6) -> float:
    """Second route to the knee: bisect the full cost model for the pass where compute time equals memory time."""
    def gap(x):
        return s.time(x)[1] - s.time(x)[2]
    if gap(hi) < 0:
        return float("nan")
    for _ in range(200):
        mid = (lo * hi) ** 0.5
        lo, hi = (mid, hi) if gap(mid) < 0 else (lo, mid)
    return (lo * hi) ** 0.5


def expert_reads() -> dict:
    """Shares of the weights a pass reads: dense Llama-3-70B, and DeepSeek-V3 at one token and at the prompt."""
    dense = as_float(claim_chain()["N_r"] / models.param_count(catalog.model("llama-3-70b"))["total"], "")
    dsm = catalog.model("deepseek-v3")
    ds = spec_for(dsm, catalog.accelerator("h200"), 8, 1.0, 1.0)
    total = as_float(models.param_count(dsm)["total"], "parameter")
    return dict(dense=dense, ds=ds, ds_name=dsm.name, one=float((ds.N_r - ds.N_x * (1 - ds.touched(1))) / total),
                prompt=float((ds.N_r - ds.N_x * (1 - ds.touched(CLAIM["prompt"]))) / total),
                tokens_90=math.ceil(math.log(0.1) / math.log(1 - ds.k_e / ds.E)))


def roof_chain(**changes) -> Chain:
    """The claim's chain at the datasheet's roof (both shares one): a floor on time no engine reaches."""
    return claim_chain(compute_fraction=1.0, bandwidth_fraction=1.0, **changes)


def setting() -> str:
    return (f"{catalog.model(CLAIM['model']).name} in bf16 on {CLAIM['gpus']} {catalog.accelerator(CLAIM['gpu']).short_name} "
            f"at the achieved shares of the peaks")


def claims() -> list[Claim]:
    cc, r, roof = claim_chain(), expert_reads(), roof_chain()
    short_c = claim_chain(prompt_tokens=CLAIM["short_prompt"])
    llama = catalog.model(CLAIM["model"]).name
    pre, pre_short, dec = bound(cc, "t_pF", "t_pM"), bound(short_c, "t_pF", "t_pM"), bound(cc, "t_dF", "t_dM")
    # A universal sentence about "one forward pass" of any model: one model whose pass reads less refutes it.
    every = min(r["dense"], r["one"]) >= 1
    # "The answer is different for the two halves": a prompt below the knee gives decode's answer.
    differs = pre != dec and pre_short != dec
    return [
        Claim("reads-every-weight", quote=QUOTES["reads"], source=SOURCE,
              claimed="every weight is read once per forward pass, of any model (the words name none)",
              derived=f"dense {llama}: {pct(r['dense'])} of the weights (all but the embedding table); "
                      f"{r['ds_name']}: {pct(r['one'])} at one token per pass, {pct(r['prompt'])} at "
                      f"{fmt(CLAIM['prompt'], 'token')}",
              verdict=HOLDS if every else WRONG,
              nearest_true="" if every else
              f"a forward pass reads every weight its tokens pass through: in a dense model all but the embedding "
              f"table, of which it looks up only its tokens' rows ({pct(r['dense'])} of {llama}'s weights); in a "
              f"mixture of experts only the experts its tokens are routed to ({pct(r['one'])} of the weights of "
              f"{r['ds_name']} at one token, {pct(r['prompt'])} at {fmt(CLAIM['prompt'], 'token')})",
              reason=f"\"One forward pass\" names no model, and for a mixture of experts it is wrong: a one-token "
                     f"decode pass reads only the experts its token is routed to, {pct(r['one'])} of the "
                     f"weights of {r['ds_name']}; reading it as \"a dense model\" supplies words the source does "
                     f"not say, and even then the pass reads {pct(r['dense'])} of the weights of {llama} (the "
                     f"embedding table is a lookup)."),
        Claim("two-halves", quote=QUOTES["halves"], source=SOURCE,
              claimed="the bottleneck depends on the tokens per pass, and prefill and decode differ for a request "
                      "(the words name no model, chip or prompt)",
              derived=f"{setting()}: knee {fmt(cc['n_k'], 'token')} per pass ({fmt(roof['n_k'], 'token')} at the "
                      f"datasheet roof); prefill of {fmt(cc['P'], 'token')} {pre} ({fmt(cc['t_p'])}), of "
                      f"{fmt(short_c['P'], 'token')} {pre_short} ({fmt(short_c['t_p'])}); decode at batch one "
                      f"{dec} ({fmt(cc['t_d'])})",
              verdict=HOLDS if differs else WRONG,
              nearest_true="" if differs else
              f"the weight read is the bottleneck of any pass of fewer tokens than the knee, about "
              f"{fmt(cc['n_k'], 'token')} for {setting()}: every decode step at batch one, and the prefill of a "
              f"prompt shorter than the knee; only a longer prompt's prefill is compute-bound",
              reason=f"\"Depends on how many tokens ride along with it\" holds: below a knee of "
                     f"{fmt(cc['n_k'], 'token')} per pass the weight read binds and above it the tensor cores do; "
                     f"but \"the answer is different for the two halves of a request\" holds only for a prompt "
                     f"longer than the knee, which the words do not say: a prompt of {fmt(short_c['P'], 'token')} "
                     f"is {pre_short}, like the decode step."),
    ]


@memoised
def checks() -> dict:
    cc, cs, r, roof = claim_chain(), claim_spec(), expert_reads(), roof_chain()
    knee_ratio = as_float(cc["n_k"] / cc["n_0"], "")
    knee_bisect = knee_by_bisection(cs)
    knee_l2 = knee_by_bisection(replace(cs, alpha=0.0))
    achieved = roofline.Chip(cs.chip.key, cs.chip.name, cs.chip.peak * cs.eta_P, cs.chip.bandwidth * cs.eta_W)
    t_pre, b_pre = roofline.time_floor(cc["F_p"] / CLAIM["gpus"], cc["M_p"] / CLAIM["gpus"], achieved)
    t_dec, b_dec = roofline.time_floor(cc["F_d"] / CLAIM["gpus"], cc["M_d"] / CLAIM["gpus"], achieved)
    square = cc["F_p"] + cc["a"] * cc["P"] * cc["P"] / 2 - cc["a"] * cc["P"] * cc["tau"] / 2
    weight_term = as_float(cc["k"] * cc["N_a"] * cc["tau"] / (cc["N_r"] * cc["b_w"]), "FLOP/byte")
    asserts = dict(
        prefill_compute=bool(cc["t_pF"] > cc["t_pM"] and cc["I_p"] > cc["I_a"]),
        decode_memory=bool(cc["t_dM"] > cc["t_dF"] and cc["I_d"] < cc["I_a"]),
        weight_term=abs(weight_term - 1) < 1e-12 and 1 <= as_float(cc["I_d"], "FLOP/byte") < 1.1,
        knee=1 <= knee_ratio < 1.15, rho=abs(as_float(cc["rho"], "") / as_float(cc["I_a"], "FLOP/byte") - 1) < 0.05,
        bisect=abs(knee_bisect / as_float(cc["n_k"], "token") - 1) < 0.01,
        floors=(b_pre, b_dec) == ("compute", "memory") and abs(as_float(t_pre / cc["t_p"], "") - 1) < 1e-9
        and abs(as_float(t_dec / cc["t_d"], "") - 1) < 1e-9,
        roof=bool(roof["t_p"] < cc["t_p"] and roof["t_d"] < cc["t_d"]),          # the datasheet is only a bound
        experts=r["dense"] > 0.98 and r["one"] < 0.1 and r["prompt"] > 0.99)
    glue = {"check-gpus": str(CLAIM["gpus"]), "check-prompt": fmt(CLAIM["prompt"], "token"),
            "check-context": fmt(CLAIM["context"], "token"), "check-ridge": fmt(cc["I_star"]),
            "check-ridge-a": fmt(cc["I_a"]), "check-eta-p": pct(cs.eta_P), "check-eta-w": pct(cs.eta_W),
            "check-ip": fmt(cc["I_p"]), "check-id": fmt(cc["I_d"]), "check-tp": fmt(cc["t_p"]), "check-td": fmt(cc["t_d"]),
            "check-roof-tp": fmt(roof["t_p"]), "check-roof-td": fmt(roof["t_d"]), "check-roof-knee": fmt(roof["n_k"], "token"),
            "check-knee": fmt(cc["n_k"], "token"), "check-knee-rule": fmt(cc["n_0"], "token"),
            "check-knee-ratio": pct(knee_ratio - 1),
            "check-knee-bisect": fmt(knee_bisect, "token"), "check-knee-l2": fmt(knee_l2, "token"), "check-rho": fmt(cc["rho"]),
            "check-square": fmt(square.to("TFLOP")), "check-fp": fmt(cc["F_p"]), "check-dense-read": pct(r["dense"]),
            "ds-name": r["ds_name"], "ds-experts": f"{r['ds'].k_e} of {r['ds'].E}", "ds-read-1": pct(r["one"]),
            "ds-read-p": pct(r["prompt"]), "ds-tokens-90": fmt(r["tokens_90"], 'token')}
    return dict(chain=cc, asserts=asserts, glue=glue)


# --- batching and chunked prefill ----------------------------------------------------------------------------
def decode_batch_knee(s: Spec, context):
    """Sequences a decode pass needs, at this context, for compute time to equal memory time; None if none."""
    peak, bw = s.rates()
    denom = (2 * s.N_a + s.a_att * context) / peak - ((context + 1) * s.kappa + s.alpha) / bw
    return None if denom <= 0 else s.N_r * s.b_w / bw / denom


def mixed_pass(s: Spec, chunk, decodes, context):
    """(mixed, apart, chunk alone) seconds: a prefill chunk with `decodes` sequences in one pass, against the two
    run separately; the mixed pass reads the weights once."""
    f_c, b_c = s.cost(chunk)
    f_d, b_d = s.cost(1, context - 1, decodes)
    peak, bw = (r * s.g for r in s.rates())
    t_mixed = max((f_c + f_d) / peak, (b_c + b_d - s.N_r * s.b_w) / bw)
    return t_mixed, float(s.time(chunk)[0]) + float(s.time(1, context - 1, decodes)[0]), float(s.time(chunk)[0])


def batching(p) -> dict:
    """The batched-decode knee at the reader's context, the context above which no batch reaches it (solved
    with sympy), and the mixed chunked-prefill pass."""
    import sympy as sp
    s = spec_for(p.model, p.gpu, p.gpus_per_replica, p.weight_bytes_per_param, p.kv_bytes_per_element,
                 (p.compute_fraction, p.bandwidth_fraction))
    Tc, Rc, Wc, Nc, ac, kc, alc = sp.symbols("T R W N_a a kappa alpha")
    expr, = sp.solve(sp.Eq((2 * Nc + ac * Tc) / Rc, ((Tc + 1) * kc + alc) / Wc), Tc)
    T_reach = float(expr.subs({Rc: s.rates()[0], Wc: s.rates()[1], Nc: s.N_a,
                               ac: s.a_att, kc: s.kappa, alc: s.alpha}))
    B_knee = decode_batch_knee(s, p.context_tokens)
    t_mix, t_apart, t_chunk = mixed_pass(s, p.chunk_tokens, p.mixed_decode_sequences, p.context_tokens)
    i_inf = (2 * s.N_a + s.a_att * p.context_tokens) / ((p.context_tokens + 1) * s.kappa + s.alpha)
    sentence = (f"a decode pass reaches the knee with {fmt(math.ceil(B_knee))} sequences" if B_knee is not None else
                "no decode batch reaches the knee: each sequence reads its own cache of "
                f"{fmt(q(s.kappa * p.context_tokens, 'byte').to('GB'))}, which no batch shares, and however large "
                f"the batch the pass stays below {fmt(q(i_inf, 'FLOP/byte'))}")
    return {"bk-context": fmt(p.context_tokens, "token"), "bk-sentence": sentence,
            "bk-reach": ("at any context (the cache's reads never outweigh the FLOPs)" if T_reach <= 0
                         else f"only at contexts below {fmt(T_reach, 'token')}"),
            "mix-chunk": fmt(p.chunk_tokens, "token"), "mix-seqs": fmt(p.mixed_decode_sequences),
            "mix-t": fmt(q(t_mix, "s").to("ms")), "mix-apart": fmt(q(t_apart, "s").to("ms")),
            "mix-chunk-alone": fmt(q(t_chunk, "s").to("ms")), "mix-saving": pct(1 - t_mix / t_apart),
            "mix-extra": pct(t_mix / t_chunk - 1)}


# --- the measurement's prediction, the figures ---------------------------------------------------------------
def sweep_prediction(p, sizes, counts) -> dict:
    """The roofline floor of y = x W for the sweep's sizes; `counts(size) -> (flops, bytes)` is the harness's
    own count (utils.measure.flops_counted / bytes_counted), passed in so this module never imports it."""
    import numpy as np
    k, n = sizes[0]["k"], sizes[0]["n"]
    ms = np.array(sorted(s["m"] for s in sizes), dtype=float)
    chip = _chip(p.gpu)
    peak, bw = as_float(chip.peak, "FLOP/s") * p.compute_fraction, as_float(chip.bandwidth, "byte/s") * p.bandwidth_fraction

    def times(rows):
        f, b = counts({"m": rows, "k": k, "n": n})
        return np.maximum(f / peak, b / bw), f / peak, b / bw
    knee = float(times(ms[0])[0] * ms[-1] / times(ms[-1])[0])
    l70 = catalog.model("llama-3-70b")
    o_proj = (int(l70.q("n_heads").m * l70.q("head_dim").m), int(l70.q("d_model").m))
    shape = f"{k} x {n}" + (f", the shape of {l70.name}'s attention output projection" if (k, n) == o_proj else "")
    return dict(k=k, n=n, ms=ms, times=times, knee=knee, t1=float(times(ms[0])[0]), shape=shape)


def pass_curves(p, n_grid) -> dict:
    """Per chip (the reader's and up to two others): the floor, compute and memory time of a prefill-shaped pass."""
    others = [k for k in ("a100-sxm-80gb", "h100-sxm", "b200") if k != p.gpu.key]
    out, skipped = {}, []
    for acc in [p.gpu] + [catalog.accelerator(k) for k in others[:2]]:
        try:
            ck = pass_chain(p.model, acc, p.gpus_per_replica, p.weight_bytes_per_param, p.kv_bytes_per_element,
                            p.prompt_tokens, p.context_tokens, p.decode_batch, p.compute_fraction, p.bandwidth_fraction)
        except ParameterError:
            skipped.append(acc.short_name)
            continue
        sk = spec_for(p.model, acc, p.gpus_per_replica, p.weight_bytes_per_param, p.kv_bytes_per_element,
                      (p.compute_fraction, p.bandwidth_fraction))
        kn = as_float(ck["n_k"], "token")
        out[acc.short_name] = dict(time=sk.time(n_grid), knee=kn, at_knee=float(sk.time(kn)[0]), key=acc.key)
    return dict(curves=out, skipped=skipped)


def what_changes(p, ch: Chain) -> dict:
    out = {label: fmt(claim_chain(acc=catalog.accelerator(key))["n_k"], "token")
           for key, label in (("a100-sxm-80gb", "wc-a100"), ("h100-sxm", "wc-h100"), ("h200", "wc-h200"), ("b200", "wc-b200"))}
    out["wc-fp8w"] = fmt(claim_chain(weight_bytes_per_param=1.0)["n_k"], "token")
    h100 = catalog.accelerator(CLAIM["gpu"])
    cs_fp8 = spec_for(catalog.model(CLAIM["model"]), h100, CLAIM["gpus"], 1.0, CLAIM["kv_bytes"])
    out["wc-fp8wa"] = fmt(knee_by_bisection(replace(cs_fp8, chip=_chip(h100, "fp8"))), "token")
    ds = claim_chain(m=catalog.model("deepseek-v3"), acc=catalog.accelerator("h200"), weight_bytes_per_param=1.0,
                     kv_bytes_per_element=1.0)
    out["wc-ds-knee"] = fmt(ds["n_k"], "token")
    out["wc-ds-gpus"] = str(CLAIM["gpus"])
    out["wc-ds-bound"] = (bound(ds, "t_pF", "t_pM") + f" (intensity {fmt(ds['I_p'])} against an achieved ridge of "
                          f"{fmt(ds['I_a'])})")
    sp_c = claim_chain(prompt_tokens=CLAIM["short_prompt"])
    out.update({"wc-short-prompt": fmt(CLAIM["short_prompt"], "token"), "wc-short-time": fmt(sp_c["t_p"]),
                "wc-short-bound": bound(sp_c, "t_pF", "t_pM")})
    low = 0.5                                   # a prefill kernel reaching half the dense peak, not the best case
    out.update({"wc-eta-low": pct(low), "wc-eta-low-knee": fmt(claim_chain(compute_fraction=low)["n_k"], "token"),
                "wc-roof-knee": fmt(roof_chain()["n_k"], "token")})
    return out


def exercises(p, ch: Chain) -> dict:
    cc, cs = claim_chain(), claim_spec()
    m8 = catalog.model("llama-3-8b")
    ex1 = claim_chain(m=m8, gpus_per_replica=1)
    seqs = 64

    def gap(chunk):
        f_c, b_c = cs.cost(chunk)
        f_d, b_d = cs.cost(1, CLAIM["context"] - 1, seqs)
        peak, bw = cs.rates()
        return (f_c + f_d) / peak - (b_c + b_d - cs.N_r * cs.b_w) / bw
    lo, hi = 1.0, 1e6
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if gap(mid) < 0 else (lo, mid)
    chunk = math.ceil(hi)
    return {"ex1-model": m8.name, "ex1-tp": fmt(ex1["t_p"]), "ex1-bp": bound(ex1, "t_pF", "t_pM"),
            "ex1-td": fmt(ex1["t_d"]), "ex1-bd": bound(ex1, "t_dF", "t_dM"), "ex1-knee": fmt(ex1["n_k"], "token"),
            "ex2-tokens": fmt(as_float(cc["rho"], ""), "token"), "ex3-seqs": str(seqs), "ex3-chunk": fmt(chunk, "token"),
            "ex3-total": fmt(chunk + seqs, 'token')}


SPEC = ChapterSpec("prefill-vs-decode", PARAMETERS, RESULTS, compute, validate=validate, closed_form=True)
