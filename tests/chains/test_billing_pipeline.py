"""The billing-pipeline chapter's chain (utils/chains/billing_pipeline.py): the claim with its verdict, the
six faults each moving the bill the way the page says, bad input refused, and the cost arithmetic."""
import pytest

from utils import chains
from utils.chains import billing_pipeline as chapter
from utils.fleet import billing as bl
from utils.params import ParameterError


def test_the_claim_holds_under_its_reading():
    (c,) = chapter.claims()
    assert c.verdict == "holds under a stated reading" and c.reading


@pytest.mark.parametrize("fault, sign", [("duplicates", +1), ("drops", -1), ("late", -1), ("clock-skew", -1),
                                         ("retries", +1), ("double-count", +1)])
def test_each_fault_undefended_moves_the_bill_its_way_and_defended_bills_what_was_owed(fault, sign):
    ck = chapter.checks()
    bad, good = ck[fault, False], ck[fault, True]
    assert (bad["billed"] - bad["owed"]) * sign > 0
    assert good["billed"] + good["recon"].late == good["owed"]


def test_the_table_has_a_row_per_fault_and_the_defended_column_is_explained():
    rows = chapter.fault_rows(chapter.checks())
    assert [r[0] for r in rows] == list(bl.FAULTS[1:])
    assert all(r[5] == "clean" or "ignored" in r[5] or "late" in r[5] or "flagged" in r[5] for r in rows)


def test_the_published_month():
    r = chains.derive("billing-pipeline")
    assert r["monthly_tokens"].m == pytest.approx(50e6 * 1000 * 30)
    assert r["monthly_revenue"].m == pytest.approx(3.75e6)
    assert r["double_count_overcharge"] == r["monthly_revenue"]
    assert r["drop_loss"].m == pytest.approx(0.0005 * 3.75e6)


@pytest.mark.parametrize("name, value", [("requests_per_day", 0.0), ("tokens_per_request", -1.0),
                                         ("price_per_mtok", 0.0), ("price_per_mtok", 1.2345678),
                                         ("duplicate_rate", 1.0), ("drop_rate", -0.1), ("retry_share", 2.0),
                                         ("late_share", 1.5), ("days", 0.0)])
def test_bad_input_is_refused_with_its_name(name, value):
    with pytest.raises(ParameterError, match=name):
        chains.derive("billing-pipeline", **{name: value})


def test_costs_grow_with_their_rates_and_the_volume():
    base = chains.derive("billing-pipeline")
    more = chains.derive("billing-pipeline", retry_share=0.04, requests_per_day=1e8)
    assert more["retry_overcharge"].m == pytest.approx(4 * base["retry_overcharge"].m)
    assert more["drop_loss"].m == pytest.approx(2 * base["drop_loss"].m)


def test_pricing_each_event_separately_loses_what_pricing_the_line_keeps():
    p = chapter.SPEC.check()
    ex = chapter.exercises(p, chapter.compute(p))
    assert ex["ex1-amount"] == "$5.00" and ex["ex1-sum"] == "$0.00"


def test_the_yearly_drop_cost_follows_the_page_volume():
    p = chapter.SPEC.check(requests_per_day=1e8)
    ex = chapter.exercises(p, chapter.compute(p))
    base = chapter.SPEC.check()
    assert ex["ex2-usd"] != chapter.exercises(base, chapter.compute(base))["ex2-usd"]
