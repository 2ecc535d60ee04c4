"""A vector add, out[i] = a[i] + b[i], in one Triton kernel, and the launch arithmetic around it.

Only the standard library, torch and triton are imported here: the GPU machines have nothing else.
Under the Triton interpreter (TRITON_INTERPRET=1, set before triton is imported) it runs on CPU tensors,
which is how the tests check it on a machine with no GPU. Import it by module path
(`from utils.gpu.kernels.vector_add import add`); it is exported from nowhere else.

add           the kernel (16-bit floats are added in fp32 and the sum rounded once). Program `pid`
              handles elements pid * BLOCK ... pid * BLOCK + BLOCK - 1 (Triton's
              form of CUDA's blockIdx.x * blockDim.x + threadIdx.x); the program id is widened to 64 bits
              before the multiply, so arrays of more than 2**31 elements are indexed correctly; the mask
              `offsets < n` is the bounds check, which keeps the last program's lanes past the end from
              reading or writing.
grid_blocks   ceil(n / block): the programs (CUDA blocks) a one-element-per-lane launch needs.
idle_lanes    grid_blocks * block - n: the lanes of the last program that the bounds check switches off.
add_bytes     3 * n * e: the fewest bytes an add of n elements of e bytes moves through device memory
              (a and b read once, out written once). The host copies around it move the same 3 * n * e
              over the host link: a and b to the device, out back.
add_flops     n: one addition per element.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

# 1024 elements over 4 warps (8 elements per thread): the Triton tutorial's vector-add configuration,
# which is enough independent loads per thread for a bandwidth-bound kernel.
DEFAULT_BLOCK = 1024
DEFAULT_WARPS = 4


@triton.jit
def _add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr, UPCAST: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    a = tl.load(a_ptr + offsets, mask=mask)
    b = tl.load(b_ptr + offsets, mask=mask)
    if UPCAST:                      # 16-bit floats: add in fp32 and round once, as torch does
        s = (a.to(tl.float32) + b.to(tl.float32)).to(out_ptr.dtype.element_ty)
    else:
        s = a + b
    tl.store(out_ptr + offsets, s, mask=mask)


def add(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None = None, *, block: int = DEFAULT_BLOCK,
        num_warps: int = DEFAULT_WARPS) -> torch.Tensor:
    """out = a + b elementwise with the Triton kernel (out allocated like a when None); returns out."""
    if a.shape != b.shape or a.dtype != b.dtype or a.device != b.device:
        raise ValueError("add: a and b must have the same shape, dtype and device")
    if not a.is_contiguous() or not b.is_contiguous():
        raise ValueError("add: a and b must be contiguous")
    if out is None:
        out = torch.empty_like(a)
    if out.shape != a.shape or out.dtype != a.dtype or out.device != a.device or not out.is_contiguous():
        raise ValueError("add: out must be a contiguous tensor of a's shape, dtype and device")
    if isinstance(block, bool) or not isinstance(block, int) or block <= 0 or block & (block - 1):
        raise ValueError(f"add: block must be a power of two, got {block!r}")
    n = a.numel()
    if n:
        upcast = a.is_floating_point() and a.element_size() < 4
        _add_kernel[(triton.cdiv(n, block),)](a, b, out, n, BLOCK=block, UPCAST=upcast, num_warps=num_warps)
    return out


def _whole(name: str, v) -> int:
    if isinstance(v, bool) or int(v) != v or v < 0:
        raise ValueError(f"{name} must be a whole number >= 0, got {v!r}")
    return int(v)


def grid_blocks(n: int, block: int) -> int:
    """Programs (CUDA blocks) needed to give each of n elements a lane of its own: ceil(n / block)."""
    n, block = _whole("n", n), _whole("block", block)
    if block == 0:
        raise ValueError("block must be >= 1")
    return -(-n // block)


def idle_lanes(n: int, block: int) -> int:
    """Lanes launched past the end of the array (all in the last program): grid_blocks * block - n."""
    return grid_blocks(n, block) * int(block) - int(n)


def add_bytes(n: int, e: int) -> int:
    """Bytes an add of n elements of e bytes must move: two reads and one write."""
    return 3 * int(n) * int(e)


def add_flops(n: int) -> int:
    """One addition per element."""
    return int(n)
