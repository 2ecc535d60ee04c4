"""kernel-profile: Nsight Compute's counters for the book's strided gather (utils/gpu/kernels/strided.py) at
stride 1 and stride 32, fp32 (chapters/kernels/reading-a-kernel-profile.ipynb).

Per stride, a child process runs the gather once under `ncu --clock-control none --csv` (the clocks left
alone, as the book's method asks) with only the kernel `_strided_kernel` profiled, and checks the
kernel's output against the source element for element before anything is read from the report; a
failed check fails the measurement (no record). The CSV's rows become the metrics, for s in {1, 32}:

    dram_pct_s{s}               dram__throughput.avg.pct_of_peak_sustained_elapsed
    memory_pct_s{s}             gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed (SOL
                                "Memory Throughput")
    l1_pct_s{s}                 l1tex__throughput.avg.pct_of_peak_sustained_active
    sectors_per_request_s{s}    l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum over
                                l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum
    (and the two sums, and gpu__time_duration.sum as duration_s{s}, the kernel's time under the profiler)

Where ncu is not on the PATH, or cannot read the counters (a non-zero exit, LibraryNotLoaded on gVisor,
ERR_NVGPUCTRPERM without the permission, no row for the kernel), the profile of that stride is recorded
as skipped with the reason in one line; nothing is made up. Under the fake runtime it is always skipped.

A record needs at least one timed, checked variant (utils/gpu/schema.json), so the same gather is
also checked and timed in this process (variant `triton`, as in strided-copy): its metrics are the
useful bandwidth per stride and the headline `slowdown_s32`, present in every record; the ncu metrics
are present only where the profile ran. Standard library only at import time, like the whole harness.
"""
from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import utils.gpu.kernel_profile as kprof  # the chapter's metric names and parser: standard library only
from utils.gpu.measurements.common import (
    _DTYPES,
    Measurement,
    Variant,
    _cycle,
    _dtype,
    _metric,
    _ratio,
    _torch,
    exact_check,
    poisoned_check,
    register,
    rotation,
)

ROOT = Path(__file__).resolve().parents[3]
STRIDES = (1, 32)
KERNEL = "_strided_kernel"                 # the Triton kernel's name, as ncu sees it
TIMEOUT_S = 120                            # per child: ncu replays the kernel once per counter pass; a GPU
                                           # window is minutes, so a hung profiler must not take it all
CHILD_S = 30                               # what one child is allowed in --estimate: start, compile, replays
# metric key (before _s{stride}) -> ncu metric, the chapter's names (utils.gpu.kernel_profile) and the kernel's time;
# sectors over requests is sectors_per_request
METRICS = {**{k: kprof.METRICS[k] for k in ("dram_pct", "memory_pct", "l1_pct")},
           "duration": "gpu__time_duration.sum", "sectors": kprof.SECTORS, "requests": kprof.REQUESTS}
_TIME_UNITS = {"nsecond": 1e-9, "ns": 1e-9, "usecond": 1e-6, "us": 1e-6, "msecond": 1e-3, "ms": 1e-3,
               "second": 1.0, "s": 1.0}
# What ncu prints when it cannot read the counters, in the words the reason should keep.
_KNOWN_ERRORS = ("LibraryNotLoaded", "ERR_NVGPUCTRPERM", "Device not supported")
_PROFILES: dict = {}                       # (n, stride) -> {key: (value, unit)} of this run, read by _metrics


# --------------------------------------------------------------------------------------------------
# ncu's CSV


def find_ncu() -> str | None:
    """ncu on the PATH, else where CUDA's images install it."""
    found = shutil.which("ncu")
    if found:
        return found
    for pattern in ("/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/*/ncu"):
        hits = sorted(glob.glob(pattern))
        if hits and os.access(hits[-1], os.X_OK):
            return hits[-1]
    return None


def _one_line(text: str, limit: int = 300) -> str:
    return " ".join(text.split())[:limit]


def _failure(output: str, rc: int) -> str:
    """The reason ncu gave, in one line: a known counter error by name, else its last error line."""
    known = next((k for k in _KNOWN_ERRORS if k in output), None)
    errors = [line for line in output.splitlines() if "==ERROR==" in line or "rror" in line]
    line = next((e for e in reversed(errors) if known and known in e), errors[-1] if errors else "")
    what = f"ncu exited with status {rc}" if rc else "ncu profiled no launch of the kernel"
    return _one_line(f"{what}: cannot read the GPU's counters here ({known}): {line.strip()}" if known
                     else f"{what}: {line.strip()}" if line else what)


# The child: one launch of the gather, then its check, written where the parent reads it.
_CHILD = "from utils.gpu.measurements.kernel_profile import _child; _child()"


def _child(argv: list[str] | None = None) -> None:
    """n, stride, the check file's path, and the device (cuda; the tests pass cpu, under the interpreter)."""
    n, stride, path, device = [*(argv or sys.argv[1:]), "cuda"][:4]
    n, stride = int(n), int(stride)
    torch = _torch()
    from utils.gpu.kernels.strided import strided_copy
    torch.manual_seed(0)
    src = torch.randn(n * stride, device=device)
    out = torch.full((n,), float("nan"), device=device)
    strided_copy(src, stride, out)
    if device == "cuda":
        torch.cuda.synchronize()
    differ = int((out != src[::stride]).sum())
    Path(path).write_text(json.dumps({"n": n, "stride": stride, "differ": differ,
                                      "all_written": not bool(torch.isnan(out).any())}))


def profile(n: int, stride: int, *, timeout_s: int = TIMEOUT_S) -> tuple[dict | None, str]:
    """Run the gather under ncu in a child: ({key: (value, unit)}, ncu's version) or (None, the reason
    it could not). Raises RuntimeError when the profiled kernel's output fails its check."""
    ncu = find_ncu()
    if ncu is None:
        return None, "ncu (Nsight Compute) is not on the PATH"
    with tempfile.TemporaryDirectory() as tmp:
        check_file = Path(tmp) / "check.json"
        cmd = [ncu, "--clock-control", "none", "--csv", "--print-units", "base", "--kernel-name",
               f"regex:^{KERNEL}", "--launch-count", "1", "--metrics", ",".join(METRICS.values()),
               sys.executable, "-c", _CHILD, str(n), str(stride), str(check_file)]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
        env.pop("TRITON_INTERPRET", None)
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, cwd=ROOT, env=env)
        except subprocess.TimeoutExpired:
            return None, f"ncu did not finish within {timeout_s} s"
        except OSError as e:
            return None, _one_line(f"ncu could not be started: {e}")
        output = (p.stdout or "") + "\n" + (p.stderr or "")
        try:
            launches = kprof.parse_ncu_csv(p.stdout or "")
        except ValueError:                     # no CSV at all: ncu's own error says why, below
            launches = []
        mine = [launch.metrics for launch in launches if launch.kernel.split("(")[0].strip() == KERNEL]
        if p.returncode != 0 or not mine:
            return None, _failure(output, p.returncode)
        if not check_file.exists():
            return None, "the profiled program wrote no check of its output"
        check = json.loads(check_file.read_text())
    if check["differ"] or not check["all_written"]:
        raise RuntimeError(f"kernel-profile stride {stride}: the profiled kernel's output failed its check "
                           f"({check['differ']} of {n} elements differ from the source, all written: "
                           f"{check['all_written']})")
    got = mine[0]
    missing = [m for m in METRICS.values() if got.get(m, (None, ""))[0] is None]
    if missing:
        return None, _one_line(f"ncu gave no value for {', '.join(missing)}")
    version = subprocess.run([ncu, "--version"], capture_output=True, text=True, timeout=60).stdout
    return {k: got[m] for k, m in METRICS.items()}, _one_line(version.strip().splitlines()[-1] if version.strip()
                                                              else "version unknown", 120)


def why_not_here(rt) -> str | None:
    """Why ncu cannot run under this runtime (None where it can: a CUDA GPU)."""
    return None if rt.timer == "cuda-events" else "Nsight Compute needs a GPU (this runtime runs on the CPU)"


# --------------------------------------------------------------------------------------------------
# The measurement


def _prepare(rt, size):
    torch = _torch()
    from utils.gpu.kernels.strided import strided_copy
    n, s, dtype = size["n"], size["stride"], _dtype(size["dtype"])
    count = rotation(rt, (s + 1) * n * _DTYPES[size["dtype"]])
    pairs = [(torch.randn(n * s, device=rt.device).to(dtype), torch.empty(n, dtype=dtype, device=rt.device))
             for _ in range(count)]
    nxt = _cycle(pairs)

    def op(src, dst):
        strided_copy(src, s, dst)

    check = poisoned_check(rt, pairs[0], op, lambda out, src: exact_check(out, src[::s]))
    variants = [Variant("triton", (lambda: op(*nxt())), check)]
    _PROFILES.pop((n, s), None)
    reason = why_not_here(rt)
    if reason is None:
        got, info = profile(n, s)
        if got is None:
            reason = info
        else:
            _PROFILES[(n, s)] = {**got, "_ncu": info}
    return variants, ([(f"ncu-stride-{s}", reason)] if reason else [])


def _metrics(results):
    tri = {r["size"]["stride"]: r for r in results if r["variant"] == "triton"}
    lo, hi = tri[min(tri)], tri[max(tri)]
    out = {}
    for s, r in sorted(tri.items()):
        out[f"useful_bandwidth_s{s}"] = _metric(r, "bandwidth", f"useful bytes (n read, n written) over the median "
                                                f"time, in-process timing, stride {s}")
    out[f"slowdown_s{max(tri)}"] = _ratio(hi["median_s"] / lo["median_s"], hi, f"median time at stride {max(tri)} "
                                          f"over stride {min(tri)}, in-process timing (same useful bytes)")
    for s, r in sorted(tri.items()):
        got = _PROFILES.pop((r["size"]["n"], s), None)
        if got is None:
            continue
        size, tool = dict(r["size"]), got["_ncu"]

        def put(key, value, unit, what, s=s, size=size, tool=tool):
            out[f"{key}_s{s}"] = {"value": float(value), "unit": unit, "variant": "ncu", "size": size,
                                  "note": f"{what}; ncu --clock-control none, one launch, stride {s}; {tool}"}
        for key in ("dram_pct", "memory_pct", "l1_pct"):
            put(key, got[key][0], "percent", METRICS[key])
        sectors, requests = got["sectors"][0], got["requests"][0]
        put("sectors", sectors, "", METRICS["sectors"])
        put("requests", requests, "", METRICS["requests"])
        if requests > 0:
            put("sectors_per_request", sectors / requests, "", "global-load sectors over global-load requests "
                f"({METRICS['sectors']} / {METRICS['requests']})")
        scale = _TIME_UNITS.get(got["duration"][1])
        if scale:
            put("duration", got["duration"][0] * scale, "s", f"{METRICS['duration']} (the kernel's time under "
                "the profiler, caches flushed)")
    return out


register(Measurement(
    name="kernel-profile",
    what="Nsight Compute (ncu --clock-control none) over the book's strided Triton gather out[i] = src[i * stride], "
         "fp32, at stride 1 and stride 32, in a child process that checks the kernel's output: DRAM throughput, "
         "memory throughput, L1 throughput (percent of peak) and global-load sectors per request; recorded as "
         "skipped with the reason where ncu is absent or cannot read the counters; the same gather also checked "
         "and timed in-process",
    sizes={"full": [{"n": 1 << 24, "stride": s, "dtype": "float32"} for s in STRIDES],
           "quick": [{"n": 1 << 22, "stride": s, "dtype": "float32"} for s in STRIDES],
           "tiny": [{"n": 1000, "stride": s, "dtype": "float32"} for s in STRIDES]},
    bytes=lambda s, v: 2 * s["n"] * _DTYPES[s["dtype"]],
    flops=lambda s, v: 0,
    prepare=_prepare,
    metrics=_metrics,
    headline=f"slowdown_s{max(STRIDES)}",
    overhead_s=CHILD_S * len(STRIDES),
))
