"""training-state-memory: sixteen bytes a parameter, the nodes one replica spans, and FSDP against a
pipeline across those nodes.

The state is S = bN (mixed-precision Adam: bf16 weights and gradients, fp32 master, m and v: 16 bytes,
ZeRO's count). Solving S/(gk) + A = f M_gpu for k gives the nodes one copy of the model needs, rounded to
a power of two, K. Across the K nodes FSDP moves three bf16 copies of the model per pass, (K-1)/K of it
remote, against 6N per token of compute; a 1F1B pipeline moves only its boundaries and idles its bubble
(K-1)/(m+K-1). The model is one parameter: its parameters, layers and width follow from it.
"""
from __future__ import annotations

import math

from utils import catalog
from utils.chain import Chain, as_float, memoised
from utils.models import n_layers, param_count
from utils.params import Param, ParameterError, Result, Spec
from utils.training import ZERO_STAGE_NAMES, ZERO_STAGES, flops_per_parameter_token, zero_bytes_per_param, zero_comm_volume
from utils.training.collectives import (
    LINK_FRACTIONS,
    add_link_fraction_inputs,
    data_parallel_bytes,
    link_fraction_params,
    tensor_parallel_bytes,
)
from utils.units import fmt, num, pct, q, short
from utils.verdicts import HOLDS, WRONG, Claim, rounds_to

PARAMETERS = (
    Param("model", "llama-3-70b", "the model: a catalog key or the path of a Hugging Face config.json",
          check="model", source="catalog: Llama-3-70B, the dense model nearest the claim's 100B"),
    Param("bytes_per_param", 16.0, "bytes of training state per parameter (mixed-precision Adam: 16)",
          unit="byte/parameter", source="ZeRO (arXiv:1910.02054) sec. 3.1: 2Ψ + 2Ψ + 12Ψ"),
    Param("gpu", "h100-sxm", "accelerator catalog key", check="accelerator", source="the claim's H100 node"),
    Param("gpus_per_node", 8, "GPUs per node (an HGX/DGX board), also the tensor-parallel degree",
          check="whole", source="HGX/DGX H100 board: eight GPUs per node"),
    Param("hbm_usable", 0.90, "share of each GPU's HBM a training job can fill", check="fraction",
          source="this book's assumption (vLLM's default --gpu-memory-utilization 0.9)"),
    Param("micro_batch_tokens", 8192, "tokens per node per forward-backward pass (one micro-batch)",
          unit="token", check="whole", source="this book's assumption: one Llama 3 sequence"),
    Param("tokens_per_step", 4194304, "global batch per optimizer step, tokens (2**22)", unit="token",
          check="whole", source="this book's assumption: the usual four million tokens"),
    Param("fleet_nodes", 128, "nodes the job runs on", unit="node", check="whole",
          source="this book's assumption"),
    Param("fabric", "ib-ndr", "interconnect catalog key: the scale-out fabric, one port per GPU",
          check="interconnect", source="catalog: InfiniBand NDR"),
    *link_fraction_params(),
    Param("mfu", 0.40, "model FLOPs utilisation on the 6N basis: the share of the dense bf16 peak spent on 6ND "
          "(attention and recomputed FLOPs not counted; see fleet-size, Which MFU)",
          check="fraction", source="assumption: Llama 3 405B reported 38-43% MFU on H100 (arXiv:2407.21783, Table 4)"),
    Param("zero_stage", 3, "ZeRO stage of the data-parallel group: 0 replicates everything, 1 partitions the "
          "optimizer states, 2 also the gradients, 3 also the weights (FSDP's full sharding)", check="choice",
          choices=ZERO_STAGES, source="ZeRO (arXiv:1910.02054) sec. 5; stage 3 is the FSDP layout this page sizes"),
    Param("dp_degree", 64, "data-parallel degree N_d: GPUs the ZeRO partitions are spread over", check="whole",
          source="ZeRO (arXiv:1910.02054) Figure 1's example, N_d = 64"),
)

RESULTS = (
    Result("state_bytes", "TB", "Training state (weights, gradients, optimizer)", of="S"),
    Result("node_memory", "GB", "HBM per node, nominal", of="M_node"),
    Result("state_nodes", "node", "Nodes the state alone fills", of="K_0n"),
    Result("min_nodes", "node", "Minimum nodes per model replica (usable HBM, activations)", of="K_minn"),
    Result("replica_nodes", "node", "Nodes per replica in the layout (the minimum, next power of two)", of="Kn"),
    Result("fsdp_bytes_per_step_per_gpu", "GB", "FSDP fabric bytes per GPU per step", of="V_Fs"),
    Result("fsdp_fabric_to_compute", "", "FSDP fabric time / compute time, per pass", of="rho"),
    Result("fabric_ridge_tokens", "token", "Tokens per node-pass at which FSDP's traffic hides", of="T_star"),
    Result("pipeline_bubble", "", "Pipeline bubble, share of the step (1F1B)", of="beta", percent=True),
    Result("pipeline_overhead", "", "Pipeline bubble over compute time", of="o_P", percent=True),
    Result("zero_state_per_gpu", "GB", "Model state per GPU at the ZeRO stage and data-parallel degree", of="s_z"),
    Result("zero_traffic_per_gpu", "GB", "ZeRO data-parallel traffic per GPU per step (bf16)", of="V_z"),
)

ZERO_SRC = ("Rajbhandari et al., ZeRO: Memory Optimizations Toward Training Trillion Parameter Models, "
            "arXiv:1910.02054, sec. 3.1 (2Ψ + 2Ψ + KΨ = 16Ψ, K = 12) and sec. 7 (ZeRO-3 moves 3Ψ against "
            "data parallelism's 2Ψ)")
MEGATRON_SRC = ("Megatron Core user guide, Distributed Optimizer (bytes per parameter: 20 for 16-bit params and "
                "grads, 18 for 16-bit params with fp32 grads, 16 for fp32 params and grads), "
                "https://docs.nvidia.com/megatron-core/developer-guide/latest/distrib_optimizer.html, read 2026-11-29")
AMP_SRC = "PyTorch automatic mixed precision: parameters stay fp32, autocast makes 16-bit copies per op"
ADAM8_SRC = "Dettmers et al., 8-bit Optimizers via Block-wise Quantization, arXiv:2110.02861"
BF16_SRC = "Zamirai et al., Revisiting BFloat16 Training, arXiv:2010.06192 (16-bit weights and state)"
KORTHIKANTI = ("Korthikanti et al., Reducing Activation Recomputation in Large Transformer Models, "
               "arXiv:2205.05198, sec. 4 (sbh(34 + 5as/h) bytes per layer; the 5as/h score term is "
               "dropped: fused attention does not store the scores)")
USABLE_SRC = ("this book's assumption: the CUDA context, NCCL buffers and allocator fragmentation take about "
              "a tenth (vLLM leaves the same tenth free by default, --gpu-memory-utilization 0.9)")
NODE_SRC = "HGX/DGX H100 board: eight GPUs per node, the tensor-parallel group"
PORT_SRC = ("assumption: one fabric port per GPU (rail-optimised HGX node; MLPerf H200 system: "
            "'10x 400Gbe Infiniband' for 8 GPUs, 8 compute rails plus storage)")

# (reading, 16-bit weights, gradients, fp32 weights, Adam m, Adam v, source)
READINGS = (
    ("mixed-precision Adam, ZeRO's count (the claim)", 2, 2, 4, 4, 4, ZERO_SRC),
    ("fp32 weights and gradients, autocast (PyTorch AMP)", 0, 4, 4, 4, 4, AMP_SRC),
    ("16-bit weights, fp32 gradients (Megatron)", 2, 4, 4, 4, 4, MEGATRON_SRC),
    ("16-bit weights and gradients plus an fp32 gradient copy (Megatron)", 2, 2 + 4, 4, 4, 4, MEGATRON_SRC),
    ("optimizer state only: fp32 master, m, v (16-bit copies transient)", 0, 0, 4, 4, 4, ZERO_SRC),
    ("8-bit Adam moments", 2, 2, 4, 1, 1, ADAM8_SRC),
    ("all 16-bit, no fp32 master", 2, 2, 0, 2, 2, BF16_SRC),
)
READING_BYTES = {r[0]: sum(r[1:6]) for r in READINGS}
CLAIM_READING = READINGS[0][0]

WIRE_BYTES = 2            # bytes per weight or gradient on the wire: bf16
CKPT_BYTES = 2            # bytes per token per unit of width kept per layer: the layer input in bf16
LAYER_WORKING = 34        # bytes per token per unit of width while one layer is recomputed (Korthikanti)
PARAMS_PER_LAYER_D2 = 12  # parameters per layer per d_model^2: 4 attention + 8 MLP (GPT-style estimate)
TP_ALLREDUCES = 6         # tensor-parallel all-reduces per layer: 2 forward, 2 recompute, 2 backward
H100_DRIVER_MIB = 81559   # nvidia-smi on H100 80GB HBM3 (Modal, "Why does an NVIDIA H100 80GB card offer
                          # 85.52 GB?", https://thundergolfer.com/blog/nvidia-gpu-memory-capacity, read 2026-11-29)

# The claim: 100B parameters x 16 bytes = 1.6 TB of state, against a 640 GB node of eight H100s.
CLAIM = dict(n_params=100e9, d_model=12288, bytes_per_param=16, gpu="h100-sxm", gpus_per_node=8,
             state_bytes=1.6e12, node_memory=640e9)
CLAIM_QUOTE = ("Sixteen bytes per parameter says 1.6 TB of state against a 640 GB node, so the model spans "
               "nodes before the first token. The arithmetic that sizes the fleet, the layout that puts each "
               "axis on the right link, and the two numbers that decide FSDP against pipeline across nodes.")
CLAIM_LAYOUT = dict(hbm_usable=0.90, micro_batch_tokens=8192, tokens_per_step=4194304, fleet_nodes=128,
                    fabric="ib-ndr", mfu=0.40, nvlink_fraction=LINK_FRACTIONS[0], fabric_fraction=LINK_FRACTIONS[1])


def gpt_layers(n_params, d_model) -> int:
    """The GPT-style layer estimate N / 12 d^2 (four d^2 of attention, eight of MLP per layer)."""
    return max(1, round(n_params / (PARAMS_PER_LAYER_D2 * d_model ** 2)))


def architecture(m) -> dict:
    """What the chain needs of a model: parameters held (total), multiplied per token (active), layers, width."""
    counts = param_count(m)
    return dict(n_params=counts["total"].m, n_active=counts["active"].m, n_layers=n_layers(m),
                d_model=int(m.q("d_model").m), name=m.name)


def plan(arch, bytes_per_param, gpu, gpus_per_node, hbm_usable, micro_batch_tokens, tokens_per_step,
         fleet_nodes, fabric, mfu, nvlink_fraction=LINK_FRACTIONS[0], fabric_fraction=LINK_FRACTIONS[1], *,
         source="parameters cell", sources=None) -> Chain:
    """Training state against node memory, then FSDP against pipeline across the nodes, as a Chain. The links
    run at the achieved shares of their rates NCCL was measured to reach. sources: the inputs' own sources
    by symbol (T_mb, T_s, n, u, eta), where they are not "parameters cell"."""
    src = {"T_mb": "parameters cell", "T_s": "parameters cell", "n": "parameters cell", "eta": "parameters cell",
           "u": "parameters cell", **(sources or {})}
    acc, link = catalog.accelerator(gpu), catalog.interconnect(fabric)
    for entry, field in ((acc, "hbm_capacity"), (acc, "bf16_dense"), (link, "bandwidth_unidirectional")):
        if field not in entry:
            raise ParameterError(f"{entry.key!r} has no {field} in the catalog")
    ch = Chain(f"Training state of {arch['name']} on {acc.name} nodes")
    # --- memory ---
    ch.given("N", q(arch["n_params"], "parameter"), "parameters held", kind="derived", source=source)
    ch.given("b", q(bytes_per_param, "byte/parameter"), "bytes of state per parameter", kind="assumption",
             source="16 = mixed-precision Adam, ZeRO's count (table above)")
    ch.step("S", "b*N", "TB", "training state")
    ch.given("M_gpu", acc["hbm_capacity"], "HBM per GPU, nominal")
    ch.given("g", gpus_per_node, "GPUs per node (and tensor-parallel degree)", kind="assumption", source=NODE_SRC)
    ch.step("M_node", "g*M_gpu", "GB", "HBM per node, nominal")
    ch.step("x_0", "S/M_node", "", "nodes' worth of state")
    ch.step("K_0", "ceiling(x_0)", "", "whole nodes for the state alone")
    ch.given("d", arch["d_model"], "model width", kind="derived", source=source)
    ch.given("L", arch["n_layers"], "layers", kind="derived", source=source)
    ch.given("T_mb", q(micro_batch_tokens, "token"), "tokens per node per pass (micro-batch)",
             kind="assumption", source=src["T_mb"])
    ch.given("a_c", q(CKPT_BYTES, "byte/token"), "kept per layer per unit width: the layer input, bf16",
             kind="derived", source="full activation recomputation")
    ch.given("a_w", q(LAYER_WORKING, "byte/token"), "working set of the layer being recomputed, per unit width",
             kind="spec", source=KORTHIKANTI)
    ch.step("A", "(a_c*L + a_w)*T_mb*d/g", "GB", "activations per GPU (sequence-parallel over the node)")
    ch.given("f", hbm_usable, "usable share of HBM", kind="assumption", source=USABLE_SRC)
    if as_float(ch["f"] * ch["M_gpu"] - ch["A"], "GB") <= 0:   # does not fit: the shortfall and what fits
        raise ParameterError(
            f"micro_batch_tokens={micro_batch_tokens} does not fit: it needs {fmt(ch['A'])} of activations per "
            f"GPU, {fmt((ch['A'] - ch['f'] * ch['M_gpu']).to('GB'))} more than the usable "
            f"{fmt((ch['f'] * ch['M_gpu']).to('GB'))} of a {acc.name} before any state; the largest micro-batch "
            f"that fits, with the state spread over enough nodes, is {largest_micro_batch(ch):,} tokens per node")
    ch.solve("k", "S/(g*k) + A = f*M_gpu", "", "nodes that hold state and activations")
    ch.step("K_min", "ceiling(k)", "", "nodes that hold one replica, minimum")
    ch.step("K", "2**ceiling(log(K_min)/log(2))", "", "nodes per replica: the next power of two")
    ch.step("s_gpu", "S/(g*K)", "GB", "state per GPU at that size")
    ch.step("h", "(s_gpu + A)/M_gpu", "", "share of HBM in use")
    K = int(as_float(ch["K"], ""))
    if fleet_nodes < K:   # does not fit: no fabric time for this plan, the shortfall and the largest model
        k_fit = 2 ** int(math.log2(fleet_nodes))
        raise ParameterError(f"fleet_nodes={fleet_nodes} does not fit: one replica spans {K} nodes (at least "
                             f"{int(as_float(ch['K_min'], ''))} to hold the model, rounded up to a power of two), "
                             f"{K - fleet_nodes} more than the fleet; the largest model a {k_fit}-node replica "
                             f"holds at this micro-batch is {fmt(q(largest_model(ch, k_fit), 'parameter'))} "
                             f"at {fmt(ch['b'])}")
    # --- the fabric: FSDP against pipeline across the K nodes of a replica ---
    ch.given("N_a", q(arch["n_active"], "parameter"), "parameters multiplied per token", kind="derived",
             source=source)
    ch.given("R", acc["bf16_dense"], "dense bf16 peak per GPU")
    ch.given("u", mfu, "model FLOPs utilisation", kind="assumption", source=src["u"])
    ch.given("B", link["bandwidth_unidirectional"], f"fabric bandwidth per GPU, one way ({link.name})",
             kind=link["bandwidth_unidirectional"].kind,
             source=f"{link['bandwidth_unidirectional'].cite}; {PORT_SRC}")
    add_link_fraction_inputs(ch, nvlink_fraction, fabric_fraction, link.key, source=src["eta"])
    ch.given("c", q(flops_per_parameter_token()["train"], "FLOP/parameter/token"),
             "training FLOPs per parameter per token", kind="derived", source="the 6ND rule (six-nd chapter)")
    ch.given("w", q(WIRE_BYTES, "byte/parameter"), "bytes per weight or gradient on the wire (bf16)",
             kind="assumption", source="bf16 all-gather and reduce-scatter (FSDP MixedPrecision)")
    ch.given("T_s", q(tokens_per_step, "token"), "tokens per optimizer step (global batch)",
             kind="assumption", source=src["T_s"])
    ch.given("n", fleet_nodes, "nodes in the fleet", kind="assumption", source=src["n"])
    ch.step("r", "floor(n/K)", "", "model replicas, data-parallel")
    ch.step("T_n", "T_s/(r*K)", "token", "tokens per node per step")
    ch.step("T_p", "Min(T_mb, T_n)", "token", "FSDP: tokens per node per pass")
    ch.step("V_F", "3*w*N*(K - 1)/(K*g)", "GB", "FSDP: bytes per GPU per pass across nodes")
    ch.step("n_p", "T_n/T_p", "", "FSDP: passes per node per step")
    ch.step("V_Fs", "V_F*n_p", "GB", "FSDP: bytes per GPU per step")
    ch.step("t_F", "V_F/(eta_x*B)", "s", "FSDP: fabric time per pass, at the achieved share")
    ch.step("t_c", "c*N_a*T_p/(g*R*u)", "s", "compute time per pass")
    ch.step("rho", "t_F/t_c", "", "FSDP: fabric time / compute time")
    ch.solve("T_star", "3*w*N*(K - 1)/(K*g*eta_x*B) = c*N_a*T_star/(g*R*u)", "token",
             "fabric ridge: tokens per pass at which FSDP's traffic just hides")
    ch.step("o_F", "Max(0, rho - 1)", "", "FSDP: exposed share, traffic overlapped with compute")
    ch.step("m", "Max(1, K*T_n/T_mb)", "", "pipeline: micro-batches per replica per step")
    ch.step("beta", "(K - 1)/(m + K - 1)", "", "pipeline: bubble, share of the step idle (1F1B)")
    ch.step("o_P", "(K - 1)/m", "", "pipeline: bubble over compute time")
    ch.step("V_P", "2*a_c*d*K*T_n/g", "GB", "pipeline: bytes per GPU per step at a boundary")
    ch.step("rho_P", "(V_P/(eta_x*B))/(c*N_a*T_n/(g*R*u))", "", "pipeline: fabric time / compute time")
    return ch


def largest_micro_batch(ch: Chain) -> int:
    """The most tokens per node whose activations fit the usable HBM of a GPU with no state on it (the
    limit as the state spreads over ever more nodes): the largest whole T_mb with A < f M_gpu."""
    per_token = as_float((ch["a_c"] * ch["L"] + ch["a_w"]) * ch["d"] / ch["g"], "byte/token")
    return math.ceil(as_float(ch["f"] * ch["M_gpu"], "byte") / per_token) - 1


def largest_model(ch: Chain, nodes: int) -> float:
    """The most parameters whose state fits `nodes` nodes beside this micro-batch's activations:
    S/(g K) + A = f M_gpu solved for N at K = nodes."""
    return as_float((ch["f"] * ch["M_gpu"] - ch["A"]) * ch["g"] * nodes / ch["b"], "parameter")


def compute(p) -> Chain:
    # Each input shows its parameter's own source while it holds the default (SPEC is defined below); the
    # link shares are sourced by add_link_fraction_inputs at their defaults.
    sources = {"T_mb": SPEC.source(p, "micro_batch_tokens"), "T_s": SPEC.source(p, "tokens_per_step"),
               "n": SPEC.source(p, "fleet_nodes"), "u": SPEC.source(p, "mfu")}
    ch = plan(architecture(p.model), p.bytes_per_param, p.gpu, p.gpus_per_node, p.hbm_usable,
              p.micro_batch_tokens, p.tokens_per_step, p.fleet_nodes, p.fabric, p.mfu, p.nvlink_fraction,
              p.fabric_fraction, source=f"{p.model.name}, counted from its configuration", sources=sources)
    return zero_steps(with_nodes(ch), p.zero_stage, p.dp_degree,
                      sources={"z": SPEC.source(p, "zero_stage"), "N_d": SPEC.source(p, "dp_degree")})


# --- ZeRO stages: the model states per GPU, and what each stage adds to the wire ---------------------
def zero_paper() -> dict:
    """ZeRO's Figure 1 example (Rajbhandari et al., SC20; catalog: software zero): Psi, N_d, K and the GB per
    device it prints at each stage."""
    e = catalog.entry("software", "zero")
    return dict(n_params=as_float(e.q("figure1_params"), "parameter"), dp_degree=int(as_float(e.q("figure1_dp_degree"))),
                k=as_float(e.q("figure1_k"), "byte/parameter"),
                printed={s: as_float(e.q(f"figure1_stage{s}"), "GB") for s in ZERO_STAGES})


ZERO_FORMULAS = {0: "(b_w + b_g + K_o)*N", 1: "(b_w + b_g)*N + K_o*N/N_d", 2: "b_w*N + (b_g + K_o)*N/N_d",
                 3: "(b_w + b_g + K_o)*N/N_d"}
ZERO_16BIT = 2            # bytes per bf16 weight and per bf16 gradient in ZeRO's count (2 Psi + 2 Psi)


def zero_steps(ch: Chain, stage: int, dp_degree: int, sources=None) -> Chain:
    """The model states one GPU holds at ZeRO `stage` over N_d data-parallel GPUs, and its traffic per step.
    K, the optimizer bytes per parameter, is what the state b leaves after the 16-bit weights and gradients."""
    src = {"z": "parameters cell", "N_d": "parameters cell", **(sources or {})}
    ch.given("z", stage, ZERO_STAGE_NAMES[stage], kind="assumption", source=src["z"])
    ch.given("N_d", dp_degree, "data-parallel degree (GPUs the partitions spread over)", kind="assumption",
             source=src["N_d"])
    ch.given("b_w", q(ZERO_16BIT, "byte/parameter"), "bf16 weights per parameter", kind="spec", source=ZERO_SRC)
    ch.given("b_g", q(ZERO_16BIT, "byte/parameter"), "bf16 gradients per parameter", kind="spec", source=ZERO_SRC)
    ch.step("K_o", "b - b_w - b_g", "byte/parameter", "optimizer state per parameter, K (fp32 master, m, v)")
    ch.step("s_z", ZERO_FORMULAS[stage], "GB", f"model state per GPU, {ZERO_STAGE_NAMES[stage]}")
    ch.given("c_z", q(zero_comm_volume(stage), ""), "parameter volumes moved per step (2 all-reduce; 3 at stage 3)",
             kind="spec", source=ZERO_SRC)
    ch.step("V_z", "c_z*b_w*N", "GB", "data-parallel traffic per GPU per step")
    return ch


def zero_table(n_params, dp_degree, bytes_per_param=16.0) -> list[dict]:
    """Each stage's bytes per parameter and per GPU, and its traffic against the baseline's all-reduce."""
    k = bytes_per_param - 2 * ZERO_16BIT
    return [dict(stage=s, name=ZERO_STAGE_NAMES[s], per_param=zero_bytes_per_param(s, dp_degree, k),
                 per_gpu=q(zero_bytes_per_param(s, dp_degree, k) * n_params, "byte").to("GB"),
                 traffic=zero_comm_volume(s) / zero_comm_volume(0)) for s in ZERO_STAGES]


def zero_paper_check() -> list[dict]:
    """ZeRO's Figure 1 re-derived from its own inputs, each stage against the printed GB (the rounding of the
    printed figure: half a unit in its last digit)."""
    z = zero_paper()
    rows = zero_table(z["n_params"], z["dp_degree"], 2 * ZERO_16BIT + z["k"])
    for r in rows:
        printed = z["printed"][r["stage"]]
        r["printed"] = q(printed, "GB")
        r["tolerance"] = q(0.5 if printed >= 100 else 0.05, "GB")
        r["holds"] = abs(r["per_gpu"].m - printed) <= r["tolerance"].m
    return rows


def zero_curves(n_params, bytes_per_param=16.0, degrees=None) -> dict:
    """Model state per GPU (GB) against the data-parallel degree, one curve per stage (the figure)."""
    import numpy as np
    degrees = np.unique(np.round(np.geomspace(1, 1024, 61))).astype(int) if degrees is None else np.asarray(degrees)
    k = bytes_per_param - 2 * ZERO_16BIT
    return dict(degrees=degrees, curves={s: np.array([zero_bytes_per_param(s, int(n), k) * n_params / 1e9
                                                      for n in degrees]) for s in ZERO_STAGES})


def zero_texts(p, ch: Chain) -> dict:
    """The ZeRO section's numbers for the prose."""
    n = architecture(p.model)["n_params"]
    rows, paper, zp = zero_table(n, p.dp_degree, p.bytes_per_param), zero_paper_check(), zero_paper()
    hbm = p.gpu.q("hbm_capacity") * p.hbm_usable
    fits = [r["stage"] for r in rows if r["per_gpu"] <= hbm]
    return {"z-stage": ZERO_STAGE_NAMES[p.zero_stage], "z-nd": f"{p.dp_degree:,}", "z-sz": fmt(ch["s_z"]),
            "z-k": fmt(ch["K_o"]), "z-vz": fmt(ch["V_z"]), "z-hbm": fmt(hbm.to("GB")),
            "z-fits": ("stage " + ", ".join(str(s) for s in fits)) if fits else "no stage",
            "z-s0": fmt(rows[0]["per_gpu"]), "z-s3": fmt(rows[3]["per_gpu"]),
            "zp-n": short(zp["n_params"]), "zp-nd": str(zp["dp_degree"]), "zp-k": f"{zp['k']:g}",
            "zp-0": fmt(paper[0]["per_gpu"]), "zp-1": fmt(paper[1]["per_gpu"]), "zp-2": fmt(paper[2]["per_gpu"]),
            "zp-3": fmt(paper[3]["per_gpu"]), "zp-1-printed": fmt(paper[1]["printed"]),
            "zp-2-printed": fmt(paper[2]["printed"]), "zp-3-printed": fmt(paper[3]["printed"], digits=2),
            "zp-0-printed": fmt(paper[0]["printed"]),
            "z-comm3": f"{zero_comm_volume(3) / zero_comm_volume(0):g}x"}


def with_nodes(ch: Chain) -> Chain:
    """The three node counts also as quantities in nodes (K_0n, K_minn, Kn), the unit the Results
    publish them in; they are read by name and add no rows to the table."""
    for name in ("K_0", "K_min", "K"):
        ch.value(f"{name}n", ch[name].m * q(1, "node"))
    return ch


def validate(p):
    compute(p)   # the plan raises ParameterError for a micro-batch that does not fit or too small a fleet


def state_nodes(n_params, b, gpu, gpus_per_node) -> int:
    """Whole nodes of nominal HBM that the state alone fills."""
    node = catalog.accelerator(gpu).q("hbm_capacity") * gpus_per_node
    return math.ceil(as_float(q(n_params * b, "byte") / node, ""))


def readings_table(p) -> list[tuple]:
    """Each reading of "training state": (reading, its five byte counts, total, state, nodes) for p's model."""
    n = architecture(p.model)["n_params"]
    return [(r[0], *r[1:6], sum(r[1:6]), q(n * sum(r[1:6]), "byte").to("TB"),
             state_nodes(n, sum(r[1:6]), p.gpu.key, p.gpus_per_node)) for r in READINGS]


def layout(ch: Chain, gpu, fabric) -> tuple[list[tuple], object]:
    """Bytes per GPU per step for each axis, and their time on each link over the step's compute time."""
    acc = catalog.accelerator(gpu)
    nvlink = acc.q("scaleup_bandwidth_unidirectional")
    ib = catalog.interconnect(fabric).q("bandwidth_unidirectional")
    g, K, r = as_float(ch["g"]), as_float(ch["K"]), as_float(ch["r"])
    step_compute = (ch["c"] * ch["N_a"] * ch["T_n"] / (g * ch["R"] * ch["u"])).to("s")
    layer_acts = q(WIRE_BYTES, "byte/token") * ch["d"] * ch["T_n"]          # one layer's bf16 activations
    tp = tensor_parallel_bytes(layer_acts, int(g), allreduces=TP_ALLREDUCES) * ch["L"]
    dp = data_parallel_bytes(ch["w"] * ch["N"] / (K * g), int(r)) if r > 1 else q(0, "GB")
    rows = [("tensor parallel, inside the node", "activations, every layer", tp, "NVLink"),
            ("FSDP across the replica's nodes", "bf16 weights twice, gradients once", ch["V_Fs"], "fabric"),
            ("pipeline across the replica's nodes", "activations and their gradients at a boundary", ch["V_P"], "fabric"),
            ("data parallel across replicas (both)", "gradient all-reduce of the node's slice", dp, "fabric")]
    nvlink, ib = ch["eta_nv"] * nvlink, ch["eta_x"] * ib                    # the achieved shares of the rates
    return [(name, what, v.to("GB"), home, as_float((v / nvlink) / step_compute, ""),
             as_float((v / ib) / step_compute, "")) for name, what, v, home in rows], step_compute


def overheads(nodes, tokens_step, ch: Chain):
    """Step-time overhead of each scheme over compute for fleets of `nodes` (multiples of K): FSDP's
    exposed share (overlapped), FSDP's fabric/compute (no overlap), and the pipeline's bubble."""
    import numpy as np
    K = as_float(ch["K"])
    r = np.floor(np.asarray(nodes, dtype=float) / K)
    t_node = tokens_step / (r * K)
    t_mb = as_float(ch["T_mb"], "token")
    rho = as_float(ch["T_star"], "token") / np.minimum(t_mb, t_node)
    m = np.maximum(1.0, K * t_node / t_mb)
    return np.maximum(0.0, rho - 1), rho, (K - 1) / m


def _count(n, noun) -> str:
    n = int(round(float(n)))
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def figure_data(ch: Chain, tokens_per_step, fleet_nodes) -> dict:
    """The figure's two sweeps (fleet size, global batch) and the sentences that read them."""
    import numpy as np
    K = as_float(ch["K"])
    n_max = K * max(1.0, np.floor(tokens_per_step / as_float(ch["T_mb"], "token")))   # one micro-batch per replica
    units = int(n_max / K)
    nodes = K * (np.arange(1, units + 1) if units <= 20000 else np.unique(np.round(np.geomspace(1, units, 2000))))
    oF, rho, oP = overheads(nodes, float(tokens_per_step), ch)
    batches = np.geomspace(2.0 ** 18, 2.0 ** 26, 200)
    bF, brho, bP = overheads(np.full_like(batches, float(fleet_nodes)), batches, ch)
    end = f"the end of the range, {_count(n_max, 'node')}"

    def until(ok, none_text):
        if not ok[0]:
            return none_text
        return end if ok.all() else _count(nodes[np.argmin(ok) - 1], "node")

    return dict(nodes=nodes, fsdp=oF, fsdp_no_overlap=rho, pipeline=oP, batches=batches, b_fsdp=bF,
                b_fsdp_no_overlap=brho, b_pipeline=bP, K=K, texts={
                    "fig-hide-until": until(rho <= 1, "no fleet size (the micro-batch is below the ridge)"),
                    "fig-fsdp-cheaper": until(oF < oP, "no fleet size: the exposed traffic costs more than "
                                                       "the bubble from the start"),
                    "fig-pipe-cheaper": until(oP < rho, "no fleet size: FSDP is cheaper even without overlap"),
                    "fig-nmax": _count(n_max, "node")})


def prose(ch: Chain, p) -> dict:
    """The chain section's numbers for the prose."""
    lay, step = layout(ch, p.gpu, p.fabric)
    return {
        "intro-min-nodes": _count(as_float(ch["K_min"]), "node"), "usable-reserve": pct(1 - p.hbm_usable),
        "p-x0": num(ch["x_0"]), "p-k": num(ch["k"]), "p-act": fmt(ch["A"]), "p-layers": str(int(as_float(ch["L"]))),
        "p-sgpu": fmt(ch["s_gpu"]), "p-hbm-used": pct(ch["h"]), "p-r": _count(as_float(ch["r"]), "replica"),
        "p-tn": fmt(ch["T_n"], style="plain"), "p-np": num(ch["n_p"]),
        "p-rep-used": _count(as_float(ch["r"] * ch["K"]), "node"), "p-vf": fmt(ch["V_F"]), "p-tf": fmt(ch["t_F"]),
        "p-tc": fmt(ch["t_c"]), "p-m": num(ch["m"]), "p-vp": fmt(ch["V_P"]), "p-rhop": pct(ch["rho_P"], 2),
        "p-bytes-ratio": num(as_float(ch["V_Fs"] / ch["V_P"], "")),
        "p-fsdp-verdict": "hides behind compute" if as_float(ch["rho"]) <= 1
        else f"is exposed for {pct(ch['o_F'])} of the compute time",
        "layout-compute": fmt(step), "layout-tp-nv": pct(lay[0][4], 2), "layout-tp-ib": pct(lay[0][5], 2),
        "layout-dp-ib": pct(lay[3][5], 2),
        "layout-bw-ratio": num(as_float(p.gpu.q("scaleup_bandwidth_unidirectional")
                                        / p.fabric.q("bandwidth_unidirectional"), "")),
        "zero-k": str(sum(READINGS[0][3:6])), "readings-min": str(min(READING_BYTES.values())),
        "readings-max": str(max(READING_BYTES.values())), "zero-b": f"{READING_BYTES[CLAIM_READING]} bytes",
        "amp-b": f"{READING_BYTES[READINGS[1][0]]} bytes", "meg-18": f"{READING_BYTES[READINGS[2][0]]} bytes",
        "meg-20": f"{READING_BYTES[READINGS[3][0]]} bytes",
        "claim-n": short(CLAIM["n_params"]), "claim-b": str(CLAIM["bytes_per_param"]),
        "claim-g": str(CLAIM["gpus_per_node"]), "claim-d": f"{CLAIM['d_model']:,}",
    }


# --- the claim ------------------------------------------------------------------------------------
def claim_arch() -> dict:
    """The claim's model: a dense 100B at width 12,288, its layers by the GPT-style estimate."""
    n, d = CLAIM["n_params"], CLAIM["d_model"]
    return dict(n_params=n, n_active=n, n_layers=gpt_layers(n, d), d_model=d, name=f"a dense {short(n)} model")


def claim_plan() -> Chain:
    # The claim names the state and the node; the layout beyond them is this book's defaults.
    layout_src = {k: next(x.source for x in PARAMETERS if x.name == name) for k, name in
                  (("T_mb", "micro_batch_tokens"), ("T_s", "tokens_per_step"), ("n", "fleet_nodes"), ("u", "mfu"))}
    return with_nodes(plan(claim_arch(), CLAIM["bytes_per_param"], CLAIM["gpu"], CLAIM["gpus_per_node"],
                           **CLAIM_LAYOUT, source="the claim", sources=layout_src))


@memoised
def checks() -> dict:
    """The check section's numbers: the claim's two figures, the break-even, the GiB reading, ZeRO's ratio."""
    c = claim_plan()
    b_star = as_float(c["M_node"] / c["N"], "byte/parameter")        # bytes a parameter one node would hold
    n_star = as_float(c["M_node"] / c["b"], "parameter")             # the largest model one node holds
    driver_node = (q(H100_DRIVER_MIB, "MiB") * CLAIM["gpus_per_node"]).to("GB")
    x_driver = as_float(c["S"] / driver_node, "")
    K, g = as_float(c["K"]), CLAIM["gpus_per_node"]
    fsdp_node = c["V_F"] * g / ((K - 1) / K)                          # per node, all of it remote
    dp_allreduce = 2 * q(WIRE_BYTES, "byte/parameter") * c["N"]
    return dict(chain=c, b_star=b_star, n_star=n_star, driver_node=driver_node, x_driver=x_driver,
                zero_ratio=as_float(fsdp_node / dp_allreduce, ""), glue={
                    "check-s": fmt(c["S"]), "check-node": fmt(c["M_node"]), "check-x0": num(c["x_0"]),
                    "check-k0": _count(as_float(c["K_0"]), "node"), "check-k": _count(as_float(c["K_min"]), "node"),
                    "check-bstar": num(b_star), "check-nstar": short(n_star), "check-tib": fmt(c["S"].to("TiB")),
                    "check-driver-mib": fmt(q(H100_DRIVER_MIB, "MiB")), "check-driver-node": fmt(driver_node),
                    "check-xdriver": num(x_driver), "check-kdriver": _count(math.ceil(x_driver), "node"),
                    "check-gib-gap": pct(1 - as_float(q(1, "GB") / q(1, "GiB"), ""), 2),
                    "check-b": f"{CLAIM['bytes_per_param']} bytes",
                    "check-h100-label": fmt(catalog.accelerator("h100-sxm").q("hbm_capacity")),
                    "check-zero-ratio": num(as_float(fsdp_node / dp_allreduce, ""))})


def claims() -> list[Claim]:
    ck = checks()
    c = ck["chain"]
    # "1.6 TB" and "640 GB" to the figures they are written with; the 1.6 TB is 16 bytes times the model the
    # source never names, so only its consistency is checked, and the 640 GB is eight H100s' datasheet 80 GB.
    figures_hold = (rounds_to(c["S"], q(CLAIM["state_bytes"], "B"), 2)
                    and rounds_to(c["M_node"], q(CLAIM["node_memory"], "B"), 2))
    spans = min(READING_BYTES.values()) > ck["b_star"] and ck["x_driver"] > 1
    lo, hi = min(READING_BYTES.values()), max(READING_BYTES.values())
    return [Claim(
        "state-vs-node", quote=CLAIM_QUOTE,
        source="spec/001, paragraph on training state (its 1.6 TB over its sixteen bytes: a 100B model)",
        claimed=f"{fmt(q(CLAIM['state_bytes'], 'B').to('TB'), digits=2)} of state vs a "
                f"{fmt(q(CLAIM['node_memory'], 'B').to('GB'))} node",
        derived=f"{fmt(c['S'])} vs {fmt(c['M_node'])}: {num(c['x_0'])} nodes' worth, at least "
                f"{_count(as_float(c['K_min']), 'node')} per replica",
        verdict=HOLDS if figures_hold and spans else WRONG,
        nearest_true="" if figures_hold and spans else "the state fits one node",
        reason=f"The source names no model: its {fmt(q(CLAIM['state_bytes'], 'B').to('TB'), digits=2)} is "
               f"{CLAIM['bytes_per_param']} bytes times the "
               f"{short(CLAIM['n_params'])} parameters its own two numbers imply, so that figure checks only "
               f"itself. What can be checked holds: {CLAIM['bytes_per_param']} bytes is ZeRO's count for "
               f"mixed-precision Adam (bf16 weights and gradients, fp32 master, m and v); "
               f"{CLAIM['gpus_per_node']} x {fmt(catalog.accelerator('h100-sxm').q('hbm_capacity'))} is "
               f"{fmt(c['M_node'])}; and any model above {short(ck['n_star'])} parameters spans nodes. For the "
               f"{short(CLAIM['n_params'])} model every reading of the state from {lo} to {hi} bytes a parameter "
               f"exceeds the {num(ck['b_star'])} at which one node would hold it, and so does the driver's GiB "
               f"capacity.")]


# --- what changes the answer, and the exercises ---------------------------------------------------
def _replica(p, **changes) -> Chain:
    p = p.replace(**{k: v for k, v in changes.items() if k != "arch"})
    arch = changes.get("arch", architecture(p.model))
    return plan(arch, p.bytes_per_param, p.gpu, p.gpus_per_node, p.hbm_usable, p.micro_batch_tokens,
                p.tokens_per_step, 10 ** 6, p.fabric, p.mfu, p.nvlink_fraction, p.fabric_fraction)


def what_changes(p, ch: Chain) -> dict:
    lo, hi = min(READING_BYTES.values()), max(READING_BYTES.values())
    h200 = _replica(p, gpu=catalog.accelerator("h200"))
    b200 = _replica(p, gpu=catalog.accelerator("b200"))
    return {"wc-b-lo": f"{lo} bytes", "wc-b-hi": f"{hi} bytes",
            "wc-k-lo": _count(as_float(_replica(p, bytes_per_param=float(lo))["K_min"]), "node"),
            "wc-k-hi": _count(as_float(_replica(p, bytes_per_param=float(hi))["K_min"]), "node"),
            "wc-h200-node": fmt(h200["M_node"]), "wc-h200-k": _count(as_float(h200["K_min"]), "node"),
            "wc-b200-node": fmt(b200["M_node"]), "wc-b200-k": _count(as_float(b200["K_min"]), "node"),
            "wc-b200-ridge": fmt(b200["T_star"]) if as_float(b200["K"]) > 1
            else "zero, since one node holds the replica and nothing crosses the fabric"}


def exercises(p, ch: Chain) -> dict:
    """Worked answers, glued into hidden dropdowns."""
    m405 = catalog.model("llama-3-405b")
    arch405 = architecture(m405)
    ex1 = _replica(p.replace(gpu=catalog.accelerator("h100-sxm")), bytes_per_param=16.0, arch=arch405)
    pp = int(as_float(catalog.run("llama-3-405b-pretraining").q("table4_row2_pp")))
    k1 = int(as_float(ex1["K"]))
    bw_star = (ch["V_F"] / (ch["eta_x"] * ch["t_c"])).to("GB/s")   # V_F / (eta_x B) = t_c solved for B
    half_ndr = catalog.interconnect("ib-ndr").q("bandwidth_unidirectional") / 2
    target, stages = 0.05, max(2, int(as_float(ch["K"])))
    m_need = (stages - 1) * (1 - target) / target          # (p-1)/(m+p-1) = beta solved for m
    m_whole = math.ceil(m_need - 1e-9)
    r = int(as_float(ch["r"]))
    return {
        "ex1-b": "16 bytes", "ex1-state": fmt(ex1["S"]), "ex1-x0": num(ex1["x_0"]),
        "ex1-k": _count(as_float(ex1["K_min"]), "node"), "ex1-kpow": _count(k1, "node"),
        "ex1-llama-pp": f"{pp} stages" if pp == k1 else f"{pp} stages, against the {k1} here",
        "ex1-layers": str(gpt_layers(arch405["n_params"], arch405["d_model"])), "ex1-d": f"{arch405['d_model']:,}",
        "ex1-layers-catalog": str(arch405["n_layers"]),
        "ex2-bw": fmt(bw_star), "ex2-gbit": fmt(bw_star.to("Gbit/s")), "ex2-half": fmt(half_ndr.to("Gbit/s")),
        "ex2-verdict": "enough: the traffic still hides" if half_ndr >= bw_star
        else "not enough: FSDP's traffic is exposed",
        "ex3-target": pct(target), "ex3-p": str(stages), "ex3-m": num(m_need), "ex3-mwhole": str(m_whole),
        "ex3-r": _count(r, "replica"), "ex3-mb": f"{p.micro_batch_tokens:,}",
        "ex3-batch": short(m_whole * r * p.micro_batch_tokens)}


SPEC = Spec("training-state-memory", PARAMETERS, RESULTS, compute, validate=validate,
            closed_form=True)
