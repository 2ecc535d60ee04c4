"""utils.fleet.fair_share: decay on a fake clock, the factor, guarantees, borrowing, preemption, ordering."""
import math

import numpy as np
import pytest

from utils.fleet.fair_share import Cluster, DecayedUsage, Job, fair_share_factor, pooled_idle, pooled_size, simulate_pool


def test_usage_halves_every_half_life_and_reads_the_same_however_often():
    u = DecayedUsage(half_life=10.0)
    u.add(0.0, 100.0)
    assert u.advance(10.0) == pytest.approx(50.0) and u.advance(30.0) == pytest.approx(12.5)
    a, b = DecayedUsage(24.0), DecayedUsage(24.0)
    a.set_rate(0.0, 8)
    b.set_rate(0.0, 8)
    for t in np.linspace(0, 100, 101)[1:]:
        b.advance(float(t))                          # read every hour
    assert a.advance(100.0) == pytest.approx(b.value, rel=1e-12)
    # constant rate for ever: usage tends to rate * h / ln 2
    assert a.advance(1e5) == pytest.approx(8 * 24 / math.log(2))


def test_time_never_runs_backwards():
    u = DecayedUsage(1.0, t0=5.0)
    with pytest.raises(ValueError, match="backwards"):
        u.advance(4.0)


def test_the_factor_is_one_half_at_a_fair_share():
    assert fair_share_factor(0.25, 0.25) == 0.5
    assert fair_share_factor(0.0, 0.1) == 1.0
    assert fair_share_factor(0.5, 0.25) == 0.25
    with pytest.raises(ValueError, match="share"):
        fair_share_factor(0.1, 0.0)


def test_borrowed_jobs_are_reclaimed_cheapest_first_and_guaranteed_ones_never():
    c = Cluster(64, {"a": 32, "b": 32})
    c.submit(0.0, Job("a-own", "a", 32))
    c.submit(0.0, Job("a-old", "a", 16, last_checkpoint=0.0))        # borrowed from b
    c.submit(0.0, Job("a-new", "a", 16, last_checkpoint=0.0))
    c.running[2].last_checkpoint = 9.5                                 # a-new checkpointed recently
    victims = c.submit(10.0, Job("b1", "b", 16))
    assert [v.name for v in victims] == ["a-new"]                     # least lost work: 16 x 0.5 h
    assert c.preempted[0][1] == pytest.approx(8.0)
    assert "a-own" in [j.name for j in c.running]
    victims = c.submit(10.0, Job("b2", "b", 16))
    assert [v.name for v in victims] == ["a-old"]
    assert c.submit(10.0, Job("b3", "b", 8)) == []                    # over b's guarantee: it waits
    assert [j.name for j in c.waiting][-1] == "b3" and all(j.guaranteed for j in c.running)


def test_a_request_within_its_guarantee_always_runs():
    """Guarantees sum to at most the capacity, so borrowed GPUs always cover a guaranteed request: random
    submissions and finishes, and every within-guarantee submit starts at once."""
    rng = np.random.default_rng(7)
    c = Cluster(64, {"a": 16, "b": 16, "c": 24})
    for step in range(400):
        t = float(step)
        if c.running and rng.random() < 0.4:
            c.finish(t, c.running[int(rng.integers(len(c.running)))].name)
            continue
        team = ["a", "b", "c"][int(rng.integers(3))]
        job = Job(f"j{step}", team, int(rng.integers(1, 9)), last_checkpoint=t - float(rng.random()))
        within = c.within_guarantee(team, job.gpus)
        c.submit(t, job)
        assert job.running or not within
        assert c.free() >= 0 and all(c.held(k, guaranteed_only=True) <= c.guarantees[k] for k in c.teams)


def test_the_tree_caps_a_group_and_its_teams():
    c = Cluster(32, {"g": 16, "t1": 8, "t2": 8, "t3": 16}, parents={"t1": "g", "t2": "g"})
    assert c.teams == ["t1", "t2", "t3"] and c.path("t1") == ["t1", "g"]
    c.submit(0.0, Job("x", "t1", 8))
    assert c.running[0].guaranteed and not c.within_guarantee("t1", 1) and c.within_guarantee("t2", 8)
    with pytest.raises(ValueError, match="under 'g'"):
        Cluster(32, {"g": 8, "t1": 8, "t2": 8}, parents={"t1": "g", "t2": "g"})


def test_waiting_jobs_go_by_fair_share_so_hoarding_loses():
    c = Cluster(64, {"h": 16, "n": 16, "o": 32}, half_life=24.0)
    c.submit(0.0, Job("hold", "h", 16))                 # held for two days, used or not
    c.submit(0.0, Job("o", "o", 32))
    c.submit(0.0, Job("n", "n", 16))
    c.finish(1.0, "n")
    c.submit(48.0, Job("n2", "n", 16))
    c.submit(48.0, Job("xh", "h", 32))
    c.submit(48.0, Job("xn", "n", 32))
    f = c.factors(48.0)
    assert f["h"] < f["n"]
    c.finish(48.0, "o")
    assert [j.name for j in c.running if j.name.startswith("x")] == ["xn"]


def test_pooling_closed_form_and_simulation_agree():
    n, p = 16, 0.5
    k = pooled_size(n, p, 0.05)
    assert k == 11
    sim = simulate_pool(np.random.default_rng(0), n, p, k, 8760, 24.0)
    assert sim["static_idle"] == pytest.approx(1 - p, abs=0.03)
    assert sim["pooled_idle"] == pytest.approx(pooled_idle(n, p, k), abs=0.03)
    assert sim["turned_away"] < 0.05
    assert pooled_idle(n, p, n) == pytest.approx(1 - p)        # a pool as big as every peak is static


@pytest.mark.parametrize("kw, match", [(dict(capacity=0, guarantees={"a": 1}), "capacity"),
                                       (dict(capacity=8, guarantees={"a": 6, "b": 6}), "capacity"),
                                       (dict(capacity=8, guarantees={"a": -1}), "guarantees")])
def test_bad_clusters_are_refused(kw, match):
    with pytest.raises(ValueError, match=match):
        Cluster(**kw)


def test_bad_jobs_are_refused():
    c = Cluster(8, {"a": 8})
    with pytest.raises(ValueError, match="unknown team"):
        c.submit(0.0, Job("x", "z", 1))
    with pytest.raises(ValueError, match="gpus"):
        c.submit(0.0, Job("x", "a", 9))


def test_a_usage_history_decays_as_the_scheduler_does_and_a_short_window_is_a_lump():
    from utils.fleet.fair_share import decayed_usage, start_order
    u = DecayedUsage(24.0)
    u.set_rate(0.0, 8)
    u.set_rate(48.0, 0)
    ran = u.advance(72.0)                                          # 8 GPUs from 72 h ago to 24 h ago
    assert decayed_usage([("a", 8 * 48, 72.0, 24.0)], 24.0)["a"] == pytest.approx(ran, rel=1e-12)
    lump = decayed_usage([("a", 100.0, 24.0, 24.0)], 24.0)["a"]
    assert lump == pytest.approx(50.0)
    assert decayed_usage([("a", 100.0, 24.0 + 1e-9, 24.0)], 24.0)["a"] == pytest.approx(lump, rel=1e-9)
    assert decayed_usage([("a", 1.0, 0.0, 0.0), ("a", 2.0, 0.0, 0.0)], 1.0) == {"a": 3.0}
    with pytest.raises(ValueError, match="start_ago"):
        decayed_usage([("a", 1.0, 1.0, 2.0)], 1.0)
    assert start_order({"x": 0.5, "y": 0.7, "a": 0.5}) == ["y", "a", "x"]
