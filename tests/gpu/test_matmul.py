"""The tiled Triton matmul (utils.gpu.kernels.matmul) under the Triton interpreter on CPU tensors, and its
byte count against hand counts.

Correctness in float32 and float16 only: under the interpreter tl.dot on bfloat16 returns garbage. Every
output is poisoned (NaN) first, must be written everywhere, and its relative-error norm against a float64
product of the same input values must sit under a rigorous bound (see `bound`)."""
import pytest
import torch

from utils.gpu.kernels.matmul import block_k_for, bytes_per_fma, global_bytes, matmul, smem_bytes

U32 = 2.0 ** -24                     # unit roundoff of fp32 (the accumulator)
U_OUT = {torch.float32: 2.0 ** -24, torch.float16: 2.0 ** -11}   # unit roundoff of the output's dtype


def rel_err(out, ref):
    o = out.double()
    if not torch.isfinite(o).all():
        return float("inf")
    return float(torch.linalg.vector_norm(o - ref) / torch.linalg.vector_norm(ref))


def bound(a, b, out_dtype):
    """Rigorous normwise bound on the relative error: fp32 accumulation of K products (exact in fp32 for
    fp16 inputs; one rounding each for fp32 inputs) is within gamma_(K+1) |A||B| elementwise, gamma_n =
    n u / (1 - n u), and rounding into the output dtype adds at most its unit roundoff relative to C."""
    k = a.shape[1]
    g = (k + 1) * U32 / (1 - (k + 1) * U32)
    a64, b64 = a.double(), b.double()
    c = a64 @ b64
    ratio = float(torch.linalg.vector_norm(a64.abs() @ b64.abs()) / torch.linalg.vector_norm(c))
    return (1 + U_OUT[out_dtype]) * g * ratio + U_OUT[out_dtype], c


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("m,n,k", [(64, 64, 64), (67, 45, 93), (1, 130, 17), (130, 1, 200), (33, 31, 16)])
@pytest.mark.parametrize("tile", [(16, 16, 16), (32, 64, 32), (64, 32, 64), (128, 128, 64)])
def test_matmul_matches_float64_at_every_tile_and_size(dtype, m, n, k, tile):
    bm, bn, bk = tile
    a = torch.randn(m, k).to(dtype)
    b = torch.randn(k, n).to(dtype)
    out = torch.full((m, n), float("nan"), dtype=dtype)
    result = matmul(a, b, out, block_m=bm, block_n=bn, block_k=bk)
    assert result is out
    assert torch.isfinite(out).all(), "every element of C written"
    tol, ref = bound(a, b, dtype)
    assert rel_err(out, ref) <= tol


def test_strided_operands_and_group_ordering():
    a = torch.randn(90, 70).t()                     # (70, 90), column-major
    b = torch.randn(50, 90).t()                     # (90, 50), column-major
    for g in (1, 3, 8):
        out = torch.full((70, 50), float("nan"))
        matmul(a, b, out, block_m=16, block_n=32, block_k=16, group_m=g)
        tol, ref = bound(a, b, torch.float32)
        assert rel_err(out, ref) <= tol


def test_fp16_inputs_into_a_float32_output():
    a, b = torch.randn(40, 48).half(), torch.randn(48, 24).half()
    out = torch.full((40, 24), float("nan"))
    matmul(a, b, out, block_m=32, block_n=16, block_k=16)
    tol, ref = bound(a, b, torch.float32)
    assert rel_err(out, ref) <= tol


def test_k_zero_gives_zeros():
    out = torch.full((3, 5), float("nan"))
    matmul(torch.empty(3, 0), torch.empty(0, 5), out)
    assert (out == 0).all()


@pytest.mark.parametrize("bad", [dict(block_m=24), dict(block_k=8), dict(block_n=True), dict(group_m=0)])
def test_bad_tiles_are_refused(bad):
    with pytest.raises(ValueError):
        matmul(torch.randn(4, 4), torch.randn(4, 4), **bad)


def test_mismatched_operands_are_refused():
    with pytest.raises(ValueError):
        matmul(torch.randn(4, 5), torch.randn(4, 5))
    with pytest.raises(ValueError):
        matmul(torch.randn(4, 4), torch.randn(4, 4).half())


def test_bytes_naive_by_hand():
    # 1x1 tiles: each of the M*N outputs reads a row of A (K elements) and a column of B (K elements).
    m, n, k, e = 3, 5, 7, 2
    assert global_bytes(m, n, k, 1, 1, e) == m * n * 2 * k * e + m * n * e == 450
    assert bytes_per_fma(1, 1, e) == 2 * e


def test_bytes_tiled_by_hand():
    # 256 x 256 x 64 in bf16 with 128 x 128 tiles: 4 programs, each reading a 128 x 64 slab of A and a
    # 64 x 128 slab of B: 4 * (128*64 + 64*128) * 2 bytes, plus C written once (256*256*2).
    assert global_bytes(256, 256, 64, 128, 128, 2) == 4 * (2 * 128 * 64) * 2 + 256 * 256 * 2 == 131072 + 131072
    # Not multiples: M = 130 rows give two tile rows (128 and 2 rows), N = 100 one tile column.
    # A: every row read once per tile column (1) -> 130 * 50; B: every column once per tile row (2) -> 2 * 100 * 50.
    assert global_bytes(130, 100, 50, 128, 128, 4) == 4 * (130 * 50 + 2 * 100 * 50) + 4 * 130 * 100
    # fp32 accumulation into an fp32 C from fp16 operands
    assert global_bytes(16, 16, 16, 16, 16, 2, out_bytes=4) == 2 * (16 * 16 + 16 * 16) + 4 * 16 * 16


def test_bytes_per_fma_is_the_exact_count_divided_by_mnk():
    m = n = k = 1024
    for t in (16, 32, 64, 128, 256):
        reads = global_bytes(m, n, k, t, t, 2) - 2 * m * n
        assert reads == bytes_per_fma(t, t, 2) * m * n * k
    assert bytes_per_fma(128, 128, 2) == 2 * 2 / 128 == 0.03125
    assert bytes_per_fma(64, 256, 2) == 2 * (1 / 64 + 1 / 256)


def test_bytes_refuse_impossible_sizes():
    with pytest.raises(ValueError):
        global_bytes(0, 4, 4, 16, 16, 2)
    with pytest.raises(ValueError):
        global_bytes(4, 4, 4, 16, 16, 0)


def test_shared_memory_and_k_step():
    assert smem_bytes(128, 128, 64, 2) == 32768
    assert smem_bytes(128, 128, 64, 2, stages=2) == 65536        # double buffering doubles it
    assert [block_k_for(t) for t in (16, 32, 64, 128)] == [32, 32, 64, 64]
