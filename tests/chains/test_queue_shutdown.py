"""queue-shutdown's chain: the claim with its verdict, bad inputs refused, and properties of the bound."""
import pytest

from utils import chains
from utils.chains import queue_shutdown as chapter
from utils.params import ParameterError
from utils.verdicts import HOLDS


def test_claim_holds_with_each_failure_reproduced():
    (c,) = chapter.claims()
    assert c.verdict == HOLDS
    ck = chapter.checks()
    assert ck["good"].lost == 0 and ck["one"].workers_hung == chapter.CLAIM["workers"] - 1
    assert ck["die"].join_hung and ck["die"].lost == len(ck["good"].failed)
    assert ck["die_all"].producer_hung and ck["die_all"].lost == 163
    assert all(ck[k].threads_left == 0 for k in ("good", "one", "die", "die_all"))


def test_published_figures_at_the_defaults():
    r = chains.derive("queue-shutdown")
    assert (r["items_processed"].m, r["items_failed"].m, r["items_lost"].m, r["threads_left"].m) == (196, 4, 0, 0)
    assert r["held_items"].m == 16 + 4
    assert r["bounded_memory"].to("GB").m == pytest.approx(20 * 0.064)
    assert r["unbounded_growth"].to("GB/s").m == pytest.approx(0.64)
    assert r["time_to_exhaust"].to("s").m == pytest.approx(100)
    assert r["largest_bound"].m == pytest.approx(996)


@pytest.mark.parametrize("name, value", [("workers", 0), ("maxsize", 0), ("n_items", 2.5), ("fail_every", -1),
                                         ("fail_every", 1.5), ("item_mb", 0.0), ("producer_rate", 30.0),
                                         ("n_items", 10000), ("host_memory_gb", -1.0)])
def test_bad_input_is_refused_with_its_name(name, value):
    with pytest.raises(ParameterError, match=name):
        chains.derive("queue-shutdown", **{name: value})


def test_a_bigger_bound_holds_more_and_bigger_items_fit_fewer():
    base = chains.derive("queue-shutdown")
    big = chains.derive("queue-shutdown", maxsize=64)
    assert big["held_items"].m == 68 and big["bounded_memory"] > base["bounded_memory"]
    heavy = chains.derive("queue-shutdown", item_mb=128.0)
    assert heavy["largest_bound"] < base["largest_bound"] and heavy["time_to_exhaust"] < base["time_to_exhaust"]
    assert heavy["items_lost"].m == 0


def test_the_pool_keeps_its_contract_in_every_scenario():
    ck = chapter.contract_checks()
    assert ck["scenarios"] == len(chapter.RAISES) + 1 + len(chapter.BAD_ARGS) and ck["held"] == ck["scenarios"]
    assert ck["items"] == 60 * len(chapter.RAISES) + 10 and ck["lost"] == 0 and ck["threads"] == 0
    assert set(chapter.contract_text()) == {f"contract-{k}" for k in ("scenarios", "held", "items", "lost", "threads")}


def test_counts_from_a_threaded_run_are_derived_not_measured_and_sources_follow_the_defaults():
    rows = {r.name: r for r in chapter.compute(chains.check("queue-shutdown")).rows}
    assert {rows[n].kind for n in ("n_ok", "n_fail", "n_left", "H")} == {"derived"}
    assert not any(r.kind == "measured" for r in rows.values())
    workers = next(p for p in chapter.PARAMETERS if p.name == "workers")
    assert rows["N_w"].source == workers.source
    changed = {r.name: r for r in chapter.compute(chains.check("queue-shutdown", workers=3)).rows}
    assert changed["N_w"].source == "parameters cell" and changed["M"].source == rows["M"].source
