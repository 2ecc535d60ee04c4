"""Triton kernels the measurement harness times: a device-to-device copy, and a one-counter tick.

Only the standard library, torch and triton are imported here: the GPU machines have nothing else.
Under the Triton interpreter (TRITON_INTERPRET=1, set before triton is imported) both run on CPU
tensors, which is how the tests check them on a machine with no GPU.

copy      out[i] = src[i] for every i: each element read once and written once, so the bytes a copy
          of n elements of e bytes moves are 2 * n * e. Any dtype; the offsets are 64-bit, so a buffer
          of more than 2**31 elements is copied correctly.
tick      counter[0] += 1, in one program: a launch that does next to nothing, and whose launches can
          be counted afterwards (after N launches the counter is N higher). The launch-overhead
          measurement times it, launched from Python one at a time and replayed from a CUDA graph.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

# 8192 elements over 8 warps: 32 elements per thread, several 16-byte loads in flight per thread,
# which is what a bandwidth-bound copy needs to approach the memory's rate.
DEFAULT_BLOCK = 8192
DEFAULT_WARPS = 8


@triton.jit
def _copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(dst_ptr + offsets, tl.load(src_ptr + offsets, mask=mask), mask=mask)


@triton.jit
def _tick_kernel(counter_ptr):
    tl.store(counter_ptr, tl.load(counter_ptr) + 1)


def copy(src: torch.Tensor, out: torch.Tensor | None = None, *, block: int = DEFAULT_BLOCK,
         num_warps: int = DEFAULT_WARPS) -> torch.Tensor:
    """Copy `src` into `out` (allocated like `src` when None) with the Triton kernel; returns `out`."""
    if not src.is_contiguous():
        raise ValueError("copy: src must be contiguous")
    if out is None:
        out = torch.empty_like(src)
    if out.shape != src.shape or out.dtype != src.dtype or not out.is_contiguous():
        raise ValueError("copy: out must be a contiguous tensor of src's shape and dtype")
    if block <= 0 or block & (block - 1):
        raise ValueError("copy: block must be a power of two")
    n = src.numel()
    if n:
        _copy_kernel[(triton.cdiv(n, block),)](src, out, n, BLOCK=block, num_warps=num_warps)
    return out


def tick(counter: torch.Tensor) -> None:
    """Add one to counter[0] in one launch of one program (counter: a one-element int32 tensor)."""
    if counter.numel() != 1 or counter.dtype != torch.int32:
        raise ValueError("tick: counter must be a one-element int32 tensor")
    _tick_kernel[(1,)](counter, num_warps=1)
