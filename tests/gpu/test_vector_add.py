"""The vector add (utils.gpu.kernels.vector_add) under the Triton interpreter, against a float64 reference:
sizes that are not a multiple of the block, a single element, outputs poisoned with NaN and checked
written, nothing written past the end of the output, and the launch arithmetic the chapter uses."""
import math

import pytest
import torch

from utils.gpu.kernels.vector_add import DEFAULT_BLOCK, add, add_bytes, add_flops, grid_blocks, idle_lanes

# Unit roundoff of each format: a + b rounded once to the format is within u * |a + b| of the exact sum.
# The kernel adds two 16-bit values in fp32 and rounds the fp32 sum to 16 bits: the fp32 rounding adds at
# most 2**-24 relative, far below the 16-bit u, so 2u bounds every element's relative error, and hence
# the relative-error norm, in every format.
UNIT_ROUNDOFF = {torch.float32: 2.0 ** -24, torch.float16: 2.0 ** -11, torch.bfloat16: 2.0 ** -8}


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    return float(torch.linalg.vector_norm(out.double() - ref) / torch.linalg.vector_norm(ref))


def inputs(n: int, dtype):
    return torch.randn(n).to(dtype), torch.randn(n).to(dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("n,block", [(1, 1024), (1000, 1024), (1025, 1024), (3 * 1024 + 5, 1024),
                                     (4097, 256), (DEFAULT_BLOCK * 2 - 1, DEFAULT_BLOCK), (33, 16)])
def test_add_matches_float64_and_writes_every_element(dtype, n, block):
    a, b = inputs(n, dtype)
    a0, b0 = a.clone(), b.clone()
    ref = a.double() + b.double()                       # exact: the sum of two floats fits in a double
    out = torch.full_like(a, float("nan"))              # poisoned: an element never written stays NaN
    assert add(a, b, out, block=block) is out
    assert bool(torch.isfinite(out).all()), "some elements were never written"
    assert rel_err(out, ref) <= 2 * UNIT_ROUNDOFF[dtype]
    assert torch.equal(a, a0) and torch.equal(b, b0), "an input was modified"


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_add_rounds_like_torch(dtype):
    # fp32: the exact sum rounded once, on both sides. fp16: the kernel adds in fp32 and rounds to fp16,
    # the same two steps torch's CPU add takes, so the two agree exactly.
    # Not bf16 here: the interpreter (triton 3.x on CPU) converts fp32 to bf16 by truncation, not
    # round-to-nearest as a GPU does, so its bf16 sums can sit one bf16 step below torch's; the 2u bound
    # in the test above still holds for them (truncation errs by less than 2**-7 = 2u relative).
    a, b = inputs(5000, dtype)
    assert torch.equal(add(a, b, block=512), a + b)


def test_a_single_element():
    a, b = torch.tensor([1.5]), torch.tensor([-0.25])
    out = torch.full((1,), float("nan"))
    add(a, b, out)
    assert out.item() == 1.25


def test_add_writes_nothing_past_the_end():
    n, block = 1000, 1024                               # one program, 24 of its lanes past the end
    a, b = inputs(n, torch.float32)
    backing = torch.full((n + 200,), float("nan"))
    add(a, b, backing[:n], block=block)                 # the mask keeps the program inside the view
    assert torch.equal(backing[:n], a + b)
    assert bool(torch.isnan(backing[n:]).all()), "the kernel wrote past the end of its output"


def test_add_reads_nothing_past_the_end():
    # Inputs that are views of longer buffers whose tails hold NaN: a read past n would put a NaN into
    # nothing (masked lanes store nothing), so check the stores and that the views' own sums are right.
    n = 777
    abuf, bbuf = torch.full((1024,), float("nan")), torch.full((1024,), float("nan"))
    abuf[:n], bbuf[:n] = torch.randn(n), torch.randn(n)
    out = torch.full((1024,), float("nan"))
    add(abuf[:n], bbuf[:n], out[:n], block=1024)
    assert torch.equal(out[:n], abuf[:n] + bbuf[:n]) and bool(torch.isnan(out[n:]).all())


def test_add_allocates_its_output_and_handles_empty():
    a, b = inputs(300, torch.float32)
    assert torch.equal(add(a, b), a + b)
    assert add(torch.empty(0), torch.empty(0)).numel() == 0
    x = torch.randn(6, 7)
    assert torch.equal(add(x, x), 2 * x), "any contiguous shape, treated as flat"


@pytest.mark.parametrize("bad", [
    lambda: add(torch.randn(8), torch.randn(9)),                                   # shapes differ
    lambda: add(torch.randn(8), torch.randn(8).half()),                            # dtypes differ
    lambda: add(torch.randn(8, 8).t(), torch.randn(8, 8)),                         # not contiguous
    lambda: add(torch.randn(8), torch.randn(8), torch.empty(9)),                   # out of the wrong shape
    lambda: add(torch.randn(8), torch.randn(8), torch.empty(8, dtype=torch.float16)),  # out dtype
    lambda: add(torch.randn(8), torch.randn(8), block=1000),                       # block not a power of two
    lambda: add(torch.randn(8), torch.randn(8), block=0),
])
def test_add_refuses_bad_arguments(bad):
    with pytest.raises(ValueError):
        bad()


# --- the launch arithmetic ------------------------------------------------------------------------

@pytest.mark.parametrize("n,block,blocks,idle", [
    (100_000_000, 128, 781_250, 0), (100_000_000, 256, 390_625, 0),       # 1e8 = 2**8 * 5**8: 256 divides it
    (100_000_000, 512, 195_313, 256), (100_000_000, 1024, 97_657, 768),
    (1, 1024, 1, 1023), (1024, 1024, 1, 0), (1025, 1024, 2, 1023), (0, 256, 0, 0),
])
def test_grid_and_idle_lanes(n, block, blocks, idle):
    assert grid_blocks(n, block) == blocks == math.ceil(n / block)
    assert idle_lanes(n, block) == idle
    assert 0 <= idle < block, "only the last program has lanes past the end"


@pytest.mark.parametrize("n,block", [(1000, 256), (4097, 1024), (10, 16)])
def test_idle_lanes_are_the_masked_lanes(n, block):
    # Count the lanes the kernel's mask switches off, program by program, the way the kernel forms them.
    offsets = torch.arange(grid_blocks(n, block))[:, None] * block + torch.arange(block)[None, :]
    assert int((offsets >= n).sum()) == idle_lanes(n, block)


def test_counts():
    assert add_bytes(100, 4) == 1200 and add_flops(100) == 100
    with pytest.raises(ValueError):
        grid_blocks(10, 0)
    with pytest.raises(ValueError):
        grid_blocks(-1, 256)
