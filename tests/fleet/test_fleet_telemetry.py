"""utils.fleet.fleet_telemetry: the generator fills each cause's share, and the classifier needs all three metrics."""
import numpy as np
import pytest

from utils.fleet.fleet_telemetry import CAUSES, METRICS, TENANTS, Thresholds, classify, confusion, generate, per_tenant, waste

SHARES = dict(zip(CAUSES, (0.35, 0.2, 0.2, 0.1, 0.15)))


def test_each_cause_fills_its_share_and_the_seed_fixes_the_rows():
    t = generate(SHARES, n_rows=20000, seed=3)
    counts = np.bincount(t.cause, minlength=len(CAUSES)) / t.rows
    assert np.allclose(counts, list(SHARES.values()), atol=1e-4)
    again = generate(SHARES, n_rows=20000, seed=3)
    assert np.array_equal(t.tensor, again.tensor) and np.array_equal(t.since_step, again.since_step)


def test_the_three_metrics_separate_the_four_causes():
    t = generate(SHARES, n_rows=20000, seed=1)
    cm = confusion(t, classify(t))
    recall = cm.diagonal() / cm.sum(axis=1)
    assert (recall[[0, 1, 2, 4]] > 0.99).all()
    assert recall[3] > 0.9        # a failed job's first interval can still show its process: a lag, not a miss


@pytest.mark.parametrize("dropped, truth, read_as", [
    ("proc", "failed, holding", "idle notebook"), ("proc", "over-requested", "data wait"),
    ("since_step", "failed, holding", "over-requested"), ("since_step", "idle notebook", "data wait"),
    ("tensor", "data wait", "working")])
def test_dropping_one_metric_merges_two_causes(dropped, truth, read_as):
    t = generate(SHARES, n_rows=20000, seed=2)
    cm = confusion(t, classify(t, drop=dropped))
    i, j = CAUSES.index(truth), CAUSES.index(read_as)
    assert cm[i, j] / cm[i].sum() > 0.9


def test_a_hand_built_row_of_each_cause_is_named():
    from utils.fleet.fleet_telemetry import Telemetry
    rows = np.array([[1, 0.8, 0.2], [1, 0.0, 600], [1, 0.2, 3], [0, 0.0, 300], [0, 0.0, 0.2]])
    t = Telemetry(np.arange(5), np.zeros(5, int), np.arange(5), rows[:, 0], rows[:, 1], rows[:, 2], 1.0)
    assert classify(t).tolist() == [0, 1, 2, 3, 4]
    assert classify(t, Thresholds(stale_min=1000)).tolist() == [0, 2, 2, 4, 4]


def test_waste_is_allocated_minus_tensor_active_hours():
    t = generate(SHARES, n_rows=5000, seed=0, interval_h=0.5)
    w = waste(t)
    assert w["allocated"].sum() == pytest.approx(2500)
    assert w["wasted"][CAUSES.index("over-requested")] == pytest.approx(w["allocated"][CAUSES.index("over-requested")])
    assert (w["wasted"] >= 0).all()


@pytest.mark.parametrize("kw, match", [(dict(shares={"working": 1.0}), "shares must name"),
                                       (dict(shares={**SHARES, "working": 0.5}), "sum to one"),
                                       (dict(shares=SHARES, tensor_working=1.2), "tensor_working"),
                                       (dict(shares=SHARES, n_rows=0), "n_rows")])
def test_bad_arguments_are_refused(kw, match):
    with pytest.raises(ValueError, match=match):
        generate(**kw)


def test_drop_names_a_metric():
    t = generate(SHARES, n_rows=100)
    with pytest.raises(ValueError, match="drop"):
        classify(t, drop="power")
    assert set(METRICS) == {"proc", "tensor", "since_step"}


def test_the_per_tenant_table_names_each_tenants_habit():
    t = generate(SHARES, n_rows=20000, seed=4)
    table = per_tenant(t, classify(t))
    assert table.sum() == pytest.approx(waste(t)["wasted"].sum())
    worst = {TENANTS[i]: CAUSES[int(table[i, 1:].argmax()) + 1] for i in range(len(TENANTS))}
    assert worst["research"] == "idle notebook" and worst["evals"] == "data wait"
    assert worst["pretraining"] == "over-requested"
