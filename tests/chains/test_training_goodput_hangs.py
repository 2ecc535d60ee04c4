"""training-goodput-hangs: the claims, the cost of a stalled minute, the timeout's effect, refusals."""
import pytest

from utils import chains
from utils.chains import training_goodput_hangs as tgh
from utils.params import ParameterError
from utils.training import failures
from utils.verdicts import READING


def test_claims_hold_under_the_timeout_reading():
    assert [c.verdict for c in tgh.claims()] == [READING, READING]
    assert all(c.reading for c in tgh.claims())


def test_cost_per_minute_at_16384_gpus():
    r = chains.derive("training-goodput-hangs")
    assert r["gpu_minutes_per_stalled_minute"].to("GPU").m == 16384
    assert r["usd_per_stalled_minute"].to("USD/minute").m == pytest.approx(16384 * 2.35 / 60)
    assert r["usd_per_hang_default"].to("USD").m == pytest.approx(16384 * 2.35 / 60 * 10)


def test_goodput_is_the_shared_formula():
    r = chains.derive("training-goodput-hangs")
    m = 1 / (5.27e-4 * 16384) * 24 * 60
    tau = failures.young_interval(1.0, m / 0.9)
    assert r["goodput"].m == pytest.approx(failures.goodput(tau, 1.0, m / 0.9, 10 + 0.1 * 10, m))


def test_a_smaller_timeout_raises_goodput_and_a_longer_one_costs_more():
    r = chains.derive("training-goodput-hangs")
    assert r["goodput_short_timeout"] > r["goodput"]
    longer = chains.derive("training-goodput-hangs", timeout_minutes=30.0)
    assert longer["usd_per_hang_default"].m == pytest.approx(3 * r["usd_per_hang_default"].m)
    assert longer["goodput"] < r["goodput"]
    no_hangs = chains.derive("training-goodput-hangs", hang_fraction=0.0)
    assert no_hangs["goodput"].m == pytest.approx(no_hangs["goodput_short_timeout"].m)


@pytest.mark.parametrize("name,value", [("n_gpus", -1), ("timeout_minutes", 0.0), ("hang_fraction", 1.5),
                                        ("price", "no-such-price")])
def test_bad_inputs_are_refused(name, value):
    with pytest.raises(ParameterError, match=name):
        chains.derive("training-goodput-hangs", **{name: value})
