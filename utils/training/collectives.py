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

Chapters: dpo-memory-flops, parallelism-placement, ring-allreduce, training-state-memory.
"""
from __future__ import annotations

import numpy as np

from utils import catalog

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
    b = np.maximum(lo, per * np.asarray(dp, dtype=float))
    return float(b) if b.ndim == 0 else b


def megatron_bucket_rule() -> str:
    """The rule as Megatron-LM's code writes it, with the catalog's numbers."""
    lo, per = _megatron_bucket_terms()
    return f"bucket_size = max({lo:.0f}, {per:.0f} x dp_size) parameters"
