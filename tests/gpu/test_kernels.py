"""Kernel correctness without a GPU: every Triton kernel under the Triton interpreter (TRITON_INTERPRET=1,
set in conftest.py before triton is imported) on CPU tensors at small sizes against a reference, and
every CUDA source compiled with nvcc where nvcc is on the machine.

The method is the book's: fresh random inputs (never zeros), outputs poisoned before the run and checked
written everywhere, the relative-error norm against a float64 reference. (The attention kernel uses
tl.dot, so it is tested in fp16 and fp32 only: under the interpreter tl.dot on bf16 returns garbage.)
Tolerances on the relative-error norm: float32 far under 1e-5, float16 under 1e-3, bfloat16 under 1e-2,
each against a float64 reference computed from the same input values.
"""
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import torch

from utils.gpu.kernels import DEFAULT_BLOCK, chain_reference, copy, eager_chain, fused_chain, softmax, tick
from utils.gpu.kernels.softmax import MAX_COLS, block_size, num_warps

ROOT = Path(__file__).resolve().parents[2]
CUDA_SOURCES = sorted((ROOT / "utils" / "gpu" / "cuda").glob("*.cu"))


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    o, r = out.double(), ref.double()
    if not torch.isfinite(o).all():
        return float("inf")
    return float(torch.linalg.vector_norm(o - r) / torch.linalg.vector_norm(r))


def random_like(n: int, dtype: torch.dtype) -> torch.Tensor:
    if dtype.is_floating_point:
        x = torch.randn(n, dtype=torch.float32).to(dtype)
    else:
        x = torch.randint(-1000, 1000, (n,), dtype=dtype)
    x[x == 0] = 1                      # never zeros: an unwritten zero must not pass for a copied one
    return x


def poisoned(x: torch.Tensor) -> torch.Tensor:
    if x.dtype.is_floating_point:
        return torch.full_like(x, float("nan"))
    return torch.full_like(x, torch.iinfo(x.dtype).min)


def test_the_interpreter_is_on():
    assert os.environ.get("TRITON_INTERPRET") == "1", "conftest.py must set TRITON_INTERPRET=1 before triton loads"


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int32])
@pytest.mark.parametrize("n,block", [(1, 1024), (1000, 1024), (4097, 1024), (3 * 1024 + 5, 1024),
                                     (DEFAULT_BLOCK + 3, DEFAULT_BLOCK)])
def test_copy_matches_its_source_everywhere(dtype, n, block):
    src = random_like(n, dtype)
    ref = src.double().clone()
    out = poisoned(src)
    result = copy(src, out, block=block)
    assert result is out
    written = ~torch.isnan(out) if dtype.is_floating_point else out != torch.iinfo(dtype).min
    assert bool(written.all()), "some elements were never written"
    assert torch.equal(out, src)                       # a copy is exact
    assert rel_err(out, ref) == 0.0
    assert torch.equal(src.double(), ref), "the source was modified"


def test_copy_allocates_its_output_and_handles_empty():
    src = random_like(777, torch.float32)
    assert torch.equal(copy(src), src)
    assert copy(torch.empty(0)).numel() == 0


def test_copy_writes_nothing_past_the_end():
    src = random_like(1000, torch.float32)
    backing = torch.full((1100,), float("nan"))
    copy(src, backing[:1000], block=1024)              # the mask keeps the last block inside the view
    assert torch.equal(backing[:1000], src) and bool(torch.isnan(backing[1000:]).all())


@pytest.mark.parametrize("bad", [
    lambda: copy(torch.randn(8, 8).t()),                               # not contiguous
    lambda: copy(torch.randn(8), torch.empty(9)),                      # wrong shape
    lambda: copy(torch.randn(8), torch.empty(8, dtype=torch.float16)), # wrong dtype
    lambda: copy(torch.randn(8), block=1000),                          # block not a power of two
    lambda: tick(torch.zeros(1, dtype=torch.int64)),                   # counter of the wrong dtype
    lambda: tick(torch.zeros(2, dtype=torch.int32)),                   # more than one counter
])
def test_kernels_refuse_bad_arguments(bad):
    with pytest.raises(ValueError):
        bad()


@pytest.mark.parametrize("launches", [1, 7])
def test_tick_adds_one_per_launch(launches):
    start = int(torch.randint(1, 1 << 20, ()))
    counter = torch.tensor([start], dtype=torch.int32)
    for _ in range(launches):
        tick(counter)
    assert int(counter.item()) == start + launches


@pytest.mark.parametrize("source", CUDA_SOURCES, ids=lambda p: p.name)
def test_cuda_sources_compile(source, tmp_path):
    nvcc = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if Path("/usr/local/cuda/bin/nvcc").exists() else None)
    if nvcc is None:
        pytest.skip("nvcc is not on this machine (PATH or /usr/local/cuda/bin): CUDA sources not compiled")
    run = subprocess.run([nvcc, "-O3", "-std=c++17", "-arch=sm_90", "-Werror", "all-warnings",
                          "-o", str(tmp_path / source.stem), str(source)],
                         capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr[-3000:]
    assert (tmp_path / source.stem).exists()


def test_there_is_a_cuda_source():
    assert CUDA_SOURCES, "utils/gpu/cuda/ holds no .cu file"


# --- fused softmax --------------------------------------------------------------------------------

TOL = {torch.float32: 1e-5, torch.float16: 1e-3, torch.bfloat16: 1e-2}


def logits(rows: int, cols: int, dtype: torch.dtype, scale: float = 4.0) -> torch.Tensor:
    return (scale * torch.randn(rows, cols)).to(dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("rows,cols", [(1, 1), (5, 37), (3, 1000), (2, 1024), (2, 4097)])
def test_softmax_matches_float64_and_writes_every_element(dtype, rows, cols):
    x = logits(rows, cols, dtype)
    ref = torch.softmax(x.double(), dim=-1)
    out = torch.full_like(x, float("nan"))
    assert softmax(x, out) is out
    assert bool(torch.isfinite(out).all()), "some elements were never written"
    assert rel_err(out, ref) < TOL[dtype]
    assert torch.allclose(out.double().sum(-1), torch.ones(rows, dtype=torch.float64), atol=10 * TOL[dtype] * cols ** 0.5)


def test_softmax_does_not_overflow_on_large_logits_and_honours_masked_entries():
    x = torch.tensor([[1000.0, 999.0, 998.0, -float("inf")], [-1e4, 0.0, 1e4, 5.0]])
    out = softmax(x)
    ref = torch.softmax(x.double(), dim=-1)
    assert bool(torch.isfinite(out).all()) and rel_err(out, ref) < 1e-6
    assert out[0, 3] == 0.0, "a masked (-inf) logit gets probability zero"
    naive = torch.exp(x[0, :3]) / torch.exp(x[0, :3]).sum()          # without the max: inf / inf
    assert bool(torch.isnan(naive).all())


def test_softmax_reads_strided_rows_and_writes_nothing_past_a_row():
    backing = logits(6, 50, torch.float32)
    x = backing[::2, :40]                                              # row stride 100, rows of 40
    out_backing = torch.full((3, 64), float("nan"))
    out = out_backing[:, :40]
    softmax(x, out)
    assert rel_err(out, torch.softmax(x.double(), -1)) < 1e-5
    assert bool(torch.isnan(out_backing[:, 40:]).all()), "the masked lanes stored nothing"


def test_softmax_allocates_and_handles_empty():
    x = logits(4, 100, torch.float32)
    assert rel_err(softmax(x), torch.softmax(x.double(), -1)) < 1e-5
    assert softmax(torch.empty(0, 7)).shape == (0, 7)


def test_softmax_block_rule():
    assert [block_size(n) for n in (1, 16, 17, 1000, 1024, 1025, 5000)] == [16, 16, 32, 1024, 1024, 2048, 8192]
    assert [num_warps(block_size(n)) for n in (1024, 4096, 16384, 32768)] == [4, 8, 32, 32]
    assert MAX_COLS * 4 * 2 == 256 * 1024, "half a Hopper SM's 256 KB register file for the row's fp32 values"


@pytest.mark.parametrize("bad", [
    lambda: softmax(torch.randn(8)),                                   # not 2-D
    lambda: softmax(torch.randint(0, 5, (2, 3))),                      # not floating point
    lambda: softmax(torch.randn(4, 8).t()),                            # rows not contiguous
    lambda: softmax(torch.randn(1, MAX_COLS + 1)),                     # wider than the registers hold
    lambda: softmax(torch.randn(2, 8), torch.empty(2, 8, dtype=torch.float16)),   # out of another dtype
    lambda: block_size(0),
])
def test_softmax_refuses_bad_arguments(bad):
    with pytest.raises(ValueError):
        bad()


# --- fused elementwise chain ------------------------------------------------------------------------

def scalars():
    return [float(v) for v in (torch.rand(4) + 0.5) * torch.tensor([1.0, -1.0, 1.0, -1.0])]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("n,block", [(1, 1024), (1000, 1024), (3 * 1024 + 5, 1024), (DEFAULT_BLOCK + 3, DEFAULT_BLOCK)])
def test_fused_and_eager_chains_match_float64(dtype, n, block):
    x = random_like(n, dtype)
    a, b, c, d = scalars()
    ref = chain_reference(x, a, b, c, d)
    fused = poisoned(x)
    assert fused_chain(x, a, b, c, d, fused, block=block) is fused
    assert bool(torch.isfinite(fused).all()), "some elements were never written"
    assert rel_err(fused, ref) < TOL[dtype]
    eager = poisoned(x)
    assert eager_chain(x, a, b, c, d, eager) is eager
    # Eager rounds to the dtype after each of five operations, so its error is relative to the largest
    # intermediate, not to the result: c*gelu(a*x + b) + d can cancel to near zero (with n = 1 the
    # result-relative error is then unbounded). Normalise by a bound on every intermediate's magnitude.
    xd = x.double()
    intermediates = abs(c) * (abs(a) * xd.abs() + abs(b)) + abs(d)
    assert float((eager.double() - ref).abs().div(intermediates).max()) < 4 * TOL[dtype]


def test_fused_chain_is_gelu_of_an_affine_map():
    x = torch.linspace(-8, 8, 4001)
    out = fused_chain(x, 1.0, 0.0, 1.0, 0.0)
    assert rel_err(out, torch.nn.functional.gelu(x.double(), approximate="tanh")) < 1e-6
    y = x[1000:3001]                                   # |2y + 1| <= 9: exp(-z) stays finite in float32
    assert rel_err(fused_chain(y, 2.0, 1.0, -3.0, 0.5),
                   -3.0 * torch.nn.functional.gelu(2.0 * y.double() + 1.0, approximate="tanh") + 0.5) < 1e-6


def test_fused_chain_writes_nothing_past_the_end_and_handles_empty():
    x = random_like(1000, torch.float32)
    backing = torch.full((1100,), float("nan"))
    fused_chain(x, *scalars(), backing[:1000], block=1024)
    assert bool(torch.isfinite(backing[:1000]).all()) and bool(torch.isnan(backing[1000:]).all())
    assert fused_chain(torch.empty(0), 1.0, 0.0, 1.0, 0.0).numel() == 0


@pytest.mark.parametrize("bad", [
    lambda: fused_chain(torch.randn(8, 8).t(), 1.0, 0.0, 1.0, 0.0),                 # not contiguous
    lambda: fused_chain(torch.randint(0, 5, (8,)), 1.0, 0.0, 1.0, 0.0),             # not floating point
    lambda: fused_chain(torch.randn(8), 1.0, 0.0, 1.0, 0.0, torch.empty(9)),        # wrong shape
    lambda: fused_chain(torch.randn(8), 1.0, 0.0, 1.0, 0.0, block=1000),            # block not a power of two
    lambda: eager_chain(torch.randn(8), 1.0, 0.0, 1.0, 0.0, torch.empty(8, dtype=torch.float16)),
])
def test_chain_refuses_bad_arguments(bad):
    with pytest.raises(ValueError):
        bad()


# --- tiled attention (FlashAttention-style forward) ---------------------------------------------------
# tl.dot is in this kernel: fp32 and fp16 only under the interpreter (bf16 tl.dot is garbage there).

import importlib  # noqa: E402

from utils.gpu.kernels import attention, attention_reference, materialised_attention  # noqa: E402

ATT = importlib.import_module("utils.gpu.kernels.attention")
ATT_TOL = {torch.float32: 1e-5, torch.float16: 2e-3}


def qkv(shape, dtype):
    return tuple(torch.randn(shape).to(dtype) for _ in range(3))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape,block_q,block_k", [
    ((2, 128, 64), 128, 64),            # the chapter's size: one query block, two key blocks
    ((1, 2, 200, 32), 64, 32),          # N not a multiple of either block; 4-D (batch, heads, N, d)
    ((3, 77, 16), 32, 16),              # a ragged last block of queries and of keys
    ((1, 1, 16), 16, 16),               # one query, one key
])
def test_attention_matches_float64_and_writes_every_element(dtype, causal, shape, block_q, block_k):
    q, k, v = qkv(shape, dtype)
    ref = attention_reference(q, k, v, causal=causal)
    out = torch.full_like(q, float("nan"))
    assert attention(q, k, v, out, causal=causal, block_q=block_q, block_k=block_k) is out
    assert bool(torch.isfinite(out).all()), "some elements were never written"
    assert rel_err(out, ref) < ATT_TOL[dtype]
    assert rel_err(materialised_attention(q, k, v, causal=causal), ref) < ATT_TOL[dtype]


def test_attention_scale_and_large_logits():
    q, k, v = qkv((2, 96, 32), torch.float32)
    for scale in (1.0, 0.05, 3.0):                       # 3.0: logits in the hundreds; exp would overflow fp32 unshifted
        out = attention(q * 4, k * 4, v, scale=scale, block_q=32, block_k=32)
        assert rel_err(out, attention_reference(q * 4, k * 4, v, scale=scale)) < 1e-5


def test_attention_causal_first_row_is_the_first_value():
    q, k, v = qkv((2, 50, 16), torch.float32)
    out = attention(q, k, v, causal=True, block_q=16, block_k=16)
    assert torch.allclose(out[:, 0], v[:, 0], atol=1e-6), "the first query sees only the first key"


def test_attention_writes_nothing_past_its_rows():
    q, k, v = qkv((1, 70, 16), torch.float32)
    backing = torch.full((1, 80, 16), float("nan"))
    attention(q, k, v, backing[:, :70], block_q=64, block_k=16)   # a contiguous view of the first 70 rows
    assert bool(torch.isfinite(backing[:, :70]).all()) and bool(torch.isnan(backing[:, 70:]).all())


def test_attention_byte_and_flop_counts():
    n, d, e = 8192, 128, 2
    assert ATT.materialised_bytes(n, d, e) == 4 * n * n * e + 4 * n * d * e
    assert ATT.tiled_bytes(n, d, e, 128) == 2 * n * d * e + 2 * n * d * e * (n // 128)
    assert ATT.tiled_bytes(130, 32, 4, 128) == 2 * 130 * 32 * 4 * 3    # two query blocks: K, V read twice
    assert ATT.flops(n, d) == 4 * n * n * d
    assert ATT.BLOCK_Q == 128 and ATT.BLOCK_K == 64


@pytest.mark.parametrize("bad", [
    lambda: attention(torch.randn(2, 8, 16), torch.randn(2, 9, 16), torch.randn(2, 8, 16)),   # shapes differ
    lambda: attention(*qkv((2, 8, 24), torch.float32)),                                       # d not a power of two
    lambda: attention(*qkv((2, 8, 8), torch.float32)),                                        # d below 16
    lambda: attention(*qkv((2, 8, 16), torch.float32), block_q=48),                           # block not a power of two
    lambda: attention(torch.randn(2, 8, 16), torch.randn(2, 8, 16).half(), torch.randn(2, 8, 16)),   # dtypes differ
    lambda: attention(*qkv((2, 8, 16), torch.float32), torch.empty(2, 8, 16, dtype=torch.float16)),  # out dtype
    lambda: attention(*qkv((2, 8, 16), torch.float32), torch.empty(2, 16, 16)[:, ::2]),             # out strided
    lambda: attention(*(torch.randint(0, 5, (2, 8, 16)) for _ in range(3))),                  # not floating point
])
def test_attention_refuses_bad_arguments(bad):
    with pytest.raises(ValueError):
        bad()


# --- strided gather (coalescing) -------------------------------------------------------------------------

from utils.gpu.kernels.strided import moved_bytes, sectors_read, strided_copy, useful_bytes  # noqa: E402


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int32])
@pytest.mark.parametrize("n,stride,block", [(1, 1, 1024), (1000, 1, 1024), (1000, 2, 256), (777, 3, 256),
                                            (4097, 32, 1024), (300, 17, 128)])
def test_strided_copy_matches_a_strided_view(dtype, n, stride, block):
    src = random_like(n * stride, dtype)
    out = poisoned(random_like(n, dtype))
    assert strided_copy(src, stride, out, block=block) is out
    assert torch.equal(out, src[::stride]), "every element is src[i * stride], and every one was written"


def test_strided_copy_allocates_writes_nothing_past_n_and_handles_empty():
    src = random_like(100, torch.float32)
    assert torch.equal(strided_copy(src, 3), src[::3])          # n = every element stride 3 reaches: 34
    backing = torch.full((60,), float("nan"))
    strided_copy(src, 2, backing[:50])
    assert torch.equal(backing[:50], src[::2]) and bool(torch.isnan(backing[50:]).all())
    assert strided_copy(src, 4, n=0).numel() == 0


@pytest.mark.parametrize("bad", [
    lambda: strided_copy(torch.randn(10), 0),                          # stride 0
    lambda: strided_copy(torch.randn(10), 2, n=6),                     # runs past src
    lambda: strided_copy(torch.randn(4, 4), 1),                        # not 1-D
    lambda: strided_copy(torch.randn(20)[::2], 1),                     # not contiguous
    lambda: strided_copy(torch.randn(10), 1, torch.empty(10).half()),  # out dtype
    lambda: strided_copy(torch.randn(10), 1, block=100),               # block not a power of two
])
def test_strided_copy_refuses_bad_arguments(bad):
    with pytest.raises(ValueError):
        bad()


def test_strided_byte_and_sector_counts_agree_with_the_analyser():
    from utils.gpu.coalescing import analyse, strided
    n, e = 1 << 20, 4
    assert useful_bytes(n, 32, e) == 2 * n * e
    assert sectors_read(n, 1, e) == n * e // 32 and sectors_read(n, 2, e) == n * e * 2 // 32
    assert sectors_read(n, 8, e) == sectors_read(n, 32, e) == n
    assert moved_bytes(n, 32, e) == 32 * n + n * e
    for stride in (1, 2, 4, 8, 16, 32):        # one warp's worth: the whole-array count per 32 elements
        warp = analyse(strided(0, stride * e, e), e)
        assert sectors_read(32, stride, e) == warp.n_sectors


# --- top-k by a four-pass radix select (utils.gpu.kernels.topk: numpy reference and torch passes) ---------

import numpy as np  # noqa: E402

from utils.gpu.kernels.topk import PASSES, keys, radix_thresholds, radix_topk, radix_topk_torch, reference_topk  # noqa: E402

_SPECIALS = np.array([0.0, -0.0, np.inf, -np.inf, 1.5, -1.5, 3.4e38, -3.4e38, 1e-45, -1e-45], np.float32)


def _topk_rows(rng, kind, rows, n):
    if kind == "normal":
        return (4 * rng.standard_normal((rows, n))).astype(np.float32)
    if kind == "few-values":                       # many ties, negatives and zeros
        return rng.integers(-3, 4, (rows, n)).astype(np.float32)
    if kind == "specials":                         # +-0, +-inf, extremes, denormals
        return rng.choice(_SPECIALS, (rows, n))
    return (4 * rng.standard_normal((rows, n))).astype(np.float16).astype(np.float32)   # fp16-rounded: ties


@pytest.mark.parametrize("kind", ["normal", "few-values", "specials", "fp16-rounded"])
def test_radix_select_matches_a_stable_sort_exactly(kind):
    rng = np.random.default_rng(7)
    for _ in range(60):
        n = int(rng.integers(1, 2500))
        k = int(rng.integers(1, n + 1))
        x = _topk_rows(rng, kind, int(rng.integers(1, 4)), n)
        v0, i0 = reference_topk(x, k)
        v1, i1 = radix_topk(x, k)
        assert np.array_equal(i1, i0) and np.array_equal(v1, v0)
        vt, it = radix_topk_torch(torch.from_numpy(x), k)
        assert np.array_equal(it.numpy(), i0) and np.array_equal(vt.numpy(), v0)
        tv, _ = torch.topk(torch.from_numpy(x), k)              # torch.topk's values, the same
        assert np.array_equal(tv.numpy(), v0)


def test_radix_keys_preserve_order_and_tie_the_zeros():
    x = np.array([-np.inf, -3.4e38, -1.5, -1e-45, -0.0, 0.0, 1e-45, 1.5, 3.4e38, np.inf], np.float32)
    k = keys(x)
    assert k[4] == k[5] and all(int(a) < int(b) for a, b in zip(np.delete(k, 4)[:-1], np.delete(k, 4)[1:]))


def test_radix_select_threshold_is_the_kth_largest_and_passes_shrink():
    rng = np.random.default_rng(1)
    x = (4 * rng.standard_normal((4, 20000))).astype(np.float32)
    t, need, visited = radix_thresholds(keys(x), 50)
    kth = np.sort(keys(x), axis=1)[:, -50]
    assert np.array_equal(t, kth) and (need >= 1).all() and len(visited) == PASSES
    assert visited[0] == x.size and visited[1] < visited[0] / 20       # after the top byte, a sliver is left


@pytest.mark.parametrize("bad", [dict(k=0), dict(k=11), dict(k=2.0), dict(x=np.zeros(10)),
                                 dict(x=np.array([1, np.nan] * 5, np.float32))])
def test_radix_select_refuses_bad_arguments(bad):
    args = dict(x=np.arange(10, dtype=np.float32), k=3) | bad
    with pytest.raises(ValueError):
        radix_topk(args["x"], args["k"])
