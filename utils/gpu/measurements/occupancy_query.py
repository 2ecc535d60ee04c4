"""occupancy-query: CUDA's own occupancy query on the book's compiled Triton kernels, beside the
occupancy calculator's prediction for the same launch (chapters/kernels/occupancy.ipynb).

For each kernel at its launch shape (the two occupancy-ilp copies and the strided gather at stride 1 and
32), the compiled kernel's registers per thread, spills and shared memory (Triton's CompiledKernel:
n_regs, n_spills, metadata.shared), and `cuOccupancyMaxActiveBlocksPerMultiprocessor` (libcuda through
ctypes, on the kernel's CUfunction, with its block size and its dynamic shared memory): the blocks one SM
holds. Beside it, the calculator's blocks for the same registers, threads and shared memory on the
GPU's per-SM limits (utils/catalog/sm_limits.toml, the entry of the GPU's compute capability).

The calculator is utils.gpu.occupancy.occupancy (standard library only), given the limits read from
sm_limits.toml with tomllib: the GPU machines have no pint, so the catalog's loader is not used there.
The check before a number is recorded: each kernel's output element for element, and the query's blocks above zero and at most the
SM's block limit. Under the fake runtime (Triton's interpreter: no compiled kernel, no libcuda) the
query is skipped with the reason; the kernels are still checked and timed (a record needs a timed
variant). Standard library only at import time.
"""
from __future__ import annotations

import ctypes

from utils.gpu.measurements.common import (
    _DTYPES,
    CheckResult,
    Measurement,
    Variant,
    _cycle,
    _dtype,
    _metric,
    _torch,
    exact_check,
    poisoned_check,
    register,
    rotation,
)
from utils.gpu.measurements.occupancy_ilp import CONFIGS
from utils.gpu.occupancy import WARP, SMLimits, occupancy, sm_limit_tables

STRIDES = (1, 32)
KERNELS = (*CONFIGS, *(f"strided-s{s}" for s in STRIDES))       # variant names; metric suffix: - -> _
_MAX_BLOCKS_ATTRIBUTE = 106                 # CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR
_QUERIES: dict = {}                         # n -> {kernel: {...}} of this run, read by the checks and _metrics


def key(kernel: str) -> str:
    return kernel.replace("-", "_")


# --------------------------------------------------------------------------------------------------
# The calculator on the catalog's plain numbers


def sm_limits_for(capability: str) -> dict | None:
    """The per-SM limits (plain numbers) of the first catalog GPU with this compute capability, or None."""
    for table in sm_limit_tables().values():
        if table["compute_capability"] == capability:
            return {k: v for k, v in table.items() if k != "compute_capability"}
    return None


def calculator_blocks(threads: int, regs: int, shared: int, lim: dict) -> int | None:
    """Resident blocks per SM by the occupancy calculator (utils.gpu.occupancy, on the plain limits); None for a
    launch the SM cannot hold."""
    try:
        return occupancy(threads, regs, shared, SMLimits(**{f: lim[f] for f in SMLimits.__dataclass_fields__})).blocks
    except ValueError:
        return None


# --------------------------------------------------------------------------------------------------
# CUDA's query


def _cuda():
    lib = ctypes.CDLL("libcuda.so.1")
    lib.cuOccupancyMaxActiveBlocksPerMultiprocessor.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_void_p,
                                                                ctypes.c_int, ctypes.c_size_t]
    lib.cuDeviceGet.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_int]
    lib.cuDeviceGetAttribute.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_int, ctypes.c_int]
    return lib


def _call(fn, *args):
    rc = fn(*args)
    if rc != 0:
        raise RuntimeError(f"{fn.__name__} returned CUresult {rc}")


def query(lib, function: int, threads: int, shared: int) -> int:
    """cuOccupancyMaxActiveBlocksPerMultiprocessor for a loaded CUfunction (the context torch made current)."""
    blocks = ctypes.c_int(-1)
    _call(lib.cuOccupancyMaxActiveBlocksPerMultiprocessor, ctypes.byref(blocks), ctypes.c_void_p(function),
          int(threads), int(shared))
    return blocks.value


def device_max_blocks(lib, ordinal: int) -> int:
    dev, value = ctypes.c_int(), ctypes.c_int()
    _call(lib.cuDeviceGet, ctypes.byref(dev), int(ordinal))
    _call(lib.cuDeviceGetAttribute, ctypes.byref(value), _MAX_BLOCKS_ATTRIBUTE, dev)
    return value.value


def why_not_here(rt) -> str | None:
    """Why the query cannot run under this runtime (None on a CUDA GPU)."""
    if rt.timer != "cuda-events":
        return ("CUDA's occupancy query needs a GPU and libcuda (this runtime runs the Triton kernels under the "
                "interpreter: no compiled kernel, no CUfunction)")
    return None


# --------------------------------------------------------------------------------------------------
# The measurement


def _launchers(n: int):
    """kernel -> launch(src, dst): the kernel at its launch shape, returning Triton's CompiledKernel
    (None under the interpreter)."""
    from utils.gpu.kernels import strided
    from utils.gpu.measurements import occupancy_ilp as oi
    k, cdiv = oi._kernel()
    out = {}
    for name, (block, ilp, warps) in CONFIGS.items():
        def ilp_launch(src, dst, b=block, i=ilp, w=warps):
            return k[(cdiv(n, b * i),)](src, dst, n, BLOCK=b, ILP=i, num_warps=w)
        out[name] = ilp_launch
    for s in STRIDES:
        def gather(src, dst, s=s):
            return strided._strided_kernel[(cdiv(n, strided.DEFAULT_BLOCK),)](
                src, dst, n, s, BLOCK=strided.DEFAULT_BLOCK, num_warps=strided.DEFAULT_WARPS)
        out[f"strided-s{s}"] = gather
    return out


def _stride(kernel: str) -> int:
    return int(kernel.split("-s")[1]) if kernel.startswith("strided-") else 1


def _read(rt, compiled: dict) -> tuple[dict | None, str]:
    """{kernel: resources, query, calculator} from the compiled kernels, or (None, why not)."""
    torch = _torch()
    try:
        lib = _cuda()
    except OSError as e:
        return None, f"libcuda.so.1 could not be loaded: {e}"[:300]
    cap = "{}.{}".format(*torch.cuda.get_device_capability())
    lim = sm_limits_for(cap)
    try:
        hw_max = device_max_blocks(lib, torch.cuda.current_device())
    except (RuntimeError, AttributeError) as e:
        return None, f"the device's block limit could not be read: {e}"[:300]
    got = {}
    for name, ck in compiled.items():
        try:
            regs, spills = int(ck.n_regs), int(ck.n_spills)
            shared, warps = int(ck.metadata.shared), int(ck.metadata.num_warps)
            function = int(ck.function)
        except (AttributeError, TypeError) as e:
            return None, f"this Triton's compiled kernel has no {e}"[:300]
        threads = warps * WARP
        try:
            blocks = query(lib, function, threads, shared)
        except (RuntimeError, AttributeError) as e:
            return None, f"cuOccupancyMaxActiveBlocksPerMultiprocessor failed: {e}"[:300]
        got[name] = {"regs": regs, "spills": spills, "shared": shared, "threads": threads, "query": blocks,
                     "calc": calculator_blocks(threads, regs, shared, lim) if lim else None,
                     "hw_max": hw_max, "limits": f"sm_limits.toml, compute capability {cap}" if lim else None}
    return got, ""


def _prepare(rt, size):
    torch = _torch()
    n, dtype = size["n"], _dtype(size["dtype"])
    e = _DTYPES[size["dtype"]]
    launch = _launchers(n)
    _QUERIES.pop(n, None)
    reason = why_not_here(rt)
    variants, compiled = [], {}
    for name in KERNELS:
        s = _stride(name)
        count = rotation(rt, (s + 1) * n * e)
        pairs = [(torch.randn(n * s, device=rt.device).to(dtype), torch.empty(n, dtype=dtype, device=rt.device))
                 for _ in range(count)]
        nxt = _cycle(pairs)
        def op(src, dst, f=launch[name]):        # the launch, returning nothing (the check reads dst)
            f(src, dst)
        if reason is None:                       # compile (one launch) to get the CompiledKernel
            compiled[name] = launch[name](*pairs[0])
        base = poisoned_check(rt, pairs[0], op, lambda out, src, s=s: exact_check(out, src[::s]))
        variants.append(Variant(name, (lambda op=op, nxt=nxt: op(*nxt())), _with_query(base, n, name)))
    if reason is None:
        got, reason = _read(rt, compiled)
        if got is not None:
            _QUERIES[n] = got
    return variants, ([(f"query-{k}", reason) for k in KERNELS] if reason else [])


def _with_query(base, n: int, name: str):
    """The kernel's output check, and where the query ran, its blocks within 1..the SM's block limit."""
    def check():
        c = base()
        q = _QUERIES.get(n, {}).get(name)
        if q is None:
            return c
        ok = 0 < q["query"] <= q["hw_max"]
        return CheckResult(f"{c.metric}; plus one if CUDA's occupancy query is outside 1 to the SM's block "
                           f"limit ({q['hw_max']})", c.error + (0.0 if ok else 1.0), c.tolerance, c.all_written)
    return check


def _metrics(results):
    out = {}
    n = max(r["size"]["n"] for r in results)
    for r in results:
        if r["size"]["n"] == n:
            out[f"bandwidth_{key(r['variant'])}"] = _metric(r, "bandwidth", f"{r['variant']}: useful bytes (n read, "
                                                            "n written) over the median time")
    got = _QUERIES.pop(n, None) or {}
    for r in results:
        name, q = r["variant"], got.get(r["variant"])
        if r["size"]["n"] != n or q is None:
            continue
        size, k = dict(r["size"]), key(name)
        launch = f"{name}, {q['threads']} threads a block, {q['shared']} bytes of shared memory"

        def put(metric, value, unit, what, k=k, name=name, size=size, launch=launch):
            out[f"{metric}_{k}"] = {"value": float(value), "unit": unit, "variant": name, "size": size,
                                    "note": f"{what}; {launch}"}
        put("blocks_per_sm_query", q["query"], "", "cuOccupancyMaxActiveBlocksPerMultiprocessor on the compiled "
            "kernel's CUfunction")
        if q["calc"] is not None:
            put("blocks_per_sm_calc", q["calc"], "", f"the occupancy calculator's rule on the compiled kernel's "
                f"registers, threads and shared memory ({q['limits']})")
        put("regs", q["regs"], "", "registers per thread of the compiled kernel (Triton's n_regs)")
        put("spills", q["spills"], "", "Triton's n_spills (local memory a thread, in 4-byte words)")
        put("shared", q["shared"], "B", "shared memory a block (Triton's metadata.shared)")
        put("threads", q["threads"], "", "threads a block (num_warps x 32)")
        put("max_blocks_per_sm", q["hw_max"], "", "the device's block limit a multiprocessor "
            "(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR)")
    return out


register(Measurement(
    name="occupancy-query",
    what="the book's compiled Triton kernels at their launch shapes (the two occupancy-ilp copies and the strided "
         "gather at stride 1 and 32, fp32): registers, spills and shared memory from the compiled kernel, and the "
         "blocks a multiprocessor holds by CUDA's cuOccupancyMaxActiveBlocksPerMultiprocessor beside the occupancy "
         "calculator's prediction for the same launch; each kernel also checked and timed",
    sizes={"full": [{"n": 1 << 24, "dtype": "float32"}], "quick": [{"n": 1 << 22, "dtype": "float32"}],
           "tiny": [{"n": 5000, "dtype": "float32"}]},
    bytes=lambda s, v: 2 * s["n"] * _DTYPES[s["dtype"]],
    flops=lambda s, v: 0,
    prepare=_prepare,
    metrics=_metrics,
    headline="bandwidth_register_blocked",
))
