"""utils/components/retry.py and the retry-jitter chapter: the policies' formulas, the herd simulation against its
closed forms, the two budgets' bounds, and the classification of what may be retried."""
import numpy as np
import pytest

from utils.components.retry import (
    POLICIES,
    RetryBudget,
    classify,
    decorrelated_jitter,
    equal_jitter,
    exponential,
    full_jitter,
    full_jitter_expected,
    histogram,
    simulate,
    sleeps,
)

HERD = dict(n_clients=1000, outage=10.0, max_attempts=8, base=1.0, cap=30.0)


def test_policies_follow_the_blog_formulas():
    rng = np.random.default_rng(0)
    assert exponential(np.arange(7), 1.0, 30.0).tolist() == [1, 2, 4, 8, 16, 30, 30]
    d = full_jitter(3, rng, 1.0, 30.0, 100000)
    assert d.min() >= 0 and d.max() <= 8 and abs(d.mean() - 4) < 0.05
    e = equal_jitter(3, rng, 1.0, 30.0, 100000)
    assert e.min() >= 4 and e.max() <= 8 and abs(e.mean() - 6) < 0.05
    x = decorrelated_jitter(np.full(100000, 2.0), rng, 1.0, 30.0)
    assert x.min() >= 1 and x.max() <= 6 and abs(x.mean() - 3.5) < 0.05
    assert decorrelated_jitter(np.full(10, 100.0), rng, 1.0, 30.0).max() == 30.0          # capped


def test_sleeps_are_seeded_and_vectorised():
    a = sleeps("full_jitter", 50, 5, np.random.default_rng(7), 1.0, 30.0)
    b = sleeps("full_jitter", 50, 5, np.random.default_rng(7), 1.0, 30.0)
    assert a.shape == (50, 5) and (a == b).all()
    with pytest.raises(ValueError, match="policy"):
        sleeps("linear", 1, 1, np.random.default_rng(0), 1.0, 2.0)


def test_plain_exponential_keeps_the_herd_in_one_bin_per_wave():
    for policy in ("constant", "exponential"):
        s = simulate(policy, seed=0, **HERD)
        counts, _ = histogram(s.times[s.attempt > 0], 0.1, 50.0)
        assert counts.max() == 1000 and set(counts[counts > 0].tolist()) == {1000}
    one = simulate("exponential", 1, 10.0, 8, 1.0, 30.0, 0)
    assert np.diff(one.times).tolist() == [1, 2, 4, 8]                    # one client's gaps double


def test_full_jitter_first_wave_matches_its_closed_form():
    s = simulate("full_jitter", 100000, 10.0, 2, 1.0, 30.0, seed=1)      # one retry: the first wave alone
    counts, _ = histogram(s.times[s.attempt > 0], 0.1, 1.0)
    assert np.abs(counts / (100000 * 0.1 / 1.0) - 1).max() < 0.05         # n * bin / w_0 in every bin
    expected = full_jitter_expected(100000, 10.0, 2, 1.0, 30.0, 0.1, 1.0)
    assert np.allclose(expected, 10000, rtol=1e-9)


def test_full_jitter_simulation_matches_the_expected_curve():
    retries = [histogram((sim := simulate("full_jitter", seed=s, **HERD)).times[sim.attempt > 0], 0.5, 41.0)[0]
               for s in range(4)]
    mean = np.mean(retries, axis=0)
    expected = full_jitter_expected(1000, 10.0, 8, 1.0, 30.0, 0.5, 41.0)
    assert abs(mean.sum() - expected.sum()) / expected.sum() < 0.02
    assert np.abs(mean - expected).max() < 0.1 * expected.max()


@pytest.mark.parametrize("policy", ["equal_jitter", "full_jitter", "decorrelated"])
def test_jitter_lowers_the_peak(policy):
    s = simulate(policy, seed=0, **HERD)
    assert histogram(s.times[s.attempt > 0], 0.1, 50.0)[0].max() < 1000 / 4


def test_every_attempt_before_the_outage_fails_and_one_after_succeeds():
    for policy in POLICIES:
        s = simulate(policy, seed=3, **HERD)
        for c in range(0, 1000, 97):
            t = s.times[s.client == c]
            assert (t[:-1] < 10.0).all() and len(t) <= 8
        assert s.succeeded + s.gave_up == 1000


def test_the_ratio_cap_bounds_the_population_and_the_tokens_each_client():
    capped = simulate("full_jitter", seed=0, ratio_cap=0.1, **HERD)
    assert capped.retries == 100 and capped.denied > 0                    # ratio * requests
    reserved = simulate("full_jitter", seed=0, ratio_cap=0.1, reserve=50, **HERD)
    assert reserved.retries == 150
    tok = simulate("full_jitter", seed=0, client_tokens=2.0, client_refill=0.1, **HERD)
    per_client = np.bincount(tok.client[tok.attempt > 0], minlength=1000)
    latest = tok.times.max()
    assert per_client.max() <= 2 + 0.1 * latest and tok.retries <= 1000 * (2 + 0.1 * latest)


def test_retry_budget_counts():
    b = RetryBudget(0.1)
    for _ in range(20):
        b.request()
    assert [b.try_retry() for _ in range(3)] == [True, True, False]
    with pytest.raises(ValueError, match="ratio"):
        RetryBudget(-0.1)


@pytest.mark.parametrize("method,status,sent,key,retry", [
    ("GET", 503, True, False, True), ("POST", 503, True, False, True), ("POST", 429, True, False, True),
    ("POST", 400, True, False, False), ("GET", 400, True, False, False), ("GET", 404, True, False, False),
    ("GET", 500, True, False, True), ("POST", 500, True, False, False), ("POST", 502, True, True, True),
    ("PUT", None, True, False, True), ("POST", None, True, False, False), ("PATCH", 504, True, False, False),
    ("POST", None, False, False, True), ("get", 408, True, False, True), ("GET", 200, True, False, False)])
def test_classification(method, status, sent, key, retry):
    assert classify(method, status, sent=sent, idempotency_key=key)[0] is retry


@pytest.mark.parametrize("kw,msg", [(dict(n_clients=0), "n_clients"), (dict(base=0.0), "base"),
                                    (dict(cap=0.5), "cap"), (dict(max_attempts=0), "max_attempts")])
def test_bad_arguments_raise_naming_the_argument(kw, msg):
    with pytest.raises(ValueError, match=msg):
        simulate("full_jitter", seed=0, **(HERD | kw))


def test_bad_classification_input():
    with pytest.raises(ValueError, match="status"):
        classify("GET", 42)
    with pytest.raises(ValueError, match="method"):
        classify("", 500)
