"""idempotent-resource-api's chain: the claim judged by running the API, the cost of a duplicate, bad inputs
refused by name, and properties of the duplicate arithmetic."""
import pytest

from utils import catalog, chains
from utils.chains import idempotent_resource_api as chapter
from utils.params import ParameterError
from utils.verdicts import HOLDS, UNCHECKABLE

SLUG = "idempotent-resource-api"


def test_the_three_semantics_hold_and_the_inventory_cannot_be_checked():
    """The semantics are general properties (the key's purpose, HTTP's 202 against 200, offset against cursor) and
    hold; the four resources and the state machine are the book's own build: cannot be checked."""
    c, inventory = chapter.claims()
    assert c.verdict == HOLDS and not c.reading and chapter.RFC_202[1] in c.reason and chapter.RFC_200[1] in c.reason
    assert inventory.verdict == UNCHECKABLE
    assert (c.quote, inventory.quote) == (chapter.SEMANTICS_QUOTE, chapter.INVENTORY_QUOTE)
    ck = chapter.checks()
    assert all(chapter.semantics_hold(ck).values())
    assert ck["one_key"]["created"] == 1 and ck["no_key"] == ck["per_attempt"] == chapter.ATTEMPTS
    assert ck["cancel_running"] == (202, "cancelling") and ck["cancel_pending"] == (200, "cancelled")
    assert ck["late"]["in_window"] == ck["late"]["first"] != ck["late"]["late"]
    assert ck["illegal"] == 36 - sum(len(v) for v in chapter.TRANSITIONS.values())


def test_a_failed_run_leaves_the_semantics_unchecked_never_refuted(monkeypatch):
    """A semantics the book's API fails to show is this API's bug: the claim is then unchecked, not wrong."""
    monkeypatch.setattr(chapter, "semantics_hold", lambda ck: dict(key=True, cancel=False, cursor=True))
    c, _ = chapter.claims()
    assert c.verdict == UNCHECKABLE and not c.nearest_true and "cancel failed" in c.reason


def test_the_default_price_is_the_catalog_price():
    v = catalog.price("h100-rental")["lambda_on_demand"]
    assert chains.defaults(SLUG)["usd_per_gpu_hour"] == pytest.approx(v.q.to("USD/GPU/hour").m)


def test_published_figures():
    r = chains.derive(SLUG)
    assert r["cost_per_duplicate"].m == pytest.approx(64 * 48 * 3.99)
    assert r["gpu_hours_per_duplicate"].m == 64 * 48
    t = 0.002
    assert r["extra_attempts_per_create"].m == pytest.approx(t / (1 - t), rel=1e-12)
    assert r["duplicates_per_day"].m == pytest.approx(20 * t / (1 - t), rel=1e-12)
    assert r["days_between_duplicates"].m == pytest.approx((1 - t) / (20 * t), rel=1e-12)
    assert r["duplicate_cost_per_year"].m == pytest.approx(365 * 20 * t / (1 - t) * 64 * 48 * 3.99, rel=1e-12)
    assert r["busy_gpus"].m == pytest.approx(20 * 64 * 48 / 24)


def test_the_geometric_series_is_the_closed_form():
    # a lost attempt is retried; the retry can be lost too: sum of (t r)^n for n >= 1
    t, r = 0.3, 0.8
    d = chains.derive(SLUG, timeout_rate=t, retry_rate=r)["extra_attempts_per_create"].m
    assert d == pytest.approx(sum((t * r) ** n for n in range(1, 200)), rel=1e-12)


@pytest.mark.parametrize("name,value", [("gpus_per_job", 0), ("gpus_per_job", 2.5), ("job_hours", -1.0),
                                        ("usd_per_gpu_hour", 0.0), ("duplicate_runtime_share", 1.5),
                                        ("creates_per_day", 0.0), ("timeout_rate", 1.0), ("timeout_rate", -0.1),
                                        ("retry_rate", 0.0), ("retry_rate", 1.2)])
def test_bad_inputs_are_refused_with_their_name(name, value):
    with pytest.raises(ParameterError, match=name):
        chains.derive(SLUG, **{name: value})


def test_more_timeouts_cost_more_and_cost_scales_with_the_job():
    base = chains.derive(SLUG)["duplicate_cost_per_year"].m
    assert chains.derive(SLUG, timeout_rate=0.01)["duplicate_cost_per_year"].m > base
    assert chains.derive(SLUG, retry_rate=0.5)["duplicate_cost_per_year"].m < base
    assert chains.derive(SLUG, gpus_per_job=128)["duplicate_cost_per_year"].m == pytest.approx(2 * base)
    assert chains.derive(SLUG, duplicate_runtime_share=0.25)["cost_per_duplicate"].m == pytest.approx(64 * 12 * 3.99)


def test_figure_data_offset_misbehaves_and_the_cursor_never_does():
    c = chapter.pagination_curves((0, 4))
    assert c["cursor_repeats"] == c["cursor_skips"] == [0, 0]
    assert c["offset_repeats"][0] == 0 < c["offset_repeats"][1] and min(c["offset_skips"]) > 0
