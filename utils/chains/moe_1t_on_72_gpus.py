"""moe-1t-on-72-gpus: a trillion-parameter MoE (Kimi K2) on a GB200 NVL72 rack.

The wide expert-parallel decode layout: every GPU holds a copy of everything that is not a routed expert
and the KV cache of its own B/n sequences; the routed experts are spread in whole-expert slots
(utils.serving.moe.slot_layout). The memory plan per GPU (weights, KV cache, activation buffers, the share the
engine leaves free) and a decode-step floor: reading what the busiest GPU touches from HBM (or its FLOPs)
plus two all-to-alls per MoE layer, each a latency plus its bytes over the one-way NVLink bandwidth. Weights are
priced at `weight_bytes_per_param`, or by part with `part_bytes` (the experts' matrices apart from the rest, as
moe-total-vs-active takes it: utils.chains.moe_total_vs_active.PART_BYTES).
"""
from __future__ import annotations

import functools
import json
import math

from utils import catalog, models
from utils.chain import Chain, as_float, memoised
from utils.chains import moe_total_vs_active as tva
from utils.display import table
from utils.params import Param, ParameterError, Result, Spec
from utils.roofline import FRACTIONS, add_fraction_inputs, fraction_params
from utils.serving import moe
from utils.units import entry_name as name
from utils.units import fmt, num, pct, q, short
from utils.verdicts import HOLDS, READING, UNCHECKABLE, WRONG, Claim

PARAMETERS = (
    Param("model", "kimi-k2", "the model: a mixture of experts with latent attention (MLA), catalog key or "
          "config.json", check="model", source="catalog: Kimi K2, the claim's model"),
    Param("gpu", "gb200", "the accelerator: catalog key or spec file", check="accelerator",
          source="catalog: GB200 NVL72, the claim's 72-GPU NVLink rack"),
    Param("n_gpus", 72, "GPUs in the expert-parallel group (past one NVLink domain, the rest of the "
          "all-to-all crosses the scale-out fabric)", check="whole", source="the claim (72 GPUs)"),
    Param("weight_bytes_per_param", 1.0, "bytes per weight: 1 = Kimi K2's block-fp8 release, 2 = bf16, 0.5 = int4",
          unit="byte/parameter", source="catalog: kimi-k2.weights_dtype (block-fp8)"),
    Param("kv_bytes_per_element", 2.0, "bytes per cached element: 2 = bf16, 1 = fp8", unit="byte",
          source="this book's assumption (a bf16 cache)"),
    Param("context_tokens", 32768, "tokens held per sequence (prompt plus output so far)", unit="token",
          check="whole", source="this book's assumption"),
    Param("batch", 2304, "sequences decoding together across the group (one new token each per step)",
          unit="sequence", check="whole", source="this book's assumption (32 per GPU)"),
    Param("fabric", "ib-ndr", "the scale-out link each GPU has to other nodes (one NIC per GPU, "
          "rail-optimised): used only where the group spans nodes", check="interconnect",
          source="catalog: InfiniBand NDR, 400 Gb/s per GPU (the H100/H200 reference fabric)"),
    *fraction_params(),
    tva.PART_BYTES,
)

RESULTS = (
    Result("weights_per_gpu", "GB", "Weights on each GPU", of="W"),
    Result("kv_bytes_per_token", "kB/token", "KV cache per token (MLA, all layers)", of="kv"),
    Result("memory_per_gpu_used", "GB", "Memory used per GPU (weights, KV, activations, the share left free)", of="M"),
    Result("memory_spare_per_gpu", "GB", "HBM left on each GPU (negative: short by that much)", of="spare"),
    Result("max_batch", "", "Sequences that fit across the group at this context", of="B_max"),
    Result("decode_step_floor", "ms", "Decode step, lower bound at the achieved shares of the peaks", of="t_step"),
    Result("alltoall_per_step", "ms", "Two all-to-alls per MoE layer, per step", of="t_a2a"),
    Result("tokens_per_second", "token/s", "Decode throughput of the group at the floor", of="X"),
    Result("decode_step_at_roof", "ms", "Decode step at the datasheet roof (every rate at 100%): a bound no run reaches",
           of="t_roof"),
)

ENGINE = ("software", "vllm", "gpu_memory_utilization")   # the share of HBM the serving engine manages
LOGIT_BYTES = 4.0                                           # fp32 logits
REQUIRED = ("hbm_capacity", "hbm_bandwidth", "bf16_dense", "scaleup_link")
GQA_FROM = "llama-3-70b"   # the GQA row of the cache table borrows this model's KV heads


def chip(acc) -> str:
    """The chip's display name alone, for a figure's tick labels: 'GB200', 'H200'."""
    return name(acc).replace("NVIDIA ", "").replace("AMD ", "").split(" ")[0]


def moe_mla_models() -> list[str]:
    return [k for k in catalog.keys("model") if models.is_moe(catalog.model(k)) and models.is_mla(catalog.model(k))]


def validate(p) -> None:
    tva.validate_parts(p)
    if not (models.is_moe(p.model) and models.is_mla(p.model)):
        raise ParameterError(f"model {p.model.key!r} is not a mixture of experts with latent attention; "
                             f"valid: {', '.join(moe_mla_models())}")
    for field in REQUIRED:
        if field not in p.gpu:
            raise ParameterError(f"gpu {p.gpu.key!r} has no {field} in the catalog")
    if p.n_gpus < 2:
        raise ParameterError(f"n_gpus must be >= 2 (expert parallelism needs a second GPU), got {p.n_gpus}")
    dom = moe.nvlink_domain(p.gpu)
    if p.n_gpus > dom and p.n_gpus % dom:
        raise ParameterError(f"n_gpus={p.n_gpus} spans nodes of {dom} GPUs ({p.gpu.key}) but is not a whole "
                             f"number of them; use a multiple of {dom}")
    if why := shortfall(p):   # a plan that does not fit gets no step time, throughput or cost
        raise ParameterError(why)


def _cat(ch, sym, entry, field, label, unit):
    v = entry[field]
    return ch.given(sym, v.q.to(unit), label, kind=v.kind, source=f"{entry.key}.{field} ({v.source.id}, read {v.source.read})")


def plan(m, acc, n_gpus, weight_bytes_per_param, kv_bytes_per_element, context_tokens, batch, *,
         imbalance=1.0, compute_fraction=FRACTIONS[0], bandwidth_fraction=FRACTIONS[1], decode=True, fabric="ib-ndr",
         source="parameters cell", cite=None, expert_bytes=None, parts=False) -> Chain:
    """The memory plan and (decode=True) the decode-step floor, for catalog entries m and acc. batch and
    imbalance may be numpy arrays: every step is evaluated elementwise. Each input cites `source`, or
    cite(parameter name) where given (the page's SPEC.source). weight_bytes_per_param prices every weight but the
    experts' matrices, expert_bytes those (weight_bytes_per_param when None); parts: the widths came from part_bytes."""
    cite = cite or (lambda _name: source)
    b_e = weight_bytes_per_param if expert_bytes is None else expert_bytes
    width = cite("part_bytes" if parts else "weight_bytes_per_param")
    link = catalog.interconnect(acc.q("scaleup_link"))
    c = models.param_count(m)
    x = moe.experts(m)
    ch = Chain(f"{name(m)} on {n_gpus} x {name(acc)}")
    # --- the memory plan ---
    ch.given("N_tot", c["total"], "total parameters, counted from the config", kind="derived",
             source="utils.models.param_count")
    ch.given("E_r", x["E"], "routed experts per MoE layer", kind="spec", source=f"{m.key}.n_routed_experts")
    ch.given("L_m", x["L_moe"], "MoE layers (all but the dense ones)", kind="spec",
             source=f"{m.key}.n_layers - n_dense_layers")
    ch.given("P_e", q(x["P_e"], "parameter"), "one routed expert: 3 x d_model x moe_d_ff", kind="derived",
             source=f"{m.key}.d_model, moe_d_ff")
    ch.step("N_r", "L_m*E_r*P_e", "parameter", "routed-expert parameters")
    ch.step("N_rep", "N_tot - N_r", "parameter", "the rest, copied to every GPU")
    ch.given("b_w", q(weight_bytes_per_param, "byte/parameter"), "bytes per weight, all but the experts' matrices",
             kind="assumption", source=width)
    ch.given("b_e", q(b_e, "byte/parameter"), "bytes per weight of the experts' matrices", kind="assumption",
             source=width)
    ch.given("S_c", tva.shared_experts(m), "shared experts per MoE layer (in N_rep, copied to every GPU)",
             kind="spec", source=f"{m.key}.n_shared_experts")
    ch.given("n", n_gpus, "GPUs in the expert-parallel group", kind="assumption",
             source=cite("n_gpus"))
    ch.step("s", "ceiling(E_r/n)", "", "expert slots per GPU (utils.serving.moe.slot_layout)")
    ch.step("W", "(N_rep - S_c*L_m*P_e)*b_w + (S_c + s)*L_m*P_e*b_e", "GB", "weights on each GPU")
    ch.given("kv", models.kv_bytes_per_token(m, kv_bytes_per_element), "KV cache per token, all layers",
             kind="derived", source="utils.models.kv_bytes_per_token (MLA latent + RoPE key)")
    ch.given("T", q(context_tokens, "token"), "context per sequence", kind="assumption",
             source=cite("context_tokens"))
    ch.given("B", batch, "sequences decoding together", kind="assumption",
             source=cite("batch"))
    ch.step("S_g", "ceiling(B/n)", "", "sequences on the busiest GPU")
    ch.step("KV", "S_g*T*kv", "GB", "KV cache on that GPU")
    ch.given("d", x["d"], "hidden size: elements per token on the wire", kind="spec", source=f"{m.key}.d_model")
    ch.given("V", int(m.q("vocab_size").m), "vocabulary", kind=m["vocab_size"].kind, source=f"{m.key}.vocab_size")
    ch.given("b_d", q(moe.DISPATCH_BYTES, "byte"), "bytes per hidden element, dispatched (fp8)",
             kind="assumption", source=moe.DEEPEP_SRC)
    ch.given("b_c", q(moe.COMBINE_BYTES, "byte"), "bytes per hidden element, combined (bf16)",
             kind="assumption", source=moe.DEEPEP_SRC)
    ch.given("b_l", q(LOGIT_BYTES, "byte"), "bytes per logit (fp32)", kind="assumption", source="this book")
    ch.step("A", "S_g*(n*d*(b_d + b_c) + V*b_l)", "GB",
            "activation buffers: all-to-all receive slots for every rank, logits")
    _cat(ch, "C", acc, "hbm_capacity", "HBM per GPU", "GB")
    ch.given("u", catalog.entry(*ENGINE[:2])[ENGINE[2]],
             "share of HBM the engine manages: weights, activations and KV cache inside it")
    ch.step("M", "W + KV + A + (1 - u)*C", "GB", "memory used per GPU, with the share left free")
    ch.step("spare", "C - M", "GB", "HBM left on each GPU")
    ch.solve("S_max", "u*C = W + S_max*(T*kv + n*d*(b_d + b_c) + V*b_l)", "",
             "sequences per GPU that fit at this context")
    ch.step("B_max", "n*Max(0, floor(S_max))", "", "sequences that fit across the group")
    ch.given("N_x", tva.expert_matrices(m), "the experts' matrices, routed and shared", kind="derived",
             source="utils.models.weight_bytes_by_part (a part's matrices apart from its biases)")
    ch.solve("n_w", "n_w*u*C = (N_tot - N_x)*b_w + N_x*b_e", "", "GPUs that would hold the weights alone, evenly sharded")
    if not decode:
        return ch
    # --- the decode step ---
    ch.given("N_emb", c["embedding"], "input embedding (a lookup: stored, not read)", kind="derived",
             source="utils.models.param_count")
    ch.given("k", x["k"], "routed experts per token", kind="spec", source=f"{m.key}.n_experts_per_token")
    ch.step("f", "1 - (1 - k/E_r)**B", "", "expected share of a layer's experts the batch touches")
    ch.step("E_t", "E_r*f", "", "distinct experts touched per layer")
    ch.given("m_e", moe.busiest_experts(ch["f"].to("").magnitude, x["E"], n_gpus),
             "experts the busiest GPU touches per MoE layer, uniform routing", kind="derived",
             source="utils.serving.moe.busiest_experts: expected maximum over the GPUs of Binomial(its experts, f)")
    ch.given("rho", imbalance, "router skew: multiplies the busiest GPU's tokens and its experts", kind="assumption",
             source="1 = tokens spread evenly, experts touched at random (the floor)")
    ch.step("e_g", "Min(s, rho*m_e)", "", "experts the busiest GPU reads per MoE layer (at most its slots)")
    ch.step("R_w", "(N_rep - N_emb - S_c*L_m*P_e)*b_w + (S_c + e_g)*L_m*P_e*b_e", "GB",
            "weight bytes that GPU reads per step")
    _cat(ch, "BW", acc, "hbm_bandwidth", "HBM bandwidth", "TB/s")
    # No read or matmul runs at the datasheet's roof: the catalog's achieved shares (or the reader's) scale
    # the HBM bandwidth and both tensor rates; t_roof below keeps the roof's own figure, labelled as a bound.
    add_fraction_inputs(ch, compute_fraction, bandwidth_fraction, source=source)
    ch.step("t_w", "R_w/(eta_W*BW)", "ms", "reading the weights")
    ch.step("t_kv", "KV/(eta_W*BW)", "ms", "reading the KV cache")
    ch.given("N_act", c["active"], "active parameters per token", kind="derived", source="utils.models.param_count")
    ch.given("c_f", q(2, "FLOP/parameter"), "FLOPs per weight per token", kind="derived", source="one multiply-add")
    _cat(ch, "R_m", acc, moe.tensor_rate_key(acc, max(weight_bytes_per_param, b_e)), "tensor rate for the weight matmuls",
         "TFLOP/s")
    ch.given("L_a", models.n_layers(m), "layers with attention", kind="spec", source=f"{m.key}.n_layers")
    ch.given("H", int(m.q("n_heads").m), "attention heads", kind="spec", source=f"{m.key}.n_heads")
    ch.given("r", int(m.q("kv_lora_rank").m), "latent width", kind=m["kv_lora_rank"].kind, source=f"{m.key}.kv_lora_rank")
    ch.given("d_r", int(m.q("qk_rope_head_dim").m), "RoPE key width", kind=m["qk_rope_head_dim"].kind,
             source=f"{m.key}.qk_rope_head_dim")
    ch.given("c_a", q(2, "FLOP/token"), "FLOPs per latent element per cached token", kind="derived",
             source="one multiply-add")
    _cat(ch, "R_a", acc, moe.tensor_rate_key(acc, kv_bytes_per_element), "tensor rate for attention over the cache", "TFLOP/s")
    ch.step("t_c", "S_g*(c_f*(N_act + (rho - 1)*k*L_m*P_e)/R_m + c_a*L_a*H*(2*r + d_r)*T/R_a)/eta_P", "ms",
            "compute on the busiest GPU")
    ch.given("alpha_d", moe.ALPHA_D, "dispatch latency", kind="assumption", source="fitted to " + moe.TRT_SRC, digits=3)
    ch.given("alpha_c", moe.ALPHA_C, "combine latency", kind="assumption", source="fitted to " + moe.TRT_SRC, digits=3)
    _cat(ch, "BW_nv", link, "bandwidth_unidirectional", "scale-up bandwidth per GPU, one way", "GB/s")
    # Past one NVLink domain a token's remote expert copies split: those on its own node's other GPUs
    # go over NVLink, the rest over the GPU's own NIC (rail-optimised); the two run at once, so the
    # slower share sets the time. Within one domain the fabric share is zero and this is (n-1)/n.
    ch.given("g", moe.nvlink_domain(acc), "GPUs per NVLink domain", kind="spec", source=f"{acc.key}.scaleup_link")
    _cat(ch, "BW_net", catalog.interconnect(fabric), "bandwidth_unidirectional",
         "scale-out bandwidth per GPU, one way (its NIC)", "GB/s")
    ch.step("f_nv", "(Min(n, g) - 1)/n", "", "share of a token's expert copies on its node's other GPUs")
    ch.step("f_net", "Max(0, n - g)/n", "", "share on other nodes, over the fabric")
    ch.step("t_lat", "L_m*(alpha_d + alpha_c)", "ms", "all-to-all latency term (fitted on NVLink: a floor across nodes)")
    ch.step("t_bw", "L_m*rho*S_g*k*d*(b_d + b_c)*Max(f_nv/BW_nv, f_net/BW_net)", "ms",
            "all-to-all bandwidth term, the slower of the two links")
    ch.step("t_a2a", "t_lat + t_bw", "ms", "two all-to-alls per MoE layer")
    ch.step("t_step", "Max(t_w + t_kv, t_c) + t_a2a", "ms", "decode step floor")
    ch.given("tok", q(1, "token"), "new tokens per sequence per step", kind="spec", source="decode")
    ch.step("X", "B*tok/t_step", "token/s", "decode throughput of the group at the floor")
    ch.step("t_roof", "Max(eta_W*(t_w + t_kv), eta_P*t_c) + t_a2a", "ms",
            "the same step at the datasheet roof: a bound no run reaches")
    ch.solve("S_eq", "alpha_d + alpha_c = S_eq*k*d*(b_d + b_c)*Max(f_nv/BW_nv, f_net/BW_net)", "",
             "tokens per GPU at which the two terms are equal")
    return ch


def shortfall(p) -> str:
    """Why the reader's plan does not fit (the shortfall per GPU and the largest batch that fits), or "". A
    plan that does not fit gets no step time or throughput."""
    ch = plan(p.model, p.gpu, p.n_gpus, rest_bytes(p), p.kv_bytes_per_element, p.context_tokens,
              p.batch, decode=False, **widths(p))
    if as_float(ch["spare"], "GB") >= 0:
        return ""
    b_max = int(as_float(ch["B_max"]))
    most = (f"the largest batch that fits at {p.context_tokens:,} tokens is {b_max:,}" if b_max else
            f"no batch fits at {p.context_tokens:,} tokens (the weights alone, {fmt(ch['W'])} per GPU, leave no room)")
    return (f"batch={p.batch:,} does not fit {p.n_gpus} x {p.gpu.key}: each GPU is short by {fmt(-ch['spare'])}; "
            f"{most}")


def compute(p) -> Chain:
    return plan(p.model, p.gpu, p.n_gpus, rest_bytes(p), p.kv_bytes_per_element, p.context_tokens,
                p.batch, compute_fraction=p.compute_fraction, bandwidth_fraction=p.bandwidth_fraction,
                fabric=p.fabric.key, cite=functools.partial(SPEC.source, p), **widths(p))


def rest_bytes(p) -> float:
    """Bytes per weight of all but the experts' matrices (part_bytes's "rest", else weight_bytes_per_param)."""
    return tva.part_widths(p)[0]


def widths(p) -> dict:
    """plan()'s keywords for the experts' width: part_bytes's "experts", else weight_bytes_per_param."""
    return dict(expert_bytes=tva.part_widths(p)[1], parts=bool(p.part_bytes))


def by_key(model, gpu, *args, **kw) -> Chain:
    return plan(catalog.model(model), catalog.accelerator(gpu), *args, **kw)


def summary(ch) -> dict:
    """Plain numbers the prose and the checks use."""
    out = dict(fits=as_float(ch["spare"], "GB") >= 0, max_batch=int(as_float(ch["B_max"])),
               gpus_for_weights=math.ceil(as_float(ch["n_w"])))
    if "t_step" in ch._values:
        t, mem = ch["t_step"], ch["t_w"] + ch["t_kv"]
        out.update(t=t, a2a_share=as_float(ch["t_a2a"] / t, ""), kv_share=as_float(ch["t_kv"] / t, ""),
                   bound="memory" if as_float(mem, "ms") >= as_float(ch["t_c"], "ms") else "compute",
                   compute_share=as_float(ch["t_c"] / t, ""), per_seq=(q(1, "token") / t).to("token/s"))
    return out


# --- the claim ------------------------------------------------------------------------------------
CLAIM = dict(model="kimi-k2", gpu="gb200", n_gpus=72, params_total=1e12, params_active=32e9)
SENTENCE = ("A trillion parameters with 32 billion active per token: the weights need a rack, the compute needs a "
            "fraction of it, and the all-to-all between them decides everything.")
QUOTE = (SENTENCE + " The memory plan across 72 GPUs, the decode step from bandwidth and two all-to-alls, the "
         "compressed attention cache, and what imbalance costs.")
ACTIVE_WORDS = SENTENCE.split(":")[0].split(" with ")[1]   # the source's own words for the active count
SOURCE = "spec/000, paragraph on serving a trillion-parameter MoE (Kimi K2 on a 72-GPU NVLink rack)"
CONTEXT_QUOTE = ("The first question is whether 1T is total or active, because storage follows one and compute "
                 "follows the other.")
SHORT_CTX = 4096   # exercise 3: one short sequence
OPEN_CTX = 1024    # the short context of the check's operating points (the source names no context)


def full_context() -> int:
    return int(catalog.model(CLAIM["model"]).q("max_context").m)


@memoised
def checks() -> dict:
    """The check section's numbers, on the claim's own inputs: Kimi K2 in its block-fp8 release on the
    rack at its full context with a bf16 cache; the board it would otherwise need; the readings."""
    ck = catalog.model(CLAIM["model"])
    n, ctx = CLAIM["n_gpus"], full_context()
    claim = by_key(CLAIM["model"], CLAIM["gpu"], n, 1.0, 2.0, ctx, n, source="the claim")
    cs = summary(claim)
    board = {b: by_key(CLAIM["model"], "h200", moe.BOARD_GPUS, b, 2.0, ctx, moe.BOARD_GPUS, decode=False)
             for b in (1.0, 2.0)}
    w_rack = {b: summary(by_key(CLAIM["model"], CLAIM["gpu"], moe.BOARD_GPUS, b, 2.0, ctx, moe.BOARD_GPUS,
                                decode=False))["gpus_for_weights"] for b in (1.0, 2.0)}
    full = by_key(CLAIM["model"], CLAIM["gpu"], n, 1.0, 2.0, ctx, cs["max_batch"], source="the claim")
    c = models.param_count(ck)
    # Second route, memory: the GPUs' weights add up to the model's bytes plus the copies the layout makes.
    x = moe.experts(ck)
    s = int(claim["s"].m)
    copies = (n - 1) * claim["N_rep"] + (s * n - x["E"]) * x["L_moe"] * q(x["P_e"], "parameter")
    identity = n * claim["W"] - (models.weight_bytes(ck, 1.0) + copies * claim["b_w"])
    return dict(claim=claim, summary=cs, board=board, board_short={b: board[b]["W"] - board[b]["u"] * board[b]["C"]
                                                                    for b in board},
                w_rack=w_rack, full=full, full_summary=summary(full),
                total=c["total"], active=c["active"], report_total=ck.q("params_total"), context=ctx,
                identity=abs(as_float(identity, "GB")), fit=moe.latency_fit_check(), points=operating_points(),
                raw=models.weight_bytes(ck, 1.0), active_share=as_float(c["active"] / c["total"], ""),
                b200_spare=by_key(CLAIM["model"], "b200", moe.BOARD_GPUS, 1.0, 2.0, ctx, moe.BOARD_GPUS,
                                  decode=False)["spare"])


def operating_points() -> list[dict]:
    """The decode step on the claim's rack at loads the source leaves open: one sequence, one per GPU and the
    rack filled, at a short context and at the model's full one. Each term's share of the step (the FLOPs
    overlap the reads, so the shares of a step need not add up to one) and the term that is largest."""
    n, out = CLAIM["n_gpus"], []
    for ctx in (OPEN_CTX, full_context()):
        most = summary(by_key(CLAIM["model"], CLAIM["gpu"], n, 1.0, 2.0, ctx, n, decode=False))["max_batch"]
        for batch in (1, n, most):
            ch = by_key(CLAIM["model"], CLAIM["gpu"], n, 1.0, 2.0, ctx, batch, source="the claim")
            terms = {"weights": ch["t_w"], "KV cache": ch["t_kv"], "compute": ch["t_c"], "all-to-all": ch["t_a2a"]}
            share = {k: as_float(v / ch["t_step"], "") for k, v in terms.items()}
            out.append(dict(context=ctx, batch=batch, step=ch["t_step"], share=share, largest=max(share, key=share.get)))
    return out


def claims() -> list[Claim]:
    ck = checks()
    n, total, active = CLAIM["n_gpus"], ck["total"], ck["active"]
    pts = ck["points"]
    a2a = [pt["share"]["all-to-all"] for pt in pts]
    flops = [pt["share"]["compute"] for pt in pts]
    first, last = pts[0], pts[-1]
    outrun = [pt for pt in pts if pt["share"]["compute"] > pt["share"]["weights"] + pt["share"]["KV cache"]]
    where = " and ".join(f"{pt['batch']:,} sequences of {num(pt['context'])} tokens" for pt in outrun)
    # "the weights need a rack" read as "more than one server": on the source's rack a server is a compute
    # tray, and the weights overflow one (and an eight-GPU H200 board), so they need the rack's multi-node
    # NVLink domain; read as "all of the rack" it fails, since a fraction of the GPUs holds them.
    n_w = ck["w_rack"][1.0]
    tray_hbm = TRAY_GPUS * catalog.accelerator(CLAIM["gpu"]).q("hbm_capacity")
    whole, beyond_tray = n_w >= n, n_w > TRAY_GPUS
    weights = Claim(
        "moe-weights", quote=SENTENCE, source=SOURCE, claimed="the weights need the 72-GPU rack",
        derived=f"the block-fp8 weights fit in {n_w} of the {n} GB200s ({ck['w_rack'][2.0]} in bf16)",
        verdict=HOLDS if whole else (READING if beyond_tray else WRONG),
        reason=(f"Kimi K2's {fmt(ck['raw'].to('TB'))} of block-fp8 weights fit in {n_w} of the rack's {n} GB200s "
                f"with the engine's share kept: more than one compute tray of {TRAY_GPUS} GPUs "
                f"({fmt(tray_hbm.to('GB'))} of HBM) holds, and {moe.BOARD_GPUS} H200s are short by "
                f"{fmt(ck['board_short'][1.0])} per GPU (Moonshot's smallest fp8 deployment is {MOONSHOT_MIN_H200} "
                f"H200s), though {moe.BOARD_GPUS} B200s would hold them with {fmt(ck['b200_spare'])} per GPU to "
                f"spare; what fills the rack is the KV cache of a serving batch."),
        reading=("" if whole or not beyond_tray else
                 f'"the weights need a rack" read as "need more than one server, joined by the rack\'s NVLink '
                 f'domain": they overflow a compute tray ({TRAY_GPUS} GB200s, {fmt(tray_hbm.to("GB"))}) and an '
                 f"{moe.BOARD_GPUS}-GPU H200 board; read as needing all {n} GPUs it fails: {n_w} of them hold the weights, a "
                 f"fraction of the rack like the compute"),
        nearest_true=("" if whole or beyond_tray else
                      f"the weights fit in one compute tray: {n_w} of the rack's {n} GB200s hold them"))
    compute = Claim(
        "moe-compute", quote=SENTENCE, source=SOURCE, claimed="the compute needs a fraction of the rack",
        derived=f"{short(active.m)} of {short(total.m)} weights multiplied per token ({pct(ck['active_share'])})",
        verdict=READING if ck["active_share"] < 1 else WRONG,
        reason=(f"Each token multiplies {short(active.m)} of the {short(total.m)} weights the rack stores "
                f"({pct(ck['active_share'])}). As a share of the decode step instead, it turns on a batch and a "
                f"context the source never gives: the FLOPs take {pct(min(flops))} to {pct(max(flops))} of the "
                f"step at the check's loads, and outrun the HBM reads "
                + (f"only at {where}." if outrun else "at none of them.")),
        reading=(f'"the compute needs a fraction of it" read with "{ACTIVE_WORDS}": a token\'s FLOPs use only '
                 'the active weights, a fraction of the trillion the rack stores'))
    everywhere = all(pt["largest"] == "all-to-all" for pt in pts)
    somewhere = any(pt["largest"] == "all-to-all" for pt in pts)
    decides = Claim(
        "moe-a2a", quote=SENTENCE, source=SOURCE, claimed="the all-to-all decides the decode step",
        derived=(f"all-to-all {pct(max(a2a))} to {pct(min(a2a))} of the step, from one sequence to the rack "
                 f"filled at full context"),
        verdict=HOLDS if everywhere else UNCHECKABLE if somewhere else WRONG,
        reason=(f"Whether the all-to-all decides the step turns on the batch and the context, which the source "
                f"never gives: it is {pct(first['share']['all-to-all'])} of the step for one sequence of "
                f"{num(first['context'])} tokens, the largest term, and {pct(last['share']['all-to-all'])} with "
                f"the rack filled at the model's full context, where reading the KV cache takes "
                f"{pct(last['share']['KV cache'])}."),
        nearest_true="" if somewhere else "the all-to-all is never the largest term of the decode step")
    total_claim = Claim(
        "total-vs-active", quote=CONTEXT_QUOTE, source="spec/000, the paragraph after it (total vs active)",
        claimed="storage follows total parameters, compute follows active",
        derived=f"{short(total.m)} stored, {short(active.m)} multiplied per token",
        verdict=HOLDS,
        reason=(f"The memory plan is set by all {short(total.m)} weights, the FLOPs per token by the "
                f"{short(active.m)} active ones only."))
    return [weights, compute, decides, total_claim]


# --- tables and figures -------------------------------------------------------------------------
def parts(m) -> list[tuple[str, float, float]]:
    """(part, stored, multiplied per token) for a catalog MoE: where the parameters sit."""
    c, x = models.param_count(m), moe.experts(m)
    routed = x["L_moe"] * x["E"] * x["P_e"]
    shared = c["experts"].m - routed
    return [("routed experts", routed, x["L_moe"] * x["k"] * x["P_e"]), ("shared expert", shared, shared),
            ("attention (MLA)", c["attention"].m, c["attention"].m), ("dense FFN layer", c["mlp"].m, c["mlp"].m),
            ("router", c["router"].m, c["router"].m), ("input embedding", c["embedding"].m, 0.0),
            ("output head", c["lm_head"].m, c["lm_head"].m), ("norms", c["norms"].m, c["norms"].m)]


def cache_rows(m, kv_bytes_per_element) -> list[tuple[str, object]]:
    """KV cache per token for MLA (what the model caches), GQA with Llama-3-70B's KV heads, and MHA."""
    mha = models.kv_bytes_per_token_mha(m, kv_bytes_per_element)
    g = int(catalog.model(GQA_FROM).q("n_kv_heads").m)
    h = int(m.q("n_heads").m)
    return [("MLA (what the model caches)", models.kv_bytes_per_token(m, kv_bytes_per_element)),
            (f"GQA, {g} KV heads", mha * g / h), (f"MHA, {h} heads", mha)]


def sweep(p, batches) -> Chain:
    """The chain over an array of batches at the parameters' other inputs."""
    import numpy as np
    return plan(p.model, p.gpu, p.n_gpus, rest_bytes(p), p.kv_bytes_per_element, p.context_tokens,
                np.asarray(batches), **widths(p))


def imbalance_steps(p, rhos, context_tokens, batch):
    import numpy as np
    return plan(p.model, p.gpu, p.n_gpus, rest_bytes(p), p.kv_bytes_per_element, context_tokens,
                batch, imbalance=np.asarray(rhos), **widths(p))["t_step"]


def memory_plans(p) -> list[tuple[str, dict]]:
    """Per-GPU memory (weights, KV, activations, left free, capacity) for the parameters and three plans."""
    ctx = full_context()
    plans = [(f"{p.n_gpus} x {chip(p.gpu)}\n(parameters)",
              plan(p.model, p.gpu, p.n_gpus, rest_bytes(p), p.kv_bytes_per_element, p.context_tokens,
                   p.batch, decode=False, **widths(p)))]
    full = max(72, summary(by_key("kimi-k2", "gb200", 72, 1.0, 2.0, ctx, 72, decode=False))["max_batch"])
    for label, g, n, b, batch in (("full rack", "gb200", 72, 1.0, full), ("fp8", "h200", 8, 1.0, 8),
                                  ("int4", "h200", 8, 0.5, 8)):
        ch = by_key("kimi-k2", g, n, b, 2.0, ctx, batch, decode=False)
        plans.append((f"{n} x {chip(catalog.accelerator(g))}\n{label}", ch))
    return [(label, dict(weights=as_float(ch["W"], "GB"), kv=as_float(ch["KV"], "GB"),
                         activations=as_float(ch["A"], "GB"), free=as_float((1 - ch["u"]) * ch["C"], "GB"),
                         capacity=as_float(ch["C"], "GB"))) for label, ch in plans]


def simulation_route(batches=(1, 8, 72), trials=1000) -> dict:
    """The busiest GPU's expert count: seeded simulation against the expected maximum the chain uses."""
    x = moe.experts(catalog.model(CLAIM["model"]))
    n = CLAIM["n_gpus"]
    out = {}
    for b in batches:
        f = float(moe.touched_share(x["k"], x["E"], b))
        out[b] = (moe.simulate_busiest_experts(x["E"], x["k"], n, b, trials=trials),
                  float(moe.busiest_experts(f, x["E"], n)))
    return out


def variant_plans(p, ch) -> dict:
    """The board, the precision, the context and the link: the inputs that swing the plan."""
    ctx = full_context()
    ck = catalog.model("kimi-k2")
    h8 = by_key("kimi-k2", "h200", 8, 1.0, 2.0, ctx, 8, decode=False)
    sharded = (models.weight_bytes(ck, 1.0) / 8).to("GB")
    h16 = summary(by_key("kimi-k2", "h200", 16, 1.0, 2.0, ctx, 16, decode=False))
    # Moonshot's smallest fp8 unit, two H200 nodes, at the batch that fits: half of each token's remote
    # expert copies cross the fabric (one NDR port per GPU), the other half stay on NVLink.
    h16_step = by_key("kimi-k2", "h200", 16, 1.0, 2.0, ctx, h16["max_batch"])
    int4 = summary(by_key("kimi-k2", "h200", 8, 0.5, 2.0, ctx, 8, decode=False))
    bf16 = summary(by_key("kimi-k2", "gb200", 8, 2.0, 2.0, ctx, 8, decode=False))["gpus_for_weights"]
    long = plan(p.model, p.gpu, p.n_gpus, rest_bytes(p), p.kv_bytes_per_element, LONG_CTX, p.batch,
                decode=False, **widths(p))
    ib = catalog.interconnect("ib-ndr")
    h200 = catalog.accelerator("h200")
    return dict(h8=h8, sharded=sharded, short=h8["W"] - h8["u"] * h8["C"], short_sharded=sharded - h8["u"] * h8["C"],
                raw=models.weight_bytes(ck, 1.0), board=8 * h200.q("hbm_capacity"), h16=h16, int4=int4, bf16=bf16,
                long=long, long_summary=summary(long), ib=ib, h16_step=h16_step,
                ib_term=(ch["t_bw"] * ch["BW_nv"] / ib.q("bandwidth_unidirectional")).to("ms"))


LONG_CTX = 131072
# One server of the claim's rack: a GB200 NVL72 compute tray holds two GB200 superchips, four Blackwell GPUs
# (Setloop, "NVIDIA GB200 NVL72: Blackwell at rack scale", the catalog's source setloop-nvl72).
TRAY_GPUS = 4
# The smallest H200 deployment Moonshot names for Kimi K2's FP8 weights at 128k context (its deployment
# guidance, quoted in the catalog entry).
MOONSHOT_MIN_H200 = int(catalog.entry("software", "kimi-k2-deployment").q("min_h200").m)


def exercises(p, ch) -> dict:
    n, ctx = CLAIM["n_gpus"], full_context()
    ex1 = by_key(CLAIM["model"], CLAIM["gpu"], n, 1.0, 1.0, ctx, n)
    ds = catalog.model("deepseek-v3")
    ex2 = plan(ds, catalog.accelerator("gb200"), 72, 1.0, 2.0, p.context_tokens, p.batch)
    ex3 = by_key(CLAIM["model"], CLAIM["gpu"], n, 1.0, 2.0, SHORT_CTX, 1)
    return {"ex1-batch": f"{summary(ex1)['max_batch']:,}", "ex1-step": fmt(ex1["t_step"]),
            "ex2-experts": str(moe.experts(ds)["E"]), "ex2-slots": num(ex2["s"]), "ex2-weights": fmt(ex2["W"]),
            "ex2-step": fmt(ex2["t_step"]), "ex3-ctx": f"{SHORT_CTX:,} tokens", "ex3-seq": num(ex3["S_eq"]),
            "ex3-step": fmt(ex3["t_step"]), "ex3-share": pct(summary(ex3)["a2a_share"])}


# --- the page's tables (markdown text and the numbers the prose around them glues) ----------------
def _at(x, i):
    # Element i of a chain value that may be an array (a value that does not depend on the batch is not).
    return x[i] if getattr(x.magnitude, "ndim", 0) else x


def parts_section(p) -> tuple[dict, str]:
    c = models.param_count(p.model)
    x = moe.experts(p.model)
    kimi = models.param_count(catalog.model("kimi-k2"))
    rows = parts(p.model)
    routed = rows[0][1]
    glue = {"k-experts": str(x["k"]), "n-experts": str(x["E"]), "kimi-total": short(kimi["total"].m),
            "kimi-active": short(kimi["active"].m), "count-total": short(c["total"].m),
            "count-active": short(c["active"].m), "active-share": pct(c["active"] / c["total"]),
            "routed-share": pct(routed / c["total"].m), "claim-total": short(CLAIM["params_total"]),
            "claim-active": short(CLAIM["params_active"]), "claim-gpus": str(CLAIM["n_gpus"])}
    body = [[name, short(s), short(a) if a else "0 (a lookup)"] for name, s, a in rows]
    body.append(["**total**", f"**{short(c['total'].m)}**", f"**{short(c['active'].m)}**"])
    return glue, table(["part", "stored", "multiplied per token"], body)


def cache_section(p) -> tuple[dict, str]:
    rows = cache_rows(p.model, p.kv_bytes_per_element)
    (_, mla), (_, gqa), (_, mha) = rows
    ctx, cap = q(p.context_tokens, "token"), p.gpu.q("hbm_capacity")
    glue = {"gqa-groups": str(int(catalog.model(GQA_FROM).q("n_kv_heads").m)), "kv-gqa": fmt(gqa.to("kB/token")),
            "kv-mha": fmt(mha.to("MB/token")), "kv-mha-ratio": f"{num(as_float(mha / mla))} x",
            "kv-gqa-ratio": f"{num(as_float(gqa / mla))} x", "kv-seq-mla": fmt((mla * ctx).to("GB")),
            "kv-seq-mha": fmt((mha * ctx).to("GB")), "kv-context": f"{p.context_tokens:,} tokens",
            "kv-elem-bytes": fmt(q(p.kv_bytes_per_element, "byte"))}
    body = [[name, fmt(v.to("kB/token")), fmt((v * ctx).to("GB")), num(as_float(cap / (v * ctx), ""))]
            for name, v in rows]
    return glue, table(["cache", "per token", f"per sequence at {p.context_tokens:,} tokens",
                        "sequences in one GPU's HBM"], body)


def plan_glue(p, ch) -> dict:
    res = summary(ch)
    E = moe.experts(p.model)["E"]
    share = as_float(ch["u"])
    bytes_word = "byte" if p.weight_bytes_per_param == 1 else "bytes"
    b_w, b_e = tva.part_widths(p)
    widths_text = (f"{num(p.weight_bytes_per_param)} {bytes_word} per weight" if b_w == b_e else
                   f"{num(b_e)} bytes per expert weight and {num(b_w)} for the rest")
    return {
        "intro-setup": (f"{name(p.model)} on {p.n_gpus} {name(p.gpu)} GPUs, {widths_text}, "
                        f"{p.context_tokens:,} tokens of context, {p.batch:,} sequences"),
        "intro-fits": f"fits {p.n_gpus} GPUs" if res["fits"] else f"does not fit {p.n_gpus} GPUs",
        "intro-a2a-share": pct(res["a2a_share"]),
        "fit-sentence": (f"fits, with {fmt(ch['spare'])} to spare on each GPU" if res["fits"] else
                         f"does not fit: each GPU is short by {fmt(-ch['spare'])}"),
        "capacity": fmt(ch["C"]), "headroom": pct(1 - share), "engine-share": f"{share:g}",
        "kv-per-gpu": fmt(ch["KV"]), "act-per-gpu": fmt(ch["A"].to("MB")), "slots": num(ch["s"]),
        "redundant": str(int(ch["s"].m) * p.n_gpus - E), "gpus-for-weights": str(res["gpus_for_weights"]),
        "t-weights": fmt(ch["t_w"]), "t-kv": fmt(ch["t_kv"]), "t-compute": fmt(ch["t_c"]),
        "t-lat": fmt(ch["t_lat"]), "t-bw": fmt(ch["t_bw"]), "bound": res["bound"], "per-seq": fmt(res["per_seq"]),
        "s-eq": num(ch["S_eq"]), "n-collectives": str(2 * moe.experts(p.model)["L_moe"]),
    }


def reading_section(p) -> tuple[dict, str]:
    """Which experts a step reads, at a few batches: the busiest GPU against the mean one."""
    n = p.n_gpus
    batches = [1, 8, n, 256, 1024, p.batch]
    rd = sweep(p, batches)
    E = moe.experts(p.model)["E"]
    s, n_hi, n_lo = moe.slot_layout(E, n)
    i8, i_n = batches.index(8), batches.index(n)
    f_n = as_float(_at(rd["f"], i_n))
    spare = {b: float(moe.busiest_experts(as_float(_at(rd["f"], batches.index(b))), E, n, spare_read=True))
             for b in (8, n)}
    layout = (f"The {E} experts of a layer fill {n} GPUs of {s} slots each: " + (
        f"{n_hi} GPUs hold {s} experts and the other {n_lo} hold {s - 1} plus a spare slot with a second copy "
        "of a busy expert, which this page does not count as read (the dispatcher sends a touched expert's "
        "tokens to one copy)." if n_lo else f"every GPU holds {s} experts."))
    glue = {"layout-sentence": layout, "b1-touched": num(_at(rd["E_t"], 0)), "b1-busiest": fmt(_at(rd["e_g"], 0)),
            "b1-read": fmt(_at(rd["R_w"], 0)),
            "b1-a2a-share": pct(as_float(_at(rd["t_a2a"], 0) / _at(rd["t_step"], 0), "")),
            "rep-read": fmt(((rd["N_rep"] - rd["N_emb"] - rd["S_c"] * rd["L_m"] * rd["P_e"]) * rd["b_w"]
                             + rd["S_c"] * rd["L_m"] * rd["P_e"] * rd["b_e"]).to("GB")),
            "b8-mean": fmt(_at(rd["E_t"], i8) / n), "b8-busiest": fmt(_at(rd["e_g"], i8)), "bn-batch": f"{n:,}",
            "bn-mean": fmt(_at(rd["E_t"], i_n) / n), "bn-busiest": fmt(_at(rd["e_g"], i_n)), "bn-slots": str(s),
            "bn-p-full": pct(1 - (1 - f_n**s)**n_hi, digits=4), "b8-busiest-spare": fmt(spare[8]),
            "bn-busiest-spare": fmt(spare[n])}
    body = [[f"{b:,}", num(_at(rd["E_t"], i)), fmt(_at(rd["E_t"], i) / n),
             f"{as_float(_at(rd['e_g'], i)):.2f} of {num(rd['s'])}", fmt(_at(rd["R_w"], i)), fmt(_at(rd["t_w"], i)),
             fmt(rd["t_lat"]), fmt(_at(rd["t_bw"], i)), fmt(_at(rd["t_step"], i))] for i, b in enumerate(batches)]
    return glue, table(["batch", "experts touched per layer", "per GPU, mean", "busiest GPU, expected",
                        "weight bytes it reads", "reading them", "a2a latency", "a2a bandwidth", "step floor"], body)


def latency_section(p) -> str:
    per_gpu = [1, 8, 32, 128, 512, 2048]
    lt = sweep(p, [t * p.n_gpus for t in per_gpu])
    body = [[f"{t:,}", f"{t * p.n_gpus:,}", fmt(lt["t_lat"]), fmt(_at(lt["t_bw"], i)),
             pct(as_float(_at(lt["t_bw"], i) / _at(lt["t_a2a"], i), ""))] for i, t in enumerate(per_gpu)]
    return table(["tokens per GPU", "batch", "latency term", "bandwidth term", "bandwidth share"], body)


RHOS = (1.0, 1.1, 1.25, 1.5, 2.0, 3.0)
HEAVY_CONTEXT, HEAVY_PER_GPU = 2048, 256


def imbalance_section(p) -> tuple[dict, str]:
    """The step at a few router skews, for the parameters and a throughput-heavy regime."""
    a = imbalance_steps(p, RHOS, p.context_tokens, p.batch)
    h = imbalance_steps(p, RHOS, HEAVY_CONTEXT, HEAVY_PER_GPU * p.n_gpus)
    i2 = RHOS.index(2.0)
    glue = {"heavy-tokens": str(HEAVY_PER_GPU), "heavy-context": f"{HEAVY_CONTEXT:,} tokens",
            "imb-param-2": pct(as_float(a[i2] / a[0], "") - 1), "imb-heavy-2": pct(as_float(h[i2] / h[0], "") - 1),
            "rho-2": num(RHOS[i2])}
    body = [[num(r), fmt(a[i]), f"+{pct(as_float(a[i] / a[0], '') - 1)}", fmt(h[i]),
             f"+{pct(as_float(h[i] / h[0], '') - 1)}"] for i, r in enumerate(RHOS)]
    return glue, table(["$\\rho$", "step, parameters", "cost", "step, heavy regime", "cost"], body)


def check_section() -> tuple[dict, str]:
    """The check's numbers for the prose, and the latency fit against TensorRT-LLM's published table."""
    ck = checks()
    cs, full = ck["summary"], ck["full_summary"]
    sim = simulation_route()
    glue = {"claim-full-quote": QUOTE, "check-context": f"{ck['context']:,} tokens", "c-total": short(ck["total"].m),
            "c-active": short(ck["active"].m), "c-report": short(ck["report_total"].m),
            "c-weights": fmt(ck["claim"]["W"]), "c-used": fmt(ck["claim"]["M"]), "c-cap": fmt(ck["claim"]["C"]),
            "c-max-batch": f"{cs['max_batch']:,}", "c-step": fmt(ck["claim"]["t_step"]),
            "c-a2a-share": pct(cs["a2a_share"]), "c-compute-share": pct(cs["compute_share"]),
            "c-fp8-gpus": str(ck["w_rack"][1.0]), "c-bf16-gpus": str(ck["w_rack"][2.0]),
            "c-board-short": fmt(ck["board_short"][1.0]), "c-board-gpus": str(moe.BOARD_GPUS),
            "open-ctx": f"{OPEN_CTX:,} tokens", "full-max-batch": f"{full['max_batch']:,}",
            "c-active-share": pct(ck["active_share"]), "c-raw": fmt(ck["raw"].to("TB")),
            "b200-spare": fmt(ck["b200_spare"]), "moonshot-min-c": str(MOONSHOT_MIN_H200),
            "alpha-d": fmt(moe.ALPHA_D), "alpha-c": fmt(moe.ALPHA_C),
            "trt-low": pct(ck["fit"]["low"]), "trt-ep": str(moe.TRT_SETUP["ep"]), "sim-trials": "1,000",
            "sim-batches": f"one, eight and {CLAIM['n_gpus']}",
            "sim-values": ", ".join(fmt(v[0]) for v in sim.values()),
            "sim-exact": ", ".join(fmt(v[1]) for v in sim.values())}
    body = [[f"{b:,}", fmt(td), fmt(pd), fmt(tc), fmt(pc)] for b, td, pd, tc, pc in ck["fit"]["rows"]]
    return glue, table(["tokens per rank", "dispatch, published", "dispatch, model", "combine, published",
                        "combine, model"], body)


def points_section() -> str:
    """The check's operating points: each term's share of the decode step on the claim's rack."""
    body = [[f"{num(pt['context'])}", f"{pt['batch']:,}", fmt(pt["step"]),
             *(pct(pt["share"][k]) for k in ("weights", "KV cache", "compute", "all-to-all")), pt["largest"]]
            for pt in checks()["points"]]
    return table(["context (tokens)", "batch", "step floor", "weights read", "KV cache read", "compute (overlaps)",
                  "all-to-all", "largest"], body)


# The table as a reader types it: the experts' matrices in int4, everything else in bf16.
PARTS_EXAMPLE = [{"part": "experts", "bytes_per_param": 0.5}, {"part": "rest", "bytes_per_param": 2.0}]


def what_changes(p, ch) -> dict:
    w = variant_plans(p, ch)
    mixed = compute(p.replace(part_bytes=tuple(PARTS_EXAMPLE)))
    cmd = f"python -m utils.rederive moe-1t-on-72-gpus --set part_bytes='{json.dumps(PARTS_EXAMPLE)}'"
    return {"parts-cmd": cmd, "parts-e": num(PARTS_EXAMPLE[0]["bytes_per_param"]),
            "parts-r": num(PARTS_EXAMPLE[1]["bytes_per_param"]), "parts-w": fmt(mixed["W"]),
            "parts-total": fmt(((mixed["N_tot"] - mixed["N_x"]) * mixed["b_w"] + mixed["N_x"] * mixed["b_e"]).to("TB")),
            "parts-step": fmt(mixed["t_step"]),
            "board-gpus": str(int(w["h8"]["n"].m)), "h200-weights": fmt(w["h8"]["W"]), "h200-sharded": fmt(w["sharded"]),
            "h200-cap": fmt(w["h8"]["C"]), "h200-short": fmt(w["short"]), "h200-short-sharded": fmt(w["short_sharded"]),
            "h200-raw": fmt(w["raw"].to("TB")), "h200-board": fmt(w["board"].to("TB")),
            "moonshot-min": str(MOONSHOT_MIN_H200), "h200-16-batch": f"{w['h16']['max_batch']:,}",
            "h200-16-a2a": fmt(w["h16_step"]["t_a2a"]), "h200-16-net": pct(w["h16_step"]["f_net"]),
            "h200-16-step": fmt(w["h16_step"]["t_step"]),
            "int4-bytes": f"{num(0.5)} bytes", "int4-h200-batch": f"{w['int4']['max_batch']:,}",
            "bf16-gpus": str(w["bf16"]), "long-ctx": f"{LONG_CTX:,} tokens", "long-used": fmt(w["long"]["M"]),
            "long-max-batch": f"{w['long_summary']['max_batch']:,}", "t-bw-again": fmt(ch["t_bw"]),
            "ib-name": w["ib"].name, "ib-bw-term": fmt(w["ib_term"])}


SPEC = Spec("moe-1t-on-72-gpus", PARAMETERS, RESULTS, compute, validate=validate,
            closed_form=True)
