"""The two ceilings, measured first in every run and stored in every record: device-to-device copy
bandwidth (copy-bandwidth) and dense matrix product rate (matmul-rate)."""
from __future__ import annotations

from utils.gpu.measurements.common import (
    _DTYPES,
    Measurement,
    Variant,
    _cycle,
    _dtype,
    _metric,
    _torch,
    exact_check,
    matmul_check,
    poisoned_check,
    register,
    rotation,
)

# copy-bandwidth -----------------------------------------------------------------------------------

def _copy_prepare(rt, size):
    torch = _torch()
    from utils.gpu.kernels import copy as triton_copy
    n, dtype = size["n"], _dtype(size["dtype"])
    count = rotation(rt, 2 * n * _DTYPES[size["dtype"]])
    pairs = [(torch.randn(n, dtype=dtype, device=rt.device), torch.empty(n, dtype=dtype, device=rt.device))
             for _ in range(count)]
    nxt = _cycle(pairs)

    def checker(op):
        return poisoned_check(rt, pairs[0], op, exact_check)

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
