"""strided-copy: a gather at strides of 1 to 32 elements, the book's Triton kernel and torch's copy
from a strided view (chapters/kernels/coalescing.ipynb)."""
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

STRIDES = (1, 2, 4, 8, 16, 32)        # elements between consecutive reads (the coalescing chapter)


def _strided_prepare(rt, size):
    torch = _torch()
    from utils.gpu.kernels.strided import strided_copy
    n, s, dtype = size["n"], size["stride"], _dtype(size["dtype"])
    count = rotation(rt, (s + 1) * n * _DTYPES[size["dtype"]])
    pairs = [(torch.randn(n * s, device=rt.device).to(dtype), torch.empty(n, dtype=dtype, device=rt.device))
             for _ in range(count)]
    nxt = _cycle(pairs)

    def checker(op):
        return poisoned_check(rt, pairs[0], op, lambda out, src: exact_check(out, src[::s]))

    def tri(src, dst):
        strided_copy(src, s, dst)

    def tor(src, dst):               # torch's copy from a strided view
        dst.copy_(src[::s])

    return [Variant(v, (lambda op=op: op(*nxt())), checker(op)) for v, op in (("triton", tri), ("torch", tor))], []


def _strided_metrics(results):
    from utils.gpu.kernels.strided import moved_bytes
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
