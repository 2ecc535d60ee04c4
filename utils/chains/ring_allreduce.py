"""ring-allreduce: the gradients, once per step, in a ring that moves 2(N-1)/N of their size through
every GPU; the time that takes (a bandwidth term and a latency term per bucket) against the backward pass
it hides behind.

Bytes come from utils.training.collectives (the ring factor, nccl-tests' bus bandwidth, the simulated ring); the
model is one parameter, its parameter count from its configuration. No link runs at its datasheet rate: NVLink
and the fabric run at the achieved shares nccl-tests measured (collectives.link_fraction_params).
"""
from __future__ import annotations

import math

from utils import catalog
from utils.chain import Chain, as_float, memoised
from utils.models import param_count
from utils.params import Param, ParameterError, Result, Spec
from utils.training import collectives, flops_per_parameter_token
from utils.training.collectives import bus_bandwidth, ring_allreduce_factor, ring_schedule, simulate_ring
from utils.units import duration, fmt, num, pct, q, short
from utils.verdicts import HOLDS, UNCHECKABLE, WRONG, Claim, rounds_to

_LLAMA405 = "llama-3-405b-pretraining"
NCCL_LAT_SRC = collectives.nccl_latency_source()
DDP_SRC = collectives.ddp_bucket_source()
LATENCY_US = collectives.nccl_ring_latencies_us()   # NCCL's per-step latencies, the catalog's
NIC_SRC = ("one NIC per GPU (DGX/HGX reference design); NCCL rings cross nodes once per NIC: NVIDIA/nccl issue "
           "812 ('8x200Gbit/s IB cards ... we measure 192GB/s AllReduce BusBW'), read 2026-11-29")
MFU_SRC = "Llama 3 405B reported 38% to 43% MFU on H100 (arXiv:2407.21783, Table 4)"

PARAMETERS = (
    Param("model", "llama-3-8b", "the model: a catalog key or the path of a Hugging Face config.json",
          check="model", source="catalog: Llama-3-8B, the claim's 8B model"),
    Param("grad_bytes_per_param", 2.0, "bytes per gradient element on the wire: 2 for bf16, 4 for fp32",
          unit="byte/parameter", source="bf16 gradients (the claim)"),
    Param("dp_size", 64, "GPUs in the ring (data-parallel size)", unit="GPU", check="whole",
          source="Llama 3 405B's smallest data-parallel degree (arXiv:2407.21783, Table 4)"),
    Param("gpus_per_node", 8, "GPUs per node, each with its own NIC on the fabric", check="whole", source=NIC_SRC),
    Param("gpu", "h100-sxm", "accelerator catalog key", check="accelerator", source="catalog: H100 SXM"),
    Param("fabric", "ib-ndr", "interconnect catalog key: the scale-out fabric, one port per GPU",
          check="interconnect", source="catalog: InfiniBand NDR"),
    Param("tokens_per_gpu_per_step", 16384, "tokens each GPU trains on per optimizer step", unit="token",
          check="whole", source="this book's assumption: two 8k sequences per GPU"),
    Param("micro_batches", 1, "forward-backward passes per step (gradient accumulation)", check="whole",
          source="this book's assumption"),
    Param("mfu", 0.40, "model FLOPs utilisation on the 6N basis: the share of the dense bf16 peak spent on 6ND "
          "(attention and recomputation not counted; fleet-size converts other bases)",
          check="fraction", source=MFU_SRC),
    Param("bucket_mib", collectives.ddp_bucket_mib(), "gradient bucket, MiB (one all-reduce per bucket)", unit="MiB",
          source=DDP_SRC),
    Param("step_latency_nvlink_us", LATENCY_US["nvlink"], "latency of one ring step over NVLink, microseconds", unit="us",
          source=NCCL_LAT_SRC),
    Param("step_latency_net_us", LATENCY_US["network"], "latency of one ring step across the network, microseconds", unit="us",
          source=NCCL_LAT_SRC),
    *collectives.link_fraction_params(),
)

RESULTS = (
    Result("bytes_per_gpu_per_step", "GB", "Bytes each GPU sends (and receives) per step", of="V"),
    Result("ratio_to_model_size", "", "Bytes per GPU per step / the model's bf16 size", of="V_model"),
    Result("allreduce_time", "s", "All-reduce time per step (bucketed ring)", of="T_ar"),
    Result("backward_time", "s", "Backward pass it overlaps (last micro-batch)", of="t_bwd"),
    Result("exposed_time", "ms", "All-reduce time left exposed after the backward pass", of="t_exp"),
    Result("exposed_fraction", "", "Exposed all-reduce / step compute", of="f", percent=True),
    Result("tokens_to_hide", "token", "Tokens per GPU per step below which it stops hiding", of="T_min"),
    Result("dp_limit", "", "Ring size at which it stops hiding (these buckets)", of="N_lim"),
)

K_BWD = flops_per_parameter_token()["backward"]   # backward FLOPs per parameter per token

CLAIM_QUOTE = ("Not the data, not the weights: the gradients, once per step, in a ring that moves almost "
               "twice the model's size through every GPU.")
HIDES_QUOTE = "The derivation, the per-step byte count for an 8B model, and why it still hides behind the backward pass."
# The claim's inputs. It names the model (an 8B: Llama-3-8B) and bf16 training; it names no ring size, GPU
# or batch, so those are the book's assumptions, each sourced where it is first used.
CLAIM = dict(model="llama-3-8b", grad_bytes_per_param=2,
             dp_size=int(as_float(catalog.run(_LLAMA405).q("table4_row1_dp"))),   # Llama 3's smallest DP degree
             gpus_per_node=8, gpu="h100-sxm",
             fabric="ib-ndr", tokens_per_gpu_per_step=16384, micro_batches=1, mfu=0.40,
             bucket_mib=collectives.ddp_bucket_mib(), step_latency_nvlink_us=LATENCY_US["nvlink"],
             step_latency_net_us=LATENCY_US["network"], nvlink_fraction=collectives.LINK_FRACTIONS[0],
             fabric_fraction=collectives.LINK_FRACTIONS[1])
RING_FACTOR = "2(N-1)/N"   # the ring's bytes per GPU per byte of gradient, as the reason writes it
# "almost twice": below 2, and 2 at the claim's one significant figure (rounds_to), so at least 1.5
ALMOST_TWICE = (1.5, 2.0)


def model_size(m):
    """The model's own size: its weights in bf16, the dtype Llama 3 is released in."""
    m = catalog.model(m)
    return (param_count(m)["total"] * q(2, "byte/parameter")).to("GB")


def ring_chain(model, grad_bytes_per_param, dp_size, gpus_per_node, gpu, fabric, tokens_per_gpu_per_step,
               micro_batches, mfu, bucket_mib, step_latency_nvlink_us, step_latency_net_us,
               nvlink_fraction=collectives.LINK_FRACTIONS[0], fabric_fraction=collectives.LINK_FRACTIONS[1], *,
               source="parameters cell") -> Chain:
    """`source`: one text for every parameter's row, or a function of the parameter's name (SPEC.source)."""
    src = (lambda name: source) if isinstance(source, str) else source
    m, acc, link = catalog.model(model), catalog.accelerator(gpu), catalog.interconnect(fabric)
    for entry, field in ((acc, "bf16_dense"), (acc, "scaleup_bandwidth_unidirectional"),
                         (link, "bandwidth_unidirectional")):
        if field not in entry:
            raise ParameterError(f"{entry.key!r} has no {field} in the catalog")
    ch = Chain(f"Gradient all-reduce: {m.name} on {fmt(q(dp_size, 'GPU'))} ({acc.name})")
    # --- bytes ---
    ch.given("P", param_count(m)["total"], "parameters, counted from the config", kind="derived",
             source=f"{m.name} config in the model catalog (utils.models.param_count)")
    ch.given("w", q(grad_bytes_per_param, "byte/parameter"), "bytes per gradient element", kind="assumption",
             source=f"{src('grad_bytes_per_param')}; 2 = bf16")
    ch.step("S", "w*P", "GB", "gradient size")
    ch.given("N", dp_size, "GPUs in the ring", kind="assumption", source=src("dp_size"))
    ch.step("r", "2*(N - 1)/N", "", "ring factor: bytes sent per GPU per byte of gradient")
    ch.step("V", "r*S", "GB", "bytes each GPU sends, and receives, per step")
    # --- the ring's bandwidth ---
    ch.given("g", gpus_per_node, "GPUs per node, one NIC each", kind="assumption", source=src("gpus_per_node"))
    ch.step("M", "ceiling(N/g)", "", "nodes the ring spans")
    ch.given("B_nv", acc["scaleup_bandwidth_unidirectional"], "NVLink per GPU, one way (datasheet)")
    ch.given("B_nic", link["bandwidth_unidirectional"], f"fabric per NIC, one way ({link.name}, datasheet)")
    collectives.add_link_fraction_inputs(ch, nvlink_fraction, fabric_fraction, link.key,
                             source=source if isinstance(source, str) else "parameters cell")
    ch.step("B_x", "Min(eta_nv*B_nv, g*eta_x*B_nic)", "GB/s", "ring bandwidth per GPU across nodes, achieved")
    if as_float(ch["M"]) == 1:
        ch.step("B", "eta_nv*B_nv", "GB/s", "ring bandwidth per GPU: one node, NVLink, achieved")
        ch.given("n_x", 0, "ring steps at network latency", kind="derived", source="the ring stays in one node")
    else:
        ch.step("B", "B_x", "GB/s", "ring bandwidth per GPU: the ring crosses nodes")
        ch.step("n_x", "2*M", "", "ring steps at network latency (NCCL: two per node)")
    # --- time ---
    ch.given("a_nv", q(step_latency_nvlink_us, "us"), "latency per NVLink ring step", kind="assumption",
             source=src("step_latency_nvlink_us"))
    ch.given("a_net", q(step_latency_net_us, "us"), "latency per network ring step", kind="assumption",
             source=src("step_latency_net_us"))
    ch.step("l", "(2*(N - 1) - n_x)*a_nv + n_x*a_net", "us", "latency of one all-reduce call")
    ch.given("b", q(bucket_mib, "MiB"), "gradient bucket", kind="assumption", source=src("bucket_mib"))
    ch.step("x_b", "S/b", "", "gradient in buckets")
    ch.step("k", "ceiling(x_b)", "", "all-reduce calls per step, one per bucket")
    ch.step("t_bw", "V/B", "s", "bandwidth term, the whole gradient")
    ch.step("T_ar", "k*l + t_bw", "s", "all-reduce time per step")
    # --- the backward pass it hides behind ---
    ch.given("R", acc["bf16_dense"], "dense bf16 peak per GPU")
    ch.given("u", mfu, "model FLOPs utilisation", kind="assumption", source=src("mfu"))
    ch.given("c_b", q(K_BWD, "FLOP/parameter/token"), "backward FLOPs per parameter per token",
             kind="derived", source="two matrix products per weight (the six-nd chapter)")
    ch.given("T", q(tokens_per_gpu_per_step, "token"), "tokens per GPU per step", kind="assumption",
             source=src("tokens_per_gpu_per_step"))
    ch.given("m", micro_batches, "micro-batches per step", kind="assumption", source=src("micro_batches"))
    ch.step("t_bwd", "c_b*P*T/(m*R*u)", "s", "backward of the last micro-batch: the overlap window")
    ch.step("t_step", "3*c_b*P*T/(2*R*u)", "s", "compute per step (6 FLOPs per parameter per token)")
    ch.step("t_exp", "Max(T_ar/k, T_ar - t_bwd*(k - 1)/k)", "ms", "exposed: the last bucket, or the backlog")
    ch.step("f", "t_exp/t_step", "", "exposed all-reduce as a share of the step's compute")
    ch.solve("T_w", "T_ar = c_b*P*T_w/(R*u)", "token", "overlap window at which the all-reduce stops hiding")
    ch.step("T_min", "m*T_w", "token", "tokens per GPU per step at which it stops hiding")
    ch.solve("N_max", "t_bwd = k*(2*(N_max - 1)*a_nv + 2*N_max/g*(a_net - a_nv)) + 2*S/B_x", "",
             "ring size (across nodes) at which it stops hiding")
    # read by name for the Results (no rows): the ratio to the bf16 model, the whole ring size
    ch.value("V_model", (ch["V"] / model_size(m)).to(""))
    ch.value("N_lim", q(float(math.floor(max(as_float(ch["N_max"]), 0.0))), ""))
    return ch


def _args(p) -> dict:
    return {k: p[k] for k in ("model", "grad_bytes_per_param", "dp_size", "gpus_per_node", "gpu", "fabric",
                              "tokens_per_gpu_per_step", "micro_batches", "mfu", "bucket_mib",
                              "step_latency_nvlink_us", "step_latency_net_us", "nvlink_fraction",
                              "fabric_fraction")}


def compute(p) -> Chain:
    return ring_chain(**_args(p), source=lambda name: SPEC.source(p, name))


def hides(ch: Chain) -> bool:
    return as_float(ch["T_ar"] - ch["t_bwd"], "s") <= 0


def prose(ch: Chain, p) -> dict:
    n_max = as_float(ch["N_max"])
    link_name = p.fabric.name.split(" (")[0]
    return {
        "intro-model": p.model.name, "intro-dp": fmt(q(p.dp_size, "GPU")), "intro-g": num(p.gpus_per_node),
        "intro-overlap": f"overlapped bucket by bucket, all but {duration(ch['t_exp'])} of it hides" if hides(ch)
        else f"it outlasts the backward pass, and {duration(ch['t_exp'])} of it is exposed every step",
        "claim-size": short(8e9), "ddp-bucket": fmt(q(collectives.ddp_bucket_mib(), "MiB")),
        "p-model-size": fmt(model_size(p.model)),
        "p-gradient": fmt(ch["S"]), "p-ratio": num(ch["r"], 3), "p-bw": fmt(ch["B"]), "p-tbw": fmt(ch["t_bw"]),
        "p-lat": fmt(ch["l"]), "p-k": fmt(ch["k"]), "p-klat": fmt((ch["k"] * ch["l"]).to("s")),
        "p-step": fmt(ch["t_step"]), "p-eta-nv": pct(as_float(ch["eta_nv"])), "p-eta-x": pct(as_float(ch["eta_x"])),
        "p-link": "NVLink, inside one node" if as_float(ch["M"]) == 1 else
        f"a node's {num(p.gpus_per_node)} {link_name} ports together, since the ring spans {fmt(ch['M'])} nodes",
        "p-hides": "hides behind the backward pass" if hides(ch) else "does not hide: it outlasts the backward pass",
        "p-nmax": fmt(q(math.floor(n_max), "GPU")) if n_max >= 2 else "no ring of two or more GPUs",
        "megatron-rule": "max(40M, 1M × data-parallel size)",
    }


# --- the ring, symbolically, and its schedule -----------------------------------------------------
def ring_algebra() -> dict:
    """The per-phase byte counts, the ring factor and its limit, and the two alternatives, in sympy."""
    import sympy as sp
    N, S = sp.symbols("N S", positive=True)
    phases = {"reduce-scatter": (N - 1) * S / N, "all-gather": (N - 1) * S / N}
    total = sp.simplify(sum(phases.values()))
    factor = sp.simplify(total / S)
    limit = sp.limit(factor, N, sp.oo)
    assert sp.simplify(total - 2 * (N - 1) * S / N) == 0 and limit == 2
    return dict(N=N, S=S, phases=phases, total=total, factor=factor, limit=limit,
                alternatives={"everyone to everyone": (N - 1) * S, "parameter server, at the server": (N - 1) * S})


def schedule_rows(n: int) -> dict:
    """{(phase, step): ["chunk i", ...] for each rank}: the ring's schedule as a table."""
    rows = {}
    for phase, s, _, send, _ in ring_schedule(n):
        rows.setdefault((phase, s), []).append(f"chunk {send}")
    return rows


def bus_table(ch: Chain) -> list[tuple]:
    """nccl-tests' algorithm and bus bandwidth for one bucket and for the whole gradient, by the chain."""
    n = int(as_float(ch["N"]))
    out = []
    for name, nbytes in ((f"one bucket ({fmt(ch['b'])})", ch["b"]), (f"the whole gradient ({fmt(ch['S'])})", ch["S"])):
        t = (ch["l"] + ch["r"] * nbytes / ch["B"]).to("ms")
        busbw = bus_bandwidth(nbytes, t, n).to("GB/s")
        out.append((name, t, (nbytes / t).to("GB/s"), busbw, as_float(busbw / ch["B"], "")))
    return out


def allreduce_time_np(n, s_bytes, bucket_bytes, ch: Chain):
    """The chain's all-reduce time (and its bytes-only part) as numpy arrays over ring sizes n (seconds)."""
    import numpy as np
    n = np.asarray(n, dtype=float)
    g = as_float(ch["g"])
    a_nv, a_net = as_float(ch["a_nv"], "s"), as_float(ch["a_net"], "s")
    b_x, b_nv = as_float(ch["B_x"], "B/s"), as_float(ch["eta_nv"] * ch["B_nv"], "B/s")
    nodes = np.ceil(n / g)
    n_x = np.where(nodes > 1, 2 * nodes, 0)
    lat = (2 * (n - 1) - n_x) * a_nv + n_x * a_net
    bw = np.where(nodes > 1, b_x, b_nv)
    k = np.ceil(s_bytes / np.asarray(bucket_bytes, dtype=float))
    return k * lat + 2 * (n - 1) / n * s_bytes / bw, 2 * (n - 1) / n * s_bytes / bw


def megatron_bucket_bytes(n, w_bytes):
    """Megatron-LM's bucket (utils.training.collectives.megatron_bucket_params), in bytes."""
    import numpy as np
    return np.asarray(collectives.megatron_bucket_params(n)) * w_bytes


def figure_data(ch: Chain) -> dict:
    """Ring sizes of two to eight GPUs, then whole nodes of eight; time with fixed and Megatron buckets."""
    import numpy as np
    ns = np.unique(np.concatenate([np.arange(2, 9), 8 * np.round(np.logspace(np.log10(2), np.log10(1024), 300))]))
    s_bytes, w = as_float(ch["S"], "B"), as_float(ch["w"], "B/parameter")
    t_fixed, t_bytes = allreduce_time_np(ns, s_bytes, as_float(ch["b"], "B"), ch)
    t_meg, _ = allreduce_time_np(ns, s_bytes, megatron_bucket_bytes(ns, w), ch)
    return dict(ns=ns, factor=2 * (ns - 1) / ns, t_fixed=t_fixed, t_bytes=t_bytes, t_megatron=t_meg,
                t_window=as_float(ch["t_bwd"], "s"), n_max=as_float(ch["N_max"]))


# --- the claim ------------------------------------------------------------------------------------
def _with(**over) -> Chain:
    return ring_chain(**{**CLAIM, **over}, source="the claim, read by this book")


def _megatron_mib(dp) -> float:
    return as_float(q(float(megatron_bucket_bytes(dp, CLAIM["grad_bytes_per_param"])), "B").to("MiB"))


@memoised
def checks() -> dict:
    import sympy as sp
    c = _with()
    ratio = as_float(c["V"] / model_size(CLAIM["model"]), "")
    sim = simulate_ring(CLAIM["dp_size"])
    fp32 = _with(grad_bytes_per_param=4)
    fp32_ratio = as_float(fp32["V"] / model_size(CLAIM["model"]), "")
    alg = ring_algebra()
    ring_for_lo = math.ceil(sp.solve(sp.Eq(alg["factor"], sp.nsimplify(ALMOST_TWICE[0])), alg["N"])[0])
    assert rounds_to(ring_allreduce_factor(ring_for_lo), ALMOST_TWICE[1], 1)
    nic = (c["eta_x"] * catalog.interconnect(CLAIM["fabric"]).q("bandwidth_unidirectional")).to("GB/s")
    naive_t = (c["V"] / nic).to("s")
    naive_tar = (c["k"] * c["l"] + naive_t).to("s")
    return dict(chain=c, ratio=ratio, sim=sim, sim_ratio=sim["sent"][0] / sim["buffer_bytes"], fp32=fp32,
                fp32_ratio=fp32_ratio, ring_for_lo=ring_for_lo, glue={
                    "c-dp": fmt(q(CLAIM["dp_size"], "GPU")), "c-tokens": fmt(q(CLAIM["tokens_per_gpu_per_step"], "token")),
                    "c-mfu": pct(CLAIM["mfu"]), "c-lo": num(ALMOST_TWICE[0]), "c-hi": num(ALMOST_TWICE[1]),
                    "c-bytes": fmt(c["V"]), "c-ratio": num(ratio, 3), "c-gradient": fmt(c["S"]), "c-tar": fmt(c["T_ar"]),
                    "c-tbwd": fmt(c["t_bwd"]), "c-exp": duration(c["t_exp"]), "c-f": pct(c["f"], 2),
                    "c-tmin": fmt(c["T_min"]), "c-nmax": fmt(q(math.floor(as_float(c["N_max"])), "GPU")),
                    "c-sim-ratio": f"{sim['sent'][0] / sim['buffer_bytes']:.6f}",
                    "c-sim-ranks": fmt(q(len(sim["sent"]), "GPU")), "c-fp32-bytes": fmt(fp32["V"]),
                    "c-fp32-ratio": num(fp32_ratio, 3), "c-ring-lo": fmt(q(ring_for_lo, "GPU")),
                    "c-node-ratio": num(ring_allreduce_factor(CLAIM["gpus_per_node"]), 3),
                    "c-node-g": fmt(q(CLAIM["gpus_per_node"], "GPU")), "c-nic": fmt(nic.to("GB/s")),
                    "c-naive-t": fmt(naive_t), "c-tbw": fmt(c["t_bw"]), "c-naive-tar": fmt(naive_tar),
                    "c-naive-verdict": "still inside the backward pass at these inputs, with less room"
                    if as_float(naive_tar - c["t_bwd"], "s") < 0 else "longer than the backward pass",
                    "c-per-nic": fmt((c["V"] / c["g"]).to("GB"))})


def claims() -> list[Claim]:
    ck = checks()
    c = ck["chain"]
    lo, hi = ALMOST_TWICE
    twice = ck["ratio"] < hi and rounds_to(ck["ratio"], hi, 1) and ck["sim"]["correct"]
    return [Claim(
        "ring-twice-model", quote=CLAIM_QUOTE,
        source="spec/001, paragraph on data-parallel communication",
        claimed="almost twice the model's size through every GPU, once per step",
        derived=f"2(N-1)/N of the gradient: {num(c['r'], 3)} at N = {CLAIM['dp_size']}, {fmt(c['V'])} per GPU per "
                f"step for Llama-3-8B's bf16 gradient",
        verdict=HOLDS if twice else WRONG,
        nearest_true="" if twice else f"each GPU moves {num(ck['ratio'], 3)} times the model's size per step",
        reason=f"A ring all-reduce sends, and receives, {RING_FACTOR} of the gradient through every GPU: below twice on "
               f"every ring, twice at the claim's one figure from a ring of {ck['ring_for_lo']} GPUs "
               f"({num(c['r'], 3)}x on {CLAIM['dp_size']}), and the gradient is the model's size in its own "
               f"precision ({fmt(c['S'])} for Llama-3-8B in bf16; fp32 gradients against the bf16 model would be "
               f"{num(ck['fp32_ratio'], 3)}x)."),
        Claim(
        "ring-hides", quote=HIDES_QUOTE,
        source="spec/001, paragraph on data-parallel communication",
        claimed="the all-reduce still hides behind the backward pass",
        derived=f"the book's figure: {fmt(c['T_ar'])} against a {fmt(c['t_bwd'])} backward pass, "
                f"{duration(c['t_exp'])} exposed",
        verdict=UNCHECKABLE,
        reason=f"Whether it hides depends on the ring's size, the tokens per GPU, the GPU, the fabric and the "
               f"buckets, and the source names none, so it cannot be checked; the book's figure at its own "
               f"{fmt(q(CLAIM['dp_size'], 'GPU'))}, {fmt(q(CLAIM['tokens_per_gpu_per_step'], 'token'))} per GPU "
               f"and {pct(CLAIM['mfu'])} MFU, links at {pct(c['eta_nv'].m)} of NVLink and {pct(c['eta_x'].m)} of "
               f"the fabric: {fmt(c['T_ar'])} against {fmt(c['t_bwd'])}, hidden but for {duration(c['t_exp'])}; "
               f"it stops hiding below {fmt(c['T_min'])} per GPU, or past "
               f"{math.floor(as_float(c['N_max']))} GPUs with fixed {fmt(q(CLAIM['bucket_mib'], 'MiB'))} buckets.")]


# --- what changes the answer, and the exercises ---------------------------------------------------
BIG_N = 1024


def what_changes(p, ch: Chain) -> dict:
    """On the claim's inputs (the prose names them), not the reader's."""
    big, big_meg = _with(dp_size=BIG_N), _with(dp_size=BIG_N, bucket_mib=_megatron_mib(BIG_N))
    accum = _with(micro_batches=4)
    accum_meg = _with(micro_batches=4, bucket_mib=_megatron_mib(CLAIM["dp_size"]))
    b200 = _with(gpu="b200")
    return {"v-bign": fmt(q(BIG_N, "GPU")), "v-bign-tar": fmt(big["T_ar"]), "v-bign-exp": duration(big["t_exp"]),
            "v-bign-meg-bucket": fmt(q(_megatron_mib(BIG_N), "MiB")), "v-bign-meg-tar": fmt(big_meg["T_ar"]),
            "v-bign-meg-exp": duration(big_meg["t_exp"]), "v-accum-m": num(4), "v-accum-bwd": fmt(accum["t_bwd"]),
            "v-accum-exp": duration(accum["t_exp"]), "v-accum-f": pct(accum["f"], 2),
            "v-accum-meg-tar": fmt(accum_meg["T_ar"]), "v-accum-meg-exp": duration(accum_meg["t_exp"]),
            "v-b200-bwd": fmt(b200["t_bwd"]), "v-b200-tar": fmt(b200["T_ar"]), "v-b200-tmin": fmt(b200["T_min"])}


def exercises(p, ch: Chain) -> dict:
    """Worked answers on the claim's inputs."""
    run = catalog.run(_LLAMA405)
    tp, pp, dp = (int(as_float(run.q(f"table4_row1_{k}"))) for k in ("tp", "pp", "dp"))
    m405 = catalog.model(run.q("model"))
    s = (param_count(m405)["total"] / (tp * pp) * q(2, "byte/parameter")).to("GB")
    v = (ring_allreduce_factor(dp) * s).to("GB")
    c = _with()
    nic = (c["eta_x"] * catalog.interconnect(CLAIM["fabric"]).q("bandwidth_unidirectional")).to("GB/s")
    fp32 = _with(grad_bytes_per_param=4)
    meg = _with(bucket_mib=_megatron_mib(CLAIM["dp_size"]))
    return {"e1-tp": num(tp), "e1-pp": num(pp), "e1-tp-rings": num(tp), "e1-dp": fmt(q(dp, "GPU")),
            "e1-shard": num(tp * pp), "e1-s": fmt(s), "e1-r": num(ring_allreduce_factor(dp), 3), "e1-v": fmt(v),
            "e1-t": fmt((v / nic).to("s")), "e1-nic": fmt(nic.to("GB/s")), "e2-v": fmt(fp32["V"]),
            "e2-ratio": num(as_float(fp32["V"] / model_size(CLAIM["model"]), ""), 3), "e2-tbw": fmt(fp32["t_bw"]),
            "e3-default": fmt(c["T_w"]), "e3-default-tar": fmt(c["T_ar"]), "e3-megatron": fmt(meg["T_w"]),
            "e3-megatron-tar": fmt(meg["T_ar"]), "e3-megatron-bucket": fmt(q(_megatron_mib(CLAIM["dp_size"]), "MiB"))}


SPEC = Spec("ring-allreduce", PARAMETERS, RESULTS, compute, closed_form=True)
