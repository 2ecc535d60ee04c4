"""utils.serving.moe: the slot layout, the busiest GPU's experts and load, the all-to-all bytes and latencies."""
import math

import numpy as np
import pytest

from utils import catalog
from utils.serving import moe


def test_slot_layout_holds_every_expert_once():
    for E, n in ((384, 72), (256, 72), (256, 8), (8, 8), (5, 3)):
        s, n_hi, n_lo = moe.slot_layout(E, n)
        assert n_hi + n_lo == n and n_hi * s + n_lo * (s - 1) == E and s == math.ceil(E / n)
        own = moe.owners(E, n)
        assert len(own) == E and np.bincount(own, minlength=n).max() == s
    assert moe.slot_layout(384, 72) == (6, 24, 48)
    with pytest.raises(ValueError):
        moe.slot_layout(0, 8)


def test_nvlink_domain_is_the_rack_for_nvl72_and_a_board_otherwise():
    assert moe.nvlink_domain(catalog.accelerator("gb200")) == 72
    assert moe.nvlink_domain(catalog.accelerator("h200")) == 8


def test_busiest_experts_limits():
    # One expert per GPU, each touched with probability f: the busiest GPU touches 1 - (1 - f)^n.
    assert moe.busiest_experts(0.1, 8, 8) == pytest.approx(1 - 0.9 ** 8)
    assert moe.busiest_experts(1.0, 384, 72) == pytest.approx(6)          # every slot read
    assert moe.busiest_experts(0.0, 384, 72) == pytest.approx(0)


def test_busiest_experts_matches_a_seeded_simulation():
    f = float(moe.touched_share(8, 384, 8))
    sim = moe.simulate_busiest_experts(384, 8, 72, 8, trials=600)
    assert sim == pytest.approx(float(moe.busiest_experts(f, 384, 72)), rel=0.03)


def test_imbalance_falls_with_the_step_and_matches_simulation():
    small, big = moe.imbalance(8 * 4, 8, 384, 8), moe.imbalance(8 * 1024, 8, 384, 8)
    assert small > big > 1
    T = 8 * 64
    _, busiest = moe.simulate_loads(T, 8, 384, 8, trials=100, seed=3)
    assert busiest.mean() / (T * 8 / 8) == pytest.approx(moe.imbalance(T, 8, 384, 8), rel=0.02)


def test_alltoall_bytes_per_token_counts_hidden_elements():
    # Kimi K2 on 72 GPUs: 60 MoE layers x 8 experts x 7168 elements x (1 + 2) bytes x 71/72.
    got = moe.alltoall_bytes_per_token(60, 8, 7168, 72)
    assert got.to("byte/token").m == pytest.approx(60 * 8 * 7168 * 3 * 71 / 72)
    assert moe.alltoall_bytes_per_token(60, 8, 7168, 1).m == 0    # one GPU: nothing leaves it


def test_fitted_latency_never_exceeds_a_published_time():
    fit = moe.latency_fit_check()
    assert fit["high"] == pytest.approx(1) and fit["low"] > 0.6
    assert 10 < moe.ALPHA_D.to("µs").m < moe.ALPHA_C.to("µs").m < 40


def test_capacity_factor_drops_less_as_it_grows():
    drops = [moe.dropped_share(2048, 8, 384, cf) for cf in (1.0, 1.25, 2.0)]
    assert drops[0] > drops[1] > drops[2] >= 0
    assert moe.busiest_expert(2048, 8, 384) > 2048 * 8 / 384
