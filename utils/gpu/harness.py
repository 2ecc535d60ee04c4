"""The book's GPU measurement harness: a registry of measurements, and the command that runs them.

    python3 -m utils.measure [--only NAME ...] [--out DIR] [--quick | --fake] [--archive F.tar.gz] [--estimate] [--list]

On a machine with a CUDA GPU it runs the selected measurements (all by default), checks each kernel's
output against a reference before timing it, times it with CUDA events, and writes one JSON record per
measurement into DIR (default book/measurements/), named `<name>--<gpu-slug>--<UTC timestamp>.json`.
It prints a short table last. Without a CUDA GPU it says so in one line and exits with status 2; bad
arguments likewise. A failed correctness check (or any error) in a measurement writes no record for it
and makes the exit status 1. Records are data produced by this command, never typed by hand;
`validate` (utils/gpu/schema.py) checks one against utils/gpu/schema.json.

Every measurement in REGISTRY (defined in utils/gpu/measurements/, one module per subject) has a name,
what it measures, its byte and FLOP counts as functions of its size, a correctness check against a
torch reference (built, with the variants, by `prepare`), and a timing routine (the runtime's `time`,
the same for all). The method is the book's (see
book/measurement-method.md): count bytes and FLOPs first; correct first (fresh random inputs, never
zeros; outputs poisoned with NaN, every element checked written; relative-error norm against float64);
warm up; time with CUDA events; take the median of many runs; use buffers well past the L2 cache and
rotate among copies where the cache could flatter; measure the two ceilings (device-to-device copy
bandwidth and bf16 matmul rate) in the same run, and store them in every record.

This module imports only the standard library at import time; torch and triton (and the kernels in
utils.gpu.kernels) are imported when something is measured, so `--help`, `--list` and the no-GPU message
work where torch is absent. The GPU machines that run it have no pint, sympy or Jupyter.

Timing is the runtime's job: CudaRuntime times with CUDA events; FakeRuntime (for the tests) runs the
same code on CPU tensors (Triton kernels under TRITON_INTERPRET=1) and returns deterministic samples, so
every line of the record path but the timing itself runs on a machine with no GPU.

Chapters: attention-traffic, bank-conflicts, coalescing, decode-roofline, deterministic-sampling,
flash-attention-versions, fused-softmax, gemm-tiling, kernel-fusion, occupancy, prefill-vs-decode, triton-vs-cuda,
vector-add-and-copies.
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
from dataclasses import asdict
from pathlib import Path
from typing import Callable

# The measurement definitions (utils/gpu/measurements/, registered in REGISTRY on import, the ceilings
# first) and the record validation (utils/gpu/schema.py). They import nothing from this module.
# Names the chapters' notebooks and the tests read as `measure.X` are re-exported here.
import utils.gpu.measurements  # noqa: F401 - fills REGISTRY
from utils.gpu.measurements.attention_forward import ATTENTION_BLOCK_Q  # noqa: F401
from utils.gpu.measurements.common import (  # noqa: F401
    _DTYPES,
    MODES,
    REGISTRY,
    UNITS,
    CheckResult,
    Measurement,
    Settings,
    Variant,
    _torch,
    register,
    rel_err,
    rotation,
)
from utils.gpu.measurements.fused_softmax import _SHORT, SOFTMAX_FLOPS_PER_ELEMENT, _shape_key  # noqa: F401
from utils.gpu.measurements.kernel_fusion import CHAIN_OPS  # noqa: F401
from utils.gpu.schema import SchemaError, errors, schema, validate  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OUT = ROOT / "book" / "measurements"
SCHEMA_VERSION = 1
CEILING_SOURCES = ("copy-bandwidth", "matmul-rate")   # measured in every run, first


# --------------------------------------------------------------------------------------------------
# Timing settings and runtimes


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
        # CPU tensors go when their last reference does; no collection here (in a test process holding the whole
        # suite's objects, each full collection costs most of a second, six of them a measurement).
        if everything:
            self.cache.clear()


# --------------------------------------------------------------------------------------------------
# Running a measurement, provenance, records


class CheckFailed(RuntimeError):
    pass


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


def git_state() -> tuple[str, bool | None, str]:
    """(commit, dirty, where it came from). A tree copied to a GPU machine has no .git: the command
    that sends it passes the commit as BOOK_GIT_COMMIT, so the record still names what was measured."""
    commit = _run_text(["git", "rev-parse", "HEAD"])
    if commit and re.fullmatch(r"[0-9a-f]{40}", commit):
        status = _run_text(["git", "status", "--porcelain", "--untracked-files=no"])
        return commit, (None if status is None else bool(status)), "git"
    given = os.environ.get("BOOK_GIT_COMMIT", "").strip().lower()
    if re.fullmatch(r"[0-9a-f]{7,40}", given):
        return given, None, "BOOK_GIT_COMMIT"
    return "unknown", None, "none"


_SMI_FIELDS = {"clocks.sm": "sm_clock_mhz", "clocks.mem": "memory_clock_mhz", "clocks.max.sm": "sm_clock_max_mhz",
               "clocks.max.mem": "memory_clock_max_mhz", "power.limit": "power_limit_w",
               "power.draw": "power_draw_w", "temperature.gpu": "temperature_c"}


def gpu_state() -> dict:
    """Clocks, power limit and draw, and temperature from nvidia-smi (None where it cannot say)."""
    out = _run_text(["nvidia-smi", f"--query-gpu={','.join(_SMI_FIELDS)}", "--format=csv,noheader,nounits"])
    values = [v.strip() for v in out.splitlines()[0].split(",")] if out else []
    state = {}
    for i, key in enumerate(_SMI_FIELDS.values()):
        try:
            state[key] = float(values[i])
        except (IndexError, ValueError):
            state[key] = None
    return state


def gpu_uuid() -> str:
    out = _run_text(["nvidia-smi", "--query-gpu=uuid", "--format=csv,noheader"])
    return out.splitlines()[0].strip() if out else "unknown"


def provenance(rt, when: _dt.datetime) -> dict:
    import torch
    try:
        import triton
        triton_version = triton.__version__
    except ImportError:
        triton_version = "not installed"
    info = rt.device_info()
    commit, dirty, where = git_state()
    return {"gpu": info["gpu"], "gpu_slug": slug(info["gpu"]), "gpu_uuid": gpu_uuid(), "capability": info["capability"],
            "sm_count": info["sm_count"], "memory_bytes": info["memory_bytes"], "l2_bytes": info["l2_bytes"],
            "driver": driver_version(), "cuda": info["cuda"], "torch": torch.__version__,
            "triton": triton_version, "python": platform.python_version(),
            "date": when.strftime("%Y-%m-%dT%H:%M:%SZ"), "run_id": when.strftime("%Y%m%dT%H%M%SZ"),
            "git_commit": commit, "git_dirty": dirty, "git_source": where}


def record_filename(record: dict) -> str:
    p = record["provenance"]
    return f"{record['name']}--{p['gpu_slug']}--{p['run_id']}.json"


def ceilings_of(records: dict) -> dict:
    copy, mm = records["copy-bandwidth"], records["matmul-rate"]
    return {"copy_bandwidth": {**copy["metrics"]["bandwidth"], "from": "copy-bandwidth"},
            "bf16_matmul_rate": {**mm["metrics"]["bf16_rate"], "from": "matmul-rate"}}


def run(names: list[str], *, out: Path, mode: str, runtime, command: str, stdout=None, log=None,
        archive: Path | None = None) -> int:
    """Measure the two ceilings, then `names`; write each validated record the moment its measurement
    finishes (a run cut short keeps what it did), with a line per record; a measurement that fails is
    recorded as that measurement's error in the run's manifest and the run goes on. `archive` (a
    .tar.gz) is rewritten after every record with all of the run's records and its manifest, so a copy
    that comes back from a remote machine holds everything written so far. Prints the table last.
    Returns 0, or 1 if any measurement failed."""
    stdout = stdout or sys.stdout
    when = _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0)
    prov = provenance(runtime, when)
    prov["gpu_state_start"] = gpu_state() if runtime.timer == "cuda-events" else {}
    out.mkdir(parents=True, exist_ok=True)
    manifest_path = out / f"run--{prov['gpu_slug']}--{prov['run_id']}.manifest"   # JSON; not a record
    manifest = {"command": command, "mode": mode, "provenance": prov, "written": [], "failed": {}}
    _say(log, f"measuring on {prov['gpu']} ({mode} sizes): {', '.join(names)}; the ceilings "
              f"({', '.join(CEILING_SOURCES)}) first")
    records, failed, written = {}, {}, {}
    ceilings, pending = None, []          # records wait only until both ceilings are known
    order = [*CEILING_SOURCES, *[n for n in names if n not in CEILING_SOURCES]]
    for name in order:
        try:
            records[name] = measure(REGISTRY[name], runtime, mode, log=log)
        except Exception as e:  # noqa: BLE001 - one failing measurement must not hide the others
            failed[name] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            _say(log, f"{name}: FAILED, no record written: {failed[name]}")
        if name in records and name in names:
            pending.append(name)
        if name == CEILING_SOURCES[-1] and not all(c in records for c in CEILING_SOURCES):
            _say(log, "the ceilings could not both be measured: the records carry ceilings: null")
        elif name == CEILING_SOURCES[-1]:
            ceilings = ceilings_of(records)
        if order.index(name) < len(CEILING_SOURCES) - 1:
            continue
        for done in pending:
            rec = {**records[done], "command": command, "ceilings": ceilings, "provenance": prov}
            rec = {k: rec[k] for k in _FIELD_ORDER}
            try:
                validate(rec)
            except SchemaError as e:
                failed[done] = f"SchemaError: {str(e).splitlines()[0]}"
                _say(log, f"{done}: FAILED, record invalid: {failed[done]}")
                continue
            path = out / record_filename(rec)
            with open(path, "x") as f:
                f.write(json.dumps(rec, indent=1, allow_nan=False) + "\n")
            written[done] = path
            _say(log, f"{done}: record written: {path}")
        pending = []
        manifest["written"] = [p.name for p in written.values()]
        manifest["failed"] = {n: failed[n] for n in failed if n in names}
        manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
        if archive is not None:
            _pack(archive, [*written.values(), manifest_path])
    if runtime.timer == "cuda-events":
        prov["gpu_state_end"] = gpu_state()
        manifest["provenance"] = prov
        manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
        if archive is not None:
            _pack(archive, [*written.values(), manifest_path])
    print(table(names, records, written, failed, prov), file=stdout, flush=True)
    return 1 if any(n in failed for n in names) else 0


def _pack(archive: Path, files: list[Path]) -> None:
    """Write the archive afresh (to a temporary name, then renamed, so a kill never leaves half a file)."""
    import tarfile
    archive.parent.mkdir(parents=True, exist_ok=True)
    tmp = archive.with_name(archive.name + ".part")
    with tarfile.open(tmp, "w:gz") as tar:
        for f in files:
            tar.add(f, arcname=f"measurements/{f.name}")
    os.replace(tmp, archive)


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
    p.add_argument("--fake", action="store_true",
                   help="no GPU: every measurement end to end at tiny sizes on CPU tensors with a fake timer "
                        "(Triton kernels under TRITON_INTERPRET=1, which must be set); records say timer 'fake'")
    p.add_argument("--archive", type=Path, default=None, metavar="FILE.tar.gz",
                   help="also pack every record of this run (and its manifest) into one archive, rewritten "
                        "after each record")
    p.add_argument("--estimate", action="store_true", help="print the run's estimated duration and exit")
    p.add_argument("--list", action="store_true", help="list the measurements and exit")
    return p


def estimate_s(names: list[str], mode: str) -> float:
    """A rough estimate of a run's wall time (not a measurement): per size and variant, the warm-up and the timed
    repetitions at most, plus a compile allowance per Triton kernel variant (first-call JIT)."""
    st = SETTINGS.get(mode, SETTINGS["quick"])
    total = 0.0
    for name in dict.fromkeys([*CEILING_SOURCES, *names]):
        m = REGISTRY[name]
        variants = max(1, len(getattr(m, "variants", ()) or ()) or 2)
        total += len(m.sizes[mode]) * variants * (st.warmup_s + 2 * st.target_s + 0.5) + 3.0 * variants
        total += m.overhead_s
    return total


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
    if args.fake:
        if os.environ.get("TRITON_INTERPRET") != "1":
            print("utils.measure: --fake runs the Triton kernels under the interpreter: set TRITON_INTERPRET=1",
                  file=stderr)
            return 2
        runtime, mode = runtime or FakeRuntime(), "tiny"
    mode = mode or ("quick" if args.quick else "full")
    if args.estimate:
        print(f"estimated run time: about {estimate_s(names, mode) / 60:.0f} min for {len(names)} "
              f"measurements ({mode} sizes), compilation included", file=stdout)
        return 0
    if args.archive is not None and not args.archive.name.endswith(".tar.gz"):
        print(f"utils.measure: --archive takes a .tar.gz path, got {args.archive}", file=stderr)
        return 2
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
               stdout=stdout, log=stderr, archive=args.archive)


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


# --------------------------------------------------------------------------------------------------
# Public accessors for the chapters (they read a measurement's sizes and counts through these, never
# through REGISTRY or the definitions' private names)


def sizes(name: str, mode: str = "full") -> list[dict]:
    """The sizes measurement `name` runs at in `mode` (copies: a chapter may not change the harness's)."""
    if name not in REGISTRY:
        raise KeyError(f"unknown measurement {name!r}; valid: {', '.join(REGISTRY)}")
    return [dict(s) for s in REGISTRY[name].sizes[mode]]


def bytes_counted(name: str, size: dict, variant: str) -> int:
    """The device-memory bytes the harness counts for one variant of measurement `name` at `size`."""
    return REGISTRY[name].bytes(size, variant)


def flops_counted(name: str, size: dict, variant: str) -> int:
    """The FLOPs the harness counts for one variant of measurement `name` at `size`."""
    return REGISTRY[name].flops(size, variant)


def element_bytes(dtype: str) -> int:
    """Bytes per element of a dtype as the harness names it ("bfloat16" -> 2)."""
    return _DTYPES[dtype]


def dtype_short(dtype: str) -> str:
    """The short name of a dtype as the harness names it ("bfloat16" -> "bf16")."""
    return _SHORT[dtype]


def softmax_shape_key(size: dict) -> str:
    """The suffix of fused-softmax's per-shape metrics for a size ("bf16_4096")."""
    return _shape_key(size)


if __name__ == "__main__":
    sys.exit(main())
