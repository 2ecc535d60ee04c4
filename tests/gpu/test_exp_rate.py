"""The exp and FMA chain kernels (utils.gpu.kernels.exp_rate) under the Triton interpreter at tiny sizes,
against the same recurrence iterated in float64, outputs poisoned with NaN first; and the op counts of
one FlashAttention tile."""
import math

import numpy as np
import pytest
import torch

from utils.gpu.kernels import exp_rate as E


def _rel_err(out: torch.Tensor, ref: np.ndarray) -> float:
    o = out.double().numpy()
    assert np.isfinite(o).all(), "an element was not written (NaN poison left) or overflowed"
    return float(np.linalg.norm(o - ref) / np.linalg.norm(ref))


def _np_chain(x: np.ndarray, reps: int, step) -> np.ndarray:
    y = x.astype(np.float64)
    for _ in range(reps):
        y = step(y)
    return y


@pytest.mark.parametrize("n,reps,block", [(1, 1, 16), (37, 3, 16), (1000, 9, 128), (513, 16, 256), (64, 0, 64)])
def test_exp_chain_matches_float64(n, reps, block):
    x = torch.rand(n) * 2 - 1                                   # in [-1, 1]: the tolerance's premise
    out = torch.full_like(x, float("nan"))
    E.exp_chain(x, reps, out, block=block)
    ref = _np_chain(x.numpy(), reps, lambda y: np.exp2(E.EXP_A * y))
    # The bound is derived in utils/gpu/kernels/exp_rate.py (EXP_TOLERANCE); reps = 0 must copy exactly.
    assert _rel_err(out, ref) <= (E.EXP_TOLERANCE if reps else 0.0)


@pytest.mark.parametrize("n,reps,block", [(1, 1, 16), (37, 3, 16), (1000, 9, 128), (513, 16, 256), (64, 0, 64)])
def test_fma_chain_matches_float64(n, reps, block):
    x = torch.rand(n) * 2 - 1
    out = torch.full_like(x, float("nan"))
    E.fma_chain(x, reps, out, block=block)
    ref = _np_chain(x.numpy(), reps, lambda y: E.FMA_A * y + E.FMA_B)
    assert _rel_err(out, ref) <= (E.FMA_TOLERANCE if reps else 0.0)   # bound derived in exp_rate.py


def test_the_torch_references_are_the_numpy_recurrence():
    x = torch.rand(50) * 2 - 1
    assert np.allclose(E.exp_reference(x, 7).numpy(), _np_chain(x.numpy(), 7, lambda y: np.exp2(-y)), rtol=1e-15)
    assert np.allclose(E.fma_reference(x, 7).numpy(), _np_chain(x.numpy(), 7, lambda y: -0.5 * y + 0.75), rtol=1e-15)


def test_the_chains_are_contractions_that_never_overflow():
    x = torch.rand(200) * 2 - 1
    fixed = E.exp_reference(x, 256)
    star = fixed[0].item()
    assert abs(star - 2 ** -star) < 1e-12 and abs(star - 0.6412) < 1e-4
    assert torch.allclose(E.fma_reference(x, 256), torch.full_like(fixed, 0.5))
    out = E.exp_chain(x, 40)
    assert bool(torch.isfinite(out).all()) and abs(out.double() - star).max() < 1e-5


def test_bad_arguments_raise():
    x = torch.rand(8)
    with pytest.raises(ValueError):
        E.exp_chain(x, -1)
    with pytest.raises(ValueError):
        E.fma_chain(x.double(), 2)
    with pytest.raises(ValueError):
        E.exp_chain(x, 2, block=100)
    with pytest.raises(ValueError):
        E.fma_chain(x, 2, torch.empty(9))


def test_counts():
    assert E.exp_count(1000, 256) == 256_000
    assert E.fma_flops(1000, 256) == 512_000
    assert E.chain_bytes(1000) == 8000


def test_tile_ops_v1_v2():
    v2 = E.tile_ops(128, 128, 128, 2)
    assert v2["matmul_flops"] == 4 * 128 ** 3 and v2["scores"] == 128 * 128
    assert v2["mufu"] == 128 * 128 + 128
    assert v2["alu_flops"] == 4 * 128 * 128 + 128 * 128
    v1 = E.tile_ops(128, 128, 128, 1)
    assert v1["matmul_flops"] == v2["matmul_flops"]
    assert v1["alu_flops"] - v2["alu_flops"] == 2 * 128 * 128        # two scalings and an add vs one scaling
    assert v1["mufu"] - v2["mufu"] == 2 * 128                         # an exp and a reciprocal per row
    assert E.tile_ops(64, 32, 16, 3) == E.tile_ops(64, 32, 16, 2)
    assert E.epilogue_ops(128, 64, 2) == {"mufu": 128, "alu_flops": 128 * 64}
    assert E.epilogue_ops(128, 64, 1) == {"mufu": 0, "alu_flops": 0}
    with pytest.raises(ValueError):
        E.tile_ops(1, 1, 1, 4)
    # The softmax's share of a v2 tile's FLOPs at d = 128, exp counted as one FLOP: about 1%.
    share = (v2["mufu"] + v2["alu_flops"]) / (v2["mufu"] + v2["alu_flops"] + v2["matmul_flops"])
    assert math.isclose(share, (128 * 128 * 6 + 128) / (128 * 128 * 518 + 128))
