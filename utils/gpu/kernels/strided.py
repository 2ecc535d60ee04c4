"""A strided gather into a contiguous output: out[i] = src[i * stride] for i < n, in one Triton kernel.

Only the standard library, torch and triton are imported here: the GPU machines have nothing else.
Under the Triton interpreter (TRITON_INTERPRET=1, set before triton is imported) it runs on CPU tensors,
which is how the tests and the chapter check it on a machine with no GPU.

Consecutive lanes of a warp handle consecutive i, so at stride 1 a warp's 32 loads are contiguous and at
stride s they are s elements apart: the coalescing chapter's strided pattern, on a whole array. The
stores are always contiguous.

strided_copy   the kernel. Useful bytes: n * e read and n * e written (e the element size).
useful_bytes   2 * n * e: what the program asked for.
sectors_read   32-byte sectors the reads touch over the whole array (src 32-byte aligned, as every torch
               allocation is): at a stride of 32 bytes or more every element is in a sector of its own;
               below, the n elements span ceil(((n - 1) * s + 1) * e / 32) sectors, every one touched.
moved_bytes    32 * sectors_read + n * e: the sectors read plus the contiguous writes.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

SECTOR = 32
DEFAULT_BLOCK = 4096
DEFAULT_WARPS = 8


@triton.jit
def _strided_kernel(src_ptr, dst_ptr, n, stride, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(dst_ptr + offsets, tl.load(src_ptr + offsets * stride, mask=mask), mask=mask)


def strided_copy(src: torch.Tensor, stride: int, out: torch.Tensor | None = None, *, n: int | None = None,
                 block: int = DEFAULT_BLOCK, num_warps: int = DEFAULT_WARPS) -> torch.Tensor:
    """out[i] = src[i * stride] for i < n (n defaults to every element the stride reaches); returns out."""
    if isinstance(stride, bool) or not isinstance(stride, int) or stride < 1:
        raise ValueError(f"strided_copy: stride must be a whole number >= 1, got {stride!r}")
    if src.dim() != 1 or not src.is_contiguous():
        raise ValueError("strided_copy: src must be a contiguous 1-D tensor")
    if block <= 0 or block & (block - 1):
        raise ValueError("strided_copy: block must be a power of two")
    reach = -(-src.numel() // stride)
    if n is None:
        n = out.numel() if out is not None else reach
    if n > reach:
        raise ValueError(f"strided_copy: {n} elements at stride {stride} run past src ({src.numel()} elements)")
    if out is None:
        out = torch.empty(n, dtype=src.dtype, device=src.device)
    if out.dim() != 1 or out.numel() != n or out.dtype != src.dtype or not out.is_contiguous():
        raise ValueError("strided_copy: out must be a contiguous 1-D tensor of n elements of src's dtype")
    if n:
        _strided_kernel[(triton.cdiv(n, block),)](src, out, n, stride, BLOCK=block, num_warps=num_warps)
    return out


def useful_bytes(n: int, stride: int, e: int) -> int:
    """Bytes the program asks for: n elements read, n written."""
    return 2 * n * e


def sectors_read(n: int, stride: int, e: int) -> int:
    """Distinct 32-byte sectors the reads src[i * stride], i < n, touch (src 32-byte aligned, e dividing 32)."""
    if n <= 0:
        return 0
    if stride * e >= SECTOR:
        return n
    return -(-((n - 1) * stride + 1) * e // SECTOR)


def moved_bytes(n: int, stride: int, e: int) -> int:
    """Bytes the memory system moves: every sector read, whole, plus the contiguous writes."""
    return SECTOR * sectors_read(n, stride, e) + n * e
