"""Collective communication, counted: what a ring all-reduce, all-gather and reduce-scatter put on each
rank's wire, nccl-tests' bus bandwidth, and the bytes per step of each parallelism axis.

A ring of n ranks, each holding S bytes, moves in each phase n-1 chunks of S/n through every rank:
reduce-scatter and all-gather each (n-1)/n of S, an all-reduce (one of each) 2(n-1)/n of S, which tends
to twice the buffer and is the lower bound for any all-reduce (Patarasuk and Yuan). nccl-tests reports
the bus bandwidth algbw x factor, where algbw = S/t and the factor is the same per-rank count, so it
can be held against a link's rate whatever n is (nccl-tests, doc/PERFORMANCE.md).

Works on plain numbers and on pint quantities alike (bytes in, bytes out).

The published defaults a ring all-reduce is timed with (NCCL's per-step latencies, PyTorch DDP's and
Megatron-LM's gradient buckets) are read from the software catalog here, once for every chapter.

No link runs at its datasheet rate: the achieved shares of NVLink's and the fabric's one-way rates in a large
all-reduce (nccl-tests' bus bandwidth over the link, catalog measurements by others) are two parameters every
chapter that times a collective shares (`link_fraction_params`, `add_link_fraction_inputs`).

Chapters: dpo-memory-flops, grpo-rollout-cost, parallelism-placement, ring-allreduce, rl-actor-learner,
training-state-memory.
"""
from __future__ import annotations

from utils import catalog
from utils.params import Param
from utils.units import q

#: nccl-tests' bus-bandwidth factor per collective, as a function of the rank count (doc/PERFORMANCE.md)
BUS_FACTORS = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_to_all": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
}


def _ranks(n) -> int:
    n_ = int(n)
    if n_ != n or n_ < 1:
        raise ValueError(f"a collective needs a whole number of ranks >= 1, got {n!r}")
    return n_


def bus_factor(n, op: str = "all_reduce") -> float:
    """Bytes each rank sends per byte of buffer: 2(n-1)/n for an all-reduce, (n-1)/n for the halves."""
    if op not in BUS_FACTORS:
        raise ValueError(f"unknown collective {op!r}; one of {', '.join(BUS_FACTORS)}")
    return BUS_FACTORS[op](_ranks(n))


def ring_allreduce_factor(n) -> float:
    """2(n-1)/n: bytes each rank sends (and receives) per byte of the buffer being all-reduced."""
    return bus_factor(n, "all_reduce")


def allreduce_bytes(size, n):
    """Bytes each rank sends (and receives) in a ring all-reduce of `size` over n ranks."""
    return ring_allreduce_factor(n) * size


def all_gather_bytes(size, n):
    """Bytes each rank receives gathering a buffer of `size` (whole, after the gather) over n ranks."""
    return bus_factor(n, "all_gather") * size


def reduce_scatter_bytes(size, n):
    """Bytes each rank sends reduce-scattering a buffer of `size` over n ranks."""
    return bus_factor(n, "reduce_scatter") * size


def bus_bandwidth(size, time, n, op: str = "all_reduce"):
    """nccl-tests' busbw: the algorithm bandwidth size/time times the collective's factor."""
    return size / time * bus_factor(n, op)


def ring_time(size, n, bandwidth, step_latency=0.0):
    """Time of one ring all-reduce: 2(n-1) steps of latency plus its per-rank bytes over the bandwidth."""
    return 2 * (_ranks(n) - 1) * step_latency + allreduce_bytes(size, n) / bandwidth


# --- the ring, chunk by chunk ---------------------------------------------------------------------
def ring_schedule(n):
    """(phase, step, rank, chunk sent to rank+1, chunk received from rank-1) for a ring of n ranks."""
    n = _ranks(n)
    for phase in ("reduce-scatter", "all-gather"):
        for s in range(n - 1):
            for rank in range(n):
                if phase == "reduce-scatter":
                    send, recv = (rank - s) % n, (rank - s - 1) % n
                else:
                    send, recv = (rank - s + 1) % n, (rank - s) % n
                yield phase, s, rank, send, recv


def simulate_ring(n, elements_per_chunk: int = 4, seed: int = 0) -> dict:
    """Apply the ring schedule to seeded integer gradients in numpy; count every byte each rank sends and
    receives, and check the result is the plain sum on every rank."""
    import numpy as np  # the simulated ring only; the byte and time formulas need no numpy
    n = _ranks(n)
    rng = np.random.default_rng(seed)
    grads = rng.integers(-1000, 1000, size=(n, n, elements_per_chunk)).astype(np.float64)  # rank, chunk, element
    data = grads.copy()
    sent, received = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    steps = {}
    for phase, s, rank, send, recv in ring_schedule(n):
        steps.setdefault((phase, s), []).append((rank, send, recv))
    for (phase, _), moves in steps.items():
        payload = {rank: data[rank, send].copy() for rank, send, _ in moves}     # everyone sends at once
        for rank, _, recv in moves:
            left = (rank - 1) % n
            received[rank] += payload[left].nbytes
            sent[left] += payload[left].nbytes
            data[rank, recv] = data[rank, recv] + payload[left] if phase == "reduce-scatter" else payload[left]
    correct = bool(np.array_equal(data, np.broadcast_to(grads.sum(axis=0), data.shape)))
    return dict(sent=sent, received=received, buffer_bytes=int(grads[0].nbytes), correct=correct)


# --- bytes per step by parallelism axis (per GPU) --------------------------------------------------
def data_parallel_bytes(grad_bytes, n):
    """Data parallel: the gradient (or a rank's slice of it) all-reduced once per step."""
    return allreduce_bytes(grad_bytes, n)


def fsdp_bytes(weight_bytes, n, *, transfers: int = 3):
    """FSDP / ZeRO-3: weights all-gathered for forward and backward, gradients reduce-scattered:
    three transfers of (n-1)/n of the shard group's model per pass (ZeRO sec. 7: 3Ψ against 2Ψ)."""
    return transfers * bus_factor(n, "all_gather") * weight_bytes


def tensor_parallel_bytes(activation_bytes, n, *, allreduces: int):
    """Tensor parallel (Megatron): `allreduces` all-reduces of the layer's activations over n ranks."""
    return allreduces * allreduce_bytes(activation_bytes, n)


def pipeline_bytes(activation_bytes, *, directions: int = 2):
    """Pipeline: a stage boundary passes the activations forward and their gradients back."""
    return directions * activation_bytes


# --- published defaults: NCCL's ring latencies, DDP's and Megatron-LM's gradient buckets ---------------
def nccl_ring_latencies_us() -> dict[str, float]:
    """NCCL's tuner latency for one ring step, microseconds (catalog: software nccl): {'nvlink', 'network'}."""
    e = catalog.entry("software", "nccl")
    return {"nvlink": float(e.q("ring_step_latency_nvlink").to("us").m),
            "network": float(e.q("ring_step_latency_network").to("us").m)}


def nccl_latency_source() -> str:
    """Where the ring latencies come from, in the words the chapters' tables show."""
    lat, read = nccl_ring_latencies_us(), catalog.entry("software", "nccl")["ring_step_latency_nvlink"].source.read
    return (f"NCCL's cost model, src/graph/tuning.cc: hwLat Ring/Simple = {lat['nvlink']:g} µs per NVLink step, "
            f"{lat['network']:g} µs per network step; 2(nRanks-1) steps, 2 nNodes of them at network latency "
            f"(NVIDIA/nccl, commit b6475625), read {read}")


def ddp_bucket_mib() -> float:
    """PyTorch DDP's default gradient bucket, MiB (catalog: software pytorch-ddp)."""
    return float(catalog.entry("software", "pytorch-ddp").q("bucket_cap").to("MiB").m)


def ddp_bucket_source() -> str:
    read = catalog.entry("software", "pytorch-ddp")["bucket_cap"].source.read
    return (f"PyTorch torch/nn/parallel/distributed.py: bucket_cap_mb defaults to {ddp_bucket_mib():g} "
            f"('bucket cap is {ddp_bucket_mib():g} MiB'), read {read}")


def _megatron_bucket_terms() -> tuple[float, float]:
    e = catalog.entry("software", "megatron-lm-ddp")
    return tuple(float(e.q(f).to("parameter").m) for f in ("grad_bucket_min", "grad_bucket_per_dp_rank"))


def megatron_bucket_params(dp):
    """Megatron-LM's gradient bucket in parameters, max(floor, per rank x the data-parallel degree) (catalog:
    software megatron-lm-ddp), so each call stays bandwidth-bound as the ring grows. A float for one degree,
    an array for an array of them."""
    lo, per = _megatron_bucket_terms()
    if isinstance(dp, (int, float)):
        return float(max(lo, per * float(dp)))
    import numpy as np
    b = np.maximum(lo, per * np.asarray(dp, dtype=float))
    return float(b) if b.ndim == 0 else b


def megatron_bucket_rule() -> str:
    """The rule as Megatron-LM's code writes it, with the catalog's numbers."""
    lo, per = _megatron_bucket_terms()
    return f"bucket_size = max({lo:.0f}, {per:.0f} x dp_size) parameters"


# --- achieved shares of the links' datasheet rates -------------------------------------------------------
def _nvlink_ring_busbw():
    """The ring all-reduce's bus bandwidth measured on NVLink 4 with NVLS off (NCCL's ring, not the switch's
    reduction): catalog hgx-h100-nvswitch, the allreduce_busbw_measured alternative that says so."""
    v = catalog.interconnect("hgx-h100-nvswitch")["allreduce_busbw_measured"]
    return next(a for a in v.alternatives if "NVLS_ENABLE=0" in a.note)


_NV_WIRE = catalog.interconnect("hgx-h100-nvswitch").q("bandwidth_unidirectional")
_FABRIC = catalog.interconnect("ib-hdr")
_FABRIC_BUSBW = catalog.entry("software", "nccl")["allreduce_busbw_hdr_port"]     # measured on _FABRIC's ports
#: (NVLink, fabric): nccl-tests' all-reduce bus bandwidth over the one-way datasheet rate, to three figures
LINK_FRACTIONS = (round(float((_nvlink_ring_busbw().q / _NV_WIRE).to("").m), 3),
                  round(float((_FABRIC_BUSBW.q / _FABRIC.q("bandwidth_unidirectional")).to("").m), 3))


def link_fraction_source(which: str) -> str:
    if which == "nvlink":
        v = _nvlink_ring_busbw()
        return (f"nccl-tests ring all-reduce busbw {v.q.to('GB/s').m:g} of {_NV_WIRE.to('GB/s').m:g} GB/s one way "
                f"(8x H200 on NVLink 4, NVLS off; catalog hgx-h100-nvswitch, measured by others): {v.cite}")
    v = _FABRIC_BUSBW
    return (f"NCCL all-reduce busbw {v.q.to('GB/s').m:g} of {_FABRIC.q('bandwidth_unidirectional').to('GB/s').m:g} "
            f"GB/s per HDR port (DGX A100, eight ports; catalog software nccl, measured by others): {v.cite}")


def link_fraction_params() -> tuple:
    """The two achieved-share parameters of the links, their defaults the catalog's (a test holds them equal)."""
    return (Param("nvlink_fraction", 0.812, "achieved share of NVLink's one-way rate in a large ring all-reduce "
                  "(nccl-tests busbw / link; 1 = the datasheet's rate)", check="fraction",
                  source=link_fraction_source("nvlink")),
            Param("fabric_fraction", 0.96, "achieved share of the fabric's one-way rate per port in a large "
                  "all-reduce (nccl-tests busbw / port; 1 = the datasheet's rate)", check="fraction",
                  source=link_fraction_source("fabric")))


def add_link_fraction_inputs(ch, nvlink_fraction: float, fabric_fraction: float, fabric: str = "ib-hdr",
                             source: str = "parameters cell"):
    """eta_nv and eta_x: the measured shares at their defaults (the fabric's an assumption on a fabric other
    than the one measured), the reader's otherwise."""
    fabric = getattr(fabric, "key", fabric)
    for sym, value, which, label in (("eta_nv", nvlink_fraction, "nvlink", "achieved share of NVLink's rate"),
                                     ("eta_x", fabric_fraction, "fabric", "achieved share of the fabric's rate")):
        default = LINK_FRACTIONS[0 if which == "nvlink" else 1]
        if value != default:
            ch.given(sym, q(value, ""), label, kind="assumption" if value < 1 else "definition",
                     source=source if value < 1 else "the datasheet's rate itself")
        elif which == "fabric" and fabric != _FABRIC.key:
            ch.given(sym, q(value, ""), label, kind="assumption",
                     source=f"measured on {_FABRIC.name}, a stand-in for this fabric: {link_fraction_source(which)}")
        else:
            ch.given(sym, q(value, ""), label, kind="measured-by-others", source=link_fraction_source(which))
