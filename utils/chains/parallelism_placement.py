"""parallelism-placement: what tensor, pipeline and data parallelism each put on the wire per GPU per step,
and what that costs on NVLink and on the fabric against the step's compute.

TP: four all-reduces of the activation A = 2sbh per layer per micro-batch (Megatron's f and g; counted by
utils.training.tp_sim), 2(t-1)/t of A each; PP: A forward and its gradient back at a boundary, 2A/t per GPU; DP: a
ring all-reduce of the GPU's gradient shard, plus NCCL's latency per bucket call. Divided by the compute,
TP's share is 2(t-1)Ru/(9hB): width against the chip's compute-to-bandwidth ratio, B a link's achieved rate
(NVLink and the fabric at the shares NCCL's all-reduce was measured to reach, collectives.link_fraction_params).
The model is one parameter (a dense catalog model or a config.json).
"""
from __future__ import annotations

import math

from utils import catalog
from utils.chain import Chain, as_float, memoised
from utils.models import is_moe, param_count
from utils.params import Param, ParameterError, Result, Spec
from utils.training import collectives, flops_per_parameter_token, zero_bytes_per_param
from utils.training.collectives import allreduce_bytes, pipeline_bytes, tensor_parallel_bytes
from utils.units import duration, fmt, num, pct, q, short
from utils.verdicts import HOLDS, WRONG, Claim

LLAMA_RUN = "llama-3-405b-pretraining"
MFU_SRC = "assumption: Llama 3 405B reported 38% to 43% BF16 MFU on H100 (arXiv:2407.21783, Table 4)"
MEGATRON_SRC = ("Shoeybi et al., Megatron-LM, arXiv:1909.08053, sec. 3 (f and g operators: two all-reduces "
                "forward, two backward per layer); counted by the simulation (utils.training.tp_sim)")
PORT_SRC = "one fabric port per GPU (rail-optimised HGX node)"
NCCL_LAT_SRC = f"{collectives.nccl_latency_source()}; as in the ring-allreduce chapter"
MEGATRON_BUCKET_SRC = ("Megatron-LM megatron/core/distributed/distributed_data_parallel.py: "
                       f"{collectives.megatron_bucket_rule()}, "
                       f"read {catalog.entry('software', 'megatron-lm-ddp')['grad_bucket_min'].source.read} "
                       "(this book's assumption: the run buckets its gradients as Megatron-LM does)")
DDP_SRC = collectives.ddp_bucket_source()
TP_ALLREDUCES = 4     # all-reduces of the full activation per layer per micro-batch (Megatron; utils.training.tp_sim)
TP_TARGET = 0.10      # the share of the step at which tensor parallelism's traffic would be tolerable
GPUS_PER_NODE = 8     # HGX H100 board: eight GPUs and eight fabric ports per node (assumption)
LATENCY_US = collectives.nccl_ring_latencies_us()   # NCCL's per-step latencies, the catalog's
DDP_BUCKET_MIB = collectives.ddp_bucket_mib()

PARAMETERS = (
    Param("model", "llama-3-405b", "the model (dense): a catalog key or the path of a Hugging Face config.json",
          check="model", source="catalog: Llama-3-405B, the claim's run"),
    Param("gpu", "h100-sxm", "accelerator catalog key", check="accelerator", source="catalog: H100 SXM (the run's GPU)"),
    Param("tp", 8, "tensor-parallel degree (GPUs that split every layer)", check="whole",
          source="Llama 3 paper, Table 4 row 2"),
    Param("pp", 16, "pipeline-parallel degree (stages)", check="whole", source="Llama 3 paper, Table 4 row 2"),
    Param("dp", 128, "data-parallel degree (replicas)", check="whole", source="Llama 3 paper, Table 4 row 2"),
    Param("seq_len", 8192, "tokens per sequence", unit="token", check="whole", source="Llama 3 paper, Table 4 row 2"),
    Param("global_batch_tokens", 16777216.0, "tokens per optimizer step (2**24)", unit="token",
          source="Llama 3 paper, Table 4 row 2: DP x sequences per DP group x sequence length"),
    Param("micro_batch", 1, "sequences per micro-batch", check="whole", source="this book's assumption"),
    Param("mfu", 0.40, "model FLOPs utilisation on the 6N basis: share of the dense bf16 peak spent on 6ND (attention "
          "and recomputation not counted; fleet-size converts other bases)", check="fraction",
          source=MFU_SRC),
    Param("fabric", "ib-ndr", "interconnect catalog key: the scale-out fabric, one port per GPU",
          check="interconnect", source="catalog: InfiniBand NDR (the run's RoCE has the same rate per port)"),
    *collectives.link_fraction_params(),
)

RESULTS = (
    Result("tp_bytes_per_gpu_per_step", "GB", "Tensor parallel: bytes per GPU per step", of="V_TP"),
    Result("pp_bytes_per_gpu_per_step", "GB", "Pipeline parallel: bytes per GPU per step", of="V_PP"),
    Result("dp_bytes_per_gpu_per_step", "GB", "Data parallel: bytes per GPU per step", of="V_DP"),
    Result("step_compute_time", "s", "Compute time per step (6N per token at the MFU)", of="t_c"),
    Result("tp_share_on_nvlink", "", "TP traffic on NVLink / step compute", of="f_TP_nv", percent=True),
    Result("tp_share_on_fabric", "", "TP traffic on the fabric / step compute", of="f_TP_f", percent=True),
    Result("dp_share_on_fabric", "", "DP traffic on the fabric / step compute", of="f_DP_f", percent=True),
    Result("pp_share_on_fabric", "", "PP traffic on the fabric / step compute", of="f_PP_f", percent=True, digits=2),
    Result("tp_bandwidth_needed", "GB/s", "Link bandwidth per GPU at which TP costs a tenth of the step", of="B_star"),
)

CLAIM_QUOTE = ("Three ways to split a training job, one table, and the rule that places each of them: "
               "activations on NVLink, gradients on the fabric, stage boundaries in between. With the byte "
               "counts that justify the placement.")
# What the byte counts are held to: TP on the fabric would cost more than half the step (NVLink cuts it by the
# links' ratio); DP fits the fabric in under a tenth (bytes and NCCL's latency, Megatron-LM's buckets) and leaves
# under a twentieth exposed after the backward pass; PP in under a hundredth. "In between" by bytes: PP's bytes
# between TP's and DP's.
THRESHOLDS = dict(tp_fabric_above=0.50, dp_fabric_below=0.10, dp_exposed_below=0.05, pp_fabric_below=0.01)


def _run_row(row: int) -> dict:
    run = catalog.run(LLAMA_RUN)
    return {f: int(as_float(run.q(f"table4_row{row}_{f}"))) for f in ("tp", "pp", "dp", "batch_per_dp", "gpus")}


def claim_inputs() -> dict:
    """Llama 3 405B's 16,384-GPU layout (Table 4, row 2), one sequence per micro-batch, a global batch of
    DP x sequences per DP group x sequence length (the paper's "16M"), H100 at 40% MFU, one NDR port a GPU."""
    run = catalog.run(LLAMA_RUN)
    r2, seq = _run_row(2), int(as_float(run.q("table4_row2_seq_len"), "token"))
    return dict(model=run.q("model"), gpu=run.q("accelerator"), tp=r2["tp"], pp=r2["pp"], dp=r2["dp"], seq_len=seq,
                global_batch_tokens=float(r2["dp"] * r2["batch_per_dp"] * seq), micro_batch=1, mfu=0.40,
                fabric="ib-ndr", nvlink_fraction=collectives.LINK_FRACTIONS[0],
                fabric_fraction=collectives.LINK_FRACTIONS[1])


def stage_layers(n_layers, pp):
    """Layers on the busiest stage: L/p, or (L+2)/p with one layer fewer on the first and last stage
    (Llama 3's balance, for the embedding and the output head); None where neither divides."""
    if n_layers % pp == 0:
        return n_layers // pp
    if (n_layers + 2) % pp == 0:
        return (n_layers + 2) // pp
    return None


def check_layout(m, tp, pp, dp, seq_len, global_batch_tokens, micro_batch):
    if is_moe(m):
        dense = ", ".join(k for k in catalog.keys("model") if not is_moe(catalog.model(k)))
        raise ParameterError(f"model {m.key!r} is a mixture of experts; this chain counts dense models "
                             f"(dense keys: {dense})")
    L = int(as_float(m.q("n_layers")))
    if pp > L or stage_layers(L, pp) is None:
        ok = [k for k in range(1, L + 1) if stage_layers(L, k) is not None]
        raise ParameterError(f"pp={pp} divides neither {m.name}'s {L} layers nor {L}+2 (Llama 3's balance, one "
                             f"layer fewer on the first and last stage); valid pp: {', '.join(map(str, ok))}")
    heads = int(as_float(m.q("n_heads")))
    if heads % tp:
        raise ParameterError(f"tp={tp} does not divide {m.name}'s {heads} attention heads")
    per = global_batch_tokens / (dp * seq_len * micro_batch)
    if per < 1 or per != int(per):
        raise ParameterError(f"global_batch_tokens={global_batch_tokens:g} is {per:g} micro-batches per replica "
                             f"(dp x seq_len x micro_batch = {dp * seq_len * micro_batch:,} tokens each); it must "
                             f"be a whole number >= 1")


def state_per_gpu(m, tp, pp, dp):
    """Training state on a GPU of the busiest stage, in bytes: bf16 weights and gradients whole, Adam's fp32
    master and moments sharded over the data-parallel replicas (ZeRO-1, Megatron's distributed optimizer). A lower
    bound: activations and buffers come on top."""
    L = int(as_float(m.q("n_layers")))
    pc = param_count(m)
    per_layer = as_float((pc["attention"] + pc["mlp"] + pc["norms"]) / L, "parameter")
    return per_layer * stage_layers(L, pp) / tp * zero_bytes_per_param(1, dp)


def check_memory(m, acc, tp, pp, dp):
    """A layout whose training state alone overfills a GPU's HBM is refused with the shortfall and the fewest
    pipeline stages that fit (no traffic or time is priced for a plan that cannot run)."""
    hbm = as_float(acc.q("hbm_capacity"), "B")
    need = state_per_gpu(m, tp, pp, dp)
    if need <= hbm:
        return
    L = int(as_float(m.q("n_layers")))
    fits = [k for k in range(pp, L + 1) if stage_layers(L, k) is not None and state_per_gpu(m, tp, k, dp) <= hbm]
    raise ParameterError(
        f"pp={pp}: the training state alone is {fmt(q(need, 'B').to('GB'))} a GPU (bf16 weights and gradients, "
        f"Adam sharded over dp={dp}), {fmt(q(need - hbm, 'B').to('GB'))} more than {acc.name}'s "
        f"{fmt(acc.q('hbm_capacity').to('GB'))}; " + (f"the fewest pipeline stages that fit: pp={fits[0]}" if fits else
                                                     "no pipeline depth fits: raise tp or use a larger GPU"))


def placement(model, gpu, tp, pp, dp, seq_len, global_batch_tokens, micro_batch, mfu, fabric,
              nvlink_fraction=collectives.LINK_FRACTIONS[0], fabric_fraction=collectives.LINK_FRACTIONS[1], *,
              bucket_params=None, source="parameters cell") -> Chain:
    """`source`: one text for every parameter's row, or a function of the parameter's name (SPEC.source)."""
    src = (lambda name: source) if isinstance(source, str) else source
    m, acc, link = catalog.model(model), catalog.accelerator(gpu), catalog.interconnect(fabric)
    check_layout(m, tp, pp, dp, seq_len, global_batch_tokens, micro_batch)
    for entry, field in ((acc, "bf16_dense"), (acc, "scaleup_bandwidth_unidirectional"), (acc, "hbm_capacity"),
                         (link, "bandwidth_unidirectional")):
        if field not in entry:
            raise ParameterError(f"{entry.key!r} has no {field} in the catalog")
    check_memory(m, acc, tp, pp, dp)
    pc = param_count(m)
    n_layers = int(as_float(m.q("n_layers")))
    ch = Chain(f"{m.name}: TP {tp} x PP {pp} x DP {dp} on {acc.name}")
    # --- the layout and the step ---
    ch.given("t", tp, "tensor-parallel degree", kind="assumption", source=src("tp"))
    ch.given("p", pp, "pipeline stages", kind="assumption", source=src("pp"))
    ch.given("d", dp, "data-parallel replicas", kind="assumption", source=src("dp"))
    ch.step("n", "t*p*d", "", "GPUs")
    ch.given("s", q(seq_len, "token/sequence"), "sequence length", kind="assumption", source=src("seq_len"))
    ch.given("b", q(micro_batch, "sequence"), "sequences per micro-batch", kind="assumption", source=src("micro_batch"))
    ch.given("T_g", q(global_batch_tokens, "token"), "tokens per step (global batch)", kind="assumption",
             source=src("global_batch_tokens"))
    ch.step("m", "T_g/(d*s*b)", "", "micro-batches per replica per step")
    ch.given("h", int(as_float(m.q("d_model"))), "model width", kind="spec", source=f"{m.name} config")
    ch.given("L", n_layers, "layers", kind="spec", source=f"{m.name} config")
    ch.given("L_s", stage_layers(n_layers, pp), "layers on the busiest stage", kind="derived",
             source="L/p, or (L+2)/p with one layer fewer on the first and last stage (Llama 3)")
    ch.given("w_a", q(2, "byte/token"), "bytes per activation element (bf16)", kind="assumption",
             source="bf16 activations")
    ch.step("A", "w_a*s*b*h", "MB", "activation of one micro-batch at a layer boundary")
    # --- tensor parallel ---
    ch.given("c", TP_ALLREDUCES, "all-reduces of A per layer per micro-batch", kind="derived", source=MEGATRON_SRC)
    ch.step("r_t", "2*(t - 1)/t", "", "ring factor over the TP group")
    ch.step("V_TP", "c*r_t*A*L_s*m", "GB", "TP: bytes per GPU per step")
    ch.step("k_TP", "c*L_s*m", "", "TP: collectives per step, each blocking the next layer")
    # --- pipeline parallel ---
    ch.step("V_PP", "2*A/t*m*Min(1, p - 1)", "GB", "PP: bytes per GPU per step at its boundaries")
    ch.step("k_PP", "2*m*Min(1, p - 1)", "", "PP: sends per GPU per step")
    # --- data parallel ---
    ch.given("P_l", q(as_float((pc["attention"] + pc["mlp"] + pc["norms"]) / n_layers, "parameter"), "parameter"),
             "parameters per layer", kind="derived", source=f"{m.name} config (utils.models.param_count)")
    ch.step("P_g", "P_l*L_s/t", "parameter", "parameters per GPU (busiest stage)")
    ch.given("w_g", q(2, "byte/parameter"), "bytes per gradient element (bf16)", kind="assumption",
             source="bf16 gradient all-reduce")
    ch.step("r_d", "2*(d - 1)/d", "", "ring factor over the DP group")
    ch.step("V_DP", "r_d*w_g*P_g", "GB", "DP: bytes per GPU per step")
    ch.given("k_DP", 1, "DP: all-reduces per step (bucketed, overlapping the backward pass)", kind="derived",
             source="the ring-allreduce chapter")
    if bucket_params is None:
        ch.given("b_g", q(collectives.megatron_bucket_params(dp), "parameter"), "gradient bucket (Megatron-LM's rule)",
                 kind="assumption", source=MEGATRON_BUCKET_SRC)
    else:
        ch.given("b_g", q(bucket_params, "parameter"), "gradient bucket", kind="assumption", source=src("bucket"))
    ch.step("n_b", "ceiling(P_g/b_g)", "", "DP: all-reduce calls per step, one per bucket")
    ch.given("g", GPUS_PER_NODE, "GPUs per node, one fabric port each", kind="assumption", source=PORT_SRC)
    ch.step("M_d", "ceiling(d*Min(1, t*p/g))", "", "nodes a DP ring spans (groups ordered TP, PP, DP from the innermost)")
    if as_float(ch["M_d"]) == 1:
        ch.given("n_x", 0, "DP ring steps at network latency", kind="derived", source="the ring stays in one node")
    else:
        ch.step("n_x", "Min(2*M_d, 2*(d - 1))", "", "DP ring steps at network latency (NCCL: two per node, at most every step)")
    ch.given("a_nv", q(LATENCY_US["nvlink"], "us"), "latency per NVLink ring step", kind="assumption", source=NCCL_LAT_SRC)
    ch.given("a_net", q(LATENCY_US["network"], "us"), "latency per network ring step", kind="assumption", source=NCCL_LAT_SRC)
    ch.step("l_d", "(2*(d - 1) - n_x)*a_nv + n_x*a_net", "ms", "DP: latency of one all-reduce call")
    # --- the links and the step's compute ---
    ch.given("B_nv0", acc["scaleup_bandwidth_unidirectional"], "NVLink per GPU, one way (datasheet)")
    ch.given("B_f0", link["bandwidth_unidirectional"], f"fabric per GPU, one way ({link.name}, datasheet)",
             kind=link["bandwidth_unidirectional"].kind, source=f"{link['bandwidth_unidirectional'].cite}; {PORT_SRC}")
    collectives.add_link_fraction_inputs(ch, nvlink_fraction, fabric_fraction, link.key,
                                         source=source if isinstance(source, str) else "parameters cell")
    ch.step("B_nv", "eta_nv*B_nv0", "GB/s", "NVLink per GPU, one way, achieved")
    ch.step("B_f", "eta_x*B_f0", "GB/s", "fabric per GPU, one way, achieved")
    ch.given("N", pc["total"], "parameters, counted from the config", kind="derived",
             source=f"{m.name} config (utils.models.param_count)")
    ch.given("k6", q(flops_per_parameter_token()["train"], "FLOP/parameter/token"),
             "training FLOPs per parameter per token", kind="derived", source="the six-nd chapter")
    ch.given("R", acc["bf16_dense"], "dense bf16 peak per GPU")
    ch.given("u", mfu, "model FLOPs utilisation", kind="assumption",
             source=MFU_SRC if isinstance(source, str) else src("mfu"))
    ch.step("t_c", "k6*N*T_g/(n*R*u)", "s", "compute time per step")
    for ax in ("TP", "PP", "DP"):
        if ax == "DP":   # the gradient all-reduce pays the ring's latency once per bucket call
            ch.step("t_DP_nv", "V_DP/B_nv + n_b*2*(d - 1)*a_nv", "ms",
                    "DP on NVLink (bytes, and latency if the whole ring were NVLink)")
            ch.step("t_DP_bw", "V_DP/B_f", "ms", "DP on the fabric: the bytes")
            ch.step("t_DP_lat", "n_b*l_d", "ms", "DP on the fabric: the calls' latency")
            ch.step("t_DP_f", "t_DP_bw + t_DP_lat", "ms", "DP on the fabric")
        else:
            ch.step(f"t_{ax}_nv", f"V_{ax}/B_nv", "ms", f"{ax} on NVLink")
            ch.step(f"t_{ax}_f", f"V_{ax}/B_f", "ms", f"{ax} on the fabric")
        ch.step(f"f_{ax}_nv", f"t_{ax}_nv/t_c", "", f"{ax} on NVLink, share of the step")
        ch.step(f"f_{ax}_f", f"t_{ax}_f/t_c", "", f"{ax} on the fabric, share of the step")
    ch.step("t_bwd", "2*t_c/(3*m)", "ms", "backward of the last micro-batch (4 of 6 FLOPs): the overlap window")
    ch.step("t_DP_exp", "Max(t_DP_f/n_b, t_DP_f - t_bwd*(n_b - 1)/n_b)", "ms",
            "DP exposed after the backward: the last bucket, or the backlog (the ring-allreduce chapter)")
    ch.step("f_DP_exp", "t_DP_exp/t_c", "", "DP exposed, share of the step")
    ch.given("phi", TP_TARGET, "a tolerable share of the step for TP", kind="assumption", source="this book")
    ch.solve("B_star", "V_TP/B_star = phi*t_c", "GB/s", "link bandwidth per GPU at which TP costs that share")
    return ch


def _args(p) -> dict:
    return {k: p[k] for k in ("model", "gpu", "tp", "pp", "dp", "seq_len", "global_batch_tokens", "micro_batch",
                              "mfu", "fabric", "nvlink_fraction", "fabric_fraction")}


def compute(p) -> Chain:
    return placement(**_args(p), source=lambda name: SPEC.source(p, name))


def validate(p):
    check_layout(p.model, p.tp, p.pp, p.dp, p.seq_len, p.global_batch_tokens, p.micro_batch)


def axis_bytes(ch: Chain) -> dict:
    """The three axes' bytes per GPU per step by utils.training.collectives, a second route to the chain's rows."""
    t, d = int(as_float(ch["t"])), int(as_float(ch["d"]))
    per_step = as_float(ch["L_s"]) * as_float(ch["m"])
    pp = pipeline_bytes(ch["A"] / t) * as_float(ch["m"]) if as_float(ch["p"]) > 1 else q(0, "GB")
    return dict(TP=(tensor_parallel_bytes(ch["A"], t, allreduces=TP_ALLREDUCES) * per_step).to("GB"),
                PP=pp.to("GB"), DP=allreduce_bytes(ch["w_g"] * ch["P_g"], d).to("GB"))


def prose(ch: Chain, p) -> dict:
    if as_float(ch["V_DP"], "B") == 0:
        hide = "though with one replica there is nothing to hide"
    elif as_float(ch["t_DP_f"] - ch["t_bwd"], "s") <= 0:
        hide = f"and all of it hides but the last bucket's {duration(ch['t_DP_exp'])}"
    else:
        hide = f"and it does not all hide: {duration(ch['t_DP_exp'])} is left exposed, {pct(ch['f_DP_exp'])} of the step"
    return {
        "intro-model": p.model.name, "intro-gpus": fmt(q(as_float(ch["n"]), "GPU")),
        "intro-layout": f"TP {p.tp} x PP {p.pp} x DP {p.dp}", "p-m": num(ch["m"]), "p-A": fmt(ch["A"]),
        "p-Ls": num(ch["L_s"]), "p-ktp": fmt(ch["k_TP"]), "p-kpp": fmt(ch["k_PP"]),
        "p-Pg": fmt(ch["P_g"].to("parameter"), digits=3), "p-bnv": fmt(ch["B_nv"]),
        "p-bf": fmt(ch["B_f"].to("GB/s")), "p-tp-nv": duration(ch["t_TP_nv"]), "p-tp-f": duration(ch["t_TP_f"]),
        "p-dp-f": duration(ch["t_DP_f"]), "p-pp-f": duration(ch["t_PP_f"]), "p-bwd": duration(ch["t_bwd"]),
        "p-nb": fmt(ch["n_b"]), "p-dp-lat": duration(ch["t_DP_lat"]), "p-dp-hide": hide, "p-phi": pct(TP_TARGET),
        "p-tp-over-dp": num(as_float(ch["V_TP"] / ch["V_DP"], "")) if as_float(ch["V_DP"], "B") > 0 else "infinitely many",
        "p-dp-over-pp": num(as_float(ch["V_DP"] / ch["V_PP"], "")) if as_float(ch["V_PP"], "B") > 0 else "infinitely many",
    }


def table_rows(ch: Chain) -> list[tuple]:
    """The one table: (axis, what, key, how often, critical path, placed on)."""
    return [("tensor (TP)", "activations: all-reduce of every block's output, and of its input gradient", "TP",
             f"{fmt(ch['k_TP'])} all-reduces ({num(ch['c'])} per layer per micro-batch)",
             "yes: each blocks the next layer", "NVLink"),
            ("pipeline (PP)", "activations forward and their gradients back at a stage boundary", "PP",
             f"{fmt(ch['k_PP'])} sends (2 per micro-batch)", "partly: the fill and the drain", "fabric, nearer (fewer hops)"),
            ("data (DP)", "gradients of the GPU's weight shard: ring all-reduce", "DP",
             f"1 all-reduce, in {fmt(ch['n_b'])} bucket calls", "mostly not: overlaps the last backward pass",
             "fabric, farthest out")]


# --- the closed form ------------------------------------------------------------------------------
def closed_form() -> dict:
    """TP's time over compute with N = 12h^2 L: sympy cancels all but 2(t-1)Ru/(9hB)."""
    import sympy as sp
    t, p, d, s, b, m, h, L, R, u, B, c, w = sp.symbols("t p d s b m h L R u B c w", positive=True)
    V = c * 2 * (t - 1) / t * w * s * b * h * (L / p) * m
    tc = 6 * (12 * h ** 2 * L) * (d * s * b * m) / (t * p * d * R * u)
    share = sp.simplify((V / B) / tc)
    llama = sp.simplify(share.subs({c: TP_ALLREDUCES, w: 2}))
    assert sp.simplify(llama - 2 * (t - 1) * R * u / (9 * h * B)) == 0
    phi = sp.Symbol("phi")
    return dict(share=share, llama=llama, h_star=sp.solve(sp.Eq(llama, phi), h)[0], symbols=(t, h, R, u, B), phi=phi,
                fn=sp.lambdify((t, h, R, u, B), llama, "numpy"))


@memoised
def closed() -> dict:
    """closed_form(), derived once and only when asked for (sympy is not needed to compute the chain)."""
    return closed_form()


def __getattr__(name):          # `pl.CLOSED`, as the page reads it, derived on first use
    if name == "CLOSED":
        return closed()
    raise AttributeError(name)


def tp_share_closed(t, h, R, u, B) -> float:
    return float(closed()["fn"](t, h, R, u, B))


def _closed_for(ch: Chain, link: str) -> float:
    return tp_share_closed(as_float(ch["t"]), as_float(ch["h"]), as_float(ch["R"], "FLOP/s"), as_float(ch["u"]),
                           as_float(ch[link], "B/s"))


def closed_glue(ch: Chain) -> dict:
    nv, f = _closed_for(ch, "B_nv"), _closed_for(ch, "B_f")
    return {"cf-nv": pct(nv), "cf-f": pct(f), "cf-ratio": num(as_float(ch["f_TP_nv"]) / nv, 3) if nv > 0 else "not"}


def figure_data(ch: Chain) -> dict:
    import numpy as np
    widths = np.geomspace(2048, 131072, 100)
    t, R, u = as_float(ch["t"]), as_float(ch["R"], "FLOP/s"), as_float(ch["u"])
    nv, f = as_float(ch["B_nv"], "B/s"), as_float(ch["B_f"], "B/s")
    models = []
    for key in [k for k in catalog.keys("model") if not is_moe(catalog.model(k))]:
        mk = catalog.model(key)
        hk = as_float(mk.q("d_model"))
        models.append((mk.name, hk, tp_share_closed(t, hk, R, u, nv), tp_share_closed(t, hk, R, u, f)))
    return dict(widths=widths, nvlink=closed()["fn"](t, widths, R, u, nv), fabric=closed()["fn"](t, widths, R, u, f),
                models=models, times_nv=[as_float(ch[f"t_{a}_nv"], "s") or np.nan for a in ("TP", "PP", "DP")],
                times_f=[as_float(ch[f"t_{a}_f"], "s") or np.nan for a in ("TP", "PP", "DP")],
                compute=as_float(ch["t_c"], "s"))


# --- the claim ------------------------------------------------------------------------------------
def _with(**over) -> Chain:
    return placement(**{**claim_inputs(), **over}, source="variant of the claim's inputs")


@memoised
def checks() -> dict:
    ci = claim_inputs()
    cl = placement(**ci, source="the claim (Llama 3 405B, Table 4 row 2)")
    f = {k: as_float(cl[k]) for k in ("f_TP_nv", "f_TP_f", "f_DP_f", "f_PP_f")}
    V = {ax: as_float(cl[f"V_{ax}"], "GB") for ax in ("TP", "PP", "DP")}
    K = {ax: as_float(cl[f"k_{ax}"]) for ax in ("TP", "PP", "DP")}
    dp_window = as_float(cl["t_DP_f"] / cl["t_bwd"], "")
    f_exp = as_float(cl["f_DP_exp"])
    n_b = math.ceil(as_float(cl["P_g"], "parameter") / collectives.megatron_bucket_params(ci["dp"]))       # by hand
    lat = 2 * (ci["dp"] - 1) * LATENCY_US["network"] * 1e-6   # one GPU a node: every ring step crosses the fabric
    cl_ddp = placement(**ci, bucket_params=DDP_BUCKET_MIB * 2 ** 20 / 2,
                       source=f"the claim with PyTorch DDP's default buckets; {DDP_SRC}")
    roce = placement(**{**ci, "fabric": "eth-400g"}, source="the claim on RoCE")
    cf = _closed_for(cl, "B_f")
    paper_rate = catalog.run(LLAMA_RUN).q("table4_row2_tflops_per_gpu")
    paper_step = (cl["k6"] * cl["N"] * cl["T_g"] / (cl["n"] * paper_rate)).to("s")
    bytes_order = sorted(V, key=V.get, reverse=True)
    T = THRESHOLDS
    tests = dict(
        tp=f["f_TP_f"] > T["tp_fabric_above"] and V["TP"] > max(V["DP"], V["PP"]),
        dp=f["f_DP_f"] < T["dp_fabric_below"] and f_exp < T["dp_exposed_below"],
        pp=f["f_PP_f"] < T["pp_fabric_below"], sync_order=K["TP"] > K["PP"] > K["DP"],
        bytes_order=bytes_order == ["TP", "DP", "PP"], pp_between_by_bytes=V["TP"] > V["PP"] > V["DP"],
        latency_by_hand=n_b == as_float(cl["n_b"]) and math.isclose(as_float(cl["t_DP_lat"], "s"), n_b * lat, rel_tol=1e-9),
        roce_same=math.isclose(as_float(roce["f_TP_f"]), f["f_TP_f"], rel_tol=1e-12), closed=abs(f["f_TP_f"] / cf - 1) < 0.05,
        ddp_exposed=as_float(cl_ddp["f_DP_exp"]) > T["dp_fabric_below"],
        window=dp_window > 1)
    f_exp_ddp = as_float(cl_ddp["f_DP_exp"])
    table = [("TP on the fabric, share of the step", pct(f["f_TP_f"]), f"> {pct(T['tp_fabric_above'])}"),
             ("TP on NVLink, share of the step", pct(f["f_TP_nv"]),
              f"shown: the fabric's share over {num(as_float(cl['B_nv'] / cl['B_f'], ''))}"),
             ("DP on the fabric, share of the step", pct(f["f_DP_f"]), f"< {pct(T['dp_fabric_below'])}"),
             ("DP on the fabric / last micro-batch's backward", num(dp_window), "shown: above 1, it does not all hide"),
             ("DP exposed after the overlap, share of the step (Megatron-LM buckets)", pct(f_exp),
              f"< {pct(T['dp_exposed_below'])}"),
             (f"the same with PyTorch's {fmt(q(DDP_BUCKET_MIB, 'MiB'))} buckets", pct(f_exp_ddp), "shown: the other reading"),
             ("PP on the fabric, share of the step", pct(f["f_PP_f"], 2), f"< {pct(T['pp_fabric_below'])}"),
             ("order by bytes per GPU per step", " > ".join(bytes_order), "PP in between: TP > PP > DP"),
             ("order by synchronisations per step", "TP > PP > DP", "shown: not a byte count"),
             ("TP on the fabric, closed form", pct(cf), "within 5% of the count")]
    glue = {
        "claim-gpus": fmt(catalog.run(LLAMA_RUN).q("table4_row2_gpus")), "claim-tp": str(ci["tp"]),
        "claim-pp": str(ci["pp"]), "claim-dp": str(ci["dp"]),
        "c-tp": str(ci["tp"]), "c-pp": str(ci["pp"]), "c-dp": str(ci["dp"]), "c-seq": fmt(q(ci["seq_len"], "token")),
        "c-batch": f"{short(ci['global_batch_tokens'])} tokens", "c-mfu": pct(ci["mfu"]),
        "c-x": pct(T["tp_fabric_above"]), "c-dpx": pct(T["dp_fabric_below"]),
        "c-eta-nv": pct(as_float(cl["eta_nv"])), "c-eta-x": pct(as_float(cl["eta_x"])),
        "c-nv-over-f": num(as_float(cl["B_nv"] / cl["B_f"], "")),
        "c-ppx": pct(T["pp_fabric_below"]), "c-vtp": fmt(cl["V_TP"]), "c-vdp": fmt(cl["V_DP"]), "c-vpp": fmt(cl["V_PP"]),
        "c-ftpnv": pct(f["f_TP_nv"]), "c-ftpf": pct(f["f_TP_f"]), "c-fdpf": pct(f["f_DP_f"]), "c-fppf": pct(f["f_PP_f"], 2),
        "c-ktp": fmt(cl["k_TP"]), "c-kpp": fmt(cl["k_PP"]), "c-tc": fmt(cl["t_c"]), "c-cf": pct(cf),
        "c-window": num(dp_window), "c-dpe": pct(T["dp_exposed_below"]), "c-dpbw": duration(cl["t_DP_bw"]),
        "c-dplat": duration(cl["t_DP_lat"]), "c-dpt": duration(cl["t_DP_f"]), "c-nb": fmt(cl["n_b"]),
        "c-bucket": f"{short(as_float(cl['b_g'], 'parameter'))} parameters, {fmt((cl['b_g'] * cl['w_g']).to('MB'))}",
        "c-lat": duration(cl["l_d"]), "c-nx": fmt(cl["n_x"]), "c-bwd": duration(cl["t_bwd"]),
        "c-exp": duration(cl["t_DP_exp"]), "c-fexp": pct(f_exp), "c-ddp-bucket": fmt(q(DDP_BUCKET_MIB, "MiB")),
        "c-ddp-nb": fmt(cl_ddp["n_b"]), "c-ddp-exp": duration(cl_ddp["t_DP_exp"]), "c-ddp-fexp": pct(f_exp_ddp),
        "c-paper-rate": fmt(paper_rate), "c-paper-step": fmt(paper_step)}
    return dict(chain=cl, f=f, V=V, K=K, dp_window=dp_window, f_exp=f_exp, f_exp_ddp=f_exp_ddp, cf=cf,
                tests=tests, table=table, glue=glue)


def claims() -> list[Claim]:
    ck = checks()
    cl, f, t = ck["chain"], ck["f"], ck["tests"]
    ok = t["tp"] and t["dp"] and t["pp"] and t["pp_between_by_bytes"]
    return [Claim(
        "placement", quote=CLAIM_QUOTE,
        source="spec/001, paragraph on parallelism placement; layout from the Llama 3 paper, Table 4 row 2",
        claimed="activations (TP) on NVLink, gradients (DP) on the fabric, stage boundaries (PP) in between, "
                "justified by the byte counts",
        derived=(f"Llama-3-405B, TP {int(as_float(cl['t']))} x PP {int(as_float(cl['p']))} x DP {int(as_float(cl['d']))}, "
                 f"H100 + NDR at their achieved rates: TP {fmt(cl['V_TP'])}, DP {fmt(cl['V_DP'])}, PP {fmt(cl['V_PP'])} "
                 f"per GPU per step; TP {pct(f['f_TP_nv'])} of the step on NVLink, {pct(f['f_TP_f'])} on the fabric; "
                 f"DP {pct(f['f_DP_f'])} and PP {pct(f['f_PP_f'], 2)} on the fabric"),
        verdict=HOLDS if ok else WRONG,
        nearest_true="" if ok else (
            f"The byte counts justify two of the three placements: activations on NVLink (TP moves {fmt(cl['V_TP'])} "
            f"per GPU per step, {pct(f['f_TP_f'])} of the step on the fabric against {pct(f['f_TP_nv'])} on NVLink) and "
            f"gradients on the fabric (DP {fmt(cl['V_DP'])}, {pct(f['f_DP_f'])} of the step). By bytes the stage "
            f"boundaries go farthest out ({fmt(cl['V_PP'])}, {pct(f['f_PP_f'], 2)} of the step); what puts them in "
            f"between is how often they block: {fmt(cl['k_PP'])} sends a step on the critical path against one "
            f"all-reduce that overlaps the backward pass."),
        reason=(f"The source says the byte counts justify the placement, and they justify two thirds of it: TP's "
                f"{fmt(cl['V_TP'])} per GPU per step would take {pct(f['f_TP_f'])} of the step on the fabric, and DP's "
                f"{fmt(cl['V_DP'])}, priced with NCCL's ring latency at Megatron-LM's buckets, takes {pct(f['f_DP_f'])} "
                f"and leaves {pct(ck['f_exp'])} exposed. But the stage boundaries move the fewest bytes of the "
                f"three ({fmt(cl['V_PP'])}), so by bytes they belong farthest out, not in between: that place rests "
                f"on how often they block ({fmt(cl['k_PP'])} sends a step), which is not a byte count."))]


# --- what changes the answer, and the exercises ---------------------------------------------------
def what_changes(p, ch: Chain) -> dict:
    """On the claim's inputs (the prose compares variants of Llama 3's layout), not the reader's."""
    ci = claim_inputs()
    cl = _with()
    v_tp2 = _with(tp=2, dp=512)
    v_b200 = _with(gpu="b200", fabric="ib-xdr")
    v_70 = _with(model="llama-3-70b", pp=4, dp=512)
    v_big = _with(global_batch_tokens=ci["global_batch_tokens"] * 4)
    fwd = TP_ALLREDUCES // 2    # the forward's all-reduces, repeated by full recomputation
    return {"w-tp2": str(2), "w-tp2-nv": pct(v_tp2["f_TP_nv"]), "w-tp2-f": pct(v_tp2["f_TP_f"]),
            "w-recompute": pct(as_float(cl["f_TP_nv"]) * (TP_ALLREDUCES + fwd) / TP_ALLREDUCES),
            "w-b200-nv": pct(v_b200["f_TP_nv"]), "w-b200-f": pct(v_b200["f_TP_f"]),
            "w-b200-ratio": num(as_float(v_b200["R"] / v_b200["B_nv"], "FLOP/B")),
            "w-h100-ratio": num(as_float(cl["R"] / cl["B_nv"], "FLOP/B")), "w-70-nv": pct(v_70["f_TP_nv"]),
            "w-70-f": pct(v_70["f_TP_f"]), "w-big-dp": pct(v_big["f_DP_f"]), "w-big-tp": pct(v_big["f_TP_nv"]),
            "w-v": num(as_float(cl["L_s"])), "w-int-pp": fmt(cl["V_PP"] * as_float(cl["L_s"]))}


def exercises(p, ch: Chain) -> dict:
    """Worked answers on the claim's inputs."""
    ci = claim_inputs()
    cl = _with()
    r1 = _run_row(1)
    e1 = _with(tp=r1["tp"], pp=r1["pp"], dp=r1["dp"], global_batch_tokens=float(r1["dp"] * r1["batch_per_dp"] * ci["seq_len"]))
    e2 = _with(tp=16, pp=8, dp=128)
    e2_bw = min(as_float(e2["B_nv"], "GB/s"), GPUS_PER_NODE * as_float(e2["B_f"], "GB/s"))
    e2_f2 = as_float(e2["V_TP"] / q(e2_bw, "GB/s") / e2["t_c"], "")
    t, h, R, u, B = closed()["symbols"]
    h_e3 = float(closed()["h_star"].subs({t: ci["tp"], R: as_float(cl["R"], "FLOP/s"), u: ci["mfu"],
                                        B: as_float(cl["B_f"], "B/s"), closed()["phi"]: TP_TARGET}))
    return {"e1-gpus": fmt(q(r1["gpus"], "GPU")), "e1-tp": str(r1["tp"]), "e1-pp": str(r1["pp"]), "e1-dp": str(r1["dp"]),
            "e1-seqs": str(r1["batch_per_dp"]), "e1-m": num(e1["m"]), "e1-vtp": fmt(e1["V_TP"]),
            "e1-vpp": fmt(e1["V_PP"]), "e1-vdp": fmt(e1["V_DP"]), "e1-tc": fmt(e1["t_c"]),
            "e1-ftpnv": pct(e1["f_TP_nv"]), "e1-fdpf": pct(e1["f_DP_f"]), "e2-t": str(16), "e2-v": fmt(e2["V_TP"]),
            "e2-r0": num(cl["r_t"], 4), "e2-r": num(e2["r_t"], 4), "e2-ls0": num(cl["L_s"]), "e2-ls": num(e2["L_s"]),
            "e2-x": num(as_float(e2["V_TP"] / cl["V_TP"], "")), "e2-bw": fmt(q(e2_bw, "GB/s")), "e2-f2": pct(e2_f2),
            "e2-f": pct(e2["f_TP_f"]), "e2-nv": pct(e2["f_TP_nv"]), "e2-bstar": fmt(e2["B_star"]),
            "e3-t": str(ci["tp"]), "e3-h": fmt(h_e3, style="plain"), "e3-x": num(h_e3 / as_float(cl["h"]))}


SPEC = Spec("parallelism-placement", PARAMETERS, RESULTS, compute, validate=validate,
            closed_form=True)
