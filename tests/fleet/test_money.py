"""utils.fleet.money: owned cost, amortisation, power cost, residual value, break-even, and its closed form."""
import pytest

from utils.chain import Chain
from utils.fleet import money
from utils.units import q

BASE = dict(capex=50000.0, years=2.0, kw=1.275, pue=1.58, usd_per_kwh=0.0895, ops_per_year=3000.0,
            residual_fraction=0.3)


def test_owned_cost_by_line():
    own = money.owned_cost(**BASE)
    assert own["hours"] == 2 * 8766
    assert own["power"] == pytest.approx(1.275 * 1.58 * 0.0895 * 17532)
    assert own["residual"] == pytest.approx(15000)
    assert own["total"] == pytest.approx(50000 + own["power"] + 6000 - 15000)


def test_breakeven_is_owned_cost_per_hour_over_the_rent():
    own = money.owned_cost(**BASE)
    u = money.breakeven_utilization(own["total"], 3.99, own["hours"])
    assert u == pytest.approx(money.cost_per_gpu_hour(own["total"], own["hours"]) / 3.99)
    # Renting u of the hours at r costs what owning costs.
    assert 3.99 * u * own["hours"] == pytest.approx(own["total"])
    # Below the owned cost per GPU-hour at full use, renting wins at every utilisation: u > 1.
    assert money.breakeven_utilization(own["total"], 1.50, own["hours"]) > 1
    assert money.breakeven_rent(own["total"], own["hours"], u) == pytest.approx(3.99)


def test_amortisation_and_utilisation():
    h = money.period_hours(3.0)
    assert money.amortised_capex_per_hour(30000.0, 0.0, h) == pytest.approx(30000 / (3 * 8766))
    assert money.cost_per_gpu_hour(100.0, 10.0, 0.5) == pytest.approx(20.0)   # half busy: twice per used hour


def test_closed_form_is_the_float_route_and_its_elasticities():
    own = money.owned_cost(**BASE)
    point = dict(gpu_capex=50000.0, residual_fraction=0.3, power_kw_per_gpu=1.275, pue=1.58, usd_per_kwh=0.0895,
                 ops_usd_per_gpu_year=3000.0, rent_usd_per_gpu_hour=3.99, hours=own["hours"])
    expr = money.breakeven_closed_form()
    u = float(expr.subs({money.symbols()[k]: v for k, v in point.items()}))
    assert u == pytest.approx(money.breakeven_utilization(own["total"], 3.99, own["hours"]), rel=1e-12)
    el = money.elasticities(point)
    assert el["rent_usd_per_gpu_hour"] == pytest.approx(-1.0)
    assert el["gpu_capex"] == pytest.approx(35000 / own["total"])
    # Solving for the rent that puts the break-even at one gives the owned cost per hour at full use.
    r1 = money.solve_breakeven_for("rent_usd_per_gpu_hour", point, 1.0)
    assert r1 == pytest.approx(own["total"] / own["hours"])


def test_chain_steps_agree_with_the_floats():
    ch = Chain("t")
    for name, v, unit in (("C_cap", 50000.0, "USD/GPU"), ("T", 2.0, "year"), ("P", 1.275, "kW/GPU"), ("PUE", 1.58, ""),
                          ("p_e", 0.0895, "USD/kWh"), ("c_ops", 3000.0, "USD/GPU/year"), ("f_res", 0.3, ""),
                          ("r", 3.99, "USD/GPU/hour")):
        ch.given(name, q(v, unit), name)
    money.ownership_steps(ch)
    own = money.owned_cost(**BASE)
    assert ch["C_own"].to("USD/GPU").m == pytest.approx(own["total"], rel=1e-12)
    assert ch["u_be"].to("").m == pytest.approx(own["total"] / (3.99 * own["hours"]), rel=1e-12)


@pytest.mark.parametrize("call, message", [
    (lambda: money.power_cost(1.0, 0.9, 0.1, 10.0), "pue"),
    (lambda: money.power_cost(-1.0, 1.2, 0.1, 10.0), "kw"),
    (lambda: money.residual_value(100.0, 1.5), "fraction"),
    (lambda: money.breakeven_utilization(100.0, 0.0, 10.0), "rent_per_hour"),
    (lambda: money.cost_per_gpu_hour(100.0, 10.0, 0.0), "utilization"),
])
def test_bad_inputs_are_refused(call, message):
    with pytest.raises(ValueError, match=message):
        call()
