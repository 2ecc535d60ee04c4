"""gemm-batch-sweep: y = x W for one large weight and a batch of 1 to thousands of rows, the decode
roofline (chapters/roofline/decode-roofline.ipynb and prefill-vs-decode.ipynb)."""
from __future__ import annotations

from utils.gpu.measurements.common import (
    CheckResult,
    Measurement,
    Variant,
    _cycle,
    _metric,
    _torch,
    register,
    rel_err,
    rotation,
)


def _sweep_prepare(rt, size):
    torch = _torch()
    m, k, n = size["m"], size["k"], size["n"]
    key = ("sweep-weights", k, n)
    if key not in rt.cache:        # one W per run, its float64 copy for the check, clones to rotate
        w = torch.randn(k, n, device=rt.device, dtype=torch.bfloat16)
        count = rotation(rt, 2 * k * n)
        rt.cache[key] = ([w] + [w.clone() for _ in range(count - 1)], w.double())
    ws, w64 = rt.cache[key]
    x = torch.randn(m, k, device=rt.device, dtype=torch.bfloat16)
    y = torch.empty(m, n, device=rt.device, dtype=torch.bfloat16)
    nxt = _cycle(ws)

    def run():
        torch.matmul(x, nxt(), out=y)

    def check():
        y.fill_(float("nan"))
        torch.matmul(x, ws[0], out=y)
        rt.synchronize()
        written = bool(torch.isfinite(y).all())
        pick = torch.randperm(m, device=y.device)[:256]
        return CheckResult("relative-error norm vs float64 (sampled rows)",
                           rel_err(y[pick], x[pick].double() @ w64), 1e-2, written)

    return [Variant("bf16", run, check)], []


def _sweep_metrics(results):
    rs = sorted(results, key=lambda r: r["size"]["m"])
    lo, hi = rs[0], rs[-1]
    knee = lo["median_s"] * hi["size"]["m"] / hi["median_s"]
    out = {
        "time_m1": _metric(lo, "time", "median time of y = x W at the smallest batch"),
        "bandwidth_m1": _metric(lo, "bandwidth", "bytes (W once, plus x and y) over the median time at the "
                                "smallest batch: the decode floor"),
        "flop_rate_mmax": _metric(hi, "flop_rate", "FLOP rate at the largest batch"),
        "knee_m": {"value": float(knee), "unit": "", "variant": lo["variant"],
                   "size": {"k": lo["size"]["k"], "n": lo["size"]["n"]},
                   "note": "batch at which the flat time of the smallest batch meets the line through the "
                           "origin and the largest batch's time: the measured ridge, in rows of x"},
    }
    return out


_SWEEP_FULL = sorted({1 << i for i in range(13)} | {3 << i for i in range(4, 11)})


register(Measurement(
    name="gemm-batch-sweep",
    what="y = x W for one large bf16 weight W and a batch of M rows in x, M from one row to thousands: "
         "the decode roofline, flat while reading W dominates, then linear in M past the ridge",
    sizes={"full": [{"m": m, "k": 8192, "n": 8192} for m in _SWEEP_FULL],
           "quick": [{"m": m, "k": 4096, "n": 4096} for m in (1, 8, 64, 512, 4096)],
           "tiny": [{"m": m, "k": 64, "n": 48} for m in (1, 3, 8, 32)]},
    bytes=lambda s, v: 2 * (s["k"] * s["n"] + s["m"] * s["k"] + s["m"] * s["n"]),
    flops=lambda s, v: 2 * s["m"] * s["k"] * s["n"],
    prepare=_sweep_prepare,
    metrics=_sweep_metrics,
    headline="knee_m",
))
