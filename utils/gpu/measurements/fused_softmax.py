"""fused-softmax: the book's row-softmax Triton kernel beside torch.softmax and a copy of the same
tensor (chapters/kernels/fused-softmax.ipynb)."""
from __future__ import annotations

from utils.gpu.measurements.common import (
    _DTYPES,
    Measurement,
    Variant,
    _cycle,
    _dtype,
    _logits,
    _metric,
    _ratio,
    _torch,
    exact_check,
    poisoned_check,
    register,
    rotation,
    rows_check,
)

_SHORT = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}
SOFTMAX_FLOPS_PER_ELEMENT = 5        # compare for the max, subtract, exp, add for the sum, multiply
_SOFTMAX_TOLERANCE = {"float32": 1e-4, "bfloat16": 1e-2, "float16": 1e-2}

def _softmax_prepare(rt, size):
    torch = _torch()
    from utils.gpu.kernels import softmax as triton_softmax
    from utils.gpu.kernels.softmax import softmax_persistent
    rows, cols, name = size["rows"], size["cols"], size["dtype"]
    dtype = _dtype(name)
    count = rotation(rt, 2 * rows * cols * _DTYPES[name])
    pairs = [(_logits(rows, cols, dtype, rt.device), torch.empty(rows, cols, dtype=dtype, device=rt.device))
             for _ in range(count)]
    nxt = _cycle(pairs)

    def checker(op, exact=False):
        def against_softmax(out, x):
            return rows_check(out, lambda idx: torch.softmax(x[idx].double(), dim=-1), _SOFTMAX_TOLERANCE[name])
        return poisoned_check(rt, pairs[0], op, exact_check if exact else against_softmax)

    def tri(x, y):
        return triton_softmax(x, y)

    def persistent(x, y):            # several rows per program, a persistent grid
        return softmax_persistent(x, y)

    def eager(x, y):                 # torch's own fused softmax; it allocates its output
        return torch.softmax(x, dim=-1)

    def copy_(x, y):
        return y.copy_(x)

    return [Variant(v, (lambda op=op: op(*nxt())), checker(op, exact=v == "copy"))
            for v, op in (("triton", tri), ("triton_persistent", persistent), ("torch", eager), ("copy", copy_))], []


def _shape_key(size: dict) -> str:
    return f"{_SHORT[size['dtype']]}_{size['cols']}"


def _softmax_metrics(results):
    shapes: dict = {}
    for r in results:
        shapes.setdefault(_shape_key(r["size"]), {})[r["variant"]] = r
    out, worst, worst_p = {}, None, None
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
        if "triton_persistent" in v:
            per = v["triton_persistent"]
            pfrac = per["bandwidth"] / cp["bandwidth"]
            out[f"persistent_fraction_of_copy_{key}"] = _ratio(pfrac, per, "the persistent Triton softmax's "
                                                               "(several rows per program, a persistent grid) "
                                                               "bandwidth over a copy's of the same tensor")
            out[f"time_persistent_{key}"] = _metric(per, "time", "median time of the persistent Triton "
                                                           "softmax")
            out[f"persistent_over_triton_{key}"] = _ratio(tri["median_s"] / per["median_s"], per,
                                                          "the one-row-per-program kernel's median time over the "
                                                          "persistent kernel's (above 1: the persistent is faster)")
            if worst_p is None or pfrac < worst_p[0]:
                worst_p = (pfrac, per)
    extra = {} if worst_p is None else {
        "persistent_fraction_of_copy": _ratio(worst_p[0], worst_p[1], "the lowest over the shapes of the "
                                              "persistent Triton softmax's bandwidth over a copy's of the same "
                                              "tensor: 'done' is 0.9 or more")}
    return {"fraction_of_copy": _ratio(worst[0], worst[1], "the lowest over the shapes of the Triton softmax's "
                                       "bandwidth over a copy's of the same tensor: 'done' is 0.9 or more"),
            **extra, **out}


def _softmax_sizes(rows_cols, dtype):
    return [{"rows": r, "cols": c, "dtype": dtype} for r, c in rows_cols]


register(Measurement(
    name="fused-softmax",
    what="row softmax by the book's Triton kernel (one program per row, one read and one write) and a "
         "persistent variant (several rows per program, a grid of a few programs per SM) beside "
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
