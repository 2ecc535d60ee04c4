"""utils.serving.autoscale: the day's curve keeps its mean, peak and trough; the closed-form steepest rise; the
window maximum; scheduled and reactive fleets."""
import numpy as np
import pytest
import sympy as sp

from utils.serving import autoscale


def test_mean_of_the_sharpened_cosine_is_m_n():
    d = autoscale.derivation()
    th = sp.Symbol("theta")
    for k in (1, 2, 3, 4):
        integral = sp.integrate((1 + sp.cos(th)) ** k, (th, -sp.pi, sp.pi)) / (2 * sp.pi)
        assert sp.simplify(integral - d["m_n"].subs(d["n"], k)) == 0
    assert all(abs(float((d["x_star"] - 1 / sp.sqrt(2 * d["n"] - 1)).subs(d["n"], k))) < 1e-12 for k in (0.75, 2, 7.5))


@pytest.mark.parametrize("peak, trough", [(3.0, 0.0), (3.0, 0.1), (2.0, 0.3), (5.0, 0.18), (1.8, 0.2)])
def test_curve_has_the_asked_shape(peak, trough):
    L = autoscale.load_curve(peak, trough, 1000.0)
    assert L.mean() == pytest.approx(1000.0, rel=1e-9)
    assert L.max() / L.mean() == pytest.approx(peak, rel=1e-6)
    assert L.min() / L.max() == pytest.approx(trough, abs=1e-6)


def test_closed_form_slope_matches_finite_difference():
    slope, how = autoscale.steepest_rise(3.0, 0.1, 1e5)
    assert "closed form" in how and slope == pytest.approx(1100.8, rel=1e-3)


def test_window_max_is_a_periodic_forward_maximum():
    rng = np.random.default_rng(0)
    x = rng.random(200)
    for steps in (0, 1, 7, 64, 150):
        brute = np.array([max(x[(i + j) % len(x)] for j in range(steps + 1)) for i in range(len(x))])
        assert np.array_equal(autoscale.window_max(x, steps), brute)


def test_fleets():
    L = autoscale.load_curve(3.0, 0.1, 1e5)
    static = np.ceil(L.max() * 1.2 / 6480)
    fast = autoscale.fleet(L, 6480.0, 0.2, 0.5, 2)
    slow = autoscale.fleet(L, 6480.0, 0.2, 20.0, 2)
    react = autoscale.fleet(L, 6480.0, 0.2, 20.0, 2, "reactive", cap=static)
    h = [autoscale.gpu_hours(r, 8) for r in (fast, slow, react)]
    assert h[0] < h[1] < h[2] <= static * 8 * 24
    assert (fast >= autoscale.replicas_needed(L, 6480.0, 0.2, 2)).all()
    with pytest.raises(ValueError):
        autoscale.fleet(L, 6480.0, 0.2, 5.0, 2, "psychic")


def test_longest_window_and_bisection():
    mask = np.array([True, False, True, True, False, True])
    n, vals = autoscale.longest_window(mask, np.arange(6))
    assert n == 2 and len(vals) == 2
    t = autoscale.start_up_for_share(lambda tau: 1 - tau / 100)
    assert t == pytest.approx(50, rel=1e-6)
    assert autoscale.start_up_for_share(lambda tau: 1.0) is None


@pytest.mark.parametrize("n", [0.3, 1.0, 2.5, 4.479, 9.0])
def test_float_shape_agrees_with_the_sympy_derivation(n):
    d = autoscale.derivation()
    assert autoscale.mean_of_power(n) == pytest.approx(float(d["m_n"].subs(d["n"], n)), rel=1e-12)
    if n > 0.5:
        sh = autoscale.shape(*_peak_trough_for(n))
        assert sh["n"] == pytest.approx(n, rel=1e-9)
        closed = float(d["slope"].subs(d["n"], n))
        assert sh["slope"] * sh["m"] / (1 - sh["b"]) == pytest.approx(closed, rel=1e-9)


def _peak_trough_for(n, b=0.3):
    """The peak/mean and trough/peak that make exponent n on floor b."""
    peak = b + (1 - b) * autoscale.peak_over_mean(n)
    return peak, b / peak
