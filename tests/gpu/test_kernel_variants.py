"""The kernel variants built for the H200 beside the book's kernels: the persistent softmax,
the autotuned matmul, the exp2 elementwise chain and the exp2 attention. Each is checked under the
Triton interpreter (tests/conftest.py sets TRITON_INTERPRET=1) against a float64 reference on shapes
that are not multiples of the blocks, by the relative-error norm; the dot kernels in float32 and
float16 only (tl.dot on bfloat16 operands is garbage under the interpreter). Then their places in the
measurements: the variants, their byte counts, their metrics and the SDPA backends' skips."""
from __future__ import annotations

import importlib

import pytest
import torch

from utils.gpu.kernels import rel_err

sm = importlib.import_module("utils.gpu.kernels.softmax")
mm = importlib.import_module("utils.gpu.kernels.matmul")
fc = importlib.import_module("utils.gpu.kernels.fused_chain")
at = importlib.import_module("utils.gpu.kernels.attention")


# --- softmax_persistent ------------------------------------------------------------------------------

@pytest.mark.parametrize("rows, cols", [(1, 1), (37, 5), (130, 1000), (9, 2049), (3, 8193), (2, 17000)])
@pytest.mark.parametrize("programs", [None, 1, 3])
def test_persistent_softmax_matches_float64(rows, cols, programs):
    torch.manual_seed(rows * 7 + cols)
    x = 4 * torch.randn(rows, cols)
    y = sm.softmax_persistent(x, programs=programs)
    assert rel_err(y, torch.softmax(x.double(), dim=-1)) < 1e-5


@pytest.mark.parametrize("dtype, tol", [(torch.float16, 2e-3), (torch.bfloat16, 1e-2)])
def test_persistent_softmax_half_precision_and_strided_rows(dtype, tol):
    torch.manual_seed(0)
    wide = (4 * torch.randn(67, 300)).to(dtype)
    x = wide[:, 7:250]                                   # strided rows, each row contiguous
    out = torch.full_like(x, float("nan"))
    y = sm.softmax_persistent(x, out, programs=2)
    assert y is out and bool(torch.isfinite(out).all())
    assert rel_err(y, torch.softmax(x.double(), dim=-1)) < tol
    assert rel_err(y, sm.softmax(x)) < tol               # the book's kernel, same math


def test_persistent_softmax_writes_every_row_once_the_grid_is_smaller_than_the_rows():
    x = torch.randn(41, 24)
    out = torch.full_like(x, float("nan"))
    sm.softmax_persistent(x, out, programs=2)            # 41 rows, 64 per group: one group, two programs
    assert bool(torch.isfinite(out).all())
    x = torch.randn(1000, 700)                           # 4 rows per program, 250 groups over 3 programs
    out = torch.full_like(x, float("nan"))
    sm.softmax_persistent(x, out, programs=3)
    assert rel_err(out, torch.softmax(x.double(), dim=-1)) < 1e-5


def test_persistent_softmax_launch_shape():
    assert [sm.persistent_warps(c) for c in (1, 2047, 2048, 8192, 8193, 32768)] == [4, 4, 8, 8, 16, 16]
    for cols in (1, 100, 1024, 4096, 16384, 32768):
        rows = sm.rows_per_program(cols)
        assert rows >= 1 and rows & (rows - 1) == 0 and rows <= sm.MAX_ROWS_PER_PROGRAM
        assert rows * sm.block_size(cols) <= max(sm.PERSISTENT_ELEMENTS, sm.block_size(cols))
        assert 1 <= sm.programs_per_sm(cols) <= 2048 // (32 * sm.persistent_warps(cols))
    assert sm.rows_per_program(1024) == 4 and sm.rows_per_program(4096) == 1


def test_persistent_softmax_rejects_what_softmax_rejects():
    for bad in (torch.randn(3), torch.randn(2, 3, dtype=torch.float64), torch.randn(2, sm.MAX_COLS + 1),
                torch.randn(4, 4).t()):
        with pytest.raises(ValueError):
            sm.softmax_persistent(bad)
    with pytest.raises(ValueError):
        sm.softmax_persistent(torch.randn(2, 3), programs=0)
    assert sm.softmax_persistent(torch.randn(0, 5)).shape == (0, 5)


# --- matmul_autotuned --------------------------------------------------------------------------------

@pytest.mark.parametrize("m, n, k", [(1, 1, 1), (67, 83, 45), (130, 96, 72), (33, 17, 129)])
@pytest.mark.parametrize("dtype, tol", [(torch.float32, 1e-5), (torch.float16, 2e-3)])
def test_autotuned_matmul_matches_float64(m, n, k, dtype, tol):
    torch.manual_seed(m + n + k)
    a, b = torch.randn(m, k).to(dtype), torch.randn(k, n).to(dtype)
    c = torch.full((m, n), float("nan"), dtype=dtype)
    assert mm.matmul_autotuned(a, b, c) is c
    assert rel_err(c, a.double() @ b.double()) < tol


def test_autotuned_matmul_with_a_fixed_config_and_strided_operands():
    torch.manual_seed(1)
    a = torch.randn(70, 50)
    b = torch.randn(90, 50).t()                          # column-major B
    ref = a.double() @ b.double()
    assert rel_err(mm.matmul_autotuned(a, b), ref) < 1e-5
    fixed = mm.matmul_autotuned(a, b, config={"block_m": 16, "block_n": 32, "block_k": 16, "group_m": 2})
    assert rel_err(fixed, ref) < 1e-5
    assert bool((mm.matmul_autotuned(torch.randn(3, 0), torch.randn(0, 4)) == 0).all())
    with pytest.raises(ValueError):
        mm.matmul_autotuned(torch.randn(3, 4), torch.randn(5, 2))


def test_autotune_configs_interpreter_and_gpu():
    assert mm.AUTOTUNE_CONFIGS == mm.INTERPRETER_CONFIGS and len(mm.INTERPRETER_CONFIGS) == 1, \
        "under the interpreter the autotuner must not time a dozen configurations"
    shapes = {(c.kwargs["BLOCK_M"], c.kwargs["BLOCK_N"], c.kwargs["BLOCK_K"], c.num_warps, c.num_stages)
              for c in mm.GPU_CONFIGS}
    assert {(128, 256, 64, 8, 3), (128, 256, 64, 8, 4)} <= shapes
    assert any(s[:3] == (128, 128, 64) for s in shapes) and any(s[:3] == (64, 256, 32) for s in shapes)
    assert all(c.kwargs["GROUP_M"] == mm.GROUP_M > 1 for c in mm.GPU_CONFIGS), "grouped tile order, for L2"
    mm.matmul_autotuned(torch.randn(20, 20), torch.randn(20, 20))
    assert mm.autotuned_config().startswith("BLOCK 32x32x32")


# --- fused_chain_exp2 --------------------------------------------------------------------------------

@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")   # exp2 -> inf, as on a GPU
@pytest.mark.parametrize("dtype, tol", [(torch.float32, 1e-6), (torch.float16, 2e-3), (torch.bfloat16, 1e-2)])
def test_exp2_chain_matches_float64(dtype, tol):
    torch.manual_seed(2)
    x = 6 * torch.randn(4099)
    x[:4] = torch.tensor([-300.0, 300.0, 0.0, -12.0])
    x = x.to(dtype)
    a, b, c, d = 0.7, -0.3, 1.2, -0.8
    y = torch.full_like(x, float("nan"))
    assert fc.fused_chain_exp2(x, a, b, c, d, y, block=1024) is y
    assert bool(torch.isfinite(y).all())
    assert rel_err(y, fc.chain_reference(x, a, b, c, d)) < tol
    assert rel_err(y, fc.fused_chain(x, a, b, c, d)) < tol


def test_exp2_chain_rejects_what_the_chain_rejects():
    with pytest.raises(ValueError):
        fc.fused_chain_exp2(torch.randn(4, 4).t(), 1, 0, 1, 0)
    with pytest.raises(ValueError):
        fc.fused_chain_exp2(torch.randn(10), 1, 0, 1, 0, block=100)
    assert fc.fused_chain_exp2(torch.randn(0), 1, 0, 1, 0).numel() == 0


# --- attention_exp2 ----------------------------------------------------------------------------------

@pytest.mark.parametrize("shape, block_q, block_k", [((1, 2, 130, 32), 32, 16), ((2, 1, 64, 16), 128, 64),
                                                     ((1, 1, 77, 16), 16, 32), ((1, 1, 200, 32), 64, 64),
                                                     ((1, 1, 5, 16), 16, 16)])
@pytest.mark.parametrize("causal", [False, True])
def test_exp2_attention_matches_float64(shape, block_q, block_k, causal):
    torch.manual_seed(sum(shape) + block_q)
    for dtype, tol in ((torch.float32, 1e-5), (torch.float16, 2e-3)):
        q, k, v = (torch.randn(shape).to(dtype) for _ in range(3))
        out = torch.full(shape, float("nan"), dtype=dtype)
        o = at.attention_exp2(q, k, v, out, causal=causal, block_q=block_q, block_k=block_k)
        assert o is out
        assert rel_err(o, at.reference(q, k, v, causal=causal)) < tol
        assert rel_err(o, at.attention(q, k, v, causal=causal, block_q=block_q, block_k=block_k)) < tol


def test_exp2_attention_scale_and_bad_inputs():
    torch.manual_seed(3)
    q, k, v = (torch.randn(1, 3, 70, 16) for _ in range(3))
    assert rel_err(at.attention_exp2(q, k, v, scale=0.3), at.reference(q, k, v, scale=0.3)) < 1e-5
    with pytest.raises(ValueError):
        at.attention_exp2(q, k, v[..., :8])
    with pytest.raises(ValueError):
        at.attention_exp2(q[..., :12], k[..., :12], v[..., :12])


# --- the measurements --------------------------------------------------------------------------------

def test_the_variants_are_registered_with_their_counts():
    import utils.gpu.harness as M
    s = {"m": 1000, "n": 3000, "k": 500, "dtype": "bfloat16"}
    assert M.REGISTRY["gemm-tiling"].bytes(s, "autotuned") == M.REGISTRY["gemm-tiling"].bytes(s, "torch") \
        == 2 * (1000 * 500 + 500 * 3000 + 1000 * 3000)
    a = {"batch": 1, "heads": 2, "n": 1024, "d": 128, "dtype": "bfloat16"}
    att = M.REGISTRY["attention-forward"]
    assert att.bytes(a, "triton_exp2") == att.bytes(a, "triton")
    assert att.bytes(a, "sdpa_flash") == att.bytes(a, "sdpa")
    f = {"n": 4096, "dtype": "bfloat16"}
    fu = M.REGISTRY["kernel-fusion"]
    assert fu.bytes(f, "triton_exp2") == fu.bytes(f, "triton") and fu.flops(f, "triton_exp2") == fu.flops(f, "triton")


def test_an_sdpa_backend_that_cannot_run_is_a_recorded_skip(monkeypatch):
    import utils.gpu.harness as M
    import utils.gpu.measurements.attention_forward as af

    def backends(F):
        def broken(q, k, v):
            raise RuntimeError("No available kernel. Aborting execution.")

        def wrong(q, k, v):
            return torch.zeros_like(q)

        def fine(q, k, v):
            return F.scaled_dot_product_attention(q, k, v, scale=1.0)
        return [("FLASH_ATTENTION", "sdpa_flash", broken), ("EFFICIENT_ATTENTION", "sdpa_efficient", wrong),
                ("MATH", "sdpa_math", fine)]
    monkeypatch.setattr(af, "_sdpa_backends", backends)
    rec = M.measure(M.REGISTRY["attention-forward"], M.FakeRuntime(), "tiny")
    skipped = {s["variant"]: s["reason"] for s in rec["skipped"]}
    assert set(skipped) == {"sdpa_flash", "sdpa_efficient"}
    assert "No available kernel" in skipped["sdpa_flash"] and "failed its check" in skipped["sdpa_efficient"]
    assert {r["variant"] for r in rec["results"]} == {"triton", "triton_exp2", "materialised", "sdpa", "sdpa_math"}
    assert "triton_over_sdpa_math" in rec["metrics"] and "triton_over_sdpa_flash" not in rec["metrics"]
    assert rec["metrics"]["triton_exp2_over_triton"]["variant"] == "triton_exp2"
