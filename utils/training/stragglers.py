"""Stragglers: a synchronous collective ends when the last rank arrives, so a step takes the maximum
over ranks of their compute times. numpy and the standard library only.

    step_time(times)                       # max over the last axis: the step a collective imposes
    throttle_tax(0.1)                      # one rank at 90% speed: every step 0.1/0.9 longer
    idle_gpu_hours_per_day(16384, 0.1)     # the other ranks' waiting, per day of wall clock
    normal_max_exact(16384)                # E[max of N standard normals], by integrating N F^(N-1) f
    normal_max_leading(16384)              # sqrt(2 ln N), an upper bound on it
    normal_max_gumbel(16384)               # the extreme-value (Gumbel) approximation
    expected_max_normals([(16383, 1, 0.01), (1, 1 / 0.9, 0.01 / 0.9)])   # jitter plus one throttled rank
    exponential_max_excess(16384)          # E[max] - mean, in sigmas, for exponential tails
    simulate_rank_times(...), simulate_step_times(...)                   # seeded Monte-Carlo
    detect_slow_ranks(times, 1e-5)         # robust z-score over per-rank mean times
    steps_to_detect(0.1, 0.01, 16384, 1e-5)                              # steps a detector needs

The model, stated once:
- Rank i's compute time in a step is mean * (1 + jitter * Z_i) / (1 - s_i), Z_i i.i.d. standard normal
  (or a standardised exponential), s_i the rank's throttle (0 for a healthy rank): a rank throttled by
  s runs at (1 - s) of its speed, so its time, jitter included, scales by 1 / (1 - s).
- The collective and everything after it take the same time on every rank and are left out: the step
  is the maximum of the compute times. Time a rank spends waiting is idle.
- The detector sees each rank's own compute time (the time before it enters the collective; the
  step's wall time is the same on every rank and shows nothing), averages it over k steps, and flags a
  rank whose robust z-score (distance from the median in units of 1.4826 median absolute deviations)
  exceeds the threshold that keeps the chance of flagging any healthy rank at the false-alarm rate
  (Sidak: per rank 1 - (1 - alpha)^(1/N)). The derivation of the steps it needs treats the median and
  MAD as exact, which they nearly are for the thousands of ranks where stragglers matter.
Bad arguments raise ValueError with one line naming the argument, the rule and the value.

Chapters: straggler-tax.
"""
from __future__ import annotations

import math
import numbers
from statistics import NormalDist

import numpy as np

EULER_GAMMA = 0.5772156649015329
MAD_TO_SIGMA = 1.482602218505602     # 1 / Phi^-1(3/4): a normal sample's MAD times this is its sigma
_STD = NormalDist()
_erfc = np.frompyfunc(math.erfc, 1, 1)


# --- argument checks -------------------------------------------------------------------------------
def _real(name, v) -> float:
    if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v):
        raise ValueError(f"{name} must be a finite number, got {v!r}")
    return float(v)


def _count(name, v, minimum=1) -> int:
    if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v) \
            or v != int(v) or v < minimum:
        raise ValueError(f"{name} must be a whole number >= {minimum}, got {v!r}")
    return int(v)


def _slowdown(name, v) -> float:
    if not 0 <= _real(name, v) < 1:
        raise ValueError(f"{name} must be in [0, 1) (the share of speed lost), got {v!r}")
    return float(v)


def _positive(name, v) -> float:
    if _real(name, v) <= 0:
        raise ValueError(f"{name} must be > 0, got {v!r}")
    return float(v)


def _open_fraction(name, v) -> float:
    if not 0 < _real(name, v) < 1:
        raise ValueError(f"{name} must be in (0, 1), got {v!r}")
    return float(v)


# --- the step and the tax --------------------------------------------------------------------------
def step_time(rank_times) -> np.ndarray | float:
    """The step a synchronous collective imposes: the maximum over ranks (the last axis)."""
    t = np.asarray(rank_times, dtype=np.float64)
    if t.ndim == 0 or t.shape[-1] == 0:
        raise ValueError(f"rank_times must have at least one rank on its last axis, got shape {t.shape}")
    if not np.isfinite(t).all() or (t < 0).any():
        raise ValueError("rank_times must be finite and >= 0")
    m = t.max(axis=-1)
    return float(m) if m.ndim == 0 else m


def idle_time(rank_times) -> np.ndarray | float:
    """Rank-time spent waiting in one step: sum over ranks of (step - own time)."""
    t = np.asarray(rank_times, dtype=np.float64)
    m = step_time(t)
    return (np.asarray(m)[..., None] - t).sum(axis=-1) if t.ndim > 1 else float(m * t.size - t.sum())


def throttle_tax(slowdown) -> float:
    """The fraction by which one rank at (1 - s) of its speed lengthens every step: s / (1 - s)."""
    s = _slowdown("slowdown", slowdown)
    return s / (1 - s)


def idle_share(slowdown) -> float:
    """The share of wall-clock time every healthy rank waits, with one rank throttled by s and no jitter:
    delay / (mean + delay) = [s/(1-s)] / [1/(1-s)] = s."""
    return _slowdown("slowdown", slowdown)


def idle_gpu_hours_per_day(n_ranks, slowdown) -> float:
    """GPU-hours the N - 1 healthy ranks spend waiting per 24 h of wall clock: (N - 1) x 24 x s."""
    n = _count("n_ranks", n_ranks)
    return (n - 1) * 24.0 * idle_share(slowdown)


# --- the expected maximum of N rank times ----------------------------------------------------------
def _log_phi(x: np.ndarray) -> np.ndarray:
    """log Phi(x), accurate in both tails (log1p of the upper tail where Phi is near 1)."""
    x = np.asarray(x, dtype=np.float64)
    upper = 0.5 * _erfc(x / math.sqrt(2)).astype(np.float64)       # 1 - Phi(x)
    lower = 0.5 * _erfc(-x / math.sqrt(2)).astype(np.float64)      # Phi(x)
    with np.errstate(divide="ignore"):
        return np.where(x > 0, np.log1p(-upper), np.log(lower))


def normal_max_leading(n_ranks) -> float:
    """sqrt(2 ln N): the leading term of E[max of N standard normals], and an upper bound on it
    (E[max] <= ln(N e^(t^2/2)) / t for every t > 0; t = sqrt(2 ln N) gives the bound)."""
    n = _count("n_ranks", n_ranks)
    return math.sqrt(2 * math.log(n))


def normal_max_gumbel(n_ranks) -> float:
    """The extreme-value approximation E[max] ~ b_N + gamma a_N, with the Gumbel location
    b_N = sqrt(2 ln N) - (ln ln N + ln 4 pi) / (2 sqrt(2 ln N)) and scale a_N = 1 / sqrt(2 ln N)."""
    n = _count("n_ranks", n_ranks, minimum=2)
    r = math.sqrt(2 * math.log(n))
    b = r - (math.log(math.log(n)) + math.log(4 * math.pi)) / (2 * r)
    return b + EULER_GAMMA / r


def expected_max_normals(groups, *, points: int = 40001) -> float:
    """E[max] over independent normal rank times, given as (count, mean, sigma) groups.

    The maximum's CDF is F(x) = prod_g Phi((x - m_g) / s_g)^(n_g); E[max] = lo + int_lo^hi (1 - F) dx
    on a grid wide enough that F(lo) and 1 - F(hi) are below double precision's reach.
    """
    groups = list(groups)
    if not groups:
        raise ValueError("groups must name at least one (count, mean, sigma)")
    parsed = [(_count("count", n), _real("mean", m), _positive("sigma", s)) for n, m, s in groups]
    _count("points", points, minimum=101)
    n_total = sum(n for n, _, _ in parsed)
    reach = math.sqrt(2 * math.log(max(n_total, 2))) + 12.0
    lo = min(m - 12.0 * s for _, m, s in parsed)
    hi = max(m + reach * s for _, m, s in parsed)
    x = np.linspace(lo, hi, points)
    log_f = sum(n * _log_phi((x - m) / s) for n, m, s in parsed)
    survival = -np.expm1(log_f)                                       # 1 - F, accurate near F = 1
    return float(lo + np.trapezoid(survival, x))


def normal_max_exact(n_ranks, *, points: int = 40001) -> float:
    """E[max of N i.i.d. standard normals] = int x N Phi^(N-1) phi dx, by numerical integration."""
    return expected_max_normals([(_count("n_ranks", n_ranks), 0.0, 1.0)], points=points)


def harmonic(n) -> float:
    """H_N = 1 + 1/2 + ... + 1/N (exact sum up to 10^6, then ln N + gamma + 1/2N - 1/12N^2)."""
    n = _count("n", n)
    if n <= 1_000_000:
        return float(math.fsum(1.0 / np.arange(1, n + 1)))
    return math.log(n) + EULER_GAMMA + 1 / (2 * n) - 1 / (12 * n * n)


def exponential_max_excess(n_ranks) -> float:
    """E[max] - mean, in standard deviations, for N i.i.d. rank times with an exponential tail
    (a shifted exponential of scale theta has sd theta, and its max exceeds the mean by theta (H_N - 1))."""
    return harmonic(n_ranks) - 1.0


def throttled_step(n_ranks, jitter_fraction, slowdown, *, points: int = 40001) -> float:
    """E[step] / mean with N - 1 ranks of normal jitter and one rank throttled by s (its jitter too)."""
    n = _count("n_ranks", n_ranks)
    j = _positive("jitter_fraction", jitter_fraction)
    s = _slowdown("slowdown", slowdown)
    groups = [(1, 1 / (1 - s), j / (1 - s))] + ([(n - 1, 1.0, j)] if n > 1 else [])
    return expected_max_normals(groups, points=points)


# --- Monte-Carlo -----------------------------------------------------------------------------------
def simulate_rank_times(n_ranks, n_steps, mean, jitter_fraction, *, rng: np.random.Generator,
                        slow: dict | None = None, dist: str = "normal") -> np.ndarray:
    """Per-rank compute times, shape (n_steps, n_ranks): mean (1 + jitter Z) / (1 - s_rank).

    dist "normal": Z standard normal; "exponential": Z = E - 1 with E ~ Exp(1) (mean 0, sd 1, a long
    right tail). `slow` maps rank index -> slowdown in [0, 1).
    """
    n = _count("n_ranks", n_ranks)
    k = _count("n_steps", n_steps)
    mu = _positive("mean", mean)
    j = _real("jitter_fraction", jitter_fraction)
    if j < 0:
        raise ValueError(f"jitter_fraction must be >= 0, got {jitter_fraction!r}")
    if not isinstance(rng, np.random.Generator):
        raise ValueError("rng must be a numpy Generator (np.random.default_rng(seed))")
    if dist == "normal":
        z = rng.standard_normal((k, n))
    elif dist == "exponential":
        z = rng.standard_exponential((k, n)) - 1.0
    else:
        raise ValueError(f"dist must be 'normal' or 'exponential', got {dist!r}")
    t = mu * (1.0 + j * z)
    for rank, s in (slow or {}).items():
        r = _count("slow rank index", rank, minimum=0)
        if r >= n:
            raise ValueError(f"slow rank index must be < n_ranks ({n}), got {rank!r}")
        t[:, r] /= 1.0 - _slowdown("slowdown", s)
    return t


def simulate_step_times(n_ranks, n_steps, mean, jitter_fraction, *, rng: np.random.Generator,
                        slow: dict | None = None, dist: str = "normal",
                        chunk_elements: int = 4_000_000) -> np.ndarray:
    """The step times (max over ranks) of n_steps simulated steps, drawn in chunks to bound memory."""
    n = _count("n_ranks", n_ranks)
    k = _count("n_steps", n_steps)
    per = max(1, chunk_elements // n)
    out = []
    for start in range(0, k, per):
        t = simulate_rank_times(n, min(per, k - start), mean, jitter_fraction, rng=rng, slow=slow, dist=dist)
        out.append(t.max(axis=1))
    return np.concatenate(out)


# --- finding the straggler -------------------------------------------------------------------------
def per_rank_alpha(n_ranks, false_alarm_rate) -> float:
    """Sidak: the per-rank false-alarm probability that makes P(any of N healthy ranks flagged) = alpha."""
    n = _count("n_ranks", n_ranks)
    a = _open_fraction("false_alarm_rate", false_alarm_rate)
    return -math.expm1(math.log1p(-a) / n)


def detection_threshold(n_ranks, false_alarm_rate) -> float:
    """The z-score above which a rank is flagged: Phi^-1(1 - per-rank alpha)."""
    return -_STD.inv_cdf(per_rank_alpha(n_ranks, false_alarm_rate))


def robust_z(values) -> np.ndarray:
    """(x - median) / (1.4826 MAD): a z-score that one straggler cannot inflate."""
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1 or x.size < 3:
        raise ValueError(f"values must be a 1-D array of at least 3 ranks, got shape {x.shape}")
    med = np.median(x)
    mad = np.median(np.abs(x - med))
    if not mad > 0:
        raise ValueError("the ranks' times have no spread (MAD = 0): a z-score is undefined")
    return (x - med) / (MAD_TO_SIGMA * mad)


def detect_slow_ranks(rank_times, false_alarm_rate) -> np.ndarray:
    """Ranks whose mean compute time over the steps given is a robust outlier on the slow side.

    rank_times: shape (n_steps, n_ranks) or (n_ranks,). Returns the flagged rank indices, sorted.
    """
    t = np.asarray(rank_times, dtype=np.float64)
    if t.ndim == 1:
        t = t[None, :]
    if t.ndim != 2 or t.shape[0] < 1:
        raise ValueError(f"rank_times must have shape (n_steps, n_ranks), got {t.shape}")
    z = robust_z(t.mean(axis=0))
    return np.flatnonzero(z > detection_threshold(t.shape[1], false_alarm_rate))


def detection_probability(n_steps, slowdown, jitter_fraction, n_ranks, false_alarm_rate) -> float:
    """P(the throttled rank is flagged) after k steps: its mean is N(1/(1-s), (j/(1-s))^2/k) in units of
    the healthy mean, the threshold 1 + z_alpha j / sqrt(k)."""
    k = _count("n_steps", n_steps)
    s = _slowdown("slowdown", slowdown)
    j = _positive("jitter_fraction", jitter_fraction)
    z_a = detection_threshold(n_ranks, false_alarm_rate)
    delta = s / (1 - s)
    return _STD.cdf((delta * math.sqrt(k) - z_a * j) / (j / (1 - s)))


def steps_to_detect(slowdown, jitter_fraction, n_ranks, false_alarm_rate,
                    detect_probability: float = 0.99) -> int:
    """The fewest steps k with detection_probability >= the target:
    sqrt(k) >= (z_alpha j + z_beta j / (1 - s)) / (s / (1 - s))."""
    s = _slowdown("slowdown", slowdown)
    if s == 0:
        raise ValueError("slowdown must be > 0 to be detected, got 0")
    j = _positive("jitter_fraction", jitter_fraction)
    p = _open_fraction("detect_probability", detect_probability)
    z_a = detection_threshold(n_ranks, false_alarm_rate)
    z_b = _STD.inv_cdf(p)
    delta = s / (1 - s)
    k = max(1, math.ceil(((z_a * j + z_b * j / (1 - s)) / delta) ** 2))
    if k > 1 and detection_probability(k - 1, s, j, n_ranks, false_alarm_rate) >= p:
        k -= 1                      # ceil of a float that should have been a whole number
    return k
