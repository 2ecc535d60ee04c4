"""The book's GPU measurement harness: a registry of measurements, and the command that runs them.

    python3 -m utils.measure [--only NAME ...] [--out DIR] [--quick] [--list]

On a machine with a CUDA GPU it runs the selected measurements (all by default), checks each kernel's
output against a reference before timing it, times it with CUDA events, and writes one JSON record per
measurement into DIR (default book/measurements/), named `<name>--<gpu-slug>--<UTC timestamp>.json`.
It prints a short table last. Without a CUDA GPU it says so in one line and exits with status 2; bad
arguments likewise. A failed correctness check (or any error) in a measurement writes no record for it
and makes the exit status 1. Records are data produced by this command, never typed by hand;
`validate` checks one against utils/measure_schema.json.

Every measurement in REGISTRY has a name, what it measures, its byte and FLOP counts as functions of
its size, a correctness check against a torch reference (built, with the variants, by `prepare`), and a
timing routine (the runtime's `time`, the same for all). The method is the book's (see
book/measurement-method.md): count bytes and FLOPs first; correct first (fresh random inputs, never
zeros; outputs poisoned with NaN, every element checked written; relative-error norm against float64);
warm up; time with CUDA events; take the median of many runs; use buffers well past the L2 cache and
rotate among copies where the cache could flatter; measure the two ceilings (device-to-device copy
bandwidth and bf16 matmul rate) in the same run, and store them in every record.

This module imports only the standard library at import time; torch and triton (and the kernels in
utils.kernels) are imported when something is measured, so `--help`, `--list` and the no-GPU message
work where torch is absent. The GPU machines that run it have no pint, sympy or Jupyter.

Timing is the runtime's job: CudaRuntime times with CUDA events; FakeRuntime (for the tests) runs the
same code on CPU tensors (Triton kernels under TRITON_INTERPRET=1) and returns deterministic samples, so
every line of the record path but the timing itself runs on a machine with no GPU.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import gc
import json
import math
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "book" / "measurements"
SCHEMA_PATH = Path(__file__).with_name("measure_schema.json")
SCHEMA_VERSION = 1
MODES = ("full", "quick", "tiny")
UNITS = {"samples_s": "s", "median_s": "s", "bytes": "B", "flops": "FLOP", "bandwidth": "B/s",
         "flop_rate": "FLOP/s"}
CEILING_SOURCES = ("copy-bandwidth", "matmul-rate")   # measured in every run, first


# --------------------------------------------------------------------------------------------------
# Timing settings and runtimes


@dataclass(frozen=True)
class Settings:
    """How many runs: at least `warmup` warm-up calls lasting at least `warmup_s` seconds; then enough
    timed calls for about `target_s` seconds, but no fewer than `min_reps` and no more than `max_reps`."""
    warmup: int
    warmup_s: float
    min_reps: int
    max_reps: int
    target_s: float


SETTINGS = {
    "full": Settings(warmup=3, warmup_s=0.1, min_reps=10, max_reps=200, target_s=0.4),
    "quick": Settings(warmup=2, warmup_s=0.02, min_reps=5, max_reps=20, target_s=0.05),
    "tiny": Settings(warmup=1, warmup_s=0.0, min_reps=3, max_reps=3, target_s=0.0),
}


def choose_reps(per_call_s: float, s: Settings) -> int:
    """Timed calls for a call of about `per_call_s` seconds: ~target_s in all, within [min, max]."""
    if per_call_s <= 0 or not math.isfinite(per_call_s):
        return s.max_reps
    return max(s.min_reps, min(s.max_reps, int(s.target_s / per_call_s)))


def _torch():
    import torch
    return torch


def fp8_trial(device: str) -> tuple[bool, str]:
    """Whether torch._scaled_mm multiplies float8_e4m3fn matrices here: (works, reason if not)."""
    torch = _torch()
    if not hasattr(torch, "_scaled_mm") or not hasattr(torch, "float8_e4m3fn"):
        return False, f"torch {torch.__version__} has no torch._scaled_mm or float8_e4m3fn"
    try:
        # The call exactly as the measurement makes it: row-major a, column-major b, scalar scales,
        # bf16 output into a preallocated (poisoned) tensor.
        a = torch.randn(32, 64, device=device).to(torch.float8_e4m3fn)
        bt = torch.randn(48, 64, device=device).to(torch.float8_e4m3fn)
        one = torch.ones((), device=device)
        c = torch.full((32, 48), float("nan"), device=device, dtype=torch.bfloat16)
        torch._scaled_mm(a, bt.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16, out=c)
        ref = a.double() @ bt.double().t()
        if not rel_err(c, ref) <= 2e-2:
            return False, "torch._scaled_mm ran but returned a wrong product"
    except Exception as e:  # noqa: BLE001 - any failure means: no fp8 here; the reason is recorded
        return False, f"torch._scaled_mm failed: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    return True, ""


class CudaRuntime:
    """Times with CUDA events on the current CUDA device. The one part of the harness the tests
    cannot run: everything it does is timing, graph capture, pinned memory or device properties."""
    timer = "cuda-events"
    device = "cuda"

    def __init__(self):
        self.torch = _torch()
        self.cache: dict = {}
        self._fp8 = None

    def synchronize(self):
        self.torch.cuda.synchronize()

    def time(self, fn: Callable[[], object], settings: Settings, work=None) -> list[float]:
        torch = self.torch
        torch.cuda.synchronize()
        t0, n = time.perf_counter(), 0
        while True:                                  # warm-up: calls, and seconds (clocks ramp up)
            fn()
            n += 1
            if n >= settings.warmup:
                torch.cuda.synchronize()
                if time.perf_counter() - t0 >= settings.warmup_s:
                    break
        t1 = time.perf_counter()
        for _ in range(2):
            fn()
        torch.cuda.synchronize()
        reps = choose_reps((time.perf_counter() - t1) / 2, settings)
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        for i in range(reps):
            starts[i].record()
            fn()
            ends[i].record()
        torch.cuda.synchronize()
        return [s.elapsed_time(e) / 1e3 for s, e in zip(starts, ends)]

    def graph(self, fn: Callable[[], object]) -> Callable[[], object]:
        """Capture fn's launches into a CUDA graph (after a warm-up on a side stream); return replay."""
        torch = self.torch
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(2):
                fn()
        torch.cuda.current_stream().wait_stream(side)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            fn()
        torch.cuda.synchronize()
        self.cache.setdefault("graphs", []).append(g)
        return g.replay

    def pinned_empty(self, n: int, dtype):
        return self.torch.empty(n, dtype=dtype, pin_memory=True)

    def fp8(self) -> tuple[bool, str]:
        if self._fp8 is None:
            cap = self.torch.cuda.get_device_capability()
            if cap < (8, 9):
                self._fp8 = (False, f"compute capability {cap[0]}.{cap[1]} has no fp8 matrix units (needs 8.9)")
            else:
                self._fp8 = fp8_trial("cuda")
        return self._fp8

    def compile(self, fn: Callable) -> Callable:
        """torch.compile(fn) with a clean compiler cache (fixed shapes: one graph per size, and no
        earlier measurement's graphs counting against the recompile limit, past which torch would
        silently run fn eagerly). Compilation happens at the first call."""
        torch = self.torch
        torch._dynamo.reset()
        return torch.compile(fn, dynamic=False)

    def l2_bytes(self) -> int:
        # Where torch does not say, assume a large L2 (rotating more costs memory, not accuracy).
        return int(getattr(self.torch.cuda.get_device_properties(0), "L2_cache_size", 0)) or 128 * 2**20

    def device_info(self) -> dict:
        p = self.torch.cuda.get_device_properties(0)
        return {"gpu": p.name, "capability": f"{p.major}.{p.minor}", "sm_count": int(p.multi_processor_count),
                "memory_bytes": int(p.total_memory), "l2_bytes": int(getattr(p, "L2_cache_size", 0)),
                "cuda": str(self.torch.version.cuda)}

    def free(self, everything: bool = False):
        if everything:
            self.cache.clear()
        gc.collect()
        self.torch.cuda.empty_cache()


class FakeRuntime:
    """For the tests: CPU tensors, no timing. `time` runs the call (twice, so buffer rotation runs) and
    returns deterministic samples from a made-up roofline (bytes at `bandwidth`, FLOPs at `rate`, plus
    `launch_s` per call). Records it produces say timer 'fake'; utils.measured ignores such records."""
    timer = "fake"
    device = "cpu"

    def __init__(self, *, fp8: bool = True, l2: int = 8192, bandwidth: float = 2e12, rate: float = 5e14,
                 launch_s: float = 4e-6, compile: bool = False):
        self.cache: dict = {}
        self._fp8, self._l2, self._compile = fp8, l2, compile
        self.bandwidth, self.rate, self.launch_s = bandwidth, rate, launch_s

    def synchronize(self):
        pass

    def time(self, fn, settings: Settings, work=None) -> list[float]:
        fn()
        fn()
        nbytes, nflops, calls = work or (0, 0, 1)
        t = max(nbytes / self.bandwidth, nflops / self.rate) + calls * self.launch_s
        reps = choose_reps(t, settings)
        return [t * (1 + 0.01 * (i % 3)) for i in range(reps)]

    def graph(self, fn):
        return fn

    def pinned_empty(self, n, dtype):
        return _torch().empty(n, dtype=dtype)

    def fp8(self):
        return fp8_trial("cpu") if self._fp8 else (False, "fp8 switched off in this fake runtime")

    def compile(self, fn):
        # Off by default: on a CPU a real torch.compile builds C++ and takes far longer than a test.
        # On, it runs the same path with torch's 'eager' backend (graph capture without code generation).
        if not self._compile:
            raise RuntimeError("torch.compile switched off in this fake runtime")
        torch = _torch()
        torch._dynamo.reset()
        return torch.compile(fn, backend="eager", dynamic=False)

    def l2_bytes(self):
        return self._l2

    def device_info(self):
        torch = _torch()
        return {"gpu": "Fake GPU (test)", "capability": "0.0", "sm_count": 0, "memory_bytes": 0,
                "l2_bytes": self._l2, "cuda": str(torch.version.cuda)}

    def free(self, everything: bool = False):
        if everything:
            self.cache.clear()
        gc.collect()


# --------------------------------------------------------------------------------------------------
# Correctness checks


@dataclass
class CheckResult:
    metric: str
    error: float
    tolerance: float
    all_written: bool

    @property
    def passed(self) -> bool:
        return self.all_written and math.isfinite(self.error) and self.error <= self.tolerance


class CheckFailed(RuntimeError):
    pass


def rel_err(out, ref) -> float:
    """||out - ref|| / ||ref|| in float64; infinite when out holds a NaN or an infinity."""
    torch = _torch()
    o, r = out.double(), ref.double().to(out.device)
    if not bool(torch.isfinite(o).all()):
        return math.inf
    num, den = float(torch.linalg.vector_norm(o - r)), float(torch.linalg.vector_norm(r))
    return num / den if den > 0 else num


def exact_check(out, ref) -> CheckResult:
    """For copies: every element must equal the source exactly. Error = fraction of elements that differ."""
    torch = _torch()
    ref = ref.to(out.device)
    written = not bool(torch.isnan(out).any()) if out.is_floating_point() else True
    differ = int((out != ref).sum())
    return CheckResult("fraction of elements that differ from the source", differ / max(1, out.numel()),
                       0.0, written)


def matmul_check(c, a, b, tolerance: float, rows: int = 256) -> CheckResult:
    """c (poisoned before the run) against a float64 product: every element written (finite), and the
    relative-error norm over up to `rows` randomly chosen rows (all rows when there are fewer)."""
    torch = _torch()
    written = bool(torch.isfinite(c).all())
    pick = torch.randperm(c.shape[0], device=c.device)[:rows]
    ref = a[pick].double() @ b.double()
    return CheckResult("relative-error norm vs float64 (sampled rows)", rel_err(c[pick], ref), tolerance,
                       written)


def rows_check(out, ref_rows: Callable, tolerance: float, rows: int = 256) -> CheckResult:
    """A row-wise operation's output (poisoned before the run): every element written (finite), and the
    relative-error norm over up to `rows` randomly chosen rows against `ref_rows(index)`, their float64
    reference."""
    torch = _torch()
    written = bool(torch.isfinite(out).all())
    pick = torch.randperm(out.shape[0], device=out.device)[:rows]
    return CheckResult("relative-error norm vs float64 (sampled rows)", rel_err(out[pick], ref_rows(pick)),
                       tolerance, written)


def sampled_check(out, ref_at: Callable, tolerance: float, samples: int = 1 << 20) -> CheckResult:
    """An elementwise operation's output (poisoned before the run): every element written (finite), and
    the relative-error norm over up to `samples` randomly chosen elements against `ref_at(index)`, their
    float64 reference."""
    torch = _torch()
    written = bool(torch.isfinite(out).all())
    n = out.numel()
    pick = torch.randperm(n, device=out.device)[:samples] if n <= samples else \
        torch.randint(0, n, (samples,), device=out.device)
    flat = out.reshape(-1)
    return CheckResult("relative-error norm vs float64 (sampled elements)", rel_err(flat[pick], ref_at(pick)),
                       tolerance, written)


# --------------------------------------------------------------------------------------------------
# The registry


@dataclass
class Variant:
    """One way of doing a measurement's operation: `run` is one timed call (rotating buffers if it
    needs to); `check` poisons the output, runs once and compares with the reference; a timed call
    does `calls` operations (samples are divided by it)."""
    name: str
    run: Callable[[], object]
    check: Callable[[], CheckResult]
    calls: int = 1


@dataclass(frozen=True)
class Measurement:
    name: str
    what: str
    sizes: dict                                   # mode -> list of size dicts
    bytes: Callable[[dict, str], int]             # (size, variant) -> bytes one operation must move
    flops: Callable[[dict, str], int]             # (size, variant) -> FLOPs of one operation
    prepare: Callable[[object, dict], tuple]      # (runtime, size) -> ([Variant], [(variant, reason)])
    metrics: Callable[[list], dict]               # results -> {key: metric}
    headline: str
    settings: dict | None = None                  # mode -> Settings, where the defaults don't fit


REGISTRY: dict[str, Measurement] = {}


def register(m: Measurement) -> Measurement:
    if m.name in REGISTRY:
        raise ValueError(f"measurement {m.name!r} registered twice")
    if set(m.sizes) != set(MODES):
        raise ValueError(f"measurement {m.name!r} needs sizes for every mode {MODES}")
    REGISTRY[m.name] = m
    return m


def rotation(rt, set_bytes: int, factor: int = 4, cap: int = 8) -> int:
    """How many copies of a buffer set to rotate among so that together they exceed `factor` times the
    L2 cache (1 when one set already does): a repeated run then cannot be served from the cache."""
    return max(1, min(cap, math.ceil(factor * rt.l2_bytes() / max(1, set_bytes))))


def _cycle(items):
    state = {"i": 0}

    def nxt():
        item = items[state["i"] % len(items)]
        state["i"] += 1
        return item
    return nxt


_DTYPES = {"float32": 4, "bfloat16": 2, "float16": 2}


def _dtype(name: str):
    return getattr(_torch(), name)


def _metric(result: dict, field: str, note: str) -> dict:
    value = result["median_s"] if field == "time" else result[field]
    unit = "s" if field == "time" else UNITS[field]
    return {"value": float(value), "unit": unit, "variant": result["variant"], "size": dict(result["size"]),
            "note": note}


# copy-bandwidth -----------------------------------------------------------------------------------

def _copy_prepare(rt, size):
    torch = _torch()
    from utils.kernels import copy as triton_copy
    n, dtype = size["n"], _dtype(size["dtype"])
    count = rotation(rt, 2 * n * _DTYPES[size["dtype"]])
    pairs = [(torch.randn(n, dtype=dtype, device=rt.device), torch.empty(n, dtype=dtype, device=rt.device))
             for _ in range(count)]
    nxt = _cycle(pairs)

    def checker(op):
        def check():
            src, dst = pairs[0]
            dst.fill_(float("nan"))
            op(src, dst)
            rt.synchronize()
            return exact_check(dst, src)
        return check

    def torch_copy(src, dst):
        dst.copy_(src)

    def tri_copy(src, dst):
        triton_copy(src, dst)

    return [Variant("torch", lambda: torch_copy(*nxt()), checker(torch_copy)),
            Variant("triton", lambda: tri_copy(*nxt()), checker(tri_copy))], []


def _copy_metrics(results):
    n = max(r["size"]["n"] for r in results)
    at = {r["variant"]: r for r in results if r["size"]["n"] == n}
    best = max(at.values(), key=lambda r: r["bandwidth"])
    out = {"bandwidth": _metric(best, "bandwidth", "the faster of torch's copy and the Triton copy at the "
                                "largest size; bytes read plus bytes written over the median time")}
    for v, r in sorted(at.items()):
        out[f"bandwidth_{v}"] = _metric(r, "bandwidth", f"{v} copy at the largest size")
    return out


register(Measurement(
    name="copy-bandwidth",
    what="device-to-device copy bandwidth (bytes read plus bytes written over the median time): torch's "
         "copy and a Triton copy kernel side by side, on buffers far larger than the L2 cache",
    sizes={"full": [{"n": 1 << 28, "dtype": "float32"}, {"n": 1 << 30, "dtype": "float32"}],
           "quick": [{"n": 1 << 26, "dtype": "float32"}],
           "tiny": [{"n": 10007, "dtype": "float32"}]},
    bytes=lambda s, v: 2 * s["n"] * _DTYPES[s["dtype"]],
    flops=lambda s, v: 0,
    prepare=_copy_prepare,
    metrics=_copy_metrics,
    headline="bandwidth",
))


# matmul-rate --------------------------------------------------------------------------------------

def _matmul_prepare(rt, size):
    torch = _torch()
    m, k, n = size["m"], size["k"], size["n"]
    variants, skipped = [], []
    count = rotation(rt, 2 * (m * k + k * n))
    sets = [(torch.randn(m, k, device=rt.device, dtype=torch.bfloat16),
             torch.randn(k, n, device=rt.device, dtype=torch.bfloat16)) for _ in range(count)]
    c = torch.empty(m, n, device=rt.device, dtype=torch.bfloat16)
    nxt = _cycle(sets)

    def run_bf16():
        a, b = nxt()
        torch.matmul(a, b, out=c)

    def check_bf16():
        a, b = sets[0]
        c.fill_(float("nan"))
        torch.matmul(a, b, out=c)
        rt.synchronize()
        return matmul_check(c, a, b, tolerance=1e-2)

    variants.append(Variant("bf16", run_bf16, check_bf16))

    ok, reason = rt.fp8()
    if not ok:
        skipped.append(("fp8", reason))
    else:
        one = torch.ones((), device=rt.device)
        # _scaled_mm wants the second operand column-major: the transpose of a row-major (n, k).
        sets8 = [(torch.randn(m, k, device=rt.device).to(torch.float8_e4m3fn),
                  torch.randn(n, k, device=rt.device).to(torch.float8_e4m3fn).t()) for _ in range(count)]
        c8 = torch.empty(m, n, device=rt.device, dtype=torch.bfloat16)
        nxt8 = _cycle(sets8)

        def run_fp8():
            a, b = nxt8()
            torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16, out=c8)

        def check_fp8():
            a, b = sets8[0]
            c8.fill_(float("nan"))
            torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16, out=c8)
            rt.synchronize()
            return matmul_check(c8, a, b, tolerance=1e-2)   # the reference reads the fp8 values exactly

        variants.append(Variant("fp8", run_fp8, check_fp8))
    return variants, skipped


def _matmul_metrics(results):
    out = {}
    for v, key in (("bf16", "bf16_rate"), ("fp8", "fp8_rate")):
        rs = [r for r in results if r["variant"] == v]
        if rs:
            best = max(rs, key=lambda r: r["flop_rate"])
            out[key] = _metric(best, "flop_rate", f"best {v} rate over the square sizes (2*m*n*k FLOP over "
                               "the median time)")
    return out


def _square(sizes):
    return [{"m": s, "k": s, "n": s} for s in sizes]


register(Measurement(
    name="matmul-rate",
    what="dense matrix product rate through torch on large square matrices: bf16, and fp8 (e4m3, "
         "tensor-wise scale, bf16 output) where the GPU has it",
    sizes={"full": _square([4096, 8192, 16384]), "quick": _square([2048, 4096]), "tiny": _square([64])},
    bytes=lambda s, v: (1 if v == "fp8" else 2) * (s["m"] * s["k"] + s["k"] * s["n"]) + 2 * s["m"] * s["n"],
    flops=lambda s, v: 2 * s["m"] * s["n"] * s["k"],
    prepare=_matmul_prepare,
    metrics=_matmul_metrics,
    headline="bf16_rate",
))


# gemm-batch-sweep ---------------------------------------------------------------------------------

def _sweep_prepare(rt, size):
    torch = _torch()
    m, k, n = size["m"], size["k"], size["n"]
    key = ("sweep-weights", k, n)
    if key not in rt.cache:        # one W per run, its float64 copy for the check, clones to rotate
        w = torch.randn(k, n, device=rt.device, dtype=torch.bfloat16)
        count = rotation(rt, 2 * k * n)
        rt.cache[key] = ([w] + [w.clone() for _ in range(count - 1)], w.double())
    ws, w64 = rt.cache[key]
    x = torch.randn(m, k, device=rt.device, dtype=torch.bfloat16)
    y = torch.empty(m, n, device=rt.device, dtype=torch.bfloat16)
    nxt = _cycle(ws)

    def run():
        torch.matmul(x, nxt(), out=y)

    def check():
        y.fill_(float("nan"))
        torch.matmul(x, ws[0], out=y)
        rt.synchronize()
        written = bool(torch.isfinite(y).all())
        pick = torch.randperm(m, device=y.device)[:256]
        return CheckResult("relative-error norm vs float64 (sampled rows)",
                           rel_err(y[pick], x[pick].double() @ w64), 1e-2, written)

    return [Variant("bf16", run, check)], []


def _sweep_metrics(results):
    rs = sorted(results, key=lambda r: r["size"]["m"])
    lo, hi = rs[0], rs[-1]
    knee = lo["median_s"] * hi["size"]["m"] / hi["median_s"]
    out = {
        "time_m1": _metric(lo, "time", "median time of y = x W at the smallest batch"),
        "bandwidth_m1": _metric(lo, "bandwidth", "bytes (W once, plus x and y) over the median time at the "
                                "smallest batch: the decode floor"),
        "flop_rate_mmax": _metric(hi, "flop_rate", "FLOP rate at the largest batch"),
        "knee_m": {"value": float(knee), "unit": "", "variant": lo["variant"],
                   "size": {"k": lo["size"]["k"], "n": lo["size"]["n"]},
                   "note": "batch at which the flat time of the smallest batch meets the line through the "
                           "origin and the largest batch's time: the measured ridge, in rows of x"},
    }
    return out


_SWEEP_FULL = sorted({1 << i for i in range(13)} | {3 << i for i in range(4, 11)})


register(Measurement(
    name="gemm-batch-sweep",
    what="y = x W for one large bf16 weight W and a batch of M rows in x, M from one row to thousands: "
         "the decode roofline, flat while reading W dominates, then linear in M past the ridge",
    sizes={"full": [{"m": m, "k": 8192, "n": 8192} for m in _SWEEP_FULL],
           "quick": [{"m": m, "k": 4096, "n": 4096} for m in (1, 8, 64, 512, 4096)],
           "tiny": [{"m": m, "k": 64, "n": 48} for m in (1, 3, 8, 32)]},
    bytes=lambda s, v: 2 * (s["k"] * s["n"] + s["m"] * s["k"] + s["m"] * s["n"]),
    flops=lambda s, v: 2 * s["m"] * s["k"] * s["n"],
    prepare=_sweep_prepare,
    metrics=_sweep_metrics,
    headline="knee_m",
))


# host-device-copy ---------------------------------------------------------------------------------

def _host_prepare(rt, size):
    torch = _torch()
    n, dtype = size["n"], _dtype(size["dtype"])
    host_src = torch.randn(n, dtype=dtype)                       # pageable
    pinned_src = rt.pinned_empty(n, dtype)
    pinned_src.copy_(host_src)
    dev = torch.empty(n, dtype=dtype, device=rt.device)
    dev_src = torch.randn(n, dtype=dtype, device=rt.device)
    host_dst = torch.empty(n, dtype=dtype)
    pinned_dst = rt.pinned_empty(n, dtype)

    def h2d(src, pinned):
        def run():
            dev.copy_(src, non_blocking=pinned)

        def check():
            dev.fill_(float("nan"))
            run()
            rt.synchronize()
            return exact_check(dev.cpu(), src)
        return run, check

    def d2h(dst, pinned):
        def run():
            dst.copy_(dev_src, non_blocking=pinned)

        def check():
            dst.fill_(float("nan"))
            run()
            rt.synchronize()
            return exact_check(dst, dev_src.cpu())
        return run, check

    return [Variant("h2d-pinned", *h2d(pinned_src, True)), Variant("h2d-pageable", *h2d(host_src, False)),
            Variant("d2h-pinned", *d2h(pinned_dst, True)), Variant("d2h-pageable", *d2h(host_dst, False))], []


def _host_metrics(results):
    n = max(r["size"]["n"] for r in results)
    return {r["variant"].replace("-", "_"): _metric(r, "bandwidth", f"{r['variant']}: bytes copied over the "
                                                    "median time")
            for r in results if r["size"]["n"] == n}


register(Measurement(
    name="host-device-copy",
    what="host-to-device and device-to-host copy bandwidth, from pinned (page-locked) and from pageable "
         "host memory; bytes = the bytes copied (each crosses the host link once)",
    sizes={"full": [{"n": 1 << 28, "dtype": "float32"}], "quick": [{"n": 1 << 24, "dtype": "float32"}],
           "tiny": [{"n": 1000, "dtype": "float32"}]},
    bytes=lambda s, v: s["n"] * _DTYPES[s["dtype"]],
    flops=lambda s, v: 0,
    prepare=_host_prepare,
    metrics=_host_metrics,
    headline="h2d_pinned",
    settings={"full": Settings(warmup=2, warmup_s=0.1, min_reps=5, max_reps=50, target_s=0.4)},
))


# launch-overhead ----------------------------------------------------------------------------------

def _launch_prepare(rt, size):
    torch = _torch()
    from utils.kernels import tick
    n = size["launches"]
    counter = torch.zeros(1, dtype=torch.int32, device=rt.device)

    def torch_loop():
        for _ in range(n):
            counter.add_(1)

    def triton_loop():
        for _ in range(n):
            tick(counter)

    def checker(fn):
        def check():
            start = int(torch.randint(1, 1 << 20, ()))
            counter.fill_(start)
            fn()
            rt.synchronize()
            return CheckResult("launches missing or extra (counter minus expected)",
                               abs(int(counter.item()) - (start + n)), 0.0, True)
        return check

    variants = [Variant("torch-eager", torch_loop, checker(torch_loop), calls=n),
                Variant("triton-eager", triton_loop, checker(triton_loop), calls=n)]
    try:
        replay = rt.graph(triton_loop)
    except Exception as e:  # noqa: BLE001 - a capture this stack cannot do is recorded, not fatal
        return variants, [("triton-graph", f"CUDA graph capture failed: {type(e).__name__}: {e}"[:300])]
    return variants + [Variant("triton-graph", replay, checker(replay), calls=n)], []


def _launch_metrics(results):
    names = {"torch-eager": ("launch_torch", "a torch kernel (add one to a one-element tensor) launched "
                             "from a Python loop: time per launch"),
             "triton-eager": ("launch_triton", "a Triton kernel (one program adds one to a counter) "
                              "launched from a Python loop: time per launch"),
             "triton-graph": ("graph_replay_per_launch", "the same Triton launches captured in a CUDA graph "
                              "and replayed: time per launch")}
    n = max(r["size"]["launches"] for r in results)
    return {names[r["variant"]][0]: _metric(r, "time", names[r["variant"]][1])
            for r in results if r["size"]["launches"] == n}


register(Measurement(
    name="launch-overhead",
    what="time per launch of a kernel that does next to nothing (one counter incremented, so launches "
         "can be counted): torch and Triton launched from Python, and a CUDA graph of many Triton "
         "launches replayed",
    sizes={"full": [{"launches": 1000}], "quick": [{"launches": 100}], "tiny": [{"launches": 5}]},
    bytes=lambda s, v: 8,
    flops=lambda s, v: 0,
    prepare=_launch_prepare,
    metrics=_launch_metrics,
    headline="launch_torch",
))


# fused-softmax ------------------------------------------------------------------------------------

_SHORT = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}
SOFTMAX_FLOPS_PER_ELEMENT = 5        # compare for the max, subtract, exp, add for the sum, multiply
_SOFTMAX_TOLERANCE = {"float32": 1e-4, "bfloat16": 1e-2, "float16": 1e-2}


def _logits(rows: int, cols: int, dtype, device):
    """Random logits with a spread like a model's (standard deviation 4), never all zeros."""
    torch = _torch()
    return (4 * torch.randn(rows, cols, device=device)).to(dtype)


def _softmax_prepare(rt, size):
    torch = _torch()
    from utils.kernels import softmax as triton_softmax
    rows, cols, name = size["rows"], size["cols"], size["dtype"]
    dtype = _dtype(name)
    count = rotation(rt, 2 * rows * cols * _DTYPES[name])
    pairs = [(_logits(rows, cols, dtype, rt.device), torch.empty(rows, cols, dtype=dtype, device=rt.device))
             for _ in range(count)]
    nxt = _cycle(pairs)

    def checker(op, exact=False):
        def check():
            x, y = pairs[0]
            y.fill_(float("nan"))
            out = op(x, y)
            rt.synchronize()
            if exact:
                return exact_check(out, x)
            return rows_check(out, lambda idx: torch.softmax(x[idx].double(), dim=-1), _SOFTMAX_TOLERANCE[name])
        return check

    def tri(x, y):
        return triton_softmax(x, y)

    def eager(x, y):                 # torch's own fused softmax; it allocates its output
        return torch.softmax(x, dim=-1)

    def copy_(x, y):
        return y.copy_(x)

    return [Variant(v, (lambda op=op: op(*nxt())), checker(op, exact=v == "copy"))
            for v, op in (("triton", tri), ("torch", eager), ("copy", copy_))], []


def _shape_key(size: dict) -> str:
    return f"{_SHORT[size['dtype']]}_{size['cols']}"


def _ratio(value: float, result: dict, note: str) -> dict:
    return {"value": float(value), "unit": "", "variant": result["variant"], "size": dict(result["size"]),
            "note": note}


def _softmax_metrics(results):
    shapes: dict = {}
    for r in results:
        shapes.setdefault(_shape_key(r["size"]), {})[r["variant"]] = r
    out, worst = {}, None
    for key, v in shapes.items():
        tri, cp, eager = v["triton"], v["copy"], v["torch"]
        frac = tri["bandwidth"] / cp["bandwidth"]
        out[f"fraction_of_copy_{key}"] = _ratio(frac, tri, "Triton softmax bandwidth over a torch copy's of the "
                                                "same tensor (same bytes: one read, one write)")
        out[f"time_triton_{key}"] = _metric(tri, "time", "median time of the Triton softmax")
        out[f"time_copy_{key}"] = _metric(cp, "time", "median time of a copy of the same tensor")
        out[f"speedup_vs_torch_{key}"] = _ratio(eager["median_s"] / tri["median_s"], tri,
                                                "torch.softmax's median time over the Triton kernel's")
        if worst is None or frac < worst[0]:
            worst = (frac, tri)
    return {"fraction_of_copy": _ratio(worst[0], worst[1], "the lowest over the shapes of the Triton softmax's "
                                       "bandwidth over a copy's of the same tensor: 'done' is 0.9 or more"),
            **out}


def _softmax_sizes(rows_cols, dtype):
    return [{"rows": r, "cols": c, "dtype": dtype} for r, c in rows_cols]


register(Measurement(
    name="fused-softmax",
    what="row softmax by the book's Triton kernel (one program per row, one read and one write) beside "
         "torch.softmax and a copy of the same tensor, for rows of 1k to 16k columns in bf16 and fp32, "
         "each tensor 256 MiB",
    sizes={"full": _softmax_sizes([(131072, 1024), (32768, 4096), (8192, 16384)], "bfloat16")
           + _softmax_sizes([(65536, 1024), (16384, 4096), (4096, 16384)], "float32"),
           "quick": _softmax_sizes([(8192, 1024), (2048, 4096)], "bfloat16"),
           "tiny": [{"rows": 5, "cols": 37, "dtype": "float32"}, {"rows": 3, "cols": 130, "dtype": "bfloat16"}]},
    bytes=lambda s, v: 2 * s["rows"] * s["cols"] * _DTYPES[s["dtype"]],
    flops=lambda s, v: 0 if v == "copy" else SOFTMAX_FLOPS_PER_ELEMENT * s["rows"] * s["cols"],
    prepare=_softmax_prepare,
    metrics=_softmax_metrics,
    headline="fraction_of_copy",
))


# kernel-fusion ------------------------------------------------------------------------------------

CHAIN_OPS = 5                         # y = gelu(x * a + b) * c + d: mul, add, gelu, mul, add
CHAIN_FLOPS_PER_ELEMENT = 12          # 4 for the mul/add pairs, 8 for the tanh-form gelu (exp counted once)
_CHAIN_TOLERANCE = {"float32": 1e-4, "bfloat16": 1e-2, "float16": 1e-2}


def _fusion_prepare(rt, size):
    torch = _torch()
    from utils.kernels import chain_reference, eager_chain, fused_chain
    n, name = size["n"], size["dtype"]
    dtype = _dtype(name)
    count = rotation(rt, 2 * n * _DTYPES[name])
    pairs = [(torch.randn(n, device=rt.device).to(dtype), torch.empty(n, dtype=dtype, device=rt.device))
             for _ in range(count)]
    nxt = _cycle(pairs)
    # fresh random scalars, bounded away from zero, alternating in sign
    a, b, c, d = [float(v) for v in (torch.rand(4) + 0.5) * torch.tensor([1.0, -1.0, 1.0, -1.0])]

    def checker(op, exact=False):
        def check():
            x, y = pairs[0]
            y.fill_(float("nan"))
            out = op(x, y)
            rt.synchronize()
            if exact:
                return exact_check(out, x)
            return sampled_check(out, lambda idx: chain_reference(x[idx], a, b, c, d), _CHAIN_TOLERANCE[name])
        return check

    def tri(x, y):
        return fused_chain(x, a, b, c, d, y)

    def eager(x, y):
        return eager_chain(x, a, b, c, d, y)

    def copy_(x, y):
        return y.copy_(x)

    variants = [Variant(v, (lambda op=op: op(*nxt())), checker(op, exact=v == "copy"))
                for v, op in (("eager", eager), ("triton", tri), ("copy", copy_))]

    def chain_expr(x):              # what torch.compile sees: the eager chain, returning a new tensor
        t = x * a
        t = t + b
        t = torch.nn.functional.gelu(t, approximate="tanh")
        t = t * c
        return t + d

    try:
        compiled = rt.compile(chain_expr)
        check = checker(lambda x, y: compiled(x))
        first = check()                                    # compiles; a failure here is a skip
        if not first.passed:
            raise RuntimeError(f"the compiled chain failed its check ({first.metric}: {first.error:.3g})")
    except Exception as e:  # noqa: BLE001 - a compiler this stack cannot run is recorded, not fatal
        return variants, [("compile", f"torch.compile failed: {type(e).__name__}: "
                                      f"{str(e).splitlines()[0] if str(e) else ''}"[:300])]
    return variants + [Variant("compile", lambda: compiled(nxt()[0]), check)], []


def _fusion_metrics(results):
    at: dict = {}
    for r in results:
        at.setdefault(r["size"]["n"], {})[r["variant"]] = r
    small, large = at[min(at)], at[max(at)]
    out = {
        "eager_over_fused": _ratio(large["eager"]["median_s"] / large["triton"]["median_s"], large["triton"],
                                   "eager chain's median time over the fused kernel's at the largest size "
                                   "(the byte ratio predicts 5)"),
        "eager_over_fused_smallest": _ratio(small["eager"]["median_s"] / small["triton"]["median_s"],
                                            small["triton"], "the same ratio at the smallest size, where "
                                            "launches, not bytes, set the time"),
        "fused_fraction_of_copy": _ratio(large["copy"]["median_s"] / large["triton"]["median_s"],
                                         large["triton"], "a copy's median time over the fused kernel's at "
                                         "the largest size (same bytes: one read, one write)"),
        "bandwidth_eager": _metric(large["eager"], "bandwidth", "the eager chain's ten passes over the tensor "
                                   "over its median time, at the largest size"),
        "bandwidth_triton": _metric(large["triton"], "bandwidth", "the fused kernel's two passes over its "
                                    "median time, at the largest size"),
    }
    for v in ("eager", "triton", "copy", "compile"):
        if v in small:
            out[f"time_{v}_smallest"] = _metric(small[v], "time", f"median time of the {v} variant at the "
                                                "smallest size")
    if "compile" in large:
        out["compile_over_fused"] = _ratio(large["compile"]["median_s"] / large["triton"]["median_s"],
                                           large["triton"], "torch.compile's chain median time over the fused "
                                           "Triton kernel's, at the largest size")
    return out


register(Measurement(
    name="kernel-fusion",
    what="y = gelu(x * a + b) * c + d on a bf16 tensor of a few thousand to 268 million elements: the "
         "book's fused Triton kernel (one read, one write) against eager torch (five kernels, five reads "
         "and five writes), torch.compile where it works, and a copy of the same tensor",
    sizes={"full": [{"n": 1 << k, "dtype": "bfloat16"} for k in (12, 16, 20, 24, 28)],
           "quick": [{"n": 1 << k, "dtype": "bfloat16"} for k in (12, 20, 24)],
           "tiny": [{"n": 1000, "dtype": "float32"}, {"n": 4099, "dtype": "bfloat16"}]},
    bytes=lambda s, v: (CHAIN_OPS if v == "eager" else 1) * 2 * s["n"] * _DTYPES[s["dtype"]],
    flops=lambda s, v: 0 if v == "copy" else CHAIN_FLOPS_PER_ELEMENT * s["n"],
    prepare=_fusion_prepare,
    metrics=_fusion_metrics,
    headline="eager_over_fused",
))


# attention-forward --------------------------------------------------------------------------------

ATTENTION_BLOCK_Q = 128               # the Triton kernel's query rows per program (utils.kernels.attention)
_ATTENTION_TOLERANCE = {"float32": 2e-3, "float16": 2e-3, "bfloat16": 1e-2}   # fp32: tf32 products on a GPU
_ATTENTION_CHECK_HEADS = 2            # heads compared with the float64 reference at each size


def attention_flops(size: dict) -> int:
    """The two matrix products of every head's forward: 4 N^2 d FLOPs per head (non-causal)."""
    return 4 * size["batch"] * size["heads"] * size["n"] ** 2 * size["d"]


def attention_bytes(size: dict, variant: str) -> int:
    """Device-memory bytes by the chapter's count (attention-traffic), e the element size:
    materialised: Q and K read, S written, S read, P written, P and V read, O written: 4 N^2 e + 4 N d e;
    triton: Q read once, O written once, K and V read once per block of 128 query rows, every block load
    counted as a read of device memory: 2 N d e (1 + ceil(N / 128));
    sdpa: a fused kernel with its own blocks, counted at the floor any tiled kernel moves: 4 N d e."""
    heads, n, d, e = size["batch"] * size["heads"], size["n"], size["d"], _DTYPES[size["dtype"]]
    if variant == "materialised":
        return heads * (4 * n * n * e + 4 * n * d * e)
    if variant == "triton":
        return heads * 2 * n * d * e * (1 + -(-n // ATTENTION_BLOCK_Q))
    return heads * 4 * n * d * e


def _attention_prepare(rt, size):
    torch = _torch()
    import torch.nn.functional as F
    from utils.kernels import attention as triton_attention, materialised_attention
    b, h, n, d, name = size["batch"], size["heads"], size["n"], size["d"], size["dtype"]
    dtype = _dtype(name)
    shape = (b, h, n, d)
    count = rotation(rt, 3 * b * h * n * d * _DTYPES[name])
    # The softmax scale 1/sqrt(d) is folded into Q (as a model can fold it into W_q), so every variant
    # computes softmax(Q K^T) V with scale 1 and the materialised one runs exactly three kernels.
    sets = [((torch.randn(shape, device=rt.device) * d ** -0.5).to(dtype), torch.randn(shape, device=rt.device).to(dtype),
             torch.randn(shape, device=rt.device).to(dtype)) for _ in range(count)]
    out = torch.empty(shape, dtype=dtype, device=rt.device)
    nxt = _cycle(sets)

    def checker(op):
        def check():
            q, k, v = sets[0]
            out.fill_(float("nan"))
            o = op(q, k, v)
            rt.synchronize()
            written = bool(torch.isfinite(o).all())
            pick = torch.randperm(b * h)[:_ATTENTION_CHECK_HEADS].tolist()
            flat = [x.reshape(b * h, n, d) for x in (q, k, v, o)]
            ref = torch.stack([torch.softmax(flat[0][i].double() @ flat[1][i].double().t(), dim=-1) @ flat[2][i].double()
                               for i in pick])
            return CheckResult("relative-error norm vs float64 (sampled heads)", rel_err(flat[3][pick], ref),
                               _ATTENTION_TOLERANCE[name], written)
        return check

    def tri(q, k, v):
        return triton_attention(q, k, v, out, scale=1.0)

    def mat(q, k, v):
        return materialised_attention(q, k, v, out, scale=1.0)

    def sdpa(q, k, v):               # torch's fused attention (it picks the backend); it allocates its output
        return F.scaled_dot_product_attention(q, k, v, scale=1.0)

    return [Variant(v, (lambda op=op: op(*nxt())), checker(op))
            for v, op in (("triton", tri), ("materialised", mat), ("sdpa", sdpa))], []


def _attention_metrics(results):
    at: dict = {}
    for r in results:
        at.setdefault(r["size"]["n"], {})[r["variant"]] = r
    out = {}
    for n, v in sorted(at.items()):
        for name, r in sorted(v.items()):
            out[f"time_{name}_{n}"] = _metric(r, "time", f"median time of the {name} forward at N={n}, all heads")
            out[f"flop_rate_{name}_{n}"] = _metric(r, "flop_rate", f"4 N^2 d FLOPs per head over the median "
                                                   f"time, {name}, N={n}")
        out[f"bandwidth_materialised_{n}"] = _metric(v["materialised"], "bandwidth", "materialised attention's "
                                                     f"counted bytes (4 N^2 e + 4 N d e per head) over its median time, N={n}")
        out[f"speedup_vs_materialised_{n}"] = _ratio(v["materialised"]["median_s"] / v["triton"]["median_s"],
                                                     v["triton"], f"materialised median time over the Triton "
                                                     f"kernel's, N={n}")
    big = at[max(at)]
    out["speedup_vs_materialised"] = _ratio(big["materialised"]["median_s"] / big["triton"]["median_s"], big["triton"],
                                            "materialised attention's median time over the tiled Triton kernel's, "
                                            "at the longest context")
    out["triton_over_sdpa"] = _ratio(big["sdpa"]["median_s"] / big["triton"]["median_s"], big["triton"],
                                     "torch scaled_dot_product_attention's median time over the Triton kernel's, "
                                     "at the longest context (1 = as fast)")
    out["flop_rate_triton"] = _metric(big["triton"], "flop_rate", "the Triton kernel's FLOP rate (4 N^2 d per "
                                      "head) at the longest context")
    return out


def _attention_sizes(n_batch, d=128, heads=16, dtype="bfloat16"):
    return [{"batch": b, "heads": heads, "n": n, "d": d, "dtype": dtype} for n, b in n_batch]


register(Measurement(
    name="attention-forward",
    what="attention forward, softmax(Q K^T) V in bf16 with head dimension 128, at 1k, 4k and 8k context: the "
         "book's tiled Triton kernel (online softmax, the scores never written) against materialised "
         "attention in torch (Q K^T, softmax, P V, each through memory) and torch's "
         "scaled_dot_product_attention; batch x heads sized so Q, K and V are four times the L2 cache",
    sizes={"full": _attention_sizes([(1024, 16), (4096, 4), (8192, 2)]),
           "quick": _attention_sizes([(1024, 4), (4096, 1)]),
           "tiny": [{"batch": 1, "heads": 2, "n": 130, "d": 32, "dtype": "float32"},
                    {"batch": 2, "heads": 1, "n": 64, "d": 16, "dtype": "float16"}]},
    bytes=attention_bytes,
    flops=lambda s, v: attention_flops(s),
    prepare=_attention_prepare,
    metrics=_attention_metrics,
    headline="speedup_vs_materialised",
))


# strided-copy -------------------------------------------------------------------------------------

STRIDES = (1, 2, 4, 8, 16, 32)        # elements between consecutive reads (the coalescing chapter)


def _strided_prepare(rt, size):
    torch = _torch()
    from utils.kernels.strided import strided_copy
    n, s, dtype = size["n"], size["stride"], _dtype(size["dtype"])
    count = rotation(rt, (s + 1) * n * _DTYPES[size["dtype"]])
    pairs = [(torch.randn(n * s, device=rt.device).to(dtype), torch.empty(n, dtype=dtype, device=rt.device))
             for _ in range(count)]
    nxt = _cycle(pairs)

    def checker(op):
        def check():
            src, dst = pairs[0]
            dst.fill_(float("nan"))
            op(src, dst)
            rt.synchronize()
            return exact_check(dst, src[::s])
        return check

    def tri(src, dst):
        strided_copy(src, s, dst)

    def tor(src, dst):               # torch's copy from a strided view
        dst.copy_(src[::s])

    return [Variant(v, (lambda op=op: op(*nxt())), checker(op)) for v, op in (("triton", tri), ("torch", tor))], []


def _strided_metrics(results):
    from utils.kernels.strided import moved_bytes
    tri = {r["size"]["stride"]: r for r in results if r["variant"] == "triton"}
    base = tri[min(tri)]
    out = {}
    for s, r in sorted(tri.items()):
        n, e = r["size"]["n"], _DTYPES[r["size"]["dtype"]]
        out[f"useful_bandwidth_stride_{s}"] = _metric(r, "bandwidth", f"useful bytes (n read, n written) over the "
                                                      f"median time, Triton kernel, stride {s}")
        out[f"moved_bandwidth_stride_{s}"] = {"value": moved_bytes(n, s, e) / r["median_s"], "unit": "B/s",
                                              "variant": "triton", "size": dict(r["size"]),
                                              "note": f"32-byte sectors read plus bytes written over the median "
                                                      f"time, stride {s}"}
        out[f"slowdown_stride_{s}"] = _ratio(r["median_s"] / base["median_s"], r, f"median time at stride {s} "
                                             f"over the median time at stride {min(tri)}, Triton kernel")
    worst = tri[max(tri)]
    out["slowdown_max_stride"] = _ratio(worst["median_s"] / base["median_s"], worst, "median time at the largest "
                                        "stride over the median time at stride 1, Triton kernel (same useful bytes)")
    return out


register(Measurement(
    name="strided-copy",
    what="out[i] = src[i * stride] into a contiguous fp32 output of n elements, strides 1 to 32 elements: the "
         "book's Triton gather and torch's copy from a strided view; useful bytes counted (n read, n written), "
         "32-byte sectors moved in the metrics; src far past the L2 cache",
    sizes={"full": [{"n": 1 << 25, "stride": s, "dtype": "float32"} for s in STRIDES],
           "quick": [{"n": 1 << 22, "stride": s, "dtype": "float32"} for s in STRIDES],
           "tiny": [{"n": 1000, "stride": s, "dtype": "float32"} for s in (1, 3, 32)]},
    bytes=lambda s, v: 2 * s["n"] * _DTYPES[s["dtype"]],
    flops=lambda s, v: 0,
    prepare=_strided_prepare,
    metrics=_strided_metrics,
    headline="slowdown_max_stride",
))


# top-k ----------------------------------------------------------------------------------------------

def _topk_prepare(rt, size):
    torch = _torch()
    from utils.kernels.topk import radix_topk_torch
    rows, cols, k = size["rows"], size["cols"], size["k"]
    count = rotation(rt, rows * cols * 4)
    xs = [_logits(rows, cols, torch.float32, rt.device) for _ in range(count)]
    nxt = _cycle(xs)

    def checker(op):
        def check():
            x = xs[0]
            vals, idx = op(x)
            rt.synchronize()
            ref, _ = torch.topk(x, k, dim=-1)
            differ = int((vals != ref).sum()) + int((x.gather(1, idx) != vals).sum())
            return CheckResult("fraction of top-k values that differ from torch.topk's (or from x at the "
                               "returned indices)", differ / max(1, ref.numel()), 0.0, True)
        return check

    def topk_(x):
        return torch.topk(x, k, dim=-1)

    def sort_(x):                      # the whole row sorted, then the first k kept
        v, i = torch.sort(x, dim=-1, descending=True)
        return v[:, :k], i[:, :k]

    def radix(x):
        return radix_topk_torch(x, k)

    return [Variant(v, (lambda op=op: op(nxt())), checker(op))
            for v, op in (("topk", topk_), ("sort", sort_), ("radix", radix))], []


def _topk_metrics(results):
    at: dict = {}
    for r in results:
        at.setdefault(r["size"]["k"], {})[r["variant"]] = r
    out = {}
    for k, v in sorted(at.items()):
        for name, r in sorted(v.items()):
            out[f"time_{name}_k{k}"] = _metric(r, "time", f"median time of {name} top-{k} over all rows")
        out[f"sort_over_topk_k{k}"] = _ratio(v["sort"]["median_s"] / v["topk"]["median_s"], v["topk"],
                                             f"torch.sort's median time over torch.topk's, k={k}")
        out[f"radix_over_topk_k{k}"] = _ratio(v["radix"]["median_s"] / v["topk"]["median_s"], v["topk"],
                                              f"the torch-op radix select's median time over torch.topk's, k={k}")
    mid = sorted(at)[len(at) // 2]
    out["sort_over_topk"] = _ratio(at[mid]["sort"]["median_s"] / at[mid]["topk"]["median_s"], at[mid]["topk"],
                                   f"torch.sort's median time over torch.topk's at the middle k ({mid})")
    return out


register(Measurement(
    name="top-k",
    what="top-k of each row of a batch of fp32 logits (64 rows of a 128,256-entry vocabulary; k = 1, 50, "
         "1024): torch.topk against a full torch.sort and the book's four-pass radix select in torch ops, "
         "each checked against torch.topk's values exactly",
    sizes={"full": [{"rows": 64, "cols": 128256, "k": k} for k in (1, 50, 1024)],
           "quick": [{"rows": 64, "cols": 128256, "k": k} for k in (1, 50)],
           "tiny": [{"rows": 3, "cols": 1000, "k": k} for k in (1, 5, 17)]},
    bytes=lambda s, v: s["rows"] * s["cols"] * 4,
    flops=lambda s, v: 0,
    prepare=_topk_prepare,
    metrics=_topk_metrics,
    headline="sort_over_topk",
))


# --------------------------------------------------------------------------------------------------
# Running a measurement, provenance, records


def measure(m: Measurement, rt, mode: str, *, log=None) -> dict:
    """Check, then time, every variant at every size of `m`; return the record without its ceilings,
    command and provenance. Raises CheckFailed (nothing timed after it) if a check fails."""
    settings = (m.settings or {}).get(mode, SETTINGS[mode])
    results, checks, skipped = [], [], []
    try:
        for size in m.sizes[mode]:
            variants, skips = m.prepare(rt, size)
            for variant, reason in skips:
                if not any(s["variant"] == variant for s in skipped):
                    skipped.append({"variant": variant, "reason": reason})
                    _say(log, f"{m.name}: {variant} skipped: {reason}")
            for v in variants:                        # correct first: every variant, before any timing
                c = v.check()
                if not c.passed:
                    raise CheckFailed(f"{m.name} {v.name} {_size_text(size)}: check failed ({c.metric}: "
                                      f"{c.error:.3g}, tolerance {c.tolerance:.3g}, all written: {c.all_written})")
                checks.append({"variant": v.name, "size": dict(size), "metric": c.metric, "error": float(c.error),
                               "tolerance": float(c.tolerance), "all_written": c.all_written, "passed": True})
            for v in variants:
                nbytes, nflops = m.bytes(size, v.name), m.flops(size, v.name)
                raw = rt.time(v.run, settings, (nbytes * v.calls, nflops * v.calls, v.calls))
                samples = [float(s) / v.calls for s in raw]
                med = statistics.median(samples)
                results.append({"variant": v.name, "size": dict(size), "calls": v.calls, "bytes": nbytes,
                                "flops": nflops, "samples_s": samples, "median_s": med,
                                "bandwidth": nbytes / med, "flop_rate": nflops / med})
                _say(log, f"{m.name}: {v.name:<13} {_size_text(size):<26} median {human(med, 's'):>10}  "
                          f"{human(nbytes / med, 'B/s'):>11}  {human(nflops / med, 'FLOP/s'):>14}")
            variants = None
            rt.free()
    finally:
        rt.free(everything=True)
    return {"schema_version": SCHEMA_VERSION, "name": m.name, "what": m.what, "mode": mode,
            "sizes": [dict(s) for s in m.sizes[mode]], "units": dict(UNITS), "results": results,
            "metrics": m.metrics(results), "headline": m.headline, "checks": checks, "skipped": skipped,
            "method": {"timer": rt.timer, "statistic": "median", **asdict(settings)}}


def _size_text(size: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in size.items())


def _say(log, line: str):
    if log is not None:
        print(line, file=log, flush=True)


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "unknown"


def _run_text(cmd: list[str]) -> str | None:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=20, cwd=ROOT)
    except (OSError, subprocess.SubprocessError):
        return None
    return p.stdout.strip() if p.returncode == 0 else None


def driver_version() -> str:
    out = _run_text(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"])
    return out.splitlines()[0].strip() if out else "unknown"


def git_state() -> tuple[str, bool | None]:
    commit = _run_text(["git", "rev-parse", "HEAD"])
    if not commit or not re.fullmatch(r"[0-9a-f]{40}", commit):
        return "unknown", None
    status = _run_text(["git", "status", "--porcelain", "--untracked-files=no"])
    return commit, (None if status is None else bool(status))


def provenance(rt, when: _dt.datetime) -> dict:
    import torch
    try:
        import triton
        triton_version = triton.__version__
    except ImportError:
        triton_version = "not installed"
    info = rt.device_info()
    commit, dirty = git_state()
    return {"gpu": info["gpu"], "gpu_slug": slug(info["gpu"]), "capability": info["capability"],
            "sm_count": info["sm_count"], "memory_bytes": info["memory_bytes"], "l2_bytes": info["l2_bytes"],
            "driver": driver_version(), "cuda": info["cuda"], "torch": torch.__version__,
            "triton": triton_version, "python": platform.python_version(),
            "date": when.strftime("%Y-%m-%dT%H:%M:%SZ"), "run_id": when.strftime("%Y%m%dT%H%M%SZ"),
            "git_commit": commit, "git_dirty": dirty}


def record_filename(record: dict) -> str:
    p = record["provenance"]
    return f"{record['name']}--{p['gpu_slug']}--{p['run_id']}.json"


def ceilings_of(records: dict) -> dict:
    copy, mm = records["copy-bandwidth"], records["matmul-rate"]
    return {"copy_bandwidth": {**copy["metrics"]["bandwidth"], "from": "copy-bandwidth"},
            "bf16_matmul_rate": {**mm["metrics"]["bf16_rate"], "from": "matmul-rate"}}


def run(names: list[str], *, out: Path, mode: str, runtime, command: str, stdout=None, log=None) -> int:
    """Measure the two ceilings and `names`; write one validated record per measurement of `names`
    into `out`; print the table last. Returns the exit status: 0, or 1 if any measurement failed."""
    stdout = stdout or sys.stdout
    when = _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0)
    prov = provenance(runtime, when)
    _say(log, f"measuring on {prov['gpu']} ({mode} sizes): {', '.join(names)}; the ceilings "
              f"({', '.join(CEILING_SOURCES)}) first")
    records, failed = {}, {}
    for name in [*CEILING_SOURCES, *[n for n in names if n not in CEILING_SOURCES]]:
        try:
            records[name] = measure(REGISTRY[name], runtime, mode, log=log)
        except Exception as e:  # noqa: BLE001 - one failing measurement must not hide the others
            failed[name] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            _say(log, f"{name}: FAILED, no record written: {failed[name]}")
    written = {}
    if any(c in failed for c in CEILING_SOURCES):
        _say(log, "the ceilings could not be measured, so no record is written")
        for n in names:
            failed.setdefault(n, "not written: the ceilings were not measured")
    else:
        ceilings = ceilings_of(records)
        out.mkdir(parents=True, exist_ok=True)
        for name in names:
            if name not in records:
                continue
            rec = {**records[name], "command": command, "ceilings": ceilings, "provenance": prov}
            rec = {k: rec[k] for k in _FIELD_ORDER}
            validate(rec)
            path = out / record_filename(rec)
            with open(path, "x") as f:
                f.write(json.dumps(rec, indent=1, allow_nan=False) + "\n")
            written[name] = path
    print(table(names, records, written, failed, prov), file=stdout, flush=True)
    return 1 if failed else 0


_FIELD_ORDER = ("schema_version", "name", "what", "command", "mode", "sizes", "units", "results", "metrics",
                "headline", "ceilings", "checks", "skipped", "method", "provenance")


def table(names, records, written, failed, prov) -> str:
    lines = [f"{'measurement':<18} {'metric':<24} {'median':>12}  {'of ceiling':>10}  record",
             "-" * 100]
    ceil = ceilings_of(records) if all(c in records for c in CEILING_SOURCES) else None
    for name in names:
        if name in failed:
            lines.append(f"{name:<18} FAILED: {failed[name]}"[:160])
            continue
        rec = records[name]
        met = rec["metrics"][rec["headline"]]
        frac = ""                                  # host copies cross the host link, not device memory
        if ceil and met["unit"] == "B/s" and name != "host-device-copy":
            frac = f"{met['value'] / ceil['copy_bandwidth']['value']:.2f}"
        elif ceil and met["unit"] == "FLOP/s":
            frac = f"{met['value'] / ceil['bf16_matmul_rate']['value']:.2f}"
        where = written[name].name if name in written else "(not written)"
        lines.append(f"{name:<18} {rec['headline']:<24} {human(met['value'], met['unit']):>12}  {frac:>10}  {where}")
    if ceil:
        cb, mr = ceil["copy_bandwidth"]["value"], ceil["bf16_matmul_rate"]["value"]
        lines.append(f"ceilings: copy {human(cb, 'B/s')}, bf16 matmul {human(mr, 'FLOP/s')}, ridge "
                     f"{mr / cb:.0f} FLOP/B; {prov['gpu']}, torch {prov['torch']}, triton {prov['triton']}, "
                     f"CUDA {prov['cuda']}, driver {prov['driver']}")
    return "\n".join(lines)


_PREFIXES = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""), (1e-3, "m"),
             (1e-6, "u"), (1e-9, "n"))


def human(value: float, unit: str) -> str:
    """Three significant digits with an SI prefix: human(4.3e12, 'B/s') -> '4.30 TB/s' (ASCII only)."""
    if unit == "":
        return f"{value:.0f}" if abs(value) >= 100 else f"{value:.3g}"
    if value == 0:
        return f"0 {unit}"
    scale, prefix = next(((s, p) for s, p in _PREFIXES if abs(value) >= s), _PREFIXES[-1])
    v = value / scale
    decimals = max(0, 2 - math.floor(math.log10(abs(v)))) if v else 0
    return f"{v:.{decimals}f} {prefix}{unit}"


# --------------------------------------------------------------------------------------------------
# Validation against utils/measure_schema.json (a subset of JSON Schema, standard library only)


class SchemaError(ValueError):
    pass


_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}


def _type_ok(value, t: str) -> bool:
    if t == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if t == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return isinstance(value, _TYPES[t])


def _check(value, schema: dict, root: dict, path: str, errors: list):
    if "$ref" in schema:
        ref = schema["$ref"]
        node = root
        for part in ref.lstrip("#/").split("/"):
            node = node[part]
        return _check(value, node, root, path, errors)
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_type_ok(value, t) for t in types):
            errors.append(f"{path}: expected {' or '.join(types)}, got {type(value).__name__}")
            return
    if "enum" in schema and not any(value == e and type(value) is type(e) for e in schema["enum"]):
        errors.append(f"{path}: {value!r} is not one of {schema['enum']}")
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            errors.append(f"{path}: empty")
        if "pattern" in schema and not re.search(schema["pattern"], value):
            errors.append(f"{path}: {value!r} does not match {schema['pattern']}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{path}: {value} < {schema['minimum']}")
        if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
            errors.append(f"{path}: {value} <= {schema['exclusiveMinimum']}")
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            errors.append(f"{path}: fewer than {schema['minItems']} items")
        if "items" in schema:
            for i, item in enumerate(value):
                _check(item, schema["items"], root, f"{path}[{i}]", errors)
    if isinstance(value, dict):
        if len(value) < schema.get("minProperties", 0):
            errors.append(f"{path}: fewer than {schema['minProperties']} fields")
        for key in schema.get("required", []):
            if key not in value:
                errors.append(f"{path}: missing field {key!r}")
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            if key in props:
                _check(item, props[key], root, f"{path}.{key}", errors)
            elif extra is False:
                errors.append(f"{path}: unknown field {key!r}")
            elif isinstance(extra, dict):
                _check(item, extra, root, f"{path}.{key}", errors)


_SCHEMA_CACHE: list = []


def schema() -> dict:
    if not _SCHEMA_CACHE:
        _SCHEMA_CACHE.append(json.loads(SCHEMA_PATH.read_text()))
    return _SCHEMA_CACHE[0]


def errors(record) -> list[str]:
    """Everything wrong with a record: the schema, then the arithmetic that ties its fields together
    (each median is its samples' median, each rate its counts over the median, the headline exists)."""
    errs: list[str] = []
    _check(record, schema(), schema(), "record", errs)
    if errs:
        return errs
    for i, r in enumerate(record["results"]):
        where = f"record.results[{i}]"
        if not math.isclose(r["median_s"], statistics.median(r["samples_s"]), rel_tol=1e-9):
            errs.append(f"{where}: median_s is not the median of samples_s")
        for field, count in (("bandwidth", "bytes"), ("flop_rate", "flops")):
            if not math.isclose(r[field], r[count] / r["median_s"], rel_tol=1e-9):
                errs.append(f"{where}: {field} is not {count} / median_s")
    if record["headline"] not in record["metrics"]:
        errs.append(f"record.headline: {record['headline']!r} is not one of the metrics")
    if record["mode"] != "tiny" and record["method"]["timer"] == "fake":
        errs.append("record.method.timer: a fake timer can only write a 'tiny' record")
    return errs


def validate(record) -> None:
    """Raise SchemaError, listing every problem, unless `record` is a valid measurement record."""
    errs = errors(record)
    if errs:
        raise SchemaError(f"invalid measurement record ({len(errs)} problems): " + "; ".join(errs))


# --------------------------------------------------------------------------------------------------
# Command line


class _Parser(argparse.ArgumentParser):
    def error(self, message):                  # one line, status 2 (argparse's own prints usage too)
        self.exit(2, f"utils.measure: {message} (see --help)\n")


def _parser() -> _Parser:
    p = _Parser(prog="python3 -m utils.measure",
                description="Run the book's GPU measurements and write one JSON record per measurement.")
    p.add_argument("--only", nargs="+", action="extend", metavar="NAME", choices=list(REGISTRY),
                   help="measure only these (the two ceilings are measured anyway, and stored in every "
                        "record): " + ", ".join(REGISTRY))
    p.add_argument("--out", type=Path, default=None, metavar="DIR",
                   help=f"where the records go (default: {DEFAULT_OUT.relative_to(ROOT)}/)")
    p.add_argument("--quick", action="store_true", help="much smaller sizes and fewer runs (a smoke test)")
    p.add_argument("--list", action="store_true", help="list the measurements and exit")
    return p


def main(argv: list[str] | None = None, *, runtime=None, mode: str | None = None, stdout=None,
         stderr=None) -> int:
    """The command. Tests pass a FakeRuntime and mode='tiny'; otherwise the CUDA runtime is used."""
    argv = list(sys.argv[1:] if argv is None else argv)
    stdout, stderr = stdout or sys.stdout, stderr or sys.stderr
    try:
        args = _parser().parse_args(argv)
    except SystemExit as e:
        return int(e.code or 0)
    if args.list:
        for m in REGISTRY.values():
            print(f"{m.name:<18} {m.what}", file=stdout)
        return 0
    names = [n for n in REGISTRY if not args.only or n in args.only]
    mode = mode or ("quick" if args.quick else "full")
    if mode not in MODES:
        print(f"utils.measure: unknown mode {mode!r}", file=stderr)
        return 2
    if runtime is None:
        reason = _no_gpu_reason()
        if reason:
            print(f"utils.measure: no CUDA GPU here ({reason}); nothing measured", file=stderr)
            return 2
        runtime = CudaRuntime()
    command = shlex.join(["python3", "-m", "utils.measure", *argv])
    return run(names, out=args.out or DEFAULT_OUT, mode=mode, runtime=runtime, command=command,
               stdout=stdout, log=stderr)


def _no_gpu_reason() -> str | None:
    try:
        import torch
    except ImportError:
        return f"torch is not installed for {Path(sys.executable).name}"
    if not torch.cuda.is_available():
        return "torch.cuda.is_available() is False"
    if os.environ.get("TRITON_INTERPRET") == "1":
        return "TRITON_INTERPRET=1 is set, which would run the Triton kernels on the CPU; unset it"
    return None


def live(name: str, *, runtime=None, mode: str = "quick") -> dict:
    """Measure `name` now (quick sizes by default) and return its record, unwritten and without
    ceilings. For utils.measured's live re-measurement; needs a CUDA GPU unless a runtime is given."""
    if name not in REGISTRY:
        raise KeyError(f"unknown measurement {name!r}; valid: {', '.join(REGISTRY)}")
    rt = runtime or CudaRuntime()
    when = _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0)
    rec = measure(REGISTRY[name], rt, mode)
    return {**rec, "command": "utils.measure.live", "ceilings": None, "provenance": provenance(rt, when)}


if __name__ == "__main__":
    sys.exit(main())
