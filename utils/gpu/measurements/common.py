"""What every measurement definition is built from: the modes and units of a record, the timing
Settings a measurement may override, the correctness checks, Variant and Measurement, the REGISTRY
that `register` fills (utils/gpu/measurements/__init__.py imports the definitions in registry order), and
the small helpers the definitions share.

Standard library only at import time, like the rest of the harness: torch is imported when a check or
a `prepare` runs. utils.measure (the runner and the command) imports from here; nothing here imports
utils.measure, so there is no import cycle.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from utils.gpu.kernels import rel_err  # the one definition (utils.gpu.kernels loads its kernels on first use)

MODES = ("full", "quick", "tiny")
UNITS = {"samples_s": "s", "median_s": "s", "bytes": "B", "flops": "FLOP", "bandwidth": "B/s",
         "flop_rate": "FLOP/s"}


@dataclass(frozen=True)
class Settings:
    """How many runs: at least `warmup` warm-up calls lasting at least `warmup_s` seconds; then enough
    timed calls for about `target_s` seconds, but no fewer than `min_reps` and no more than `max_reps`."""
    warmup: int
    warmup_s: float
    min_reps: int
    max_reps: int
    target_s: float


def _torch():
    import torch
    return torch


def _dtype(name: str):
    return getattr(_torch(), name)


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
    overhead_s: float = 0.0                       # seconds outside the timed loops (a profiler's child), for --estimate


REGISTRY: dict[str, Measurement] = {}


def register(m: Measurement) -> Measurement:
    if m.name in REGISTRY:
        raise ValueError(f"measurement {m.name!r} registered twice")
    if set(m.sizes) != set(MODES):
        raise ValueError(f"measurement {m.name!r} needs sizes for every mode {MODES}")
    REGISTRY[m.name] = m
    return m


# --------------------------------------------------------------------------------------------------
# Helpers the definitions share


def poisoned_check(rt, pair, op, compare: Callable) -> Callable[[], CheckResult]:
    """The check an elementwise measurement runs before timing: poison the output with NaN, run
    op(src, dst), synchronise, and compare what op produced (its return value, or dst where it returns
    None) with src, so an element the kernel never wrote cannot pass."""
    def check():
        src, dst = pair
        dst.fill_(float("nan"))
        out = op(src, dst)
        rt.synchronize()
        return compare(dst if out is None else out, src)
    return check


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


def _metric(result: dict, field: str, note: str) -> dict:
    value = result["median_s"] if field == "time" else result[field]
    unit = "s" if field == "time" else UNITS[field]
    return {"value": float(value), "unit": unit, "variant": result["variant"], "size": dict(result["size"]),
            "note": note}


def _ratio(value: float, result: dict, note: str) -> dict:
    return {"value": float(value), "unit": "", "variant": result["variant"], "size": dict(result["size"]),
            "note": note}


def _logits(rows: int, cols: int, dtype, device):
    """Random logits with a spread like a model's (standard deviation 4), never all zeros."""
    torch = _torch()
    return (4 * torch.randn(rows, cols, device=device)).to(dtype)
