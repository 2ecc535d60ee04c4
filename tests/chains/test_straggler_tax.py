"""straggler-tax: the two claims (the wait is a tenth of the actual step), steps_to_detect published as a
Result, bad inputs refused, properties."""
import pytest

from utils import chains
from utils.chains import straggler_tax as st
from utils.params import ParameterError
from utils.training import stragglers as sg
from utils.verdicts import HOLDS, UNCHECKABLE


def test_claims_and_the_corrected_share():
    tax, one = st.claims()
    assert tax.verdict == HOLDS and one.verdict == UNCHECKABLE     # the noise is the book's, not the source's
    cc = st.claim_chain()
    assert cc["x"].m == pytest.approx(0.1 / 0.9, rel=1e-12)    # the step's growth over a healthy step
    assert cc["f"].m == pytest.approx(0.10, rel=1e-12)         # the others wait a tenth of the actual step
    assert "10%" in tax.derived and "wait 11.1%" not in tax.derived


def test_steps_to_detect_is_a_result():
    d = chains.derive("straggler-tax")
    assert "steps_to_detect" in d and d["steps_to_detect"].m == 1
    assert chains.derive("straggler-tax", throttle_fraction=0.02)["steps_to_detect"].m == \
        sg.steps_to_detect(0.02, 0.01, 16384, 1e-5, st.DETECT_P) > 1


def test_check_simulations():
    ck = st.checks()
    assert ck["waiting"] == 16383 and ck["idle_over_delay"] == pytest.approx(16383, rel=1e-9)
    assert round(ck["z"]) == 4 and ck["found"] >= 95 and st.planted_rank_found(20) >= 19
    assert len(ck["found_by_seed"]) == len(st.PLANTED_SEEDS) and min(ck["found_by_seed"].values()) == ck["found"]


def test_the_simulation_agrees_on_every_seed():
    rows = st.simulate_against_exact(st.claim_chain())
    assert {r[1] for r in rows} == set(st.SIM_SEEDS)
    assert all(abs(mean - exact) < 5 * se for _n, _s, exact, mean, se, _k in rows)
    assert st.one_step_threshold()["s_one"] == pytest.approx(0.0792, abs=5e-4)


def test_published_idle_hours():
    d = chains.derive("straggler-tax")
    assert d["idle_gpu_hours_per_day"].to("GPU*hour").m == pytest.approx(sg.idle_gpu_hours_per_day(16384, 0.1))


@pytest.mark.parametrize("bad, name", [(dict(n_ranks=1), "n_ranks"), (dict(throttle_fraction=1.0), "throttle_fraction"),
                                       (dict(throttle_fraction=0.0), "throttle_fraction"),
                                       (dict(jitter_fraction=0.5), "jitter_fraction"),
                                       (dict(false_alarm_rate=0.0), "false_alarm_rate"),
                                       (dict(step_seconds=-1.0), "step_seconds")])
def test_bad_inputs_refused(bad, name):
    with pytest.raises(ParameterError, match=name):
        chains.derive("straggler-tax", **bad)


def test_more_ranks_more_idle_hours_and_bigger_throttles_found_faster():
    base = chains.derive("straggler-tax")
    more = chains.derive("straggler-tax", n_ranks=32768)
    assert more["idle_gpu_hours_per_day"].m > 1.99 * base["idle_gpu_hours_per_day"].m
    assert more["jitter_tax"].m > base["jitter_tax"].m
    assert chains.derive("straggler-tax", throttle_fraction=0.03)["steps_to_detect"].m > base["steps_to_detect"].m


def test_simulated_step_agrees_with_the_integrals():
    rows = st.simulate_against_exact(st.compute(chains.check("straggler-tax", n_ranks=1024)))
    assert len(rows) == 2 * len(st.SIM_SEEDS)
    for _, _seed, exact, mean, se, _ in rows:
        assert abs(mean - exact) < 5 * se
