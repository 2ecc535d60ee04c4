"""training-step: one training step of a stack of square bias-free linear layers (forward, backward and an
SGD update), timed, so a step-time prediction of 6N x tokens / rate can be set beside a measured step
(chapters/training/step-time-budget.ipynb).

N = layers x width^2 parameters, all in matrix products, so the step's matmul FLOPs are exactly 6N per
token (2N forward, 4N backward); the update adds elementwise passes over the weights, which the 6N count
leaves out and the measurement includes. The check runs one forward and backward on fixed inputs and
compares the first layer's gradient with a float64 computation of the same step.
"""
from __future__ import annotations

from utils.gpu.measurements.common import (
    CheckResult,
    Measurement,
    Variant,
    _dtype,
    _metric,
    _ratio,
    _torch,
    register,
)

_TOLERANCE = {"float32": 1e-4, "bfloat16": 5e-2}
LR = 1e-3


def step_flops(size: dict) -> int:
    """The step's matrix-product FLOPs: 6 x parameters x tokens."""
    return 6 * size["layers"] * size["width"] ** 2 * size["tokens"]


def _weights(torch, size, device, dtype, seed=0):
    g = torch.Generator(device="cpu").manual_seed(seed)
    scale = size["width"] ** -0.5
    return [(torch.randn(size["width"], size["width"], generator=g) * scale).to(device=device, dtype=dtype)
            .requires_grad_(True) for _ in range(size["layers"])]


def _loss(torch, ws, x):
    h = x
    for w in ws:
        h = torch.nn.functional.relu(h @ w) if w is not ws[-1] else h @ w
    return h.float().square().mean()


def _prepare(rt, size):
    torch = _torch()
    dtype = _dtype(size["dtype"])
    ws = _weights(torch, size, rt.device, dtype)
    g = torch.Generator(device="cpu").manual_seed(1)
    x = torch.randn(size["tokens"], size["width"], generator=g).to(device=rt.device, dtype=dtype)

    def step():
        for w in ws:
            w.grad = None
        _loss(torch, ws, x).backward()
        with torch.no_grad():
            for w in ws:
                w -= LR * w.grad

    def check():
        fresh = _weights(torch, size, rt.device, dtype)
        _loss(torch, fresh, x).backward()
        rt.synchronize()
        ref = [w.detach().cpu().double().requires_grad_(True) for w in _weights(torch, size, "cpu", dtype)]
        _loss(torch, ref, x.detach().cpu().double()).backward()
        got, want = fresh[0].grad.detach().cpu().double(), ref[0].grad
        err = float((got - want).norm() / want.norm().clamp_min(1e-30))
        return CheckResult("relative-error norm of the first layer's gradient vs float64", err,
                           _TOLERANCE[size["dtype"]], bool(torch.isfinite(got).all()))

    return [Variant("step", step, check)], []


def _metrics(results):
    big = max(results, key=lambda r: step_flops(r["size"]))
    return {
        "step_time": _metric(big, "time", "median time of one training step (forward, backward, SGD update) "
                             "at the largest size"),
        "step_flop_rate": _metric(big, "flop_rate", "6N x tokens over the median step time, at the largest size"),
        "tokens_per_step": _ratio(float(big["size"]["tokens"]), big, "tokens in one step, at the largest size"),
    }


register(Measurement(
    name="training-step",
    what="one training step (forward, backward, SGD update) of a stack of square bias-free linear layers, "
         "6N FLOPs per token in matrix products, timed: the measured side of a step-time prediction",
    sizes={"full": [{"layers": 8, "width": 8192, "tokens": 8192, "dtype": "bfloat16"}],
           "quick": [{"layers": 4, "width": 4096, "tokens": 4096, "dtype": "bfloat16"}],
           "tiny": [{"layers": 2, "width": 64, "tokens": 32, "dtype": "float32"}]},
    bytes=lambda s, v: 3 * s["layers"] * s["width"] ** 2 * (2 if s["dtype"] == "bfloat16" else 4),  # W read twice, dW written
    flops=lambda s, v: step_flops(s),
    prepare=_prepare,
    metrics=_metrics,
    headline="step_time",
))
