"""occupancy-ilp: a copy at full occupancy with one element a thread against a register-blocked copy with
many independent elements a thread at lower occupancy (chapters/kernels/occupancy.ipynb).

Both kernels are Triton, defined here: one program copies an [ILP, BLOCK] tile, loading it all before
storing any of it, so a thread holds ILP x BLOCK / (32 x num_warps) independent loads in flight. The
occupancy-maximised variant holds one (small programs, many resident warps); the register-blocked one
thirty-two (more registers a thread, fewer warps). The chapter predicts the blocked one is faster while
the one-load kernel is short of the bytes in flight that saturate HBM.
"""
from __future__ import annotations

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

# (BLOCK, ILP, num_warps): elements a thread = BLOCK x ILP / (32 x num_warps)
CONFIGS = {"max-occupancy": (256, 1, 8), "register-blocked": (512, 8, 4)}
_KERNEL = {}


def _kernel():
    """The Triton kernel, built on first use (so importing the harness does not import triton)."""
    if "k" not in _KERNEL:
        import triton
        import triton.language as tl

        @triton.jit
        def _ilp_copy(src_ptr, dst_ptr, n, BLOCK: tl.constexpr, ILP: tl.constexpr):
            pid = tl.program_id(0).to(tl.int64)
            offs = pid * BLOCK * ILP + tl.arange(0, ILP)[:, None] * BLOCK + tl.arange(0, BLOCK)[None, :]
            mask = offs < n
            tile = tl.load(src_ptr + offs, mask=mask)          # ILP independent loads a thread, all issued
            tl.store(dst_ptr + offs, tile, mask=mask)          # before the first store

        _KERNEL["k"], _KERNEL["cdiv"] = _ilp_copy, triton.cdiv
    return _KERNEL["k"], _KERNEL["cdiv"]


def ilp_copy(src, dst, block: int, ilp: int, num_warps: int):
    k, cdiv = _kernel()
    n = src.numel()
    k[(cdiv(n, block * ilp),)](src, dst, n, BLOCK=block, ILP=ilp, num_warps=num_warps)
    return dst


def elements_per_thread(name: str) -> float:
    block, ilp, warps = CONFIGS[name]
    return block * ilp / (32 * warps)


def _prepare(rt, size):
    torch = _torch()
    n, dtype = size["n"], _dtype(size["dtype"])
    count = rotation(rt, 2 * n * _DTYPES[size["dtype"]])
    pairs = [(torch.randn(n, device=rt.device).to(dtype), torch.empty(n, dtype=dtype, device=rt.device))
             for _ in range(count)]
    nxt = _cycle(pairs)
    variants = []
    for name, (block, ilp, warps) in CONFIGS.items():
        def op(src, dst, b=block, i=ilp, w=warps):
            return ilp_copy(src, dst, b, i, w)
        check = poisoned_check(rt, pairs[0], op, lambda out, src: exact_check(out, src))
        variants.append(Variant(name, (lambda op=op: op(*nxt())), check))
    return variants, []


def _metrics(results):
    by = {r["variant"]: r for r in results}
    a, b = by["max-occupancy"], by["register-blocked"]
    return {
        "bandwidth_max_occupancy": _metric(a, "bandwidth", "bytes read and written over the median time, "
                                           "one element a thread"),
        "bandwidth_register_blocked": _metric(b, "bandwidth", "bytes read and written over the median time, "
                                              f"{elements_per_thread('register-blocked'):g} elements a thread"),
        "blocked_speedup": _ratio(a["median_s"] / b["median_s"], b, "median time of the occupancy-maximised "
                                  "copy over the register-blocked one"),
    }


register(Measurement(
    name="occupancy-ilp",
    what="dst = src for n fp32 elements, two Triton copies: one element a thread in small programs (full "
         "occupancy) against a register-blocked [8, 512] tile a program on 4 warps (32 independent elements a "
         "thread, fewer resident warps); src far past the L2 cache",
    sizes={"full": [{"n": 1 << 26, "dtype": "float32"}], "quick": [{"n": 1 << 22, "dtype": "float32"}],
           "tiny": [{"n": 5000, "dtype": "float32"}]},
    bytes=lambda s, v: 2 * s["n"] * _DTYPES[s["dtype"]],
    flops=lambda s, v: 0,
    prepare=_prepare,
    metrics=_metrics,
    headline="blocked_speedup",
))
