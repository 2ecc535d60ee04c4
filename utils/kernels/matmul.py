"""A tiled matrix product in Triton, C = A B, and the count of the global-memory bytes it moves.

    A (M x K) times B (K x N) -> C (M x N); fp32 accumulation; C in A's dtype unless `out` says otherwise.

Only the standard library, torch and triton are imported here: the GPU machines have nothing else.
Under the Triton interpreter (TRITON_INTERPRET=1, set before triton is imported) the kernel runs on CPU
tensors, which is how the tests check it on a machine with no GPU. Under the interpreter, test in float32
or float16 only: tl.dot on bfloat16 operands returns garbage there. On a GPU, float32 operands go through
tl.dot's default input precision (tf32 on tensor cores).

matmul         the kernel. One program per BLOCK_M x BLOCK_N tile of C. It walks K in steps of BLOCK_K:
               loads the BLOCK_M x BLOCK_K slab of A and the BLOCK_K x BLOCK_N slab of B (Triton stages
               them through shared memory, num_stages deep, and keeps the accumulator in registers) and
               adds their product into an fp32 accumulator; after the last step it writes its tile of C
               once. Masked loads and stores handle sizes that are not multiples of the tile. Programs are
               ordered in groups of GROUP_M tile rows (the Triton tutorial's ordering), so programs running
               at the same time share slabs of A and B in L2; the byte count below ignores that reuse.
global_bytes   what the kernel asks global memory for, counting every slab load as a read (no cache):
               each of the ceil(N / BLOCK_N) tile columns reads all of A, each of the ceil(M / BLOCK_M)
               tile rows reads all of B, masked-off elements are not read, and C is written once:
                   e_in * K * (M * ceil(N / BLOCK_N) + N * ceil(M / BLOCK_M)) + e_out * M * N.
               With BLOCK_M = BLOCK_N = 1 it is the naive kernel's count, two operand loads per multiply-add.
bytes_per_fma  the same count per multiply-add, for exact multiples and the write left out: e (1/BM + 1/BN).
smem_bytes     shared memory one program holds for its operand slabs: stages * (BM + BN) * BK * e.
block_k_for    the K step the book's measurement uses for a square tile: 32 up to 32, 64 from 64 up.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

GROUP_M = 8


@triton.jit
def _matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                   stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                   GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    # Grouped ordering: GROUP_M tile rows, column by column, then the next group.
    per_group = GROUP_M * num_pid_n
    group = pid // per_group
    first_m = group * GROUP_M
    group_rows = tl.minimum(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % per_group) % group_rows
    pid_n = (pid % per_group) // group_rows

    offs_m = pid_m.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n.to(tl.int64) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    m_ok = offs_m[:, None] < M
    n_ok = offs_n[None, :] < N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_ok = (k0 + offs_k) < K
        a = tl.load(a_ptrs, mask=m_ok & k_ok[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=k_ok[:, None] & n_ok, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=m_ok & n_ok)


_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def _power_of_two(x: int, lo: int, what: str) -> None:
    if isinstance(x, bool) or not isinstance(x, int) or x < lo or x & (x - 1):
        raise ValueError(f"matmul: {what} must be a power of two of at least {lo}, got {x!r}")


def matmul(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None = None, *, block_m: int = 128,
           block_n: int = 128, block_k: int = 64, group_m: int = GROUP_M, num_warps: int | None = None,
           num_stages: int | None = None) -> torch.Tensor:
    """C = a b with BLOCK_M x BLOCK_N tiles and a K step of BLOCK_K (powers of two, at least 16 for
    tl.dot); fp32 accumulation; returns out (allocated in a's dtype when None)."""
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"matmul: need a (M, K) and b (K, N), got {tuple(a.shape)} and {tuple(b.shape)}")
    if a.dtype != b.dtype or a.dtype not in _DTYPES:
        raise ValueError("matmul: a and b must share one dtype: float32, float16 or bfloat16")
    for x, what in ((block_m, "block_m"), (block_n, "block_n"), (block_k, "block_k")):
        _power_of_two(x, 16, what)
    if isinstance(group_m, bool) or not isinstance(group_m, int) or group_m < 1:
        raise ValueError(f"matmul: group_m must be a whole number >= 1, got {group_m!r}")
    m, k = a.shape
    n = b.shape[1]
    if out is None:
        out = torch.empty((m, n), dtype=a.dtype, device=a.device)
    if out.shape != (m, n) or out.dtype not in _DTYPES:
        raise ValueError(f"matmul: out must have shape {(m, n)} and a float dtype")
    if m and n:
        if k == 0:
            out.zero_()
            return out
        grid = (triton.cdiv(m, block_m) * triton.cdiv(n, block_n),)
        extra = {} if num_stages is None else {"num_stages": num_stages}
        _matmul_kernel[grid](a, b, out, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                             out.stride(0), out.stride(1), BLOCK_M=block_m, BLOCK_N=block_n,
                             BLOCK_K=block_k, GROUP_M=group_m,
                             num_warps=num_warps or (8 if block_m * block_n >= 128 * 128 else 4), **extra)
    return out


def _cdiv(x: int, y: int) -> int:
    return -(-x // y)


def global_bytes(m: int, n: int, k: int, block_m: int, block_n: int, elem_bytes: int,
                 out_bytes: int | None = None) -> int:
    """Bytes the tiled kernel asks global memory for, every slab load counted as a read (no cache):
    each tile column reads all of A, each tile row all of B (masked-off elements not read), C written once.
    block_m = block_n = 1 gives the naive kernel (two operand loads per multiply-add)."""
    for x, what in ((m, "m"), (n, "n"), (k, "k"), (block_m, "block_m"), (block_n, "block_n"),
                    (elem_bytes, "elem_bytes")):
        if isinstance(x, bool) or not isinstance(x, int) or x < 1:
            raise ValueError(f"global_bytes: {what} must be a whole number >= 1, got {x!r}")
    e_out = elem_bytes if out_bytes is None else out_bytes
    return elem_bytes * k * (m * _cdiv(n, block_n) + n * _cdiv(m, block_m)) + e_out * m * n


def bytes_per_fma(block_m: float, block_n: float, elem_bytes: float) -> float:
    """Operand bytes read per multiply-add by a BLOCK_M x BLOCK_N tile (exact multiples, C's write left
    out): e (1/BM + 1/BN). The same formula with the per-thread register tile gives shared-memory bytes."""
    return elem_bytes * (1 / block_m + 1 / block_n)


def smem_bytes(block_m: int, block_n: int, block_k: int, elem_bytes: int, stages: int = 1) -> int:
    """Shared memory one program holds for its operand slabs: stages x (BM + BN) x BK x e."""
    return stages * (block_m + block_n) * block_k * elem_bytes


def block_k_for(tile: int) -> int:
    """The K step the book's measurement pairs with a square tile: 32 up to 32, 64 from 64 up."""
    return 32 if tile <= 32 else 64
