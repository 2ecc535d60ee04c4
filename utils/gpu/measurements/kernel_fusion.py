"""kernel-fusion: y = gelu(x * a + b) * c + d, the book's fused Triton kernel against eager torch,
torch.compile and a copy (chapters/kernels/kernel-fusion.ipynb)."""
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
    sampled_check,
)

CHAIN_OPS = 5                         # y = gelu(x * a + b) * c + d: mul, add, gelu, mul, add
CHAIN_FLOPS_PER_ELEMENT = 12          # 4 for the mul/add pairs, 8 for the tanh-form gelu (exp counted once)
_CHAIN_TOLERANCE = {"float32": 1e-4, "bfloat16": 1e-2, "float16": 1e-2}


def _fusion_prepare(rt, size):
    torch = _torch()
    from utils.gpu.kernels import chain_reference, eager_chain, fused_chain
    from utils.gpu.kernels.fused_chain import fused_chain_exp2
    n, name = size["n"], size["dtype"]
    dtype = _dtype(name)
    count = rotation(rt, 2 * n * _DTYPES[name])
    pairs = [(torch.randn(n, device=rt.device).to(dtype), torch.empty(n, dtype=dtype, device=rt.device))
             for _ in range(count)]
    nxt = _cycle(pairs)
    # fresh random scalars, bounded away from zero, alternating in sign
    a, b, c, d = [float(v) for v in (torch.rand(4) + 0.5) * torch.tensor([1.0, -1.0, 1.0, -1.0])]

    def checker(op, exact=False):
        def against_chain(out, x):
            return sampled_check(out, lambda idx: chain_reference(x[idx], a, b, c, d), _CHAIN_TOLERANCE[name])
        return poisoned_check(rt, pairs[0], op, exact_check if exact else against_chain)

    def tri(x, y):
        return fused_chain(x, a, b, c, d, y)

    def tri_exp2(x, y):              # the gelu as one exp2 and one fast division per element
        return fused_chain_exp2(x, a, b, c, d, y)

    def eager(x, y):
        return eager_chain(x, a, b, c, d, y)

    def copy_(x, y):
        return y.copy_(x)

    variants = [Variant(v, (lambda op=op: op(*nxt())), checker(op, exact=v == "copy"))
                for v, op in (("eager", eager), ("triton", tri), ("triton_exp2", tri_exp2), ("copy", copy_))]

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
    if "triton_exp2" in large:
        e2 = large["triton_exp2"]
        out["exp2_fraction_of_copy"] = _ratio(large["copy"]["median_s"] / e2["median_s"], e2, "a copy's median "
                                              "time over the exp2 fused kernel's (one exp2 and one fast division "
                                              "per element) at the largest size")
        out["exp2_over_fused"] = _ratio(large["triton"]["median_s"] / e2["median_s"], e2, "the fused kernel's "
                                        "median time over the exp2 variant's at the largest size (above 1: the "
                                        "exp2 variant is faster)")
        out["bandwidth_triton_exp2"] = _metric(e2, "bandwidth", "the exp2 fused kernel's two passes over its "
                                               "median time, at the largest size")
    for v in ("eager", "triton", "triton_exp2", "copy", "compile"):
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
         "book's fused Triton kernel (one read, one write) and a variant with one exp2 and one fast division "
         "per element against eager torch (five kernels, five reads "
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
