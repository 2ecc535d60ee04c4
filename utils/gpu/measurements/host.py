"""What the host costs: host-device-copy (bandwidth over the host link, pinned and pageable) and
launch-overhead (time per kernel launch from Python, and per launch in a replayed CUDA graph)."""
from __future__ import annotations

from utils.gpu.measurements.common import (
    _DTYPES,
    CheckResult,
    Measurement,
    Settings,
    Variant,
    _dtype,
    _metric,
    _torch,
    exact_check,
    register,
)

# host-device-copy ---------------------------------------------------------------------------------

def _host_prepare(rt, size):
    torch = _torch()
    n, dtype = size["n"], _dtype(size["dtype"])
    host_src = torch.randn(n, dtype=dtype)                       # pageable
    pinned_src = rt.pinned_empty(n, dtype)
    pinned_src.copy_(host_src)
    dev = torch.empty(n, dtype=dtype, device=rt.device)
    dev_src = torch.randn(n, dtype=dtype, device=rt.device)
    host_dst = torch.empty(n, dtype=dtype)
    pinned_dst = rt.pinned_empty(n, dtype)

    def h2d(src, pinned):
        def run():
            dev.copy_(src, non_blocking=pinned)

        def check():
            dev.fill_(float("nan"))
            run()
            rt.synchronize()
            return exact_check(dev.cpu(), src)
        return run, check

    def d2h(dst, pinned):
        def run():
            dst.copy_(dev_src, non_blocking=pinned)

        def check():
            dst.fill_(float("nan"))
            run()
            rt.synchronize()
            return exact_check(dst, dev_src.cpu())
        return run, check

    return [Variant("h2d-pinned", *h2d(pinned_src, True)), Variant("h2d-pageable", *h2d(host_src, False)),
            Variant("d2h-pinned", *d2h(pinned_dst, True)), Variant("d2h-pageable", *d2h(host_dst, False))], []


def _host_metrics(results):
    n = max(r["size"]["n"] for r in results)
    return {r["variant"].replace("-", "_"): _metric(r, "bandwidth", f"{r['variant']}: bytes copied over the "
                                                    "median time")
            for r in results if r["size"]["n"] == n}


register(Measurement(
    name="host-device-copy",
    what="host-to-device and device-to-host copy bandwidth, from pinned (page-locked) and from pageable "
         "host memory; bytes = the bytes copied (each crosses the host link once)",
    sizes={"full": [{"n": 1 << 28, "dtype": "float32"}], "quick": [{"n": 1 << 24, "dtype": "float32"}],
           "tiny": [{"n": 1000, "dtype": "float32"}]},
    bytes=lambda s, v: s["n"] * _DTYPES[s["dtype"]],
    flops=lambda s, v: 0,
    prepare=_host_prepare,
    metrics=_host_metrics,
    headline="h2d_pinned",
    settings={"full": Settings(warmup=2, warmup_s=0.1, min_reps=5, max_reps=50, target_s=0.4)},
))


# launch-overhead ----------------------------------------------------------------------------------

def _launch_prepare(rt, size):
    torch = _torch()
    from utils.gpu.kernels import tick
    n = size["launches"]
    counter = torch.zeros(1, dtype=torch.int32, device=rt.device)

    def torch_loop():
        for _ in range(n):
            counter.add_(1)

    def triton_loop():
        for _ in range(n):
            tick(counter)

    def checker(fn):
        def check():
            start = int(torch.randint(1, 1 << 20, ()))
            counter.fill_(start)
            fn()
            rt.synchronize()
            return CheckResult("launches missing or extra (counter minus expected)",
                               abs(int(counter.item()) - (start + n)), 0.0, True)
        return check

    variants = [Variant("torch-eager", torch_loop, checker(torch_loop), calls=n),
                Variant("triton-eager", triton_loop, checker(triton_loop), calls=n)]
    try:
        replay = rt.graph(triton_loop)
    except Exception as e:  # noqa: BLE001 - a capture this stack cannot do is recorded, not fatal
        return variants, [("triton-graph", f"CUDA graph capture failed: {type(e).__name__}: {e}"[:300])]
    return variants + [Variant("triton-graph", replay, checker(replay), calls=n)], []


def _launch_metrics(results):
    names = {"torch-eager": ("launch_torch", "a torch kernel (add one to a one-element tensor) launched "
                             "from a Python loop: time per launch"),
             "triton-eager": ("launch_triton", "a Triton kernel (one program adds one to a counter) "
                              "launched from a Python loop: time per launch"),
             "triton-graph": ("graph_replay_per_launch", "the same Triton launches captured in a CUDA graph "
                              "and replayed: time per launch")}
    n = max(r["size"]["launches"] for r in results)
    return {names[r["variant"]][0]: _metric(r, "time", names[r["variant"]][1])
            for r in results if r["size"]["launches"] == n}


register(Measurement(
    name="launch-overhead",
    what="time per launch of a kernel that does next to nothing (one counter incremented, so launches "
         "can be counted): torch and Triton launched from Python, and a CUDA graph of many Triton "
         "launches replayed",
    sizes={"full": [{"launches": 1000}], "quick": [{"launches": 100}], "tiny": [{"launches": 5}]},
    bytes=lambda s, v: 8,
    flops=lambda s, v: 0,
    prepare=_launch_prepare,
    metrics=_launch_metrics,
    headline="launch_torch",
))
