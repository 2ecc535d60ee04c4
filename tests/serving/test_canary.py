"""utils.serving.canary: sticky routing by version tag, the sample size against the textbook, its power and false
alarms by simulation, and the error-budget arithmetic."""
import pytest

from utils.serving.canary import (
    BUCKETS,
    VersionRouter,
    bucket,
    budget_minutes,
    burn_rate,
    canary_sample_size,
    rejects,
    simulated_power,
    z,
)


def test_z_values_are_computed():
    assert z(0.95) == pytest.approx(1.644854, abs=1e-6) and z(0.8) == pytest.approx(0.841621, abs=1e-6)
    with pytest.raises(ValueError, match="p must"):
        z(1.0)


def test_hash_split_is_stable_and_honours_the_share():
    assert bucket("abc", "r1") == bucket("abc", "r1") and 0 <= bucket("abc", "r1") < BUCKETS
    r = VersionRouter("v1", "v2", 0.05)
    n = 20_000
    share = sum(r.route(f"s{i}") == "v2" for i in range(n)) / n
    assert abs(share - 0.05) < 4 * (0.05 * 0.95 / n) ** 0.5


def test_a_session_keeps_its_version_whatever_the_share_does():
    r = VersionRouter("v1", "v2", 0.05)
    first = {f"s{i}": r.route(f"s{i}") for i in range(5000)}
    for share in (0.25, 1.0, 0.0, 0.5):
        r.set_share(share)
        assert all(r.route(s) == v for s, v in first.items())


def test_raising_the_share_only_adds_sessions_to_the_canary():
    ids = [f"s{i}" for i in range(5000)]
    low = {s for s in ids if VersionRouter("v1", "v2", 0.05).route(s) == "v2"}
    high = {s for s in ids if VersionRouter("v1", "v2", 0.25).route(s) == "v2"}
    assert low < high                                     # fresh sessions: the 5% are inside the 25%


def test_rollback_moves_every_canary_session_and_admits_none():
    r = VersionRouter("v1", "v2", 0.5)
    on = sum(r.route(f"s{i}") == "v2" for i in range(1000))
    assert r.rollback() == on > 0
    assert all(r.route(f"s{i}") == "v1" for i in range(2000))   # old and new sessions alike
    r.end("s1")
    assert "s1" not in r.tags


def test_sample_size_matches_the_formula_worked_by_hand():
    # One-sided, alpha 0.05, power 0.8, equal arms, 10% vs 15%, worked by hand:
    # (1.6449 sqrt(2 x 0.125 x 0.875) + 0.8416 sqrt(0.09 + 0.1275))^2 / 0.05^2 = 539.99, so 540 per arm.
    assert canary_sample_size(0.10, 0.15) == 540
    # an unequal allocation: the larger control arm lowers what the canary needs
    assert canary_sample_size(0.02, 0.03, ratio=19) < canary_sample_size(0.02, 0.03)


def test_simulated_power_and_false_alarms_at_the_closed_form_size():
    n = canary_sample_size(0.02, 0.03, ratio=19)
    assert simulated_power(0.02, 0.03, n, 19, seed=1) == pytest.approx(0.80, abs=0.03)
    assert simulated_power(0.02, 0.02, n, 19, seed=2) == pytest.approx(0.05, abs=0.02)
    assert simulated_power(0.02, 0.03, n // 4, 19, seed=3) < 0.5          # a quarter of the sample: missed


def test_the_test_rejects_only_a_canary_that_is_worse():
    assert rejects(60, 1000, 400, 19000) and not rejects(20, 1000, 400, 19000)


def test_error_budget_arithmetic():
    assert budget_minutes(0.999) == pytest.approx(43.2)
    assert burn_rate(0.0105, 0.999) == pytest.approx(10.5)


@pytest.mark.parametrize("args,match", [((0.1, 0.05), "p1 must be above"), ((0.0, 0.1), "p0"),
                                        ((0.1, 1.2), "p1")])
def test_bad_rates_are_refused(args, match):
    with pytest.raises(ValueError, match=match):
        canary_sample_size(*args)
    with pytest.raises(ValueError, match="share"):
        VersionRouter("v1", "v2", 1.5)
