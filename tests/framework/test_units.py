import pint
import pytest

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
    assert fmt(q(6.3e24, "FLOP")) == "6.30e24 FLOP"
    assert fmt(q(989.4e12, "FLOP/s"), style="eng") == "989 TFLOP/s"
    assert fmt(q(6200, "GPU")) == "6,200 GPUs" and fmt(q(1, "GPU")) == "1 GPU"
    assert fmt(q(2048, "token")) == "2,048 tokens" and fmt(q(4.2e11, "FLOP/token")) == "4.20e11 FLOP/token"
    assert fmt(q(3.35, "TB/s"), "GB/s") == "3,350 GB/s"
    assert fmt(q(1, "GB"), "GiB") == "0.931 GiB"
    assert fmt(0.5) == "0.500"
    assert fmt(q(6.3e24, "FLOP"), digits=2) == "6.3e24 FLOP"
    assert pct(0.4) == "40%" and pct(0.0761) == "7.61%"


def test_fmt_returns_str_and_refuses_nan():
    assert type(fmt(q(1.0, "s"))) is str
    with pytest.raises(ValueError):
        fmt(float("nan"))


def test_counted_puts_a_noun_after_the_formatted_number():
    from utils.units import counted
    assert [counted(1280, "nodes"), counted(1.5e7, "cores"), counted(14.0, "days"), counted(2.346, "days", digits=2)] \
        == ["1,280 nodes", "1.50e7 cores", "14 days", "2.3 days"]


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
