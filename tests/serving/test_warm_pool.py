"""utils.serving.warm_pool: the Poisson tail and Erlang B against exact values, the pool's bookkeeping on a hand
clock, and the simulated pool against both formulas (the bug: a pool sized at the mean, lambda T_c)."""
import math

import pytest

from utils.serving import warm_pool as wp


def test_poisson_tail_matches_the_direct_sum():
    for a, k in ((0.5, 0), (0.5, 1), (3.0, 5), (20.0, 30)):
        direct = 1 - sum(math.exp(-a) * a ** i / math.factorial(i) for i in range(k))
        assert wp.poisson_tail(a, k) == pytest.approx(direct, abs=1e-12)
    assert wp.poisson_tail(800.0, 700) == pytest.approx(1.0, abs=1e-3)   # large a: the log branch
    assert wp.poisson_tail(800.0, 900) < 1e-3


def test_erlang_b_known_values():
    assert wp.erlang_b(1, 1.0) == pytest.approx(0.5)
    assert wp.erlang_b(2, 1.0) == pytest.approx(0.2)            # (1/2) / (1 + 1 + 1/2)
    assert wp.erlang_b(0, 3.0) == 1.0


def test_pool_is_the_smallest_that_meets_the_target_and_above_the_mean():
    k = wp.pool_size(1.0, 50.0, 0.01)
    assert wp.poisson_tail(50.0, k) <= 0.01 < wp.poisson_tail(50.0, k - 1)
    assert k > 50                                               # the mean alone fails half the time
    assert wp.poisson_tail(50.0, 50) > 0.4
    assert wp.pool_size(1.0, 50.0, 0.01, policy="shed") <= k    # shedding needs no more
    with pytest.raises(ValueError):
        wp.pool_size(1.0, 5.0, 1.5)
    assert wp.pool_size(1.0, 5.0, 1.0) == 0                    # every request may meet a start: no pool


def test_a_large_pool_starts_its_sums_where_the_terms_count():
    a = 5000.0                                                  # the pass starts near a - 10 sqrt(a), not at 0
    k = wp.pool_size(1.0, a, 0.01)
    assert wp.poisson_tail(a, k) <= 0.01 < wp.poisson_tail(a, k - 1)
    full = sum((k - i) * math.exp(i * math.log(a) - a - math.lgamma(i + 1)) for i in range(k))
    assert wp.mean_idle(a, k) == pytest.approx(full, rel=1e-12)
    assert 0 < wp.pool_size(1.0, 1e8, 0.01) - 1e8 < 1e5         # a hundred million in flight, in well under a second


def test_the_pool_on_a_hand_clock():
    pool = wp.WarmPool(k=1, cold_start=10.0)
    assert pool.arrive(0.0) == "warm" and pool.in_flight == 1 and pool.warm == 0
    assert pool.arrive(1.0) == "cold"                           # the pool is empty: waits for a start
    pool.advance(10.0)                                          # the first replacement serves the waiter
    assert pool.warm == 0 and pool.waits == [9.0]
    pool.advance(11.0)                                          # the waiter's own start refills the pool
    assert pool.warm == 1 and pool.in_flight == 0
    with pytest.raises(ValueError):
        pool.advance(5.0)
    shed = wp.WarmPool(k=0, cold_start=1.0, policy="shed")
    assert shed.arrive(0.0) == "shed" and shed.in_flight == 0


@pytest.mark.parametrize("policy,formula", [("wait", lambda a, k: wp.poisson_tail(a, k)),
                                             ("shed", lambda a, k: wp.erlang_b(k, a))])
def test_simulated_pool_matches_its_formula(policy, formula):
    rate, start = 2.0, 3.0
    for k in (4, 8, 10):
        r = wp.simulate(rate, start, k, 20000, seed=3, policy=policy)
        assert abs(r["share"] - formula(rate * start, k)) < 5 * r["stderr"] + 2e-3
    r = wp.simulate(rate, start, 8, 20000, seed=3)
    assert r["idle"] == pytest.approx(wp.mean_idle(rate * start, 8), abs=0.15)


def test_simulation_is_seeded():
    assert wp.simulate(1.0, 5.0, 7, 2000, seed=1) == wp.simulate(1.0, 5.0, 7, 2000, seed=1)


def test_mean_idle_does_not_underflow_for_a_large_load():
    # 1,000 requests a second x a 60 s cold start: 60,000 starts in flight, where e^-a is zero in a double.
    a = 1000.0 * 60.0
    k = wp.pool_size(1000.0, 60.0, 0.01)
    idle = wp.mean_idle(a, k)
    # E[(k - N)+] = (k - a) + E[(N - k)+], and the pool's tail share is 1%, so the second term is under one instance
    assert 0 < idle - (k - a) < 1
    assert wp.mean_idle(700.0, 760) == pytest.approx(wp.mean_idle(700.0 + 1e-9, 760), rel=1e-9)  # the two branches meet
