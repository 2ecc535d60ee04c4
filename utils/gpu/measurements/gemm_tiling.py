"""gemm-tiling: the book's tiled Triton matmul at square tiles of 16 to 128 beside torch.matmul on square
bf16 matrices (chapters/kernels/gemm-tiling.ipynb)."""
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
    matmul_check,
    register,
    rotation,
)

TILES = (16, 32, 64, 128)            # square tiles BLOCK_M = BLOCK_N; BLOCK_K from block_k_for
# Relative-error norm against float64. bf16: C is rounded to bf16 (unit roundoff 2^-8 = 0.0039 bounds
# every element's relative error from that rounding), the products are exact in fp32 and the fp32 sum
# adds far less at these sizes; 1e-2 is that bound with room, the book's matmul-rate tolerance.
# float32 (the CPU tiny mode, or tf32 inputs on a GPU: unit roundoff 2^-11 per input): 2e-3.
_TOLERANCE = {"bfloat16": 1e-2, "float16": 2e-3, "float32": 2e-3}


def gemm_bytes(size: dict, variant: str) -> int:
    """Triton at tile T: the tile model's count (every slab load a read of global memory, C written once);
    torch and autotuned (the Triton kernel at the tile triton.autotune chose, not known before the run):
    the floor any kernel moves, A and B read once and C written once."""
    from utils.gpu.kernels.matmul import global_bytes
    m, n, k, e = size["m"], size["n"], size["k"], _DTYPES[size["dtype"]]
    if variant.startswith("triton_"):
        t = int(variant.split("_")[1])
        return global_bytes(m, n, k, t, t, e)
    return e * (m * k + k * n + m * n)


def _gemm_prepare(rt, size):
    torch = _torch()
    from utils.gpu.kernels.matmul import block_k_for, matmul, matmul_autotuned
    m, n, k, name = size["m"], size["n"], size["k"], size["dtype"]
    dtype = _dtype(name)
    count = rotation(rt, _DTYPES[name] * (m * k + k * n))
    sets = [(torch.randn(m, k, device=rt.device).to(dtype), torch.randn(k, n, device=rt.device).to(dtype))
            for _ in range(count)]
    c = torch.empty(m, n, device=rt.device, dtype=dtype)
    nxt = _cycle(sets)

    def checker(op):
        def check():
            a, b = sets[0]
            c.fill_(float("nan"))
            op(a, b)
            rt.synchronize()
            return matmul_check(c, a, b, tolerance=_TOLERANCE[name])
        return check

    def tiled(t):
        def op(a, b):
            matmul(a, b, c, block_m=t, block_n=t, block_k=block_k_for(t))
        return op

    def tor(a, b):
        torch.matmul(a, b, out=c)

    def tuned(a, b):                 # the first call at this size runs the autotuner (in the check)
        matmul_autotuned(a, b, c)

    ops = [(f"triton_{t}", tiled(t)) for t in TILES] + [("autotuned", tuned), ("torch", tor)]
    return [Variant(v, (lambda op=op: op(*nxt())), checker(op)) for v, op in ops], []


def _gemm_metrics(results):
    size = max((r["size"] for r in results), key=lambda s: s["m"] * s["n"] * s["k"])
    at = {r["variant"]: r for r in results if r["size"] == size}
    base = at["torch"]
    out = {"flop_rate_torch": _metric(base, "flop_rate", "torch.matmul, 2 M N K FLOP over the median time")}
    for t in TILES:
        r = at[f"triton_{t}"]
        out[f"flop_rate_tile_{t}"] = _metric(r, "flop_rate", f"the Triton kernel at {t} x {t} tiles, "
                                             "2 M N K FLOP over the median time")
        out[f"fraction_of_torch_tile_{t}"] = _ratio(base["median_s"] / r["median_s"], r,
                                                    f"the Triton kernel's rate at {t} x {t} tiles over "
                                                    "torch.matmul's, same size")
        out[f"model_bandwidth_tile_{t}"] = _metric(r, "bandwidth", f"the tile model's bytes at {t} x {t} "
                                                   "(every slab load from global memory) over the median time: "
                                                   "above the HBM rate means the L2 served part of them")
    if "autotuned" in at:
        from utils.gpu.kernels.matmul import autotuned_config
        r, chosen = at["autotuned"], autotuned_config()
        out["flop_rate_autotuned"] = _metric(r, "flop_rate", "the Triton kernel with triton.autotune's "
                                             f"configuration ({chosen or 'unknown'}), 2 M N K FLOP over the "
                                             "median time")
        out["triton_over_torch"] = _ratio(base["median_s"] / r["median_s"], r, "torch.matmul's median time over "
                                          f"the autotuned Triton kernel's ({chosen or 'unknown'}), same size "
                                          "(1 = as fast)")
    return out


register(Measurement(
    name="gemm-tiling",
    what="C = A B for square bf16 matrices: the book's tiled Triton matmul (fp32 accumulation) at square "
         "tiles of 16, 32, 64 and 128 and with an autotuned configuration beside torch.matmul; each output "
         "checked against float64 first",
    sizes={"full": [{"m": 8192, "n": 8192, "k": 8192, "dtype": "bfloat16"}],
           "quick": [{"m": 4096, "n": 4096, "k": 4096, "dtype": "bfloat16"}],
           "tiny": [{"m": 130, "n": 96, "k": 72, "dtype": "float32"}]},
    bytes=gemm_bytes,
    flops=lambda s, v: 2 * s["m"] * s["n"] * s["k"],
    prepare=_gemm_prepare,
    metrics=_gemm_metrics,
    headline="fraction_of_torch_tile_128",
))
