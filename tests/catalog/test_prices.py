"""The price catalog: every price has a named source and a read date, the values sit in sane ranges, and
the buy-vs-rent chapter's parameter defaults are the catalog's values (a price changes in one place)."""
import datetime as dt

import pytest

from utils import catalog, chains
from utils.catalog import KINDS
from utils.units import q

PRICES = [(key, name, v) for key in catalog.keys("price") for name, v in catalog.price(key).values.items()]


@pytest.mark.parametrize("key, name, v", PRICES, ids=[f"{k}.{n}" for k, n, _ in PRICES])
def test_every_price_has_a_source_a_date_and_a_kind(key, name, v):
    assert v.kind in KINDS
    assert v.source.title and v.source.url.startswith("http")
    read = dt.date.fromisoformat(v.source.read)
    assert dt.date(2024, 1, 1) <= read <= dt.date.today()
    if v.kind == "assumption":
        assert v.note, f"{key}.{name} is the book's judgement: its note must say why"
    for alt in v.alternatives:
        assert alt.source.url.startswith("http") and alt.q.dimensionality == v.q.dimensionality


# (entry, value) -> (unit, low, high): what would be a typo or a unit slip rather than a market move
RANGES = {
    ("h100-server", "capex_per_gpu"): ("USD/GPU", 10_000, 100_000),
    ("h100-server", "power_per_gpu"): ("kW/GPU", 0.7, 2.0),
    ("h100-server", "residual_fraction_2y"): ("", 0.0, 1.0),
    ("datacenter", "pue"): ("", 1.0, 3.0),
    ("datacenter", "colocation_per_kw_month"): ("USD/kW/month", 50, 1_000),
    ("datacenter", "ops_per_gpu_year"): ("USD/GPU/year", 100, 20_000),
    ("h200-server", "capex_per_gpu"): ("USD/GPU", 10_000, 150_000),
    ("b200-server", "capex_per_gpu"): ("USD/GPU", 10_000, 150_000),
    ("b200-server", "capex_per_server"): ("USD", 100_000, 1_500_000),
    ("wandb-llama-3-3-70b-api", "input_per_mtoken"): ("USD/Mtoken", 0.01, 20.0),
    ("wandb-llama-3-3-70b-api", "output_per_mtoken"): ("USD/Mtoken", 0.01, 20.0),
    ("deepinfra-llama-3-1-70b-turbo-api", "input_per_mtoken"): ("USD/Mtoken", 0.01, 20.0),
    ("deepinfra-llama-3-1-70b-turbo-api", "output_per_mtoken"): ("USD/Mtoken", 0.01, 20.0),
}
NUMERIC = [(k, n, v) for k, n, v in PRICES if not isinstance(v.q, str)]   # a label (an API's `served`) has no range


@pytest.mark.parametrize("key, name, v", NUMERIC, ids=[f"{k}.{n}" for k, n, _ in NUMERIC])
def test_prices_are_in_sane_ranges(key, name, v):
    if key.endswith("-rental"):                     # h100-, h200-, b200-rental: USD per GPU-hour
        unit, low, high = "USD/GPU/hour", 0.5, 20.0
    elif key == "electricity":
        unit, low, high = "USD/kWh", 0.01, 0.5
    else:
        unit, low, high = RANGES[(key, name)]
    for value in (v, *v.alternatives):
        assert low <= value.q.to(unit).magnitude <= high, f"{key}.{name} = {value.q}"


def test_rental_rates_are_ordered_as_their_notes_say():
    r = {n: catalog.price("h100-rental").q(n).to("USD/GPU/hour").magnitude for n in catalog.price("h100-rental").values}
    assert r["contract_1y_low"] < r["contract_1y"] < r["runpod_community"] < r["lambda_on_demand"] < r["aws_p5_on_demand"]


def test_colocation_share_is_below_the_operations_assumption():
    colo = catalog.price("datacenter").q("colocation_per_kw_month") * catalog.price("h100-server").q("power_per_gpu")
    assert colo.to("USD/GPU/year") < catalog.price("datacenter").q("ops_per_gpu_year")


BUY_VS_RENT = {
    "gpu_capex": ("h100-server", "capex_per_gpu", "USD/GPU"),
    "power_kw_per_gpu": ("h100-server", "power_per_gpu", "kW/GPU"),
    "pue": ("datacenter", "pue", ""),
    "usd_per_kwh": ("electricity", "virginia_commercial", "USD/kWh"),
    "ops_usd_per_gpu_year": ("datacenter", "ops_per_gpu_year", "USD/GPU/year"),
    "residual_fraction": ("h100-server", "residual_fraction_2y", ""),
    "rent_usd_per_gpu_hour": ("h100-rental", "lambda_on_demand", "USD/GPU/hour"),
}


def test_buy_vs_rent_defaults_are_the_catalog_values():
    params = chains.defaults("buy-vs-rent")   # the notebook's parameters cell equals these (test_chains)
    assert set(params) == set(BUY_VS_RENT) | {"years"}
    assert params["years"] == 2     # the claim's period, not a price
    for name, (key, field, unit) in BUY_VS_RENT.items():
        expected = catalog.price(key).q(field).to(unit).magnitude if unit else catalog.price(key).q(field).magnitude
        assert params[name] == pytest.approx(expected, rel=1e-12), name
        assert q(params[name], unit).dimensionality == catalog.price(key).q(field).dimensionality
