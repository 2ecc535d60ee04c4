"""gpu-hours-billing: the float-trap claim at the stated scale, the rounding rules on the job mix, bad
inputs refused, and the properties (more records, more drift; coarser rules bill more)."""
import pytest

from utils import catalog, chains
from utils.chains import gpu_hours_billing as chapter
from utils.params import ParameterError

SLUG = "gpu-hours-billing"


def test_the_float_trap_holds_only_read_as_floats_anywhere_in_billing():
    (c,) = chains.claims(SLUG)
    assert c.verdict == "holds under a stated reading" and "ceiling" in c.reading
    base = chapter.checks()["base"]
    assert 0.01 <= abs(base["e64"]) < chapter.CLAIM["real_money"]            # a few cents on millions
    assert abs(float(base["exact"]) - 3.99 * 1024 * 30 * 24) < 1e-6
    assert 9 < base["first_days"] < 10
    assert base["s32"] == 32768.0                                           # float32 stalls at 2^15


def test_defaults_and_rounding_markups():
    d = chains.derive(SLUG)
    assert d["rounding_markup"].m == 0 and d["mix_billed"] == d["mix_used"]
    m = chains.derive(SLUG, rounding="minute")["rounding_markup"].m
    h = chains.derive(SLUG, rounding="hour")["rounding_markup"].m
    assert 0 < m < h < 0.2


def test_coarser_rules_bill_more_on_every_seed_of_the_mix():
    assert chapter.SEEDS >= 3
    mk = chapter.checks()["markups"]
    assert mk["second"] == (0.0, 0.0)
    assert 0 < mk["minute"][0] <= mk["minute"][1] < mk["hour"][0] <= mk["hour"][1] < 0.2
    for seed in range(chapter.SEEDS):
        d = chains.derive(SLUG, rounding="hour", seed=seed)
        assert mk["hour"][0] <= d["rounding_markup"].m <= mk["hour"][1]


def test_the_drift_stays_under_half_an_ulp_of_the_total_a_record_and_follows_no_square_law():
    """|float64 sum - exact| <= n x (ulp(total) + ulp(charge)) / 2, the bound that doubles at each binade; the drift
    itself lands anywhere under it, so scaling the stated fleet's drift by the square of the records misses."""
    import math
    ck = chapter.checks()
    for r in (ck["base"], ck["big"]):
        assert abs(r["e64"]) <= r["bound64"] == r["n"] * (math.ulp(r["s64"]) + math.ulp(r["c"])) / 2
    squared = abs(ck["base"]["e64"]) * (ck["big"]["n"] / ck["base"]["n"]) ** 2
    assert not 0.5 < squared / abs(ck["big"]["e64"]) < 2                    # about 217 USD against 1,517 USD
    curve = chapter.drift_curve(chapter.CLAIM["price"], 30.0, [512, 1024])
    assert curve["e64"][0] > curve["e64"][1] and curve["bound"][0] < curve["bound"][1]   # not even monotonic
    assert "square" not in chains.claims(SLUG)[0].reading


def test_property_more_gpus_more_drift():
    small = chains.derive(SLUG, fleet_gpus=64)["float64_drift"].m
    big = chains.derive(SLUG, fleet_gpus=8192)["float64_drift"].m
    assert abs(big) > 100 * abs(small)


@pytest.mark.parametrize("name,value,match", [
    ("rounding", "day", "rounding"), ("fleet_gpus", 0, "fleet_gpus"), ("fleet_gpus", 10.5, "fleet_gpus"),
    ("price", -1.0, "price"), ("days", 0.0, "days"), ("days", 1e-7, "days"), ("n_jobs", 1e6, "n_jobs")])
def test_bad_inputs_are_refused_naming_the_parameter(name, value, match):
    with pytest.raises(ParameterError, match=match):
        chains.derive(SLUG, **{name: value})


def test_refusal_table_refuses_every_bad_record():
    rows = chapter.refusal_rows()
    assert [r[-1] == "billed" for r in rows] == [True, True] + [False] * 8


def test_the_price_is_the_catalog_price_and_cited_only_at_its_default():
    v = catalog.price("h100-rental")["lambda_on_demand"].q.to("USD/GPU/hour").m
    assert chains.defaults(SLUG)["price"] == chapter.CLAIM["price"] == v

    def price_source(**changes):
        return next(r.source for r in chapter.compute(chains.check(SLUG, **changes)).rows if r.name == "p")
    assert price_source().startswith("catalog") and price_source(price=2.5) == "parameters cell"
