"""A diurnal load curve whose peak is several times its mean, and the fleets that carry it: static, a
scheduled autoscaler (starts each replica one start-up time ahead of the known day) and a reactive one
(no forecast: carries the largest rise any start-up time can bring).

The day is a raised cosine sharpened by an exponent n on a floor b (the trough, as a share of the mean):

    L(theta) = mu [b + (1 - b) (1 + cos theta)^n / m_n],  m_n = mean of (1 + cos)^n = 2^n G(n+1/2)/(sqrt(pi) G(n+1)),

so the mean is mu for every n. The trough over the peak fixes b, the peak over the mean fixes n (sympy's
nsolve; there is no closed form), and the steepest rise has a closed form: tan(theta*/2) = 1/sqrt(2n - 1).
Times are hours of the day on a grid of DT_S seconds; everything is deterministic.

Chapters: multi-region-failover, peak-vs-average.
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

DT_S = 5.0                                   # integration step, seconds
T_GRID = np.arange(0, 86400, DT_S) / 3600    # hours of the day
PEAK_HOUR = 14.0                             # where the peak sits (moves the figure, not the answer)


@lru_cache(maxsize=None)
def derivation() -> dict:
    """The curve's closed forms, derived with sympy: m_n, the peak equation, b from the trough, the
    steepest point tan(theta*/2) and the largest slope of (1 + cos theta)^n per radian."""
    import sympy as sp
    n, b, P, phi, t, x = sp.symbols("n b P phi t x", positive=True)
    m_n = 2**n * sp.gamma(n + sp.Rational(1, 2)) / (sp.sqrt(sp.pi) * sp.gamma(n + 1))
    peak_eq = sp.Eq(P, b + (1 - b) * 2**n / m_n)
    trough_b = sp.solve(sp.Eq(P * t, b), b)[0]
    g = sp.cos(phi)**(2 * n - 1) * sp.sin(phi)          # (1 + cos theta)^n / 2^n, differentiated once
    dg = sp.simplify(sp.diff(g, phi) / sp.cos(phi)**(2 * n - 2))
    tan_eq = sp.Eq(sp.simplify(dg.subs({sp.sin(phi): x / sp.sqrt(1 + x**2), sp.cos(phi): 1 / sp.sqrt(1 + x**2)})
                               * (1 + x**2)), 0)
    x_star = [s for s in sp.solve(tan_eq, x) if s.subs(n, 2) > 0][0]
    slope = sp.simplify(n * 2**n * g.subs(phi, sp.atan(x_star)))
    return dict(n=n, m_n=m_n, peak_eq=peak_eq, trough_b=trough_b, x_star=x_star, slope=slope)


def derivation_latex() -> str:
    import sympy as sp
    d = derivation()
    return (f"b = {sp.latex(d['trough_b'])}, \\qquad {sp.latex(d['peak_eq'])} , \\qquad "
            f"\\tan\\tfrac{{\\theta^*}}{{2}} = {sp.latex(d['x_star'])}")


def peak_over_mean(n: float) -> float:
    """2^n / m_n = sqrt(pi) G(n+1) / G(n+1/2): the curve's peak over its mean, rising from 1 at n = 0."""
    return math.sqrt(math.pi) * math.exp(math.lgamma(n + 1) - math.lgamma(n + 0.5))


def mean_of_power(n: float) -> float:
    """m_n, the mean of (1 + cos theta)^n over a period."""
    return 2 ** n / peak_over_mean(n)


@lru_cache(maxsize=256)
def shape(peak_to_mean: float, trough_to_peak: float) -> dict:
    """b from the trough, n from the peak (bisection on the monotone 2^n/m_n; no closed form), and the
    steepest rise per radian per unit mean from derivation()'s closed form tan(theta*/2) = 1/sqrt(2n - 1)
    (None for n <= 1/2, where the steepest point is the trough itself). Plain floats, so a re-derivation
    needs no sympy; tests/serving/test_autoscale.py holds these to the sympy derivation."""
    b = trough_to_peak * peak_to_mean
    r = (peak_to_mean - b) / (1 - b)
    lo, hi = 0.0, 1.0
    while peak_over_mean(hi) < r:
        hi *= 2
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if peak_over_mean(mid) < r else (lo, mid)
    n = 0.5 * (lo + hi)
    if not abs(peak_over_mean(n) - r) < 1e-9 * r:
        raise ArithmeticError(f"no curve with peak/mean {peak_to_mean} and trough/peak {trough_to_peak}")
    m = mean_of_power(n)
    if n <= 0.5:
        return dict(b=b, n=n, m=m, slope=None, phi=None)
    phi = math.atan(1 / math.sqrt(2 * n - 1))
    slope = n * 2 ** n * math.cos(phi) ** (2 * n - 1) * math.sin(phi)
    return dict(b=b, n=n, m=m, slope=(1 - b) * slope / m, phi=phi)


def load_curve(peak_to_mean, trough_to_peak, mean, t_hours=T_GRID):
    sh = shape(float(peak_to_mean), float(trough_to_peak))
    theta = 2 * np.pi * (np.asarray(t_hours) - PEAK_HOUR) / 24
    return mean * (sh["b"] + (1 - sh["b"]) * (1 + np.cos(theta)) ** sh["n"] / sh["m"])


def steepest_rise(peak_to_mean, trough_to_peak, mean) -> tuple[float, str]:
    """(rate per minute, how): the closed form where it applies, checked against the finite difference."""
    L = load_curve(peak_to_mean, trough_to_peak, mean)
    numeric = float(np.max(np.diff(np.concatenate([L, L[:1]]))) / (DT_S / 60))
    sh = shape(float(peak_to_mean), float(trough_to_peak))
    if sh["slope"] is None:
        return numeric, "finite difference on the day's curve"
    closed = sh["slope"] * mean * 2 * np.pi / (24 * 60)
    if abs(closed / numeric - 1) > 1e-3:
        raise ArithmeticError(f"closed-form slope {closed} disagrees with the finite difference {numeric}")
    return closed, "closed form: tan(theta*/2) = 1/sqrt(2n - 1)"


def window_max(x, steps: int):
    """max of x over [t, t + steps] on a periodic day (steps below a day), by doubling spans."""
    if steps <= 0:
        return x
    n, length = len(x), steps + 1
    cur, span = np.concatenate([x, x[:steps]]), 1
    while 2 * span <= length:
        cur, span = np.maximum(cur[:-span], cur[span:]), 2 * span
    return np.maximum(cur[:n], cur[length - span:length - span + n])


def replicas_needed(load, capacity, headroom, min_replicas=0):
    return np.maximum(min_replicas, np.ceil(load * (1 + headroom) / capacity - 1e-9))


def fleet(load, capacity, headroom, load_minutes, min_replicas, scaler="scheduled", cap=None):
    """Replicas allocated over the day (serving or starting). Scheduled: each started one start-up time
    ahead. Reactive: no forecast, so it carries the largest rise any start-up time can bring."""
    steps = int(np.ceil(load_minutes * 60 / DT_S - 1e-9))
    if scaler == "scheduled":
        return window_max(replicas_needed(load, capacity, headroom, min_replicas), steps)
    if scaler != "reactive":
        raise ValueError(f"scaler must be 'scheduled' or 'reactive', got {scaler!r}")
    rise = (window_max(load, steps) - load).max()
    r = replicas_needed(load + rise, capacity, headroom, min_replicas)
    return np.minimum(r, cap) if cap is not None else r


def gpu_hours(replicas, gpus_per_replica) -> float:
    """GPU-hours per day of a fleet sampled on the day's grid."""
    return float(np.mean(replicas) * gpus_per_replica * 24)


def breakdown(load, capacity, gpus, headroom, min_replicas, static_replicas, load_minutes) -> dict[str, float]:
    """GPU-hours per day, built up: the average, + headroom, + whole replicas, + floor, + start-up lead
    (scheduled and reactive)."""
    avg = float(load.mean() / capacity * gpus * 24)
    return dict(avg=avg, head=avg * (1 + headroom), rounded=gpu_hours(replicas_needed(load, capacity, headroom), gpus),
                floored=gpu_hours(replicas_needed(load, capacity, headroom, min_replicas), gpus),
                sched=gpu_hours(fleet(load, capacity, headroom, load_minutes, min_replicas), gpus),
                react=gpu_hours(fleet(load, capacity, headroom, load_minutes, min_replicas, "reactive",
                                      cap=static_replicas), gpus))


def longest_window(mask, values) -> tuple[int, np.ndarray]:
    """The longest run of True in a periodic mask, and the values over it."""
    if mask.all():
        return len(mask), values
    if not mask.any():
        return 0, values[:0]
    start = int(np.argmin(mask))                     # rotate so the day starts on a False
    m2, v2 = np.roll(mask, -start), np.roll(values, -start)
    edges = np.flatnonzero(np.diff(np.concatenate([[0], m2.astype(int), [0]])))
    i0, i1 = max(zip(edges[::2], edges[1::2]), key=lambda r: r[1] - r[0])
    return int(i1 - i0), v2[i0:i1]


def start_up_for_share(share_of, target=0.5, lo=0.05, hi=720.0, iterations=40):
    """The start-up time (minutes) at which share_of(minutes), a falling function, crosses target, by
    geometric bisection; None if it never falls below target within half a day."""
    if share_of(hi) >= target:
        return None
    for _ in range(iterations):
        mid = float(np.sqrt(lo * hi))
        lo, hi = (mid, hi) if share_of(mid) >= target else (lo, mid)
    return lo
