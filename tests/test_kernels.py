"""Kernel correctness without a GPU: every Triton kernel under the Triton interpreter (TRITON_INTERPRET=1,
set in conftest.py before triton is imported) on CPU tensors at small sizes against a reference, and
every CUDA source compiled with nvcc where nvcc is on the machine.

The method is the book's: fresh random inputs (never zeros), outputs poisoned before the run and checked
written everywhere, the relative-error norm against a float64 reference. (No kernel here uses tl.dot;
if one does, test it in fp16 or fp32 only: under the interpreter tl.dot on bf16 returns garbage.)
"""
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import torch

from utils.kernels import DEFAULT_BLOCK, copy, tick

ROOT = Path(__file__).resolve().parent.parent
CUDA_SOURCES = sorted((ROOT / "utils" / "cuda").glob("*.cu"))


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
    assert CUDA_SOURCES, "utils/cuda/ holds no .cu file"
