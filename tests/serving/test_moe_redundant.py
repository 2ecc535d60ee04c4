"""Redundant experts on spare GPUs (utils.serving.moe.redundant_layout, busiest_redundant, redundant_imbalance) and
DeepSeek-V3's EP320 decode layout in moe-total-vs-active (DeepSeek-V3 report, sec. 3.4.2)."""
import math

import pytest

from utils import chains
from utils.chains import moe_total_vs_active as tva
from utils.params import ParameterError
from utils.serving import moe

E, K = 256, 8
T = 256 * E // K          # the report's decode step: about 256 tokens per routed expert


def test_deepseek_v3_decode_layout():
    lay = moe.redundant_layout(E, 320, K, n_shared=1)
    # 320 = 256 routed + 64 spares ("64 GPUs ... hosting redundant experts and shared experts");
    # E/k = 32 shared copies carry a routed expert's mean load each, the other 32 hold redundant routed copies
    # (as many as DeepSeek's production layout keeps: "32 redundant routed experts").
    assert lay == dict(routed=256, shared_on_spares=32, redundant=32, spare=64)
    assert moe.shared_copies(E, K, 1) * K == E
    with pytest.raises(ValueError):
        moe.redundant_layout(E, 256, K)                   # not wider than the experts
    with pytest.raises(ValueError):
        moe.redundant_layout(E, 2 * E + 33, K, 1)        # a second extra copy of some expert
    # too few spares for the shared copies: the shared expert stays copied on every GPU
    assert moe.redundant_layout(E, 280, K, 1) == dict(routed=256, shared_on_spares=0, redundant=24, spare=24)


def test_without_copies_it_is_the_busiest_single_expert():
    for r in (0, 32):
        assert moe.busiest_redundant(T, K, E, r, "none") == pytest.approx(moe.busiest_expert(T, K, E), rel=1e-12)
    assert moe.busiest_redundant(T, K, E, 0, "step") == pytest.approx(moe.busiest_expert(T, K, E), rel=1e-12)


def test_copies_only_help_and_the_step_placement_bounds_them():
    none, stat, step = (moe.busiest_redundant(T, K, E, 32, pl) for pl in moe.PLACEMENTS)
    assert step < stat < none
    assert step > T * K / E                                  # never below the mean expert
    more = moe.busiest_redundant(T, K, E, 64, "step")
    assert more < step                                        # more copies, a lower busiest GPU
    with pytest.raises(ValueError, match="placement"):
        moe.busiest_redundant(T, K, E, 32, "random")


@pytest.mark.parametrize("placement", moe.PLACEMENTS)
def test_the_formula_agrees_with_a_seeded_simulation(placement):
    trials = 40
    sim = moe.simulate_redundant(T, K, E, 32, placement, trials, seed=11)
    formula = moe.busiest_redundant(T, K, E, 32, placement)
    # four standard errors, plus 1% for the independence the formula assumes (the loads sum to T k exactly)
    tol = 4 * sim.std(ddof=1) / math.sqrt(trials) + 0.01 * formula
    assert abs(sim.mean() - formula) < tol


def test_imbalance_counts_the_shared_copies_and_the_spares():
    rho = moe.redundant_imbalance(T, K, E, 320, 1, "statistics")
    mean = T * (K + 1) / 320
    assert rho == pytest.approx(moe.busiest_redundant(T, K, E, 32, "statistics") / mean, rel=1e-9)
    # spares idle: the busiest single expert over a mean spread across twice the GPUs
    assert moe.redundant_imbalance(T, K, E, 2 * E, 0, "none") == pytest.approx(
        moe.busiest_expert(T, K, E) / (T * K / (2 * E)), rel=1e-9)


def test_the_chapter_accepts_ep320_and_prices_the_fabric():
    r = chains.derive("moe-total-vs-active", model="deepseek-v3", gpu="h100-sxm", n_gpus_ep=320)
    ch = tva.page_chain(chains.check("moe-total-vs-active", model="deepseek-v3", gpu="h100-sxm", n_gpus_ep=320))
    assert (ch["c_sh"].m, ch["n_red"].m, ch["s"].m) == (32, 32, 1)
    # 58 MoE layers x (8 routed + 1 shared) copies x 7168 x 3 bytes, the remote share 319/320
    assert r["all_to_all_bytes_per_token"].to("B/token").m == pytest.approx(58 * 9 * 7168 * 3 * 319 / 320)
    assert ch["A_x"].m / ch["A"].m == pytest.approx(312 / 319)       # all but the node's other 7 GPUs
    assert ch["t_a"].m > ch["t_f"].m                                  # the NIC, not NVLink, sets the time


def test_ep320_section_numbers():
    x = tva.ep320()
    assert x["layout"]["redundant"] == 32 and x["T"] == 8192
    rho = {pl: v[1] for pl, v in x["rows"].items()}
    assert rho["step"] < rho["statistics"] < rho["none"]
    glue, table = tva.ep320_section()
    assert glue["ep320-gpus"] == "320 GPUs" and glue["ep320-shared-copies"] == "32 GPUs"
    assert table.count("\n") == 4


def test_too_wide_a_group_is_refused_with_the_name():
    with pytest.raises(ParameterError, match="n_gpus_ep"):
        chains.derive("moe-total-vs-active", model="deepseek-v3", n_gpus_ep=600)
