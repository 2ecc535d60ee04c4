import pint
import pytest

from utils import units
from utils.units import Q_, DimensionalityError, fmt, pct, q, ureg


def test_bytes_and_parameters_do_not_add():
    with pytest.raises(DimensionalityError):
        q(3, "byte") + q(2, "parameter")


def test_flop_and_flop_rate_do_not_add():
    with pytest.raises(DimensionalityError):
        q(1, "FLOP") + q(1, "FLOP/s")


def test_information_is_a_dimension_not_a_pure_number():
    assert q(1, "byte").dimensionality != ureg.dimensionless.dimensionality
    assert (q(100, "FLOP") / q(4, "byte")).dimensionality != ureg.dimensionless.dimensionality
    with pytest.raises(DimensionalityError):
        (q(1, "byte") + 1)


@pytest.mark.parametrize("unit", ["FLOP", "token", "parameter", "GPU", "node", "request", "sequence", "USD"])
def test_domain_units_are_their_own_dimensions(unit):
    others = ["FLOP", "token", "parameter", "GPU", "node", "request", "sequence", "USD", "byte", "s"]
    for other in others:
        if other != unit:
            with pytest.raises(DimensionalityError):
                q(1, unit) + q(1, other)


def test_decimal_and_binary_prefixes_differ():
    assert q(1, "GiB").to("byte").m == 2**30
    assert q(1, "GB").to("byte").m == 10**9
    assert q(80, "GB") != q(80, "GiB")
    assert q(400, "Gbit/s").to("GB/s").m == pytest.approx(50)


def test_one_registry():
    assert Q_ is ureg.Quantity
    assert isinstance(q(1, "FLOP"), pint.Quantity)


def test_fmt_styles():
    assert fmt(q(6.3e24, "FLOP"), style="sci") == "6.30e24 FLOP"
    assert fmt(q(989.4e12, "FLOP/s"), style="eng") == "989 TFLOP/s"
    assert fmt(q(6200, "GPU")) == "6,200 GPUs" and fmt(q(1, "GPU")) == "1 GPU"
    assert fmt(q(2048, "token")) == "2,048 tokens" and fmt(q(4.2e11, "FLOP/token")) == "420 GFLOP/token"
    assert fmt(q(3.35, "TB/s"), "GB/s") == "3,350 GB/s"
    assert fmt(q(1, "GB"), "GiB") == "0.931 GiB"
    assert fmt(0.5) == "0.500"
    assert fmt(q(6.3e24, "FLOP"), digits=2) == "6.3 YFLOP"
    assert pct(0.4) == "40%" and pct(0.0761) == "7.61%"


def test_fmt_writes_engineering_form_wherever_a_prefix_serves():
    """Out of the plain range, a measured unit takes an SI prefix and a count the field's suffix; scientific
    form is left only where neither serves (a probability of 1e-5, a price per token, a rate per second)."""
    cases = {(1.71e7, "W"): "17.1 MW", (4.8e17, "FLOP"): "480 PFLOP", (9.89e14, "FLOP/GPU/s"): "989 TFLOP/GPU/s",
             (3.35e12, "B/s"): "3.35 TB/s", (4.91e7, "B/token"): "49.1 MB/token", (8e6, "GB"): "8 PB",
             (5e-6, "s"): "5.00 µs", (3.2e-4, "W"): "320 µW", (6.95e10, "parameter"): "69.5B parameters",
             (1.22e6, "token"): "1.22M tokens", (4.39e6, "GPU*hour"): "4.39M GPU·h", (2.7e6, "token/s"): "2.70M token/s",
             (1.03e7, "USD"): "10.3M USD", (6.54e-3, "B/FLOP"): "0.00654 B/FLOP",
             (1e-5, ""): "1.00e-5", (6.88e-7, "USD/token"): "6.88e-7 USD/token", (2.61e11, "1/s"): "2.61e11 1/s",
             (1e35, "FLOP"): "1.00e35 FLOP", (1e16, "token"): "1.00e16 tokens"}
    assert {k: fmt(q(*k)) for k in cases} == cases
    assert not any(units.prefix_serves(t) for t in ("1.00e-5", "6.88e-7 USD/token", "2.61e11 1/s", "1.00e35 FLOP"))
    assert all(units.prefix_serves(t) for t in ("1.71e7 W", "6.95e10 parameters", "4.80e17 FLOP", "2.70e6 token/s"))


def test_fmt_returns_str_and_refuses_nan():
    assert type(fmt(q(1.0, "s"))) is str
    with pytest.raises(ValueError):
        fmt(float("nan"))


def test_counted_puts_a_noun_after_the_formatted_number():
    from utils.units import counted
    assert [counted(1280, "nodes"), counted(1.5e7, "cores"), counted(14.0, "days"), counted(2.346, "days", digits=2)] \
        == ["1,280 nodes", "15M cores", "14 days", "2.3 days"]


def test_short_counts():
    from utils.units import short
    assert [short(70e9), short(15e12), short(15.6e12), short(8192), short(405e9), short(37e9)] == \
        ["70B", "15T", "15.6T", "8.19k", "405B", "37B"]


def test_entry_name_drops_the_detail_after_the_comma():
    from utils import catalog
    from utils.units import entry_name
    assert entry_name(catalog.accelerator("gb200")) == "NVIDIA GB200 NVL72"
    assert entry_name(catalog.accelerator("h200")) == catalog.accelerator("h200").short_name
    assert entry_name(catalog.model("kimi-k2")) == "Kimi K2"


def test_listing_joins_as_prose_does():
    from utils.units import listing
    assert [listing([]), listing(["a"]), listing(["a", "b"]), listing(["a", "b", "c"])] == ["", "a", "a and b",
                                                                                            "a, b and c"]
