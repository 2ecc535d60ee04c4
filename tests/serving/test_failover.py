"""utils.serving.failover: the survivor arithmetic, the drop simulation's accounting, and the router."""
import numpy as np
import pytest

from utils.serving import failover as f

RTT = {"us-east": 10.0, "us-west": 70.0, "eu-west": 80.0, "eu-central": 90.0}
RES = {"eu": ("eu-west", "eu-central"), "us": ("us-east", "us-west")}


def test_survivor_and_ceiling():
    assert f.survivor_utilisation(2, 0.6) == pytest.approx(1.2)
    assert f.survivor_utilisation(3, 0.6) == pytest.approx(0.9)
    for n in (2, 3, 5):   # at the N-1 ceiling the survivors run at exactly 100%
        assert f.survivor_utilisation(n, f.n_minus_one_ceiling(n)) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="regions"):
        f.survivor_utilisation(1, 0.5)


def test_below_capacity_nothing_is_lost_and_nothing_waits_long():
    d = f.Drop(capacity=300, utilisation=0.4, horizon=30.0)
    r = f.simulate(d, f.Clients("full_jitter", budget=0.1), seed=1)
    w = r.window(15.0, 30.0)            # after the drop's refusals have been retried
    assert w["wasted"] == 0 and w["worst_wait"] < 1.0
    assert 0.9 < w["goodput"] < 1.1


def test_admission_control_bounds_the_wait_and_never_wastes():
    d = f.Drop(capacity=300, utilisation=0.6)
    r = f.simulate(d, f.Clients("constant", timeout_s=5.0), admission_s=2.0, seed=0)
    assert r.wait.max() <= 2.0 + 1e-9 and r.wasted.sum() == 0


def test_fixed_retries_into_an_unbounded_queue_storm():
    d = f.Drop(capacity=300, utilisation=0.6)
    naive = f.simulate(d, f.Clients("constant", timeout_s=5.0), seed=0).window(5.0, 35.0)
    calm = f.simulate(d, f.Clients("full_jitter", timeout_s=5.0, budget=0.1), seed=0).window(5.0, 35.0)
    assert naive["amplification"] > 1.3 and naive["wasted"] > 0.2
    assert calm["amplification"] < naive["amplification"] and calm["goodput"] > naive["goodput"]


def test_served_never_exceeds_capacity_and_is_seeded():
    d = f.Drop(capacity=200, utilisation=0.7)
    a = f.simulate(d, f.Clients("full_jitter", budget=0.2), seed=4)
    b = f.simulate(d, f.Clients("full_jitter", budget=0.2), seed=4)
    assert np.array_equal(a.good, b.good) and np.array_equal(a.offered, b.offered)
    assert np.all(a.good + a.wasted <= a.capacity + 1 / f.DT + 1e-9)   # one request of credit carried


def test_attempts_past_the_horizon_change_nothing_and_a_huge_region_runs_in_bulk():
    d = f.Drop(capacity=200, utilisation=0.7)
    n = int(round(d.horizon / f.DT))
    for policy in ("constant", "full_jitter"):
        a = f.simulate(d, f.Clients(policy, max_attempts=n + 1), seed=1)
        b = f.simulate(d, f.Clients(policy, max_attempts=10**6), seed=1)
        assert np.array_equal(a.good, b.good) and np.array_equal(a.offered, b.offered) and a.gave_up == b.gave_up
    big = f.simulate(f.Drop(capacity=1e9, utilisation=0.6), f.Clients("full_jitter", budget=0.1), seed=0)
    w = big.window(5.0, 35.0)
    assert 0 < w["goodput"] <= 1 and 0 <= w["wasted"] <= 1


def test_the_autoscaler_adds_capacity_only_after_its_lag():
    d = f.Drop(capacity=300, utilisation=0.6, scale_lag_s=5.0, start_s=10.0, added=60.0, horizon=40.0)
    r = f.simulate(d, f.Clients(), seed=0)
    t_more = d.t_drop + d.detect_s + 5.0 + 10.0
    assert np.all(r.capacity[r.t < t_more - 1e-9] == 300) and np.all(r.capacity[r.t >= t_more] == 360)


def test_bad_arguments_name_themselves():
    with pytest.raises(ValueError, match="capacity"):
        f.simulate(f.Drop(capacity=0, utilisation=0.5), f.Clients())
    with pytest.raises(ValueError, match="policy"):
        f.simulate(f.Drop(capacity=10, utilisation=0.5), f.Clients("decorrelated"))


def test_routing_nearest_healthy_and_residency_never_crosses():
    up = {r: True for r in RTT}
    assert f.route(None, up, RTT, RES) == "us-east"
    assert f.route(None, {**up, "us-east": False}, RTT, RES) == "us-west"
    assert f.route("eu", up, RTT, RES) == "eu-west"
    assert f.route("eu", {**up, "eu-west": False}, RTT, RES) == "eu-central"
    assert f.route("eu", {**up, "eu-west": False, "eu-central": False}, RTT, RES) is None
    with pytest.raises(ValueError, match="residency"):
        f.route("mars", up, RTT, RES)
