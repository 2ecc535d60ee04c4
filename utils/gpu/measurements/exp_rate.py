"""exp-throughput: how many exponentials per second the GPU's multi-function units deliver, against fused
multiply-adds and against the tensor cores' bf16 matrix rate (chapters/kernels/flash-attention-versions.ipynb).

Three variants: `exp`, a Triton kernel that pushes every element through `reps` dependent exp2 calls in
registers (one MUFU instruction each); `fma`, the same kernel with `reps` dependent fused multiply-adds;
and `bf16_matmul`, torch's bf16 matrix product on a square size, timed in the same measurement so the
ratio of tensor-core FLOP/s to exponentials per second (the metric `matmul_over_exp`, FLOPs per exp) comes
from one record. (The record's ceilings hold the run's matmul-rate too; the notebook may compare both.)
The chains read and write each fp32 element once (8 bytes) and do `reps` operations on it in registers,
so at reps = 256 the memory traffic is a few percent of the time and overlapped.
"""
from __future__ import annotations

from utils.gpu.measurements.common import (
    Measurement,
    Variant,
    _metric,
    _ratio,
    _torch,
    matmul_check,
    poisoned_check,
    register,
    sampled_check,
)


def _is_matmul(size: dict) -> bool:
    return "m" in size


def _exp_prepare(rt, size):
    torch = _torch()
    if _is_matmul(size):
        m = size["m"]
        a = torch.randn(m, m, device=rt.device, dtype=torch.bfloat16)
        b = torch.randn(m, m, device=rt.device, dtype=torch.bfloat16)
        c = torch.empty(m, m, device=rt.device, dtype=torch.bfloat16)

        def run_mm():
            torch.matmul(a, b, out=c)

        def check_mm():
            c.fill_(float("nan"))
            torch.matmul(a, b, out=c)
            rt.synchronize()
            return matmul_check(c, a, b, tolerance=1e-2)

        return [Variant("bf16_matmul", run_mm, check_mm)], []

    from utils.gpu.kernels import exp_rate as E
    n, reps = size["n"], size["reps"]
    x = torch.rand(n, device=rt.device) * 2 - 1          # in [-1, 1], never zeros: the tolerances' premise
    out = torch.empty_like(x)

    def checker(op, ref, tol):
        return poisoned_check(rt, (x, out), op,
                              lambda o, src: sampled_check(o, lambda idx: ref(src[idx], reps), tol))

    def run_exp(src, dst):
        E.exp_chain(src, reps, dst)

    def run_fma(src, dst):
        E.fma_chain(src, reps, dst)

    return [Variant("exp", lambda: run_exp(x, out), checker(run_exp, E.exp_reference, E.EXP_TOLERANCE)),
            Variant("fma", lambda: run_fma(x, out), checker(run_fma, E.fma_reference, E.FMA_TOLERANCE))], []


def _bytes(s: dict, v: str) -> int:
    if v == "bf16_matmul":
        return 2 * 3 * s["m"] * s["m"]                  # A and B read, C written, bf16
    return 8 * s["n"]                                   # one fp32 read, one fp32 write per element


def _flops(s: dict, v: str) -> int:
    if v == "bf16_matmul":
        return 2 * s["m"] ** 3
    if v == "fma":
        return 2 * s["n"] * s["reps"]                   # an FMA is two FLOPs
    return s["n"] * s["reps"]                           # an exponential counted as one operation


def _exp_metrics(results):
    exps = [r for r in results if r["variant"] == "exp"]
    fmas = [r for r in results if r["variant"] == "fma"]
    mms = [r for r in results if r["variant"] == "bf16_matmul"]
    best_exp = max(exps, key=lambda r: r["flop_rate"])
    best_fma = max(fmas, key=lambda r: r["flop_rate"])
    best_mm = max(mms, key=lambda r: r["flop_rate"])
    out = {
        "exp_rate": {"value": float(best_exp["flop_rate"]), "unit": "1/s", "variant": "exp",
                     "size": dict(best_exp["size"]),
                     "note": "exponentials per second: n * reps exp2 calls over the median time, the best size"},
        "fma_flop_rate": _metric(best_fma, "flop_rate", "FP32 FLOP/s of the FMA chain (two FLOPs per FMA), the best size"),
        "fma_over_exp": _ratio(best_fma["flop_rate"] / 2 / best_exp["flop_rate"], best_fma,
                               "FMAs per second over exponentials per second (the best sizes of each)"),
        "matmul_rate": _metric(best_mm, "flop_rate", "bf16 torch.matmul FLOP/s (2 m^3 FLOP over the median time)"),
        "matmul_over_exp": {"value": float(best_mm["flop_rate"] / best_exp["flop_rate"]), "unit": "FLOP",
                            "variant": "bf16_matmul", "size": dict(best_mm["size"]),
                            "note": "bf16 matmul FLOP/s over exponentials per second: the matmul FLOPs one "
                                    "exponential's time is worth"},
    }
    for r in exps:
        out[f"exp_rate_reps_{r['size']['reps']}"] = {
            "value": float(r["flop_rate"]), "unit": "1/s", "variant": "exp", "size": dict(r["size"]),
            "note": f"exponentials per second with {r['size']['reps']} dependent exp2 per element"}
    return out


register(Measurement(
    name="exp-throughput",
    what="exponentials per second from a register-bound Triton kernel (reps dependent exp2 per fp32 element, "
         "one read and one write each), the same kernel with fused multiply-adds, and a bf16 torch.matmul in "
         "the same measurement; the ratio of matmul FLOP/s to exp/s is the price of an exponential in matmul FLOPs",
    sizes={"full": [{"n": 1 << 24, "reps": 256}, {"n": 1 << 24, "reps": 1024}, {"m": 8192}],
           "quick": [{"n": 1 << 22, "reps": 256}, {"m": 4096}],
           "tiny": [{"n": 1000, "reps": 5}, {"n": 333, "reps": 16}, {"m": 64}]},
    bytes=_bytes,
    flops=_flops,
    prepare=_exp_prepare,
    metrics=_exp_metrics,
    headline="exp_rate",
))
