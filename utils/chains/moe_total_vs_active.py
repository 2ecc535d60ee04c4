"""moe-total-vs-active: storage follows the total parameter count, compute follows the active count.

For a mixture of experts, weight bytes and training state are counted over every stored parameter and
FLOPs per token over the active ones, so the GPUs a "1T" model needs for storage and for compute come
apart by the total-to-active ratio. The expert-parallel layout (utils.serving.moe.slot_layout), the all-to-all
bytes per token (utils.serving.moe.alltoall_bytes_per_token), why the group stays inside one NVLink domain, and
the imbalance a uniform router already leaves (utils.serving.moe.imbalance). A group wider than the routed experts
(DeepSeek-V3's EP320 decode) holds one expert per GPU and puts the shared expert's copies and redundant
routed copies on the spare GPUs (utils.serving.moe.redundant_layout); its imbalance is utils.serving.moe.redundant_imbalance.

Weight precision by part: `weight_bytes_per_param` prices every weight alike; `part_bytes`, a table of parts and their
bytes per parameter ("experts": the experts' matrices; "rest": everything else, the experts' biases included), prices a
release that stores its experts narrower (gpt-oss: MXFP4 experts, 4.25 bits a weight with their scales, the rest bf16).
The split is utils.models.weight_bytes_by_part's, the one that reads a checkpoint's quantization_config
(utils.catalog.hf_config); moe-1t-on-72-gpus takes the same table through this module.
"""
from __future__ import annotations

import dataclasses
import json
import math

from utils import catalog, models
from utils.chain import Chain, as_float, memoised
from utils.display import table
from utils.params import Column, Param, ParameterError, Result, Spec
from utils.serving import moe
from utils.units import entry_name as name
from utils.units import fmt, num, pct, q, short
from utils.verdicts import HOLDS, Claim

# An all-to-all is pairwise copies: the share of NVLink 4's one-way peak a pairwise copy reaches, measured by
# others (396.40 of 450 GB/s; the parameter's default, 88%, holds it to two figures).
_LINK = catalog.interconnect("hgx-h100-nvswitch")
_LINK_MEASURED = _LINK["p2p_copy_measured_unidirectional"]
LINK_FRACTION = float((_LINK_MEASURED.q / _LINK["bandwidth_unidirectional"].q).to("").m)
LINK_DEFAULT = 0.88

# Bytes per parameter by part, for the parts a release stores in another width than the rest (both MoE chapters).
PARTS = ("experts", "rest")
PART_BYTES = Param(
    "part_bytes", [], "bytes per parameter by part, replacing weight_bytes_per_param for the parts named: rows "
    "{\"part\": \"experts\" (their matrices) or \"rest\" (attention, dense layers, embeddings, head, router, norms, "
    "the experts' biases), \"bytes_per_param\": b} (JSON, or a .json file); gpt-oss: experts 0.53125, rest 2",
    check="table", columns=(Column("part", "text"), Column("bytes_per_param", "positive")),
    source="this book's assumption: empty, every part at weight_bytes_per_param")

PARAMETERS = (
    Param("model", "kimi-k2", "the model: a mixture of experts, catalog key or config.json", check="model",
          source="catalog: Kimi K2 (about 1T total, 32B active), the claim's '1T'"),
    Param("gpu", "h200", "the accelerator: catalog key or spec file", check="accelerator",
          source="this book's assumption (an H200 board)"),
    Param("weight_bytes_per_param", 1.0, "bytes per stored weight: 1 = fp8 (Kimi K2's release), 2 = bf16, 0.5 = int4",
          unit="byte/parameter", source="catalog: kimi-k2.weights_dtype (block-fp8)"),
    Param("tokens_per_second", 1e6, "throughput target across the deployment (forward passes, as in serving)",
          unit="token/s", source="this book's assumption"),
    Param("mfu", 0.4, "share of the dense tensor peak the matrix products reach", check="fraction",
          source="this book's assumption"),
    Param("n_gpus_ep", 8, "GPUs in the expert-parallel group", check="whole", source="this book's assumption (one board)"),
    Param("link_fraction", LINK_DEFAULT, "achieved share of a link's one-way peak in the all-to-all's pairwise copies",
          check="fraction", source=(f"catalog: {_LINK.name}, p2p_copy_measured_unidirectional over "
                                    f"bandwidth_unidirectional ({_LINK_MEASURED.kind}): {_LINK_MEASURED.note}; "
                                    f"{_LINK_MEASURED.cite}; assumed for the scale-out NIC too")),
    Param("top_k_override", 0, "routed experts per token; 0 = the model's own", check="non_negative",
          source="0: the model's n_experts_per_token"),
    PART_BYTES,
)


RESULTS = (
    Result("weights_bytes", "TB", "Weight bytes (every stored parameter)", of="W"),
    Result("active_flops_per_token", "GFLOP/token", "Forward FLOPs per token (active parameters)", of="F"),
    Result("gpus_for_storage", "GPU", "GPUs whose HBM the weights need (a floor)", of="G_w"),
    Result("gpus_for_compute", "GPU", "GPUs whose FLOPs the throughput target needs", of="G_c"),
    Result("all_to_all_bytes_per_token", "MB/token",
           "All-to-all bytes per token leaving its GPU (dispatch + combine, all MoE layers)", of="A"),
)

STATE_BYTES = 16.0   # bytes per parameter of mixed-precision Adam state: 2 + 2 + 4 + 4 + 4
ZERO_SRC = ("Rajbhandari et al., ZeRO: Memory Optimizations Toward Training Trillion Parameter Models, "
            "arXiv:1910.02054, sec. 3.1 (16 bytes per parameter for mixed-precision Adam)")
STEP_TOKENS = 256    # tokens per GPU in one forward step: a large decode batch, or a small prefill chunk
SCALE_OUT = "ib-ndr"  # one 400 Gb/s NIC per GPU: the scale-out rail an HGX or NVL72 node gives each GPU
REQUIRED = ("hbm_capacity", "bf16_dense", "scaleup_link")


def validate_parts(p) -> None:
    names = [r["part"] for r in p.part_bytes]
    for i, part in enumerate(names):
        if part not in PARTS:
            raise ParameterError(f"part_bytes[{i}].part must be one of {', '.join(PARTS)}, got {part!r}")
    if len(set(names)) != len(names):
        raise ParameterError(f"part_bytes names a part twice: {', '.join(names)}")


def part_widths(p) -> tuple[float, float]:
    """(rest, experts): bytes per parameter of each part, part_bytes's where it names the part, else
    weight_bytes_per_param (so the default prices every weight alike, as before)."""
    given = {r["part"]: r["bytes_per_param"] for r in p.part_bytes}
    return given.get("rest", p.weight_bytes_per_param), given.get("experts", p.weight_bytes_per_param)


def with_expert_width(m, b_e: float):
    """The model with its experts' matrices stored at b_e bytes a weight: the fields a checkpoint's quantization_config
    sets (quantized_parts, quantized_bytes_per_param; utils.catalog.hf_config), which utils.models.weight_bytes_by_part
    prices."""
    src = catalog.Source("part_bytes", "the part_bytes parameter", "", "")
    return dataclasses.replace(m, values={
        **m.values, "quantized_parts": catalog.Value("quantized_parts", "experts", src, "assumption"),
        "quantized_bytes_per_param": catalog.Value("quantized_bytes_per_param", q(b_e, "byte/parameter"), src,
                                                   "assumption")})


def expert_matrices(m):
    """The experts' matrices (routed and shared), the weights a release that narrows its experts stores narrow:
    utils.models.weight_bytes_by_part with the experts at one byte a weight and everything else (their biases
    included) at none."""
    return q(models.weight_bytes_by_part(with_expert_width(m, 1.0), 0.0)["total"].to("byte").m, "parameter")


def moe_models() -> list[str]:
    return [k for k in catalog.keys("model") if models.is_moe(catalog.model(k))]


def validate(p) -> None:
    validate_parts(p)
    if not models.is_moe(p.model):
        raise ParameterError(f"model {p.model.key!r} is not a mixture of experts; valid: {', '.join(moe_models())}")
    for field in REQUIRED:
        if field not in p.gpu:
            raise ParameterError(f"gpu {p.gpu.key!r} has no {field} in the catalog")
    E = moe.experts(p.model)["E"]
    if p.top_k_override > E:
        raise ParameterError(f"top_k_override must be 0 or a whole number of experts up to {E}, got {p.top_k_override}")
    if p.n_gpus_ep < 2:
        raise ParameterError(f"n_gpus_ep must be >= 2 (an all-to-all needs a second GPU), got {p.n_gpus_ep}")
    if p.n_gpus_ep > E:   # one expert per GPU, the spares hold copies (DeepSeek-V3's EP320 decode)
        x, k = moe.experts(p.model), p.top_k_override or moe.experts(p.model)["k"]
        try:
            moe.redundant_layout(E, p.n_gpus_ep, k, shared_experts(p.model))
        except ValueError as e:
            raise ParameterError(f"n_gpus_ep={p.n_gpus_ep} for the {x['E']} routed experts of {p.model.key}: {e}") \
                from None


def moe_spec(m, top_k: int = 0) -> dict:
    """The counts the chain needs from a catalog MoE, with its experts per token replaced when top_k > 0."""
    c, x = models.param_count(m), moe.experts(m)
    return dict(name=name(m), key=m.key, N_tot=c["total"], N_a0=c["active"], k0=x["k"], k=top_k or x["k"],
                E=x["E"], L_m=x["L_moe"], d=x["d"], P_e=q(x["P_e"], "parameter"), S=shared_experts(m),
                N_x=expert_matrices(m))


def shared_experts(m) -> int:
    """Shared experts per MoE layer (0 for Mixtral and Qwen3-MoE); each the size of a routed one."""
    return int(m.q("n_shared_experts").m) if "n_shared_experts" in m else 0


def layout(spec: dict, n_ep: int) -> dict:
    """Where the experts go: whole-expert slots for n <= E (utils.serving.moe.slot_layout); one expert per GPU with
    the spares holding shared-expert copies and redundant routed copies for n > E (utils.serving.moe.redundant_layout,
    DeepSeek-V3's decode)."""
    E = spec["E"]
    if n_ep <= E:
        return dict(routed=E, shared_on_spares=0, redundant=0, spare=0)
    return moe.redundant_layout(E, n_ep, spec["k"], spec.get("S", 0))


def router_imbalance(spec: dict, n_ep: int, tokens: int, placement: str = "statistics") -> float:
    """rho for the layout: utils.serving.moe.imbalance for n <= E; utils.serving.moe.redundant_imbalance (the shared copies,
    the redundant copies placed from past loads) for n > E."""
    if n_ep <= spec["E"]:
        return moe.imbalance(tokens, spec["k"], spec["E"], n_ep)
    s = spec.get("S", 0) if layout(spec, n_ep)["shared_on_spares"] else 0
    return moe.redundant_imbalance(tokens, spec["k"], spec["E"], n_ep, s, placement)


def dense_spec(n_params: float, label: str) -> dict:
    """A dense model: every parameter is active, no experts, no all-to-all."""
    return dict(name=label, key=None, N_tot=q(n_params, "parameter"), N_a0=q(n_params, "parameter"))


def _per_gpu(v, unit):
    return (v.q / q(1, "GPU")).to(unit)


def _cat(ch, sym, entry, field, label, unit):
    v = entry[field]
    return ch.given(sym, _per_gpu(v, unit), label, kind=v.kind,
                    source=f"{entry.key}.{field} ({v.source.id}, read {v.source.read})")


def plan(spec: dict, acc, b_w: float, tps: float, u: float, n_ep: int, eta: float = LINK_DEFAULT, *,
         source="parameters cell", step: bool = True, b_e: float | None = None, parts: bool = False) -> Chain:
    """`source`: one text for every parameter's row, or a function of the parameter's name (SPEC.source).
    b_w prices every weight but the experts' matrices, b_e those (b_w when None); parts: the widths came from
    part_bytes (their rows cite it).
    step=False stops before the step's times (every headline result comes first): the step's imbalance rho is an
    integral over a grid (utils.serving.moe.imbalance, numpy), which the page's step section needs and the
    results do not, so compute() runs on the standard library alone."""
    def src(name: str) -> str:
        return source(name) if callable(source) else source

    ch = Chain(f"{spec['name']} on {name(acc)}")
    # --- storage: every stored weight ---
    ch.given("N_tot", spec["N_tot"], "total parameters (stored)", kind="derived",
             source="utils.models.param_count" if spec["key"] else src("model"))
    is_moe = spec.get("E") is not None
    if is_moe:
        ch.given("N_a0", spec["N_a0"], "active parameters at the model's top-k", kind="derived",
                 source="utils.models.param_count")
        ch.given("k_0", spec["k0"], "routed experts per token, the model's", kind="spec",
                 source=f"{spec['key']}.n_experts_per_token")
        own = spec["k"] == spec["k0"]
        ch.given("k", spec["k"], "routed experts per token, used", kind="spec" if own else "assumption",
                 source=f"{spec['key']}.n_experts_per_token" if own else src("top_k_override"))
        ch.given("L_m", spec["L_m"], "MoE layers", kind="spec", source=f"{spec['key']}.n_layers - n_dense_layers")
        ch.given("P_e", spec["P_e"], "one routed expert: 3 x d_model x moe_d_ff", kind="derived",
                 source=f"{spec['key']}.d_model, moe_d_ff")
        ch.step("N_act", "N_a0 + (k - k_0)*L_m*P_e", "parameter", "active parameters (multiplied per token)")
    else:
        ch.given("N_act", spec["N_a0"], "active parameters: all of them (dense)", kind="assumption",
                 source=src("model"))
    b_e = b_w if b_e is None else b_e
    width = src("part_bytes") if parts else src("weight_bytes_per_param")
    if is_moe:
        ch.given("b_w", q(b_w, "byte/parameter"), "bytes per stored weight, all but the experts' matrices",
                 kind="assumption", source=width)
        ch.given("b_e", q(b_e, "byte/parameter"), "bytes per stored weight of the experts' matrices",
                 kind="assumption", source=width)
        ch.given("N_x", spec["N_x"], "the experts' matrices, routed and shared", kind="derived",
                 source="utils.models.weight_bytes_by_part (a part's matrices apart from its biases)")
        ch.step("W", "(N_tot - N_x)*b_w + N_x*b_e", "TB", "weight bytes: follow the total")
    else:
        ch.given("b_w", q(b_w, "byte/parameter"), "bytes per stored weight", kind="assumption", source=width)
        ch.step("W", "N_tot*b_w", "TB", "weight bytes: follow the total")
    ch.given("b_s", q(STATE_BYTES, "byte/parameter"), "training state per parameter (mixed-precision Adam)",
             kind="spec", source=ZERO_SRC)
    ch.step("S_tr", "N_tot*b_s", "TB", "training state: follows the total too")
    _cat(ch, "C", acc, "hbm_capacity", "HBM per GPU", "GB/GPU")
    ch.solve("n_w", "n_w*C = W", "GPU", "GPUs whose HBM the weights fill")
    ch.step("G_w", "ceiling(n_w)", "GPU", "GPUs for storage (weights only: a floor)")
    ch.solve("n_s", "n_s*C = S_tr", "GPU", "GPUs whose HBM the training state fills")
    ch.step("G_s", "ceiling(n_s)", "GPU", "GPUs for training state (before activations)")
    # --- compute: every active weight, once per token ---
    ch.given("c_f", q(2, "FLOP/parameter/token"), "forward FLOPs per active parameter per token", kind="derived",
             source="one multiply-add")
    ch.given("c_t", q(6, "FLOP/parameter/token"), "training FLOPs per active parameter per token", kind="derived",
             source="forward + backward (six-nd)")
    ch.step("F", "c_f*N_act", "GFLOP/token", "forward FLOPs per token: follow the active")
    ch.given("X", q(tps, "token/s"), "throughput target", kind="assumption", source=src("tokens_per_second"))
    ch.given("u", u, "MFU: share of the peak reached", kind="assumption", source=src("mfu"))
    _cat(ch, "R", acc, moe.tensor_rate_key(acc, max(b_w, b_e)), "dense tensor peak for these weights", "TFLOP/s/GPU")
    _cat(ch, "R_t", acc, "bf16_dense", "dense bf16 peak (training)", "TFLOP/s/GPU")
    ch.solve("n_c", "n_c*u*R = X*F", "GPU", "GPUs whose FLOPs the forward passes fill")
    ch.step("G_c", "ceiling(n_c)", "GPU", "GPUs for compute, serving")
    ch.solve("n_t", "n_t*u*R_t = X*c_t*N_act", "GPU", "GPUs whose FLOPs training at the same rate fills")
    ch.step("G_t", "ceiling(n_t)", "GPU", "GPUs for compute, training")
    if not is_moe:
        return ch
    # --- the layout: experts over the expert-parallel group, the rest copied ---
    ch.given("E_r", spec["E"], "routed experts per MoE layer", kind="spec", source=f"{spec['key']}.n_routed_experts")
    ch.given("n", n_ep, "GPUs in the expert-parallel group", kind="assumption", source=src("n_gpus_ep"))
    ch.step("s", "ceiling(E_r/n)", "", "expert slots per GPU per layer (utils.serving.moe.slot_layout)")
    lay = layout(spec, n_ep)
    n_sh = spec.get("S", 0) if lay["shared_on_spares"] else 0
    ch.given("S_sp", n_sh, "shared experts served as routed ones, on spare GPUs (n > E_r only)", kind="derived",
             source="utils.serving.moe.redundant_layout; " + moe.DSV3_SRC)
    ch.given("c_sh", lay["shared_on_spares"], "spare GPUs holding shared-expert copies", kind="derived",
             source="utils.serving.moe.shared_copies: ceiling(E_r/k) per shared expert")
    ch.given("n_red", lay["redundant"], "spare GPUs holding a redundant copy of a routed expert", kind="derived",
             source="utils.serving.moe.redundant_layout: n - E_r - c_sh; the count DeepSeek's production layout keeps: "
                    + moe.DSV3_DAY6_SRC)
    ch.step("N_rep", "N_tot - L_m*(E_r + S_sp)*P_e", "parameter",
            "everything but the routed (and spare-hosted shared) experts: copied to each GPU")
    ch.given("S_c", spec.get("S", 0) - n_sh, "shared experts per MoE layer copied to each GPU (in N_rep)",
             kind="derived", source=f"{spec['key']}.n_shared_experts, less those on spare GPUs")
    ch.step("W_g", "(N_rep - S_c*L_m*P_e)*b_w + (S_c + s)*L_m*P_e*b_e", "GB", "weights on each GPU of the group")
    # --- the all-to-all: each token's hidden state to its k experts and back, per MoE layer ---
    ch.given("d", spec["d"], "hidden size: elements per token on the wire", kind="spec", source=f"{spec['key']}.d_model")
    ch.given("b_d", q(moe.DISPATCH_BYTES, "byte"), "bytes per hidden element, dispatched (fp8)",
             kind="assumption", source=moe.DEEPEP_SRC)
    ch.given("b_c", q(moe.COMBINE_BYTES, "byte"), "bytes per hidden element, combined (bf16)",
             kind="assumption", source=moe.DEEPEP_SRC)
    ch.given("tok", q(1, "token"), "one token", kind="spec", source="per token")
    ch.step("A_0", "L_m*(k + S_sp)*d*(b_d + b_c)/tok", "MB/token",
            "bytes per token, dispatch + combine, over all MoE layers (a spare-hosted shared expert travels too)")
    ch.step("A", "A_0*(n - 1)/n", "MB/token", "of which leave the token's GPU (utils.serving.moe.alltoall_bytes_per_token)")
    ch.given("n_dom", moe.nvlink_domain(acc), "GPUs in one NVLink domain", kind="spec",
             source=f"{acc.q('scaleup_link')} catalog notes")
    ch.step("A_nv", "A_0*(Min(n, n_dom) - 1)/n", "MB/token", "of which stay inside the NVLink domain")
    ch.step("A_x", "A_0*(n - Min(n, n_dom))/n", "MB/token", "of which cross to another domain")
    link = catalog.interconnect(acc.q("scaleup_link"))
    _cat(ch, "BW_nv", link, "bandwidth_unidirectional", "scale-up bandwidth per GPU, one way", "GB/s/GPU")
    _cat(ch, "BW_x", catalog.interconnect(SCALE_OUT), "bandwidth_unidirectional",
         "scale-out bandwidth per GPU, one way (one NIC each)", "GB/s/GPU")
    ch.given("eta_l", q(eta, ""), "achieved share of a link's one-way peak (pairwise copies)",
             kind=_LINK_MEASURED.kind if eta == LINK_DEFAULT else "assumption", source=src("link_fraction"))
    ch.step("B_nv", "eta_l*BW_nv", "GB/s/GPU", "scale-up rate the all-to-all reaches")
    ch.step("B_x", "eta_l*BW_x", "GB/s/GPU", "scale-out rate the all-to-all reaches")
    # --- one step: T_g tokens per GPU; the busiest GPU sets the pace ---
    ch.given("T_g", q(STEP_TOKENS, "token/GPU"), "tokens per GPU in one step", kind="assumption",
             source="this book's assumption: a large decode batch or a small prefill chunk; the ratios below do not depend on it")
    if not step:
        return ch
    ch.given("rho", router_imbalance(spec, n_ep, STEP_TOKENS * n_ep),
             "busiest GPU's load over the mean, uniform routing", kind="derived",
             source=("utils.serving.moe.imbalance: expected maximum of the group's loads (see Router imbalance)"
                     if n_ep <= spec["E"]
                     else "utils.serving.moe.redundant_imbalance: copies placed from past loads (see Redundant experts)"))
    ch.step("t_f", "T_g*F/(u*R)", "ms", "forward FLOPs of one step on one GPU")
    ch.step("t_a", "rho*T_g*Max(A_nv/B_nv, A_x/B_x)", "ms", "all-to-all bytes of the step, busiest GPU")
    ch.step("t_ib", "rho*T_g*A/B_x", "ms", "the same bytes if every one crossed the scale-out NIC")
    ch.step("r_a", "t_a/t_f", "", "all-to-all over compute, this layout")
    ch.step("r_ib", "t_ib/t_f", "", "all-to-all over compute, all over the scale-out NIC")
    ch.step("R_in", "rho*T_g*(k + S_sp)*d*b_d*(n - 1)/n/tok", "MB/GPU", "dispatch bytes the busiest GPU receives per MoE layer")
    return ch


def _widths(p) -> dict:
    b_w, b_e = part_widths(p)
    return dict(b_e=b_e, parts=bool(p.part_bytes))


def compute(p) -> Chain:
    """The headline results' chain (storage, compute, layout, all-to-all bytes and links): closed form."""
    return plan(moe_spec(p.model, p.top_k_override), p.gpu, part_widths(p)[0], p.tokens_per_second, p.mfu,
                p.n_gpus_ep, p.link_fraction, source=lambda name: SPEC.source(p, name), step=False, **_widths(p))


def page_chain(p) -> Chain:
    """The page's chain: compute()'s, then one step's links, imbalance and times (the step section's rows)."""
    return plan(moe_spec(p.model, p.top_k_override), p.gpu, part_widths(p)[0], p.tokens_per_second, p.mfu,
                p.n_gpus_ep, p.link_fraction, source=lambda name: SPEC.source(p, name), **_widths(p))


def dense_reading(p) -> Chain:
    """Reading (b): a dense model of a trillion active parameters, on the parameters' deployment."""
    return plan(dense_spec(CLAIM["one_t"], "a dense 1T"), p.gpu, part_widths(p)[0], p.tokens_per_second,
                p.mfu, p.n_gpus_ep, p.link_fraction, source=lambda name: SPEC.source(p, name))


def bytes_per_flop(ch) -> float:
    """Weight bytes over forward FLOPs per token."""
    return as_float(ch["W"] / ch["F"], "B/(FLOP/token)")


# --- the claim ------------------------------------------------------------------------------------
QUOTE = ("The first question is whether 1T is total or active, because storage follows one and compute "
         "follows the other.")
PARAGRAPH_REST = ("The state budget, the layout that falls out of it, why expert parallelism belongs inside "
                  "NVLink, and the two failure modes a dense-model plan does not have: router imbalance and "
                  "all-to-all congestion.")
CLAIM = dict(one_t=1e12, model="kimi-k2")
# The sentence names no hardware; the check runs both readings on one fixed deployment of the book's choosing
# (an H200 board serving a million tokens a second in fp8 at 40% MFU), so the parameters never reach it.
CHECK = dict(gpu="h200", b_w=1.0, tps=1e6, u=0.4, n_ep=8)


def _check_plan(spec):
    c = CHECK
    return plan(spec, catalog.accelerator(c["gpu"]), c["b_w"], c["tps"], c["u"], c["n_ep"], source="the check")


@memoised
def checks() -> dict:
    """Both readings on the check's fixed deployment, and the second routes."""
    kimi = moe_spec(catalog.model(CLAIM["model"]))
    ka = _check_plan(kimi)
    same_total = _check_plan(dense_spec(as_float(ka["N_tot"], "parameter"), "dense, Kimi K2's total"))
    one_t_active = _check_plan(dense_spec(CLAIM["one_t"], "dense 1T"))
    ratio = as_float(ka["N_tot"] / ka["N_act"], "")
    ds = catalog.model("deepseek-v3")
    ds_spec = moe_spec(ds)
    # The all-to-all bytes by moving tokens: 64 tokens on an 8-GPU group, owner GPU = token index mod 8;
    # add the bytes of every (token, expert) pair whose expert lives elsewhere.
    import numpy as np  # the seeded second route only: compute() needs no array

    rng = np.random.default_rng(7)
    n8, tok = 8, 64
    picks = moe.draw_experts(rng, tok, kimi["k"], kimi["E"])
    remote = moe.owners(kimi["E"], n8)[picks] != (np.arange(tok)[:, None] % n8)
    counted = float(remote.sum()) * kimi["L_m"] * kimi["d"] * (moe.DISPATCH_BYTES + moe.COMBINE_BYTES)
    expected = as_float(ka["A"] * q(tok, "token"), "B")
    p_remote = (n8 - 1) / n8
    sd_pairs = math.sqrt(tok * kimi["k"] * p_remote * (1 - p_remote))
    return dict(ka=ka, same_total=same_total, one_t_active=one_t_active, ratio=ratio,
                card_active=catalog.model(CLAIM["model"]).q("params_active"),
                wf_ratio=bytes_per_flop(ka) / bytes_per_flop(same_total),
                ds_pub=as_float(ds.q("params_total") / ds.q("params_active"), ""),
                ds_cnt=as_float(ds_spec["N_tot"] / ds_spec["N_a0"], ""),
                counted=counted, expected=expected, tokens=tok,
                counted_tolerance=4 * sd_pairs / (tok * kimi["k"] * p_remote))


def claims() -> list[Claim]:
    ck = checks()
    ka, dense = ck["ka"], ck["same_total"]
    same_storage = abs(as_float(ka["W"] / dense["W"], "") - 1) < 1e-12
    compute_by_ratio = abs(as_float(dense["F"] / ka["F"], "") / ck["ratio"] - 1) < 1e-12
    return [Claim(
        "total-or-active", quote=QUOTE, source="spec/000 and spec/001, the paragraph on a trillion-parameter MoE",
        claimed="storage follows the total parameter count, compute follows the active count",
        derived=(f"Kimi K2: {short(ka['N_tot'].m)} stored, {short(ka['N_act'].m)} active; weight bytes per "
                 f"FLOP/token {num(bytes_per_flop(ka))} against {num(bytes_per_flop(dense))} for a dense model of "
                 f"the same total, a factor of {num(ck['wf_ratio'])} = the total-to-active ratio"),
        verdict=HOLDS if same_storage and compute_by_ratio else "wrong as stated",
        reason=(f"Kimi K2 stores {fmt(ka['W'])} exactly as a dense model of its {short(ka['N_tot'].m)} total would, "
                f"but costs {fmt(ka['F'])} against {fmt(dense['F'])}: the two readings of the count agree on "
                f"storage and differ by the total-to-active ratio, {num(ck['ratio'])} x, on compute."),
        nearest_true="" if same_storage and compute_by_ratio else "storage and compute follow different counts")]


# --- tables, sections and figures ---------------------------------------------------------------
def rate(x, digits=None) -> str:
    """A token rate in plain digits (1,000,000 token/s), rounded to `digits` significant digits if given."""
    v = as_float(x, "token/s") if hasattr(x, "units") else float(x)
    if digits:
        v = float(f"{v:.{digits}g}")
    return fmt(q(v, "token/s"), style="plain", digits=7)


def count(n, noun: str) -> str:
    n = int(round(float(n)))
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def readings_section(p, ch) -> tuple[dict, str]:
    dense = dense_reading(p)
    bytes_word = "byte" if p.weight_bytes_per_param == 1 else "bytes"
    b_w, b_e = part_widths(p)
    widths = (f"{num(p.weight_bytes_per_param)} {bytes_word} per weight" if b_w == b_e else
              f"{num(b_e)} bytes per expert weight and {num(b_w)} for the rest")
    state_rate = p.tokens_per_second * as_float(ch["n_s"] / ch["n_t"], "")
    if as_float(ch["G_s"], "GPU") >= as_float(ch["G_t"], "GPU"):
        state = ("So for the mixture of experts the state, not the arithmetic, sets the smallest cluster that can "
                 "train it at this rate; the dense reading is the other way round.")
    else:
        state = (f"At this rate compute sets the size of both; below about {rate(state_rate, 2)} the mixture of "
                 "experts' state would need more GPUs than its arithmetic, a crossover a dense trillion reaches only "
                 f"below {rate(p.tokens_per_second * as_float(dense['n_s'] / dense['n_t'], ''), 2)}.")
    spare = ch["C"] * q(1, "GPU") - ch["W_g"]
    glue = {"intro-setup": f"{name(p.model)} on {name(p.gpu)} GPUs, {widths}, MFU {pct(p.mfu)}",
            "intro-tps": rate(ch["X"]), "intro-dense-compute": fmt(dense["G_c"]), "c-tot": short(ch["N_tot"].m),
            "c-act": short(ch["N_act"].m), "c-ratio": f"{num(as_float(ch['N_tot'] / ch['N_act'], ''))} x",
            "c-train-state": fmt(ch["S_tr"]), "c-state-gpus": fmt(ch["G_s"]), "c-train-gpus": fmt(ch["G_t"]),
            "c-cap": fmt((ch["C"] * q(1, "GPU")).to("GB")), "c-peak": fmt((ch["R"] * q(1, "GPU")).to("TFLOP/s")),
            "d-weights": fmt(dense["W"]), "d-flops": fmt(dense["F"]), "d-storage": fmt(dense["G_w"]),
            "d-train-gpus": fmt(dense["G_t"]), "d-state-gpus": fmt(dense["G_s"]), "state-sentence": state,
            "ep-n": count(p.n_gpus_ep, "GPU"), "ep-slots": num(ch["s"]), "ep-experts": str(moe.experts(p.model)["E"]),
            "ep-rep": short(ch["N_rep"].m), "ep-weights": fmt(ch["W_g"]), "ep-cap": fmt(ch["C"] * q(1, "GPU")),
            "ep-fit": (f"{fmt(spare.to('GB'))} left for the KV cache and activations" if spare.m > 0 else
                       f"short by {fmt((-spare).to('GB'))}: the group must grow, or the weights shrink"),
            "ep-k": str(int(ch["k"].m))}
    rows = [("stored parameters", "N_tot"), ("active parameters", "N_act"), ("weight bytes", "W"),
            ("training state", "S_tr"), ("GPUs for the weights", "G_w"), ("GPUs for training state", "G_s"),
            ("forward FLOPs per token", "F"), ("GPUs for compute, serving", "G_c"), ("GPUs for compute, training", "G_t")]
    return glue, table(["", f"{name(p.model)} (reading a: ~1T total)", "dense (reading b: 1T active)"],
                       [[label, fmt(ch[s]), fmt(dense[s])] for label, s in rows])


def link_section(ch) -> tuple[dict, str]:
    ib = catalog.interconnect(SCALE_OUT)
    glue = {"a2a-raw": fmt(ch["A_0"]), "a2a-step-tokens": fmt(ch["T_g"] * q(1, "GPU")),
            "a2a-step-bytes": fmt((ch["A"] * ch["T_g"] * q(1, "GPU")).to("GB")),
            "a2a-total-rate": fmt((ch["A"] * ch["X"]).to("TB/s")), "t-compute": fmt(ch["t_f"]), "t-a2a": fmt(ch["t_a"]),
            "t-ib": fmt(ch["t_ib"]), "r-a2a": pct(as_float(ch["r_a"])), "r-ib": pct(as_float(ch["r_ib"])),
            "ib-name": ib.name, "link-ratio": f"{num(as_float(ch['BW_nv'] / ch['BW_x'], ''))} x",
            "ib-vs-compute": f"{num(as_float(ch['r_ib']), 2)} x", "dom-size": count(as_float(ch["n_dom"]), "GPU")}
    links = [("NVLink (this GPU's scale-up)", ch["BW_nv"])] + [
        (catalog.interconnect(k).name, _per_gpu(catalog.interconnect(k)["bandwidth_unidirectional"], "GB/s/GPU"))
        for k in ("ib-ndr", "eth-400g", "ib-xdr")]
    step = ch["rho"] * ch["T_g"] * ch["A"] / ch["eta_l"]      # at the achieved share of each link's peak
    rows = [[label, fmt(bw * q(1, "GPU")), fmt((step / bw).to("ms")), pct(as_float(step / bw / ch["t_f"], ""))]
            for label, bw in links]
    return glue, table(["link (one way, per GPU)", "peak", f"all-to-all of one step at {pct(as_float(ch['eta_l']))} of it",
                        "over compute"], rows)


SIM_STEPS = (1, 4, 16, 64, 256)   # tokens per GPU per step


def imbalance_simulation(p) -> list[tuple[int, int, int, float, float, float]]:
    """(tokens per GPU, tokens in the step, trials, simulated rho, its standard error, formula rho)."""
    k, E, n = int(compute(p)["k"].m), moe.experts(p.model)["E"], p.n_gpus_ep
    out = []
    for S in SIM_STEPS:
        T = S * n
        trials = moe.simulation_trials(T, k, E)
        _, busiest = moe.simulate_loads(T, k, E, n, trials, seed=S)
        mean = T * k / n
        out.append((S, T, trials, busiest.mean() / mean, busiest.std(ddof=1) / math.sqrt(trials) / mean,
                    moe.imbalance(T, k, E, n)))
    return out


def imbalance_section(p, ch) -> tuple[dict, str, list]:
    sim = imbalance_simulation(p)
    rows = [[f"{S:,}", f"{T:,}", f"{tr:,}", f"{r:.3f} ± {se:.3f}", f"{ra:.3f}"] for S, T, tr, r, se, ra in sim]
    glue = {"sim-k": str(int(ch["k"].m)), "rho-param": f"{as_float(ch['rho']):.3f}",
            "rho-param-pct": pct(as_float(ch["rho"]) - 1)}
    return glue, table(["tokens per GPU per step", "tokens in the step", "trials", "$\\rho$, simulated (± s.e.)",
                        "$\\rho$, formula"], rows), sim


CAPACITY_FACTORS = (1.0, 1.1, 1.25, 1.5, 2.0)


def _small_share(x: float) -> str:
    return "< 0.001%" if x < 1e-5 else pct(x, 2)


def capacity_section(p, ch) -> tuple[dict, str]:
    import numpy as np  # the seeded simulation's arrays

    k, E, n = int(ch["k"].m), moe.experts(p.model)["E"], p.n_gpus_ep
    T = STEP_TOKENS * n
    loads, _ = moe.simulate_loads(T, k, E, n, moe.simulation_trials(T, k, E, cap=100), seed=1)
    mean_e = T * k / E
    rows = []
    for cf in CAPACITY_FACTORS:
        cap = math.floor(cf * mean_e)
        sim_drop = np.maximum(loads - cap, 0).sum(axis=1) / (T * k)
        rows.append([f"{cf:g}", f"{cap:,}", _small_share(moe.dropped_share(T, k, E, cf)),
                     _small_share(sim_drop.mean()), f"+{pct(cf - 1)}"])
    s, n_hi, n_lo = moe.slot_layout(E, n)
    if n_lo:
        uneven = (f"here {n_hi} GPUs hold {s} experts and {n_lo} hold {s - 1}, so the fuller GPUs carry "
                  f"{num(s / (E / n))} times the mean before any randomness.")
    else:
        s72, hi72, _ = moe.slot_layout(384, 72)
        uneven = (f"here the {E} experts divide evenly, {s} to each of the {n} GPUs, so the slots add nothing (on a "
                  f"GB200 NVL72 rack of 72 GPUs, Kimi K2's 384 experts would not: {hi72} GPUs would hold {s72} and "
                  "the rest one fewer).")
    glue = {"uneven-sentence": uneven, "cap-tokens": f"{T:,} tokens", "cap-mean": num(mean_e),
            "cap-drop-1": pct(moe.dropped_share(T, k, E, 1.0), 2), "cap-drop-125": pct(moe.dropped_share(T, k, E, 1.25), 2),
            "cap-cf": num(1.25), "cap-pad": pct(0.25), "cap-rho-e": f"{moe.busiest_expert(T, k, E) / mean_e:.2f}",
            "cap-per-gpu": f"{E / n:g}" if E % n == 0 else f"{E / n:.1f}"}
    return glue, table(["capacity factor $f_c$", "capacity per expert", "dropped, exact", "dropped, simulated",
                        "padded expert compute"], rows)


RHO_SKEW = 2.0   # an illustrative skewed router: the busiest GPU at twice the mean


def incast_glue(p, ch) -> dict:
    return {"incast-senders": count(p.n_gpus_ep - 1, "GPU"), "incast-bytes": fmt((ch["R_in"] * q(1, "GPU")).to("MB")),
            "incast-time-nv": fmt((ch["R_in"] / ch["B_nv"]).to("µs")),
            "incast-time-ib": fmt((ch["R_in"] / ch["B_x"]).to("µs")), "incast-rho2": num(RHO_SKEW),
            "incast-bytes-2": fmt((ch["R_in"] * q(1, "GPU") * RHO_SKEW / ch["rho"]).to("MB")),
            "incast-oversub": f"{p.n_gpus_ep - 1} times"}


def check_glue() -> dict:
    ck = checks()
    ka, same = ck["ka"], ck["same_total"]
    c = CHECK
    return {"claim-ratio": f"{num(ck['ratio'])} x",
            "chk-setup": (f"{name(catalog.accelerator(c['gpu']))} GPUs, {num(c['b_w'])} byte per weight, "
                          f"{rate(c['tps'])}, MFU {pct(c['u'])}, an expert-parallel group of {c['n_ep']}"),
            "chk-tot": short(ka["N_tot"].m), "chk-act": short(ka["N_act"].m), "chk-card-act": short(ck["card_active"].m),
            "chk-w": fmt(ka["W"]), "chk-f-moe": fmt(ka["F"]), "chk-f-dense": fmt(same["F"]),
            "chk-wf-moe": num(bytes_per_flop(ka)), "chk-wf-dense": num(bytes_per_flop(same)),
            "chk-wf-ratio": f"{num(ck['wf_ratio'])} x", "chk-ds-pub": f"{num(ck['ds_pub'])} x",
            "chk-ds-cnt": f"{num(ck['ds_cnt'])} x", "chk-a2a-counted": fmt(q(ck["counted"], "B").to("MB")),
            "chk-a2a-expected": fmt(q(ck["expected"], "B").to("MB")), "chk-tokens": f"{ck['tokens']} tokens"}


def simulation_checks() -> dict:
    """The imbalance formula and the dropped share against seeded simulations, with their tolerances:
    {name: (simulated, formula, tolerance)}. For the formula: 4 standard errors of the simulated mean plus
    the Cornish-Fisher skew term gamma (e_n^2 - 1)/6 sigma, gamma = 1/sqrt(mean load), which the Gaussian
    formula leaves out."""
    import numpy as np  # the seeded simulations' arrays

    kimi = moe_spec(catalog.model(CLAIM["model"]))
    k, E, out = kimi["k"], kimi["E"], {}
    for S in (64, 256):
        T = S * 8
        trials = moe.simulation_trials(T, k, E)
        _, busiest = moe.simulate_loads(T, k, E, 8, trials, seed=100 + S)
        mu = T * k / 8
        sigma = math.sqrt(mu)
        formula = moe.busiest_load(T, k, E, 8)
        e8 = (formula - mu) / sigma
        tol = 4 * busiest.std(ddof=1) / math.sqrt(trials) + abs(e8**2 - 1) / 6 * sigma / math.sqrt(mu)
        out[f"busiest-{S}"] = (float(busiest.mean()), formula, tol)
    T = 256 * 8
    loads, _ = moe.simulate_loads(T, k, E, 8, moe.simulation_trials(T, k, E, cap=100), seed=5)
    for cf in (1.0, 1.25):
        drops = np.maximum(loads - math.floor(cf * T * k / E), 0).sum(axis=1) / (T * k)
        out[f"dropped-{cf:g}"] = (float(drops.mean()), moe.dropped_share(T, k, E, cf),
                                  4 * float(drops.std(ddof=1)) / math.sqrt(len(drops)))
    return out


def storage_compute_curves(p, ratios) -> dict:
    """GPUs for a '1T' model against the total-to-active ratio, both readings (the figure's left panel)."""
    import numpy as np  # the figure's curves

    ch = compute(p)
    cap = as_float(ch["C"], "GB/GPU")
    per_gpu = as_float(ch["u"] * ch["R"], "FLOP/s/GPU")
    one_t, b, r = CLAIM["one_t"], p.weight_bytes_per_param, np.asarray(ratios)
    flat = np.ones_like(r)
    return {"storage, 1T total (weights)": (flat * one_t * b / 1e9 / cap, "C0", "-"),
            "storage, 1T total (training state)": (flat * one_t * STATE_BYTES / 1e9 / cap, "C0", ":"),
            "compute, 1T total": (p.tokens_per_second * 2 * one_t / r / per_gpu, "C1", "-"),
            "storage, 1T active (weights)": (one_t * r * b / 1e9 / cap, "C0", "--"),
            "compute, 1T active": (flat * p.tokens_per_second * 2 * one_t / per_gpu, "C1", "--")}


def model_ratios() -> dict:
    """Total over active parameters for the catalog's MoE models shown in the figure."""
    out = {}
    for key in ("kimi-k2", "deepseek-v3"):
        c = models.param_count(catalog.model(key))
        out[name(catalog.model(key))] = as_float(c["total"] / c["active"], "")
    return out


def imbalance_curve(p, n: int, steps) -> list[float]:
    k, E = int(compute(p)["k"].m), moe.experts(p.model)["E"]
    return [moe.imbalance(S * n, k, E, n) for S in steps]


def _with(p, **over) -> Chain:
    kw = dict(spec=moe_spec(p.model, p.top_k_override), acc=p.gpu, b_w=part_widths(p)[0],
              tps=p.tokens_per_second, u=p.mfu, n_ep=p.n_gpus_ep, eta=p.link_fraction, **_widths(p))
    kw.update(over)
    return plan(**kw)


# A release that narrows its experts, as a reader gives it: gpt-oss's checkpoint (MXFP4 experts, 32 four-bit weights
# sharing an 8-bit scale, 4.25 bits a weight; everything else bf16; catalog gpt-oss-120b.quantized_bytes_per_param).
GPT_OSS = "gpt-oss-120b"


def gpt_oss_parts() -> list[dict]:
    m = catalog.model(GPT_OSS)
    return [{"part": "experts", "bytes_per_param": float(m.q("quantized_bytes_per_param").to("byte/parameter").m)},
            {"part": "rest", "bytes_per_param": 2.0}]


def what_changes(p, ch) -> dict:
    parts = gpt_oss_parts()
    oss = compute(SPEC.check(model=GPT_OSS, gpu=p.gpu.key, part_bytes=parts))
    flat = compute(SPEC.check(model=GPT_OSS, gpu=p.gpu.key, weight_bytes_per_param=parts[1]["bytes_per_param"]))
    cmd = (f"python -m utils.rederive moe-total-vs-active --set model={GPT_OSS} "
           f"--set part_bytes='{json.dumps(parts)}'")
    k, E = int(ch["k"].m), moe.experts(p.model)["E"]
    tps10 = p.tokens_per_second / 10
    crossover = p.tokens_per_second * as_float(ch["n_w"] / ch["n_c"], "")
    n_dom = int(as_float(ch["n_dom"]))
    n_wide = 2 * n_dom if 2 * n_dom <= E else n_dom + 1
    wide = _with(p, n_ep=n_wide)
    k_half = max(1, k // 2)
    half = _with(p, spec=moe_spec(p.model, k_half))
    B = STEP_TOKENS * p.n_gpus_ep
    return {"wc-tps-10": rate(tps10), "wc-gpus-10": fmt(_with(p, tps=tps10)["G_c"]), "wc-crossover": rate(crossover, 2),
            "wc-bf16": fmt(_with(p, b_w=2.0, b_e=2.0)["G_w"]), "wc-int4": fmt(_with(p, b_w=0.5, b_e=0.5)["G_w"]),
            "wc-n16": count(n_wide, "GPU"), "wc-n16-ratio": pct(as_float(wide["r_a"])), "wc-k-half": str(k_half),
            "wc-k-flops": fmt(half["F"]), "wc-k-a2a": fmt(half["A"]),
            "wc-touch-1": pct(float(moe.touched_share(k, E, 1))), "wc-touch-b": f"{B:,} tokens",
            "wc-touch-256": pct(float(moe.touched_share(k, E, B)), digits=4), "fig-n72": count(72, "GPU"),
            "wc-parts-cmd": cmd, "wc-parts-model": name(catalog.model(GPT_OSS)),
            "wc-parts-e": num(parts[0]["bytes_per_param"]), "wc-parts-r": num(parts[1]["bytes_per_param"]),
            "wc-parts-w": fmt(oss["W"].to("GB")), "wc-parts-flat": fmt(flat["W"].to("GB")),
            "wc-parts-gw": fmt(oss["G_w"]), "wc-parts-gw-flat": fmt(flat["G_w"])}


def exercises(p, ch) -> dict:
    ka = checks()["ka"]
    kimi_ratio = as_float(ka["N_tot"] / ka["N_act"], "")
    ex1 = plan(dense_spec(CLAIM["one_t"] * kimi_ratio, "1T active at Kimi K2's ratio"), p.gpu,
               p.weight_bytes_per_param, p.tokens_per_second, p.mfu, p.n_gpus_ep, p.link_fraction)
    ex2 = plan(moe_spec(catalog.model("deepseek-v3")), catalog.accelerator("h100-sxm"), p.weight_bytes_per_param,
               p.tokens_per_second, p.mfu, 8, p.link_fraction)
    k, E = int(ch["k"].m), moe.experts(p.model)["E"]
    lo, hi = 1, 1 << 16
    while hi - lo > 1:   # bisection on whole tokens per GPU: rho falls monotonically with the step
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if moe.imbalance(mid * 8, k, E, 8) > 1.05 else (lo, mid)
    return {"ex1-total": short(ex1["N_tot"].m), "ex1-w": fmt(ex1["W"]), "ex1-gw": fmt(ex1["G_w"]),
            "ex1-s": fmt(ex1["S_tr"]), "ex1-gs": fmt(ex1["G_s"]), "ex1-gc": fmt(dense_reading(p)["G_c"]),
            "ex2-gw": fmt(ex2["G_w"]), "ex2-w": fmt(ex2["W"].to("GB")), "ex2-gc": fmt(ex2["G_c"]),
            "ex2-f": fmt(ex2["F"]), "ex2-a": fmt(ex2["A"]), "ex3-s": f"{hi:,} tokens"}


# --- redundant experts: DeepSeek-V3's EP320 decode ---------------------------------------------
DSV3_QUOTE = ("The minimum deployment unit of the decoding stage consists of 40 nodes with 320 GPUs. [...] For the "
              "MoE part, each GPU hosts only one expert, and 64 GPUs are responsible for hosting redundant experts "
              "and shared experts.")
DAY6_QUOTE = ("\u201cEach deployment unit spans 18 nodes with 32 redundant routed experts\u201d (DeepSeek's "
              "inference-system overview, open-infra-index, February 2025)")
# DeepSeek served on H800s: an H100 with its NVLink cut down, the same 400 Gb/s InfiniBand NIC per GPU. The
# catalog has no H800, so the section prices the H100 SXM and shows the NVLink term again at the report's own
# H800 figure (sec. 3.2.2, quoted in the catalog's interconnect h800-nvlink).
H800_NVLINK = catalog.interconnect("h800-nvlink").q("bandwidth")
EP320 = dict(model="deepseek-v3", gpu="h100-sxm", b_w=1.0)


def ep320() -> dict:
    """DeepSeek-V3's decode layout worked through: the slots, the redundancy's effect on rho at the report's
    decode step, and the chain at n = 320 with its cross-node all-to-all."""
    d = moe.DSV3_DECODE
    spec = moe_spec(catalog.model(EP320["model"]))
    E, k, n = spec["E"], spec["k"], d["gpus"]
    lay = layout(spec, n)
    T = d["tokens_per_expert"] * E // k          # a step that gives each routed expert its 256 tokens on average
    rows = {pl: (moe.busiest_redundant(T, k, E, lay["redundant"], pl), router_imbalance(spec, n, T, pl))
            for pl in moe.PLACEMENTS}
    ch = plan(spec, catalog.accelerator(EP320["gpu"]), EP320["b_w"], CHECK["tps"], CHECK["u"], n, source="the section")
    return dict(spec=spec, layout=lay, T=T, rows=rows, ch=ch, n=n, nodes=d["nodes"], spare=d["spare"])


def ep320_section() -> tuple[dict, str]:
    x = ep320()
    spec, lay, ch, T, rows = x["spec"], x["layout"], x["ch"], x["T"], x["rows"]
    E, k, S = spec["E"], spec["k"], spec["S"]
    mean_e = T * k / E
    labels = {"none": "spares idle (no redundant copies)",
              "statistics": "copies placed from past loads (DeepSeek-V3's rule)",
              "step": "copies of this step's busiest experts (the bound)"}
    table_rows = [[labels[pl], f"{busiest:.1f}", f"{busiest / mean_e:.3f}", f"{rho:.3f}"]
                  for pl, (busiest, rho) in rows.items()]
    # the wire at the report's step: T tokens over the n GPUs, each token's bytes split by the chain's shares
    tok_gpu = q(T / x["n"], "token")
    t_nv = (tok_gpu * ch["A_nv"] / ch["B_nv"] / q(1, "GPU")).to("ms")
    t_x = (tok_gpu * ch["A_x"] / ch["B_x"] / q(1, "GPU")).to("ms")
    t_nv_h800 = (tok_gpu * ch["A_nv"] / (ch["eta_l"] * H800_NVLINK)).to("ms")
    rho_stat = rows["statistics"][1]
    t_f = (tok_gpu * ch["t_f"] / ch["T_g"] / q(1, "GPU")).to("ms")
    ratio = as_float(rho_stat * max(t_nv, t_x) / t_f, "")
    glue = {"ep320-quote": DSV3_QUOTE, "ep320-section": "section 3.4.2, Decoding", "ep320-day6": DAY6_QUOTE,
            "ep320-h800-section": "section 3.2.2",
            "ep320-dom": count(as_float(ch["n_dom"]), "GPU"), "ep320-gpus": count(x["n"], "GPU"),
            "ep320-nodes": count(x["nodes"], "node"),
            "ep320-spare": count(x["spare"], "GPU"), "ep320-routed": str(E), "ep320-k": str(k),
            "ep320-k1": str(k + S), "ep320-shared-copies": count(lay["shared_on_spares"], "GPU"),
            "ep320-redundant": count(lay["redundant"], "GPU"), "ep320-ek": num(E / k),
            "ep320-per-expert": f"{moe.DSV3_DECODE['tokens_per_expert']:,} tokens",
            "ep320-step": f"{T:,} tokens", "ep320-mean-e": num(mean_e),
            "ep320-mean-gpu": num(T * (k + S) / x["n"]),
            "ep320-rho-none": f"{rows['none'][1]:.3f}", "ep320-rho-stat": f"{rows['statistics'][1]:.3f}",
            "ep320-rho-step": f"{rows['step'][1]:.3f}",
            "ep320-buy-stat": pct(1 - rows["statistics"][0] / rows["none"][0], 2),
            "ep320-buy-step": pct(1 - rows["step"][0] / rows["none"][0]),
            "ep320-wg": fmt(ch["W_g"]), "ep320-a2a": fmt(ch["A"]),
            "ep320-ib-share": pct(as_float(ch["A_x"] / ch["A"], "")),
            "ep320-t-nv": fmt(t_nv), "ep320-t-x": fmt(t_x), "ep320-step-gpu": fmt(tok_gpu),
            "ep320-nv-x": f"{num(as_float(t_x / t_nv, ''))} x", "ep320-h800-nv": fmt(H800_NVLINK),
            "ep320-h800-t": fmt(t_nv_h800), "ep320-h800-x": f"{num(as_float(t_x / t_nv_h800, ''))} x",
            "ep320-ra": pct(ratio), "ep320-gpu": name(catalog.accelerator(EP320["gpu"])),
            "ep320-ib": catalog.interconnect(SCALE_OUT).name}
    return glue, table(["placement of the spare GPUs' copies", "busiest routed GPU (assignments)",
                        "over a routed expert's mean", "$\\rho$ over all GPUs"], table_rows)


SPEC = Spec("moe-total-vs-active", PARAMETERS, RESULTS, compute, validate=validate, closed_form=True)
