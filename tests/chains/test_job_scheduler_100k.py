"""job-scheduler-100k's chain: the claim with its verdict, bad inputs refused, and properties."""
import pytest

from utils import chains
from utils.chains import job_scheduler_100k as chapter
from utils.params import ParameterError
from utils.verdicts import UNCHECKABLE


def test_claim_cannot_be_checked_and_the_books_figures_are_reproduced():
    (c,) = chapter.claims()
    assert c.verdict == UNCHECKABLE and not c.problems()
    ck = chapter.checks()
    t = ck["ticks"][100_000]
    assert t["scan_ops"] > 1000 * t["ops"]
    assert ck["gang"][0] * 5 < ck["gang"][1]
    assert ck["worst"] < 1.0 < ck["worst_bug"]


def test_published_figures_at_the_defaults():
    r = chains.derive("job-scheduler-100k")
    assert r["gang_wait_reserved"] < r["gang_wait_greedy"]
    assert r["mean_wait_reserved"] > r["mean_wait_greedy"]          # the reservation's price
    assert r["lost_checkpoint_aware"] < r["lost_newest_first"] < r["thrown_away_resubmit"]
    assert r["lost_per_evicted_gpu"].m < 0.5                          # under a blind pick's tau/2
    assert r["scan_over_indexed"].m > 100


@pytest.mark.parametrize("name, value", [("n_gpus", 0), ("n_gpus", 4), ("n_jobs", 2.5), ("load", -1.0),
                                         ("checkpoint_hours", 0.0), ("gang_gpus", 8), ("gang_gpus", 128),
                                         ("gang_every", 1), ("seed", -1), ("seed", 1.5), ("tick_hours", 0.0),
                                         ("mean_work_hours", "two"), ("n_jobs", 1), ("n_jobs", 10_000),
                                         ("tick_hours", 0.01), ("queue_big", 100_000)])
def test_bad_input_is_refused_with_its_name(name, value):
    with pytest.raises(ParameterError, match=name):
        chains.derive("job-scheduler-100k", **{name: value})


def test_a_cluster_that_never_fills_is_refused_in_one_line():
    with pytest.raises(ParameterError, match="evict no job"):
        chains.derive("job-scheduler-100k", n_jobs=100, gang_every=50, n_gpus=100_000)


def test_a_bigger_backlog_costs_the_scan_more_and_the_index_not():
    small = chains.derive("job-scheduler-100k", queue_big=2000)
    base = chains.derive("job-scheduler-100k")
    assert base["ops_per_tick_scan"] > 4 * small["ops_per_tick_scan"]
    assert base["ops_per_tick_indexed"] < 2 * small["ops_per_tick_indexed"]


def test_longer_checkpoint_intervals_lose_more():
    base = chains.derive("job-scheduler-100k")
    long_tau = chains.derive("job-scheduler-100k", checkpoint_hours=3.0)
    assert long_tau["lost_checkpoint_aware"] > base["lost_checkpoint_aware"]


def test_the_book_figures_hold_on_every_seed():
    # the requirements are met on every seeded workload, not on the page's one draw
    for f in chapter.seed_figures():
        assert f["w_res"] < f["w_greedy"] and f["worst"] < chapter.CLAIM["tau"] < f["worst_bug"]
