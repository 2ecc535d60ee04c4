"""buy-vs-rent's chain: the claim under its reading, the swings, bad inputs refused, and properties."""
import pytest

from utils import chains
from utils.chains import buy_vs_rent
from utils.fleet import money
from utils.params import ParameterError
from utils.verdicts import READING


def test_claim_holds_under_its_reading():
    (c,) = buy_vs_rent.claims()
    assert c.verdict == READING and c.reading and not c.problems()
    cases = buy_vs_rent.checks()
    assert abs(cases["u_typ"] - 0.60) <= 0.05                      # "60%" at the catalog's inputs, on-demand
    assert cases["u_contract"] > 1                                 # the rental rate alone swings it over 100%
    assert cases["u_typ"] < cases["u_nores"] < 1 < cases["u_both"]  # the resale value only together with it
    assert cases["u_plain"] == pytest.approx(cases["u_typ"], rel=1e-12)


def test_published_breakeven_is_rederived():
    out = chains.derive("buy-vs-rent")
    own = money.owned_cost(50000.0, 2.0, 1.275, 1.58, 0.0895, 3000.0, 0.3)
    assert out["owned_cost_per_gpu"].m == pytest.approx(own["total"], rel=1e-12)
    assert out["breakeven_utilization"].m == pytest.approx(own["total"] / (3.99 * 2 * 8766), rel=1e-12)
    assert out["breakeven_utilization"].m == pytest.approx(0.631, abs=5e-4)


def test_a_cheap_rent_puts_the_breakeven_above_one():
    out = chains.derive("buy-vs-rent", rent_usd_per_gpu_hour=1.50)
    assert out["breakeven_utilization"].m > 1
    assert out["owned_cost_per_gpu_hour_at_full_use"].m > 1.50


@pytest.mark.parametrize("name, value", [("usd_per_kwh", -0.1), ("pue", 0.9), ("residual_fraction", 1.2),
                                         ("gpu_capex", 0.0), ("years", -1.0), ("rent_usd_per_gpu_hour", 0.0)])
def test_bad_inputs_are_refused_by_name(name, value):
    with pytest.raises(ParameterError, match=name):
        chains.derive("buy-vs-rent", **{name: value})


def test_higher_rent_lowers_the_breakeven_and_resale_value_too():
    base = chains.derive("buy-vs-rent")["breakeven_utilization"].m
    assert chains.derive("buy-vs-rent", rent_usd_per_gpu_hour=7.98)["breakeven_utilization"].m == pytest.approx(base / 2)
    assert chains.derive("buy-vs-rent", residual_fraction=0.45)["breakeven_utilization"].m < base
    assert chains.derive("buy-vs-rent", years=3.0)["owned_cost_per_gpu"].m > chains.derive("buy-vs-rent")["owned_cost_per_gpu"].m


def test_sensitivity_ranks_the_rental_rate_first():
    bars = buy_vs_rent.sweeps(chains.check("buy-vs-rent"))
    assert bars[-1]["name"] == "rent_usd_per_gpu_hour" and bars[-1]["crosses"]
    assert [b["name"] for b in bars if b["crosses"]] == ["rent_usd_per_gpu_hour"]
