"""vector-add: c = a + b on the device (the book's Triton kernel and torch.add) beside the host copies
around it (a and b host-to-device, c device-to-host, from pinned and from pageable host memory), so one
record holds the add's time, the copies' times and their ratio (chapters/kernels/vector-add-and-copies).

The copies are the host-device-copy measurement's own variants (utils/gpu/measurements/host.py), built by
its `_host_prepare` for one array of the same n: the two input copies are two such host-to-device
copies, so the copies' total is 2 x h2d + d2h.
"""
from __future__ import annotations

from utils.gpu.measurements.common import (
    _DTYPES,
    Measurement,
    Settings,
    Variant,
    _cycle,
    _dtype,
    _metric,
    _ratio,
    _torch,
    poisoned_check,
    register,
    rotation,
    sampled_check,
)
from utils.gpu.measurements.host import _host_prepare

ADDS = ("triton", "torch")
COPIES = ("h2d-pinned", "h2d-pageable", "d2h-pinned", "d2h-pageable")


def _tolerance(dtype_name: str) -> float:
    # The add rounds the exact sum once to the format (16-bit formats through fp32, which adds at most
    # 2**-24 relative): every element within 2u of float64, so the relative-error norm is too.
    return 2 * {"float32": 2.0 ** -24, "float16": 2.0 ** -11, "bfloat16": 2.0 ** -8}[dtype_name]


def _vector_add_prepare(rt, size):
    torch = _torch()
    from utils.gpu.kernels.vector_add import add
    n, dtype = size["n"], _dtype(size["dtype"])
    count = rotation(rt, 3 * n * _DTYPES[size["dtype"]])
    sets = [((torch.randn(n, device=rt.device).to(dtype), torch.randn(n, device=rt.device).to(dtype)),
             torch.empty(n, dtype=dtype, device=rt.device)) for _ in range(count)]
    nxt = _cycle(sets)
    tol = _tolerance(size["dtype"])

    def compare(out, src):
        a, b = src
        return sampled_check(out, lambda i: a[i].double() + b[i].double(), tol)

    def tri(src, dst):
        add(src[0], src[1], dst)

    def tor(src, dst):
        torch.add(src[0], src[1], out=dst)

    adds = [Variant(v, (lambda op=op: op(*nxt())), poisoned_check(rt, sets[0], op, compare))
            for v, op in (("triton", tri), ("torch", tor))]
    copies, skipped = _host_prepare(rt, size)
    return adds + copies, skipped


def _vector_add_bytes(size, variant):
    e = _DTYPES[size["dtype"]]
    return 3 * size["n"] * e if variant in ADDS else size["n"] * e     # a copy moves one array once


def _vector_add_metrics(results):
    n = max(r["size"]["n"] for r in results)
    at = {r["variant"]: r for r in results if r["size"]["n"] == n}
    out = {
        "add_time": _metric(at["triton"], "time", "median time of c = a + b, the book's Triton kernel"),
        "add_time_torch": _metric(at["torch"], "time", "median time of torch.add(a, b, out=c)"),
        "add_bandwidth": _metric(at["triton"], "bandwidth", "bytes of the add (a and b read, c written) over "
                                 "its median time, Triton kernel"),
        "add_bandwidth_torch": _metric(at["torch"], "bandwidth", "bytes of the add over its median time, "
                                       "torch.add"),
    }
    for v in COPIES:
        out[v.replace("-", "_")] = _metric(at[v], "bandwidth", f"{v}: bytes of one array copied over the "
                                           "median time")
    for mem in ("pinned", "pageable"):
        h2d, d2h = at[f"h2d-{mem}"], at[f"d2h-{mem}"]
        total = 2 * h2d["median_s"] + d2h["median_s"]
        out[f"copy_time_{mem}"] = {"value": float(total), "unit": "s", "variant": f"h2d-{mem} x 2 + d2h-{mem}",
                                   "size": dict(h2d["size"]),
                                   "note": f"the copies around one add, {mem} host memory: twice the median "
                                           "host-to-device copy (a and b) plus the median device-to-host copy (c)"}
        key = "copy_over_add" if mem == "pinned" else "copy_over_add_pageable"
        out[key] = _ratio(total / at["triton"]["median_s"], at["triton"],
                          f"copies' total median time ({mem}: 2 x h2d + d2h) over the add's median time "
                          "(Triton kernel)")
    out["copy_over_add_torch"] = _ratio(out["copy_time_pinned"]["value"] / at["torch"]["median_s"], at["torch"],
                                        "copies' total median time (pinned) over torch.add's median time")
    return out


register(Measurement(
    name="vector-add",
    what="c = a + b on fp32 vectors of a hundred million elements (the book's Triton kernel and torch.add), "
         "beside the copies around it: a and b host-to-device, c device-to-host, from pinned and from "
         "pageable host memory; add bytes = a and b read once, c written once; copy bytes = one array "
         "crossing the host link",
    sizes={"full": [{"n": 100_000_000, "dtype": "float32"}], "quick": [{"n": 1 << 24, "dtype": "float32"}],
           "tiny": [{"n": 1000, "dtype": "float32"}]},
    bytes=_vector_add_bytes,
    flops=lambda s, v: s["n"] if v in ADDS else 0,
    prepare=_vector_add_prepare,
    metrics=_vector_add_metrics,
    headline="copy_over_add",
    settings={"full": Settings(warmup=3, warmup_s=0.1, min_reps=10, max_reps=100, target_s=0.4)},
))
