"""gpu-hours-intervals: the double-count claim on its scenario, bad inputs refused, and properties
(the union ignores duplicates; more duplicates, a larger naive error; the right answer does not move)."""
import pytest

from utils import chains
from utils.chains import gpu_hours_intervals as chapter
from utils.params import ParameterError

SLUG = "gpu-hours-intervals"


def test_the_double_count_claim_holds_on_every_seed():
    (c,) = chains.claims(SLUG)
    assert c.verdict == "holds"
    r = chapter.checks()
    assert len(r["runs"]) == chapter.SEEDS >= 10
    for run in r["runs"]:                       # not only the page's seed
        s, window = run["sweep"], run["usage"]["window"]
        assert s["k_naive"] > s["k"] > 0 and s["k_naive"] <= window
        assert run["clean"]["any"] == s["any"] and run["clean"]["k_naive"] == run["clean"]["k"] == s["k"]
        assert sum(len(v) for v in s["overlaps"].values()) == chapter.CLAIM["duplicates"]
        assert sorted(s["overlaps"]) == ["gpu0"]
    assert all(r["every"].values())


def test_the_error_is_reported_as_its_range_over_seeds():
    d = chains.derive(SLUG)
    assert 0 < d["k_busy_error_low"] <= d["k_busy_error"] <= d["k_busy_error_high"]
    r = chapter.checks()
    assert d["k_busy_error_low"].m == pytest.approx(min(x["err"] for x in r["runs"]))
    # the range starts at the reader's seed
    assert chains.derive(SLUG, seed=5)["k_busy_error_low"] != d["k_busy_error_low"]


def test_rows_show_the_parameters_sources_at_their_defaults():
    rows = {r.name: r for r in chapter.compute(chains.check(SLUG)).rows}
    assert rows["n"].source == chapter.SPEC.parameters[0].source == "this book's assumption: one eight-GPU node"
    changed = {r.name: r for r in chapter.compute(chains.check(SLUG, n_gpus=16)).rows}
    assert changed["n"].source == "parameters cell" and changed["W"].source == rows["W"].source


def test_without_duplicates_naive_equals_right():
    d = chains.derive(SLUG, duplicates=0)
    assert d["k_busy_naive"] == d["k_busy"] and d["k_busy_error"].m == 0
    assert d["k_busy_error_low"].m == d["k_busy_error_high"].m == 0
    assert d["reported_gpu_hours"] == d["busy_gpu_hours"]


def test_property_more_duplicates_same_right_answer_larger_naive():
    few, many = chains.derive(SLUG, duplicates=2), chains.derive(SLUG, duplicates=10)
    assert few["k_busy"] == many["k_busy"] and few["any_busy"] == many["any_busy"]
    assert many["k_busy_naive"] >= few["k_busy_naive"] >= few["k_busy"]
    assert many["reported_gpu_hours"] > few["reported_gpu_hours"]


def test_property_lower_k_more_time():
    assert chains.derive(SLUG, k=4)["k_busy"] > chains.derive(SLUG, k=8)["k_busy"]


@pytest.mark.parametrize("name,value", [("k", 9), ("n_gpus", 1), ("busy_share", 1.0), ("busy_share", 0.0),
                                        ("duplicates", -1), ("duplicates", 1.5), ("hours", 0.0),
                                        ("mean_job_hours", 1e-6)])
def test_bad_inputs_are_refused_naming_the_parameter(name, value):
    with pytest.raises(ParameterError, match=name.split("_")[0]):
        chains.derive(SLUG, **{name: value})
