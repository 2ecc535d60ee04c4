"""utils/training/stragglers.py: the step is the max over ranks; analytic, exact and Monte-Carlo expected maxima
agree within their stated bounds; the detector finds a planted slow rank at the rate it promises."""
import math

import numpy as np
import pytest

from utils.training.stragglers import (
    MAD_TO_SIGMA,
    detect_slow_ranks,
    detection_probability,
    detection_threshold,
    expected_max_normals,
    exponential_max_excess,
    harmonic,
    idle_gpu_hours_per_day,
    idle_share,
    idle_time,
    normal_max_exact,
    normal_max_gumbel,
    normal_max_leading,
    per_rank_alpha,
    robust_z,
    simulate_rank_times,
    simulate_step_times,
    step_time,
    steps_to_detect,
    throttle_tax,
    throttled_step,
)

# Monte-Carlo checks allow 5 standard errors: a false failure has probability below 6e-7 per check.
K_SE = 5.0


def binomial_band(p, trials):
    """[low, high] that a binomial(trials, p) rate falls outside with probability < 6e-7 (5 sd)."""
    sd = math.sqrt(p * (1 - p) / trials)
    return p - K_SE * sd, p + K_SE * sd


def test_step_is_the_max_and_the_idle_time_is_what_the_others_wait():
    t = np.array([[1.0, 1.2, 0.9], [2.0, 1.0, 1.0]])
    np.testing.assert_array_equal(step_time(t), [1.2, 2.0])
    np.testing.assert_allclose(idle_time(t), [0.2 + 0.3, 2.0], rtol=1e-15)
    assert step_time([3.0]) == 3.0


@pytest.mark.parametrize("n", [2, 8, 16384])
@pytest.mark.parametrize("s", [0.01, 0.1, 0.5])
def test_one_throttled_rank_taxes_n_minus_one_others(n, s):
    # no jitter: the step grows by s/(1-s), and the N - 1 healthy ranks each wait that long
    t = simulate_rank_times(n, 1, 1.0, 0.0, rng=np.random.default_rng(0), slow={n // 2: s})
    assert math.isclose(step_time(t)[0] - 1.0, throttle_tax(s), rel_tol=1e-12)
    assert math.isclose(idle_time(t)[0], (n - 1) * throttle_tax(s), rel_tol=1e-12)
    # as a share of wall clock each healthy rank idles s, so (N - 1) 24 s GPU-hours a day
    assert math.isclose(throttle_tax(s) / (1 + throttle_tax(s)), idle_share(s), rel_tol=1e-12)
    assert math.isclose(idle_gpu_hours_per_day(n, s), (n - 1) * 24 * s, rel_tol=1e-15)


def test_exact_expected_max_matches_closed_forms():
    # E[max of 2] = 1/sqrt(pi), of 3 = 3/(2 sqrt(pi)); the trapezoid rule on the grid is good to ~1e-12
    assert abs(normal_max_exact(2) - 1 / math.sqrt(math.pi)) < 1e-9
    assert abs(normal_max_exact(3) - 3 / (2 * math.sqrt(math.pi))) < 1e-9
    assert abs(normal_max_exact(1)) < 1e-9
    # location and scale: E[max] of N(m, s^2) is m + s E[max of standard normals]
    assert abs(expected_max_normals([(100, 5.0, 0.2)]) - (5.0 + 0.2 * normal_max_exact(100))) < 1e-9


@pytest.mark.parametrize("n", [2, 10, 1000, 16384, 10**6])
def test_sqrt_2_ln_n_bounds_the_exact_and_gumbel_approaches_it(n):
    exact = normal_max_exact(n)
    assert exact < normal_max_leading(n)
    # Gumbel's error shrinks like 1/ln N (deterministic formulas: this is their computed gap, not a fit)
    assert abs(normal_max_gumbel(n) - exact) < 0.4 / math.log(n)


@pytest.mark.parametrize("n", [16, 1024, 16384])
def test_monte_carlo_step_matches_exact(n):
    steps = 4000
    st = simulate_step_times(n, steps, 1.0, 0.01, rng=np.random.default_rng(n))
    se = st.std(ddof=1) / math.sqrt(steps)
    assert abs(st.mean() - (1 + 0.01 * normal_max_exact(n))) < K_SE * se


@pytest.mark.parametrize("s", [0.005, 0.02, 0.1])
def test_monte_carlo_throttled_step_matches_exact(s):
    n, steps = 4096, 3000
    st = simulate_step_times(n, steps, 1.0, 0.01, rng=np.random.default_rng(7), slow={3: s})
    se = st.std(ddof=1) / math.sqrt(steps)
    assert abs(st.mean() - throttled_step(n, 0.01, s)) < K_SE * se


def test_exponential_tails_match_harmonic_numbers():
    assert harmonic(1) == 1.0 and math.isclose(harmonic(4), 25 / 12, rel_tol=1e-15)
    # the asymptotic branch agrees with the exact sum where they meet
    assert abs(harmonic(10**6) - (math.log(10**6) + 0.5772156649015329 + 0.5e-6)) < 1e-12
    n, steps = 1024, 4000
    st = simulate_step_times(n, steps, 1.0, 0.01, rng=np.random.default_rng(3), dist="exponential")
    se = st.std(ddof=1) / math.sqrt(steps)
    assert abs(st.mean() - (1 + 0.01 * exponential_max_excess(n))) < K_SE * se


def test_sidak_threshold():
    a = per_rank_alpha(16384, 1e-5)
    assert math.isclose(-math.expm1(16384 * math.log1p(-a)), 1e-5, rel_tol=1e-9)
    assert detection_threshold(16384, 1e-5) > detection_threshold(1024, 1e-5) > detection_threshold(1024, 1e-2)


def test_robust_z_ignores_one_outlier():
    x = np.random.default_rng(0).normal(0, 1, 10001)
    x[0] = 1e6
    z = robust_z(x)
    assert z[0] > 1e5
    # the MAD's estimate of sigma has relative sd ~1.17/sqrt(N) = 0.012 here; 5 of them
    assert abs(np.std(z[1:]) - 1) < K_SE * 1.17 / math.sqrt(x.size)
    assert abs(MAD_TO_SIGMA * 0.6744897501960817 - 1) < 1e-12


def test_detector_finds_a_planted_rank_in_the_steps_it_promises():
    n, s, j, alpha, target = 16384, 0.03, 0.01, 1e-3, 0.99
    k = steps_to_detect(s, j, n, alpha, target)
    assert detection_probability(k, s, j, n, alpha) >= target
    assert k == 1 or detection_probability(k - 1, s, j, n, alpha) < target
    rng = np.random.default_rng(11)
    trials, found, false = 300, 0, 0
    for _ in range(trials):
        slow_rank = int(rng.integers(n))
        flagged = detect_slow_ranks(simulate_rank_times(n, k, 1.0, j, rng=rng, slow={slow_rank: s}), alpha)
        found += slow_rank in flagged
        false += len(set(flagged.tolist()) - {slow_rank})
    low, _ = binomial_band(target, trials)
    assert found / trials >= low
    # healthy ranks flagged: expected alpha per trial; allow the binomial band on a rate of 5 alpha,
    # which covers the MAD's estimation error (it moves the threshold by ~1% at this N)
    assert false / trials <= binomial_band(5 * alpha, trials)[1]


def test_false_alarm_rate_holds_without_a_straggler():
    n, alpha, trials = 16384, 0.05, 400
    rng = np.random.default_rng(5)
    alarms = sum(len(detect_slow_ranks(simulate_rank_times(n, 1, 1.0, 0.01, rng=rng), alpha)) > 0
                 for _ in range(trials))
    # the threshold is exact only for a known sigma; the MAD's relative error (1.17/sqrt(N) = 0.9%) moves
    # the false-alarm rate by at most a factor exp(z^2 x 5 x 0.009) at the 5-sd edge: bound it with that
    z = detection_threshold(n, alpha)
    slack = math.exp(z * z * K_SE * 1.17 / math.sqrt(n))
    low, high = binomial_band(alpha, trials)
    assert low / slack <= alarms / trials <= high * slack


def test_few_steps_are_not_enough_for_a_small_throttle():
    # a 2% throttle under 1% jitter at 16,384 ranks is not found in one step; the formula says how many
    assert detection_probability(1, 0.02, 0.01, 16384, 1e-5) < 0.01
    assert steps_to_detect(0.02, 0.01, 16384, 1e-5) > 10
    assert steps_to_detect(0.10, 0.01, 16384, 1e-5) == 1


@pytest.mark.parametrize("call", [
    lambda: throttle_tax(1.0), lambda: throttle_tax(-0.1), lambda: throttle_tax(float("nan")),
    lambda: idle_gpu_hours_per_day(0, 0.1), lambda: idle_gpu_hours_per_day(2.5, 0.1),
    lambda: normal_max_exact(0), lambda: normal_max_gumbel(1), lambda: expected_max_normals([]),
    lambda: expected_max_normals([(3, 0.0, 0.0)]), lambda: step_time([]), lambda: step_time([1.0, -1.0]),
    lambda: simulate_rank_times(4, 1, 1.0, -0.1, rng=np.random.default_rng(0)),
    lambda: simulate_rank_times(4, 1, 1.0, 0.1, rng=np.random.default_rng(0), slow={4: 0.1}),
    lambda: simulate_rank_times(4, 1, 1.0, 0.1, rng=np.random.default_rng(0), dist="cauchy"),
    lambda: simulate_rank_times(4, 1, 1.0, 0.1, rng=0),
    lambda: per_rank_alpha(16, 0.0), lambda: per_rank_alpha(16, 1.0), lambda: robust_z([1.0, 1.0, 1.0]),
    lambda: steps_to_detect(0.0, 0.01, 16, 0.01), lambda: steps_to_detect(0.1, 0.0, 16, 0.01),
    lambda: steps_to_detect(0.1, 0.01, 16, 0.01, detect_probability=1.0), lambda: harmonic(True),
])
def test_bad_input_raises_value_error(call):
    with pytest.raises(ValueError):
        call()
