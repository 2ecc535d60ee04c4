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


def _checked(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None, *, blocks: dict | None = None,
             group_m: int = 1) -> tuple:
    """Both matmuls' argument check (the tile sizes where the caller fixes them); (out, m, n, k), out
    allocated in a's dtype when None."""
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"matmul: need a (M, K) and b (K, N), got {tuple(a.shape)} and {tuple(b.shape)}")
    if a.dtype != b.dtype or a.dtype not in _DTYPES:
        raise ValueError("matmul: a and b must share one dtype: float32, float16 or bfloat16")
    for what, x in (blocks or {}).items():
        _power_of_two(x, 16, what)
    if isinstance(group_m, bool) or not isinstance(group_m, int) or group_m < 1:
        raise ValueError(f"matmul: group_m must be a whole number >= 1, got {group_m!r}")
    m, k = a.shape
    n = b.shape[1]
    if out is None:
        out = torch.empty((m, n), dtype=a.dtype, device=a.device)
    if out.shape != (m, n) or out.dtype not in _DTYPES:
        raise ValueError(f"matmul: out must have shape {(m, n)} and a float dtype")
    return out, m, n, k


def matmul(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None = None, *, block_m: int = 128,
           block_n: int = 128, block_k: int = 64, group_m: int = GROUP_M, num_warps: int | None = None,
           num_stages: int | None = None) -> torch.Tensor:
    """C = a b with BLOCK_M x BLOCK_N tiles and a K step of BLOCK_K (powers of two, at least 16 for
    tl.dot); fp32 accumulation; returns out (allocated in a's dtype when None)."""
    out, m, n, k = _checked(a, b, out, blocks=dict(block_m=block_m, block_n=block_n, block_k=block_k),
                            group_m=group_m)
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


# --------------------------------------------------------------------------------------------------
# matmul_autotuned: the same kernel (grouped tile order, fp32 accumulation), its tile, K step, warps and
# pipeline depth chosen by triton.autotune per (M, N, K) and dtype from AUTOTUNE_CONFIGS: the tiles of
# the Triton tutorial's Hopper list, the large ones (128 x 256 x 64 on 8 warps, 3 and 4 stages) first.
# A config whose shared memory does not fit (fp32 operands at 4 stages, say) fails to compile and the
# autotuner passes over it. Under the interpreter (TRITON_INTERPRET=1) the list is one small tile, so the
# tests do not time a dozen configurations on a CPU; `config=` fixes one configuration either way.

def _config(bm, bn, bk, warps, stages, group_m=GROUP_M):
    return triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": group_m},
                         num_warps=warps, num_stages=stages)


GPU_CONFIGS = (
    _config(128, 256, 64, 8, 3), _config(128, 256, 64, 8, 4), _config(256, 128, 64, 8, 3),
    _config(256, 128, 64, 8, 4), _config(128, 128, 64, 8, 4), _config(128, 128, 64, 4, 4),
    _config(128, 128, 64, 8, 3), _config(64, 256, 32, 4, 4), _config(128, 64, 32, 4, 4),
    _config(64, 128, 32, 4, 4), _config(128, 32, 32, 4, 4), _config(64, 32, 32, 2, 5),
)
INTERPRETER_CONFIGS = (_config(32, 32, 32, 4, 1),)


def _interpreted() -> bool:
    import os
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


AUTOTUNE_CONFIGS = INTERPRETER_CONFIGS if _interpreted() else GPU_CONFIGS
_matmul_autotuned_kernel = triton.autotune(configs=list(AUTOTUNE_CONFIGS), key=["M", "N", "K"])(_matmul_kernel)


def matmul_autotuned(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None = None, *,
                     config: dict | None = None) -> torch.Tensor:
    """C = a b by the tiled kernel with an autotuned configuration (the first call at a new (M, N, K)
    and dtype times every config in AUTOTUNE_CONFIGS); returns out. `config` fixes one instead, as a
    dict of block_m, block_n, block_k and optionally group_m, num_warps, num_stages (matmul's keywords)."""
    if config is not None:
        return matmul(a, b, out, **config)
    out, m, n, k = _checked(a, b, out)
    if m and n:
        if k == 0:
            out.zero_()
            return out

        def grid(meta):
            return (triton.cdiv(m, meta["BLOCK_M"]) * triton.cdiv(n, meta["BLOCK_N"]),)
        _matmul_autotuned_kernel[grid](a, b, out, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                       out.stride(0), out.stride(1))
    return out


def autotuned_config() -> str:
    """The configuration the autotuner chose at its last call, as text ('' before any call)."""
    best = getattr(_matmul_autotuned_kernel, "best_config", None)
    if best is None:
        return ""
    kw = best.kwargs
    return (f"BLOCK {kw['BLOCK_M']}x{kw['BLOCK_N']}x{kw['BLOCK_K']}, GROUP_M {kw['GROUP_M']}, "
            f"{best.num_warps} warps, {best.num_stages} stages")
