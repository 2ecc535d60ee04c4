"""A chain of five elementwise operations, fused into one Triton kernel, and the same chain in eager
torch, one kernel per operation.

    y = gelu(x * a + b) * c + d          (a, b, c, d scalars; gelu in its tanh form)

Only the standard library, torch and triton are imported here: the GPU machines have nothing else.
Under the Triton interpreter (TRITON_INTERPRET=1, set before triton is imported) the fused kernel runs
on CPU tensors, which is how the tests and the chapter check it on a machine with no GPU.

fused_chain   one program per block of elements: load x once, do the five operations in float32
              registers, store y once in x's dtype. Bytes moved: 2 * n * element size (a copy's).
eager_chain   the five operations as torch runs them without a compiler: x * a, + b, gelu, * c, + d,
              each a kernel that reads its input tensor and writes a new one (the last into `out`).
              Bytes moved: 5 reads and 5 writes of the tensor, 10 * n * element size.
chain_reference  the chain in float64 on the CPU, for checks.

GELU's tanh form, 0.5 t (1 + tanh(k (t + 0.044715 t^3))) with k = sqrt(2 / pi), is computed in the
kernel as t / (1 + exp(-2 k (t + 0.044715 t^3))), the same function (0.5 (1 + tanh z) = 1 / (1 + e^-2z)).
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

N_OPS = 5
DEFAULT_BLOCK = 8192          # as the copy kernel: 32 elements per thread over 8 warps
DEFAULT_WARPS = 8


@triton.jit
def _chain_kernel(x_ptr, y_ptr, n, a, b, c, d, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    t = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    t = t * a                                                          # 1
    t = t + b                                                          # 2
    t = t / (1.0 + tl.exp(-1.5957691216057308 * (t + 0.044715 * t * t * t)))   # 3: gelu; 2*sqrt(2/pi)
    t = t * c                                                          # 4
    t = t + d                                                          # 5
    tl.store(y_ptr + offsets, t.to(y_ptr.dtype.element_ty), mask=mask)


def _check(x: torch.Tensor, out: torch.Tensor | None, block: int | None = None) -> torch.Tensor:
    """The chain's argument check, for its kernels (block given) and the eager chain; returns out
    (allocated like x when None)."""
    if not x.is_contiguous():
        raise ValueError("chain: x must be contiguous")
    if not x.is_floating_point():
        raise ValueError("chain: x must be a floating-point tensor")
    if out is None:
        out = torch.empty_like(x)
    if out.shape != x.shape or out.dtype != x.dtype or not out.is_contiguous():
        raise ValueError("chain: out must be a contiguous tensor of x's shape and dtype")
    if block is not None and (block <= 0 or block & (block - 1)):
        raise ValueError("chain: block must be a power of two")
    return out


def fused_chain(x: torch.Tensor, a: float, b: float, c: float, d: float, out: torch.Tensor | None = None,
                *, block: int = DEFAULT_BLOCK, num_warps: int = DEFAULT_WARPS) -> torch.Tensor:
    """y = gelu(x * a + b) * c + d in one Triton kernel (one read of x, one write of y); returns out."""
    out = _check(x, out, block)
    n = x.numel()
    if n:
        _chain_kernel[(triton.cdiv(n, block),)](x, out, n, float(a), float(b), float(c), float(d),
                                                BLOCK=block, num_warps=num_warps)
    return out


def eager_chain(x: torch.Tensor, a: float, b: float, c: float, d: float,
                out: torch.Tensor | None = None) -> torch.Tensor:
    """The same chain as five torch operations, one kernel each; the last writes into out."""
    out = _check(x, out)
    t = x * a
    t = t + b
    t = torch.nn.functional.gelu(t, approximate="tanh")
    t = t * c
    return torch.add(t, d, out=out)


def chain_reference(x: torch.Tensor, a: float, b: float, c: float, d: float) -> torch.Tensor:
    """The chain in float64 on the CPU (the check's reference)."""
    t = x.detach().to("cpu", torch.float64) * a + b
    return torch.nn.functional.gelu(t, approximate="tanh") * c + d


# --------------------------------------------------------------------------------------------------
# fused_chain_exp2: the same chain, one special-function operation per element.
#
# The tanh-form GELU t / (1 + exp(-2k (t + 0.044715 t^3))) is rewritten with its constants folded into
# base 2: z = t (C1 + C2 t^2) with C1 = -2k log2(e) and C2 = 0.044715 C1, then
# y = t / (1 + exp2(z)): per element one exp2 (ex2.approx on the special-function unit), one division
# (tl.fdiv with ieee_rounding off, div.full.f32: a reciprocal on the special-function unit and a
# multiply, within 2 ulp) and FMAs. The book's kernel compiles to the same ex2 and div.full (tl.exp is
# a multiply by log2(e) then ex2, and `/` on float32 is div.full by default); compiled for sm_90 this
# variant has half the float32 multiplies (a x + b and c t + d fuse into FMAs, the constants are
# folded), so what it tests is whether the chain's arithmetic, not its special functions, shows in the
# time. Where exp2(z) overflows to infinity (t below about -10) the quotient is 0 (-0 for negative t),
# as GELU is there to float32 precision.
_GELU_C1 = tl.constexpr(-1.5957691216057308 * 1.4426950408889634)     # -2 sqrt(2/pi) log2(e)
_GELU_C2 = tl.constexpr(-1.5957691216057308 * 1.4426950408889634 * 0.044715)


@triton.jit
def _chain_exp2_kernel(x_ptr, y_ptr, n, a, b, c, d, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    t = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    t = t * a + b                                                      # 1, 2: one FMA
    z = t * (_GELU_C1 + _GELU_C2 * (t * t))                            # the exponent, base 2
    t = tl.fdiv(t, 1.0 + tl.exp2(z), ieee_rounding=False)              # 3: gelu, one exp2, one fast divide
    t = t * c + d                                                      # 4, 5: one FMA
    tl.store(y_ptr + offsets, t.to(y_ptr.dtype.element_ty), mask=mask)


def fused_chain_exp2(x: torch.Tensor, a: float, b: float, c: float, d: float, out: torch.Tensor | None = None,
                     *, block: int = DEFAULT_BLOCK, num_warps: int = DEFAULT_WARPS) -> torch.Tensor:
    """y = gelu(x * a + b) * c + d as fused_chain, with the GELU as one exp2 and one fast division per
    element; returns out."""
    out = _check(x, out, block)
    n = x.numel()
    if n:
        _chain_exp2_kernel[(triton.cdiv(n, block),)](x, out, n, float(a), float(b), float(c), float(d),
                                                     BLOCK=block, num_warps=num_warps)
    return out
