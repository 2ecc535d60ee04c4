"""utils/training/rollouts.py: E[max of n] by quadrature against the log-normal's closed forms and a seeded
simulation; the cap bounds it; bad arguments are refused; the idle accounting adds up."""
import math

import numpy as np
import pytest

from utils.training.rollouts import (
    cap_probability,
    clipped_lognormal_cdf,
    expected_length,
    expected_max,
    simulate_lengths,
    step_idle,
    tail_idle_fraction,
    unclipped_mean,
)

A = (2048.0, 1.0, 16384)


def test_n_one_is_the_clipped_mean_below_the_lognormal_mean():
    assert expected_max(1, *A) == expected_length(*A) < unclipped_mean(2048.0, 1.0)


def test_far_cap_gives_the_lognormal_mean():
    assert expected_length(100.0, 0.5, 1e5) == pytest.approx(unclipped_mean(100.0, 0.5), rel=1e-6)


def test_clipped_mean_closed_form():
    # E[min(X, c)] = m e^{s^2/2} Phi((ln(c/m) - s^2)/s) + c (1 - Phi(ln(c/m)/s))
    m, s, c = A
    Phi = lambda z: 0.5 * (1 + math.erf(z / math.sqrt(2)))  # noqa: E731
    exact = m * math.exp(s * s / 2) * Phi((math.log(c / m) - s * s) / s) + c * (1 - Phi(math.log(c / m) / s))
    assert expected_length(*A) == pytest.approx(exact, rel=1e-7)


@pytest.mark.parametrize("n", [16, 1024])
def test_simulation_agrees_within_sampling_error(n):
    x = simulate_lengths((4000, n), *A, np.random.default_rng(1)).max(axis=1)
    # whole-token ceiling adds at most one token
    assert abs(x.mean() - expected_max(n, *A)) < 4 * x.std() / math.sqrt(len(x)) + 1


def test_longest_grows_with_n_and_never_passes_the_cap():
    e = [expected_max(n, *A) for n in (1, 2, 4, 16, 64, 4096)]
    assert all(b >= a for a, b in zip(e, e[1:]))
    assert e[-1] <= A[2] and e[-1] == pytest.approx(A[2], rel=1e-6)
    assert clipped_lognormal_cdf(A[2], *A) == 1.0
    assert 0 < cap_probability(*A) < 0.05
    assert 0 < tail_idle_fraction(16, *A) < 1


@pytest.mark.parametrize("kw", [dict(n=0), dict(n=1.5), dict(median=-1.0), dict(sigma=0.0), dict(cap=float("inf"))])
def test_bad_arguments_are_refused(kw):
    args = dict(n=16, median=2048.0, sigma=1.0, cap=16384)
    args.update(kw)
    name = next(iter(kw))
    with pytest.raises(ValueError, match=name):
        expected_max(args["n"], args["median"], args["sigma"], args["cap"])


def test_unseeded_generator_is_refused():
    with pytest.raises(ValueError, match="rng"):
        simulate_lengths(3, *A, rng=None)


def test_step_idle_adds_up_and_async_is_never_slower():
    r = step_idle(20.0, 3.0, 10.0, 50.0, 3.0, 64, 64)
    assert sum(r["by_place"].values()) == pytest.approx(128 * r["t_sync"] - r["busy"])
    assert r["t_async"] <= r["t_sync"] and r["idle_async"] <= r["idle_sync"]
    with pytest.raises(ValueError, match="stretch"):
        step_idle(20.0, 0.5, 10.0, 50.0, 3.0, 64, 64)


def test_the_longest_drawn_directly_matches_the_integral():
    from utils.training.rollouts import expected_max, simulate_longest
    for n in (1, 16, 1024):
        x = simulate_longest(20000, n, *A, np.random.default_rng(3))
        assert abs(x.mean() - expected_max(n, *A)) < 4 * x.std() / len(x) ** 0.5 + 1   # +1: whole tokens
        assert x.min() >= 1 and x.max() <= A[2]
    assert simulate_longest(10, 10**9, *A, np.random.default_rng(0)).tolist() == [A[2]] * 10   # all at the cap
    with pytest.raises(ValueError, match="rng"):
        simulate_longest(3, 16, *A, rng=None)
