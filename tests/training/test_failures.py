"""utils.training.failures: interruptions from a rate, Young's interval derived, Daly's, goodput, the exact model."""
import math

import pytest
import sympy as sp

from utils.training import failures


def test_young_is_derived_and_is_a_maximum():
    d, s = failures.young_derivation(), failures.symbols()
    assert sp.simplify(d["tau_opt"] - sp.sqrt(2 * s["delta"] * s["M_u"])) == 0
    assert failures.formulas_agree()


def test_at_the_optimum_writes_and_rework_are_equal():
    lost = failures.lost_shares(failures.young_interval(2.4, 11000.0), 2.4, 11000.0, 600.0, 10000.0)
    assert lost["checkpoint writes"] == pytest.approx(lost["rework after failures"])


def test_interruptions_and_mtbi():
    rate = 466 / (54 * 16384)                       # Llama 3: per GPU-day
    assert failures.interruptions(rate, 16384, 54) == pytest.approx(466)
    assert failures.job_mtbi(rate, 16384) * 24 == pytest.approx(54 * 24 / 466)


def test_daly_is_close_to_young_for_small_writes_and_caps_at_mtbf():
    y, dl = failures.young_interval(2.4, 11000.0), failures.daly_interval(2.4, 11000.0)
    assert abs(dl / y - 1) < 0.01
    assert failures.daly_interval(30.0, 10.0) == 10.0


def test_exact_optimum_agrees_with_first_order_when_writes_are_small():
    tau, g = failures.optimum_exact(2.4, 11000.0, 600.0, lo=1.0, hi=1e5)
    assert tau == pytest.approx(failures.young_interval(2.4, 11000.0), rel=0.02)
    assert g == pytest.approx(failures.goodput(tau, 2.4, 11000.0, 600.0, 11000.0), abs=0.005)


def test_goodput_falls_as_failures_come_faster():
    g = [failures.goodput_at_optimum(2.4, m, 600.0, m) for m in (5000.0, 10000.0, 20000.0)]
    assert g[0] < g[1] < g[2] < 1 and not math.isnan(g[0])


def test_the_llama3_defaults_are_its_counts_to_three_figures():
    assert failures.LLAMA3_INTERRUPTIONS_PER_GPU_DAY == float(f"{466 / (54 * 16384):.3g}")
    assert failures.LLAMA3_UNPLANNED_FRACTION == float(f"{419 / 466:.2g}")
