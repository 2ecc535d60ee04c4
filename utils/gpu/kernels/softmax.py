"""A fused row softmax in Triton: one program per row, the whole row in registers, one read and one
write of device memory.

Only the standard library, torch and triton are imported here: the GPU machines have nothing else.
Under the Triton interpreter (TRITON_INTERPRET=1, set before triton is imported) it runs on CPU
tensors, which is how the tests and the chapter check it on a machine with no GPU.

softmax   out[r, :] = exp(x[r, :] - max(x[r, :])) / sum(exp(x[r, :] - max(x[r, :]))) for every row r
          of a 2-D tensor (float32, float16 or bfloat16), along the last dimension. Each program
          loads its row once (the lanes past the row's end read -inf, so they add exp(-inf) = 0 to the
          sum), converts it to float32, takes the max, subtracts it, exponentiates, sums, multiplies by
          the reciprocal of the sum, and stores the row once in the output's dtype. The bytes it moves
          are 2 * rows * cols * element size: the same as a copy of the tensor.

The block is the next power of two at or above the row's length (Triton's blocks are powers of two),
so a row of 5,000 columns runs in a block of 8,192 lanes, 39% of them masked off. The row lives in
registers as float32 whatever the input dtype, so a row of n columns needs about 4n bytes of registers
in one program; a Hopper SM has 256 KB of registers in all, which caps the row. MAX_COLS is the widest
row this kernel accepts (half of that register file for the row's values); a wider row needs a tiled
kernel that loops over the row (an online softmax), which this module does not provide.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from utils.gpu.occupancy import WARP, SMLimits

MAX_COLS = 32768


def block_size(n_cols: int) -> int:
    """The block for a row of n_cols: the next power of two at or above it (at least 16)."""
    if n_cols < 1:
        raise ValueError("softmax: a row needs at least one column")
    return max(16, triton.next_power_of_2(n_cols))


def num_warps(block: int) -> int:
    """Warps per program: enough threads that each holds at most 16 of the row's values up to a block
    of 16,384 (32 warps = 1,024 threads, the most a program may have), at least 4."""
    return min(32, max(4, block // 512))


@triton.jit
def _softmax_kernel(x_ptr, y_ptr, n_cols, x_row_stride, y_row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)              # the largest logit becomes 0: exp cannot overflow
    e = tl.exp(x)
    inv = 1.0 / tl.sum(e, axis=0)          # one division per row, a multiply per element
    tl.store(y_ptr + row * y_row_stride + cols, (e * inv).to(y_ptr.dtype.element_ty), mask=mask)


def _checked(x: torch.Tensor, out: torch.Tensor | None) -> tuple:
    """Both row softmaxes' argument check: (out, allocated like x when None; n_rows; n_cols)."""
    if x.dim() != 2:
        raise ValueError("softmax: x must be 2-D (rows, cols)")
    if x.dtype not in (torch.float32, torch.float16, torch.bfloat16):
        raise ValueError("softmax: x must be float32, float16 or bfloat16")
    n_rows, n_cols = x.shape
    if n_cols > MAX_COLS:
        raise ValueError(f"softmax: rows of {n_cols} columns do not fit one program's registers "
                         f"(at most {MAX_COLS}); a wider row needs a tiled (online) softmax")
    if n_cols and x.stride(1) != 1:
        raise ValueError("softmax: each row of x must be contiguous")
    if out is None:
        out = torch.empty_like(x, memory_format=torch.contiguous_format)
    if out.shape != x.shape or out.dtype != x.dtype or (n_cols and out.stride(1) != 1):
        raise ValueError("softmax: out must have x's shape and dtype, each row contiguous")
    return out, n_rows, n_cols


def softmax(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """Softmax of each row of the 2-D tensor `x` into `out` (allocated like `x` when None); returns out.
    Rows may be strided; each row's elements must be contiguous."""
    out, n_rows, n_cols = _checked(x, out)
    if n_rows and n_cols:
        block = block_size(n_cols)
        _softmax_kernel[(n_rows,)](x, out, n_cols, x.stride(0), out.stride(0), BLOCK=block,
                                   num_warps=num_warps(block))
    return out


# --------------------------------------------------------------------------------------------------
# A persistent variant: several rows per program for short rows, a fixed grid that strides over rows.
#
# softmax_persistent   the same row softmax (same math, float32 in registers, one read and one write of
#     device memory), laid out for a GPU rather than for the reader. Each program holds ROWS rows at once
#     (ROWS x BLOCK about 4,096 values, so a 1,024-column row shares its program with three others and the
#     per-program fixed costs, the index arithmetic and the two reductions' shuffles, are paid once per 4
#     rows), and the grid is persistent: about as many programs as fit on the GPU at once (a multiple of
#     the SM count, from a register estimate), each looping over row groups with a stride of the grid, so
#     no wave of short-lived programs is launched and retired per group of rows. num_warps follows the
#     row's width (4 below 2,048 columns, 8 up to 8,192, 16 above). The row groups past the end read a
#     valid row again (the index is clamped) and store nothing, so no lane computes on -inf - -inf.

PERSISTENT_ELEMENTS = 4096      # values one program holds at once (ROWS x BLOCK) for short rows
MAX_ROWS_PER_PROGRAM = 64
# Hopper's (and Ampere's) per-SM limits, the occupancy rule's own (utils/gpu/occupancy.py): 64 warps, 64K registers.
_THREADS_PER_SM = SMLimits().max_warps * WARP
_REGISTERS_PER_SM = SMLimits().registers


def persistent_warps(n_cols: int) -> int:
    """Warps per program by row width: 4 below 2,048 columns, 8 up to 8,192, 16 above."""
    return 4 if n_cols < 2048 else 8 if n_cols <= 8192 else 16


def rows_per_program(n_cols: int) -> int:
    """Rows one program holds at once: enough that ROWS x BLOCK is about PERSISTENT_ELEMENTS (1 for rows
    of 4,096 columns and more), a power of two, at most MAX_ROWS_PER_PROGRAM."""
    return max(1, min(MAX_ROWS_PER_PROGRAM, PERSISTENT_ELEMENTS // block_size(n_cols)))


def programs_per_sm(n_cols: int) -> int:
    """Programs one SM can hold at once, estimated from the registers: each thread holds
    ROWS x BLOCK / threads float32 values plus about 32 registers of addresses and bookkeeping; at most
    the 2,048 resident threads allow, at least 1."""
    warps = persistent_warps(n_cols)
    threads = 32 * warps
    values = rows_per_program(n_cols) * block_size(n_cols) // threads
    by_regs = _REGISTERS_PER_SM // (threads * (values + 32))
    return max(1, min(_THREADS_PER_SM // threads, by_regs))


def _sm_count(device) -> int:
    if device.type == "cuda":
        return int(torch.cuda.get_device_properties(device).multi_processor_count)
    return 4                    # the interpreter: a small grid, so the stride loop runs


@triton.jit
def _softmax_persistent_kernel(x_ptr, y_ptr, n_rows, n_cols, x_row_stride, y_row_stride,
                               ROWS: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    n_prog = tl.num_programs(0)
    cols = tl.arange(0, BLOCK)
    col_ok = cols < n_cols
    for first in range(pid * ROWS, n_rows, n_prog * ROWS):
        rows = first + tl.arange(0, ROWS)
        row_ok = rows < n_rows
        src = tl.minimum(rows, n_rows - 1).to(tl.int64)            # past the end: read the last row again
        x = tl.load(x_ptr + src[:, None] * x_row_stride + cols[None, :], mask=col_ok[None, :],
                    other=-float("inf")).to(tl.float32)
        x = x - tl.max(x, axis=1)[:, None]
        e = tl.exp(x)
        inv = 1.0 / tl.sum(e, axis=1)                              # one division per row
        dst = rows.to(tl.int64)
        tl.store(y_ptr + dst[:, None] * y_row_stride + cols[None, :],
                 (e * inv[:, None]).to(y_ptr.dtype.element_ty), mask=row_ok[:, None] & col_ok[None, :])


def softmax_persistent(x: torch.Tensor, out: torch.Tensor | None = None, *, programs: int | None = None
                       ) -> torch.Tensor:
    """The row softmax of `softmax`, same arguments and checks, by the persistent kernel: ROWS rows per
    program and a grid of at most `programs` programs (by default programs_per_sm x the SM count), each
    striding over the rows. Returns out."""
    if programs is not None and (isinstance(programs, bool) or not isinstance(programs, int) or programs < 1):
        raise ValueError(f"softmax: programs must be a whole number >= 1, got {programs!r}")
    out, n_rows, n_cols = _checked(x, out)
    if n_rows and n_cols:
        rows = rows_per_program(n_cols)
        limit = programs or programs_per_sm(n_cols) * _sm_count(x.device)
        grid = (min(limit, triton.cdiv(n_rows, rows)),)
        _softmax_persistent_kernel[grid](x, out, n_rows, n_cols, x.stride(0), out.stride(0), ROWS=rows,
                                         BLOCK=block_size(n_cols), num_warps=persistent_warps(n_cols))
    return out
