"""smem-transpose: an fp32 matrix transpose through a 32x32 shared-memory tile without padding
(tile[32][32], a 32-way bank conflict on the tile's column read) and with one column of padding
(tile[32][33]), beside a naive transpose without shared memory and torch's transpose copy
(chapters/kernels/bank-conflicts.ipynb).

The three CUDA kernels are the ones in utils/gpu/cuda/transpose.cu (the text between its BEGIN KERNELS and
END KERNELS markers), compiled at prepare time with torch.utils.cpp_extension.load_inline, which needs
nvcc and ninja: only where the runtime's device is CUDA. Elsewhere (the tests' CPU runtime) and where
the build fails, those variants are recorded as skipped with the reason, and torch's transpose alone
runs, so the record path is exercised end to end.
"""
from __future__ import annotations

from pathlib import Path

from utils.gpu.measurements.common import (
    _DTYPES,
    Measurement,
    Variant,
    _cycle,
    _metric,
    _ratio,
    _torch,
    exact_check,
    poisoned_check,
    register,
    rotation,
)

CUDA_SOURCE = Path(__file__).resolve().parents[1] / "cuda" / "transpose.cu"
CUDA_VARIANTS = {"pitch32": "transpose_pitch32", "pitch33": "transpose_pitch33", "naive": "transpose_naive"}

_LAUNCHERS = r"""
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

static void check_pair(const torch::Tensor& x, const torch::Tensor& y) {
    TORCH_CHECK(x.is_cuda() && y.is_cuda(), "tensors must be on the GPU");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && y.scalar_type() == torch::kFloat32, "float32 only");
    TORCH_CHECK(x.dim() == 2 && y.dim() == 2 && x.is_contiguous() && y.is_contiguous(), "2-D, contiguous");
    TORCH_CHECK(y.size(0) == x.size(1) && y.size(1) == x.size(0), "out must be cols x rows");
    TORCH_CHECK(x.size(0) <= 65535LL * TILE && x.size(1) <= (1LL << 30), "matrix too large for the grid");
}

template <typename Launch>
static void run(const torch::Tensor& x, torch::Tensor& y, Launch launch) {
    check_pair(x, y);
    const int rows = static_cast<int>(x.size(0)), cols = static_cast<int>(x.size(1));
    dim3 block(TILE, BLOCK_ROWS);
    dim3 grid((cols + TILE - 1) / TILE, (rows + TILE - 1) / TILE);
    launch(grid, block, at::cuda::getCurrentCUDAStream(), x.data_ptr<float>(), y.data_ptr<float>(), rows, cols);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
}

void transpose_pitch32(torch::Tensor x, torch::Tensor y) {
    run(x, y, [](dim3 g, dim3 b, cudaStream_t s, const float* i, float* o, int r, int c) {
        transpose_tiled<TILE><<<g, b, 0, s>>>(i, o, r, c); });
}

void transpose_pitch33(torch::Tensor x, torch::Tensor y) {
    run(x, y, [](dim3 g, dim3 b, cudaStream_t s, const float* i, float* o, int r, int c) {
        transpose_tiled<TILE + 1><<<g, b, 0, s>>>(i, o, r, c); });
}

void transpose_naive_(torch::Tensor x, torch::Tensor y) {
    run(x, y, [](dim3 g, dim3 b, cudaStream_t s, const float* i, float* o, int r, int c) {
        transpose_naive<<<g, b, 0, s>>>(i, o, r, c); });
}
"""

_DECLARATIONS = """
void transpose_pitch32(torch::Tensor x, torch::Tensor y);
void transpose_pitch33(torch::Tensor x, torch::Tensor y);
void transpose_naive_(torch::Tensor x, torch::Tensor y);
"""

_EXTENSION: dict = {}


def kernel_source() -> str:
    """The kernels of utils/gpu/cuda/transpose.cu, between its BEGIN KERNELS and END KERNELS markers."""
    text = CUDA_SOURCE.read_text()
    begin, end = text.index("// BEGIN KERNELS"), text.index("// END KERNELS")
    return text[begin:end]


def _extension():
    """The compiled kernels (built once per process), or raises with the reason."""
    if "module" not in _EXTENSION:
        from torch.utils.cpp_extension import load_inline
        _EXTENSION["module"] = load_inline(
            name="book_smem_transpose", cpp_sources=_DECLARATIONS,
            cuda_sources="#include <torch/extension.h>\n" + kernel_source() + _LAUNCHERS,
            functions=["transpose_pitch32", "transpose_pitch33", "transpose_naive_"],
            extra_cuda_cflags=["-O3"], verbose=False)
    return _EXTENSION["module"]


def _reason(e: Exception) -> str:
    first = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"the CUDA kernels did not build: {type(e).__name__}: {first}"[:300]


def _transpose_prepare(rt, size):
    torch = _torch()
    rows, cols = size["rows"], size["cols"]
    count = rotation(rt, 2 * rows * cols * _DTYPES[size["dtype"]])
    pairs = [(torch.randn(rows, cols, device=rt.device), torch.empty(cols, rows, device=rt.device))
             for _ in range(count)]
    nxt = _cycle(pairs)

    def checker(op):
        return poisoned_check(rt, pairs[0], op, lambda out, src: exact_check(out, src.t()))

    def tor(src, dst):               # torch's transpose: the same copy kernel as src.t().contiguous()
        dst.copy_(src.t())

    variants = [Variant("torch", lambda: tor(*nxt()), checker(tor))]
    skipped = []
    if rt.device != "cuda":
        why = f"the CUDA kernels need a CUDA device; this runtime's device is {rt.device}"
        return variants, [(v, why) for v in CUDA_VARIANTS]
    try:
        ext = _extension()
    except Exception as e:  # noqa: BLE001 - no nvcc/ninja, or a compile error: recorded, not fatal
        return variants, [(v, _reason(e)) for v in CUDA_VARIANTS]
    fns = {"pitch32": ext.transpose_pitch32, "pitch33": ext.transpose_pitch33, "naive": ext.transpose_naive_}
    for v, fn in fns.items():
        variants.append(Variant(v, (lambda fn=fn: fn(*nxt())), checker(fn)))
    return variants, skipped


def _transpose_metrics(results):
    big = max(r["size"]["rows"] * r["size"]["cols"] for r in results)
    at = {r["variant"]: r for r in results if r["size"]["rows"] * r["size"]["cols"] == big}
    notes = {"torch": "torch's transpose copy (dst.copy_(src.t()))",
             "pitch32": "shared-memory tile[32][32] (32-way conflict on the column read)",
             "pitch33": "shared-memory tile[32][33] (padded by one column)",
             "naive": "naive transpose without shared memory (writes a row apart)"}
    out = {f"bandwidth_{v}": _metric(r, "bandwidth", f"{notes[v]}: bytes read plus bytes written over the median "
                                     "time, at the largest size") for v, r in sorted(at.items())}
    if "pitch32" in at and "pitch33" in at:
        out["padded_speedup"] = _ratio(at["pitch32"]["median_s"] / at["pitch33"]["median_s"], at["pitch33"],
                                       "median time of tile[32][32] over median time of tile[32][33], at the "
                                       "largest size (same bytes)")
    if "naive" in at and "pitch33" in at:
        out["naive_over_padded"] = _ratio(at["naive"]["median_s"] / at["pitch33"]["median_s"], at["pitch33"],
                                          "median time of the naive transpose over the padded tiled one")
    if "torch" in at and "pitch33" in at:
        out["torch_over_padded"] = _ratio(at["torch"]["median_s"] / at["pitch33"]["median_s"], at["pitch33"],
                                          "median time of torch's transpose over the padded tiled one")
    return out


register(Measurement(
    name="smem-transpose",
    what="out = in^T for a row-major fp32 matrix: CUDA kernels through a 32x32 shared-memory tile without "
         "padding (tile[32][32]) and with one column of padding (tile[32][33]), a naive transpose without "
         "shared memory, and torch's transpose copy; bytes = one read and one write of the matrix; matrix "
         "far past the L2 cache",
    sizes={"full": [{"rows": 16384, "cols": 16384, "dtype": "float32"}],
           "quick": [{"rows": 8192, "cols": 8192, "dtype": "float32"}],
           "tiny": [{"rows": 70, "cols": 45, "dtype": "float32"}]},
    bytes=lambda s, v: 2 * s["rows"] * s["cols"] * _DTYPES[s["dtype"]],
    flops=lambda s, v: 0,
    prepare=_transpose_prepare,
    metrics=_transpose_metrics,
    headline="bandwidth_torch",
))
