"""Rollout lengths for group-sampled RL (GRPO): the longest of n responses, and the idle it builds in.

A step samples n responses per prompt; a group cannot be scored until its last response ends, and a
synchronous step cannot train until the step's last response ends. Response lengths here are log-normal
(median m, shape sigma) clipped at the generation cap: a response that would run past the cap is cut
there, so the cap carries a point mass P(X > cap). numpy and the standard library only.

    clipped_lognormal_cdf(x, median, sigma, cap)     # F(x); 1 at and past the cap
    expected_max(n, median, sigma, cap)              # E[max of n] = integral_0^cap 1 - F(x)^n dx
    expected_length(median, sigma, cap)              # E[X] = the same integral with n = 1
    simulate_lengths(shape, median, sigma, cap, rng) # seeded draws, whole tokens
    simulate_longest(groups, n, median, sigma, cap, rng)  # seeded longest of n, one draw a group
    tail_idle_fraction(n, ...)                       # 1 - E[X] / E[max of n]: slots held by the longest
    step_idle(...)                                   # a synchronous and an asynchronous step, by phase

E[max] uses the identity E[Y] = integral_0^inf P(Y > x) dx for Y >= 0, with P(max <= x) = F(x)^n for iid
draws; the integrand is smooth on [0, cap) (the jump of F sits at the cap, the integral's end), so a
fixed composite Simpson rule is deterministic and exact to far below a token.
utils.training.stragglers integrates maxima of normal compute times; response lengths are skewed and capped, so
this module integrates the clipped log-normal instead (the same identity, another F).
Bad arguments raise ValueError with one line naming the argument.

Chapters: grpo-rollout-cost.
"""
from __future__ import annotations

import math

import numpy as np

_POINTS = 20001          # Simpson nodes over [0, cap]: odd, so the rule has whole panels


def _check(n=1, median=1.0, sigma=1.0, cap=1.0) -> None:
    if not (isinstance(n, (int, np.integer)) and not isinstance(n, bool) and n >= 1):
        raise ValueError(f"n must be a whole number >= 1, got {n!r}")
    for name, v in (("median", median), ("sigma", sigma), ("cap", cap)):
        if not (isinstance(v, (int, float, np.floating, np.integer)) and math.isfinite(v) and v > 0):
            raise ValueError(f"{name} must be a positive finite number, got {v!r}")


def clipped_lognormal_cdf(x, median, sigma, cap):
    """P(length <= x): log-normal below the cap, 1 at and beyond it (the cut responses sit at the cap)."""
    _check(1, median, sigma, cap)
    x = np.asarray(x, dtype=float)
    z = np.log(np.maximum(x, 1e-300) / median) / (sigma * math.sqrt(2.0))
    below = 0.5 * (1.0 + np.vectorize(math.erf, otypes=[float])(z))
    return np.where(x >= cap, 1.0, np.where(x <= 0, 0.0, below))


def _simpson(y: np.ndarray, h: float) -> float:
    return float(h / 3.0 * (y[0] + y[-1] + 4.0 * y[1:-1:2].sum() + 2.0 * y[2:-1:2].sum()))


def expected_max(n, median, sigma, cap, *, points: int = _POINTS) -> float:
    """E[max of n iid clipped log-normal lengths] = integral over [0, cap) of 1 - F(x)^n (tokens)."""
    _check(n, median, sigma, cap)
    x = np.linspace(0.0, cap, points)
    F = clipped_lognormal_cdf(x[:-1], median, sigma, cap)
    # The last node is the cap itself: take the limit from below (F jumps to 1 exactly there).
    z = math.log(cap / median) / (sigma * math.sqrt(2.0))
    F = np.append(F, 0.5 * (1.0 + math.erf(z)))
    return _simpson(1.0 - F ** n, cap / (points - 1))


def expected_length(median, sigma, cap) -> float:
    """E[length]: the mean of the clipped log-normal (the n = 1 case)."""
    return expected_max(1, median, sigma, cap)


def unclipped_mean(median, sigma) -> float:
    """The log-normal's own mean, m exp(sigma^2 / 2): the check that clipping only lowers it."""
    _check(1, median, sigma, 1.0)
    return median * math.exp(sigma ** 2 / 2.0)


def cap_probability(median, sigma, cap) -> float:
    """P(a response runs into the cap): the mass the clipping moves onto the cap."""
    _check(1, median, sigma, cap)
    return 0.5 * math.erfc(math.log(cap / median) / (sigma * math.sqrt(2.0)))


def simulate_lengths(shape, median, sigma, cap, rng: np.random.Generator) -> np.ndarray:
    """Seeded response lengths in whole tokens (at least one), clipped at the cap."""
    _check(1, median, sigma, cap)
    if not isinstance(rng, np.random.Generator):
        raise ValueError("rng must be a numpy Generator (seed it: np.random.default_rng(seed))")
    x = np.exp(np.log(median) + sigma * rng.standard_normal(shape))
    return np.clip(np.ceil(x), 1, cap)


def simulate_longest(groups: int, n, median, sigma, cap, rng: np.random.Generator) -> np.ndarray:
    """The longest of n seeded lengths for each of `groups` groups, in whole tokens, drawn directly: the max of n
    iid draws has the CDF F^n, so it is F's quantile at U^(1/n) for one uniform U. Memory and time grow with the
    groups, not with n (a step of a million prompts costs what a step of one does)."""
    from statistics import NormalDist
    _check(n, median, sigma, cap)
    if not isinstance(rng, np.random.Generator):
        raise ValueError("rng must be a numpy Generator (seed it: np.random.default_rng(seed))")
    below_cap = NormalDist().cdf(math.log(cap / median) / sigma)      # F just below the cap
    u = (1.0 - rng.random(int(groups))) ** (1.0 / n)                  # in (0, 1]
    inv = NormalDist().inv_cdf
    x = [cap if v >= below_cap else median * math.exp(sigma * inv(v)) for v in u.tolist()]
    return np.clip(np.ceil(np.asarray(x, dtype=float)), 1, cap)


def tail_idle_fraction(n, median, sigma, cap) -> float:
    """Share of decode slots idle while n sequences that start together wait for the longest: each slot
    is held for E[max] and used for E[X]."""
    return 1.0 - expected_length(median, sigma, cap) / expected_max(n, median, sigma, cap)


def step_idle(t_gen_busy, stretch, t_verify, t_train, t_broadcast, n_actor, n_learner) -> dict:
    """Idle GPU-seconds of one step, by where the fleet waits, synchronous and asynchronous.

    Synchronous: generate (the actors' slots held stretch = E[max]/E[X] times the busy time), verify,
    broadcast, train, one after another. Asynchronous: the next step's generation runs while this step is
    verified and trained, freed slots are refilled with the next step's prompts (no tail), the verifier
    runs beside generation, and the learners still pay the broadcast (as in the rl-actor-learner chain)."""
    for name, v in (("t_gen_busy", t_gen_busy), ("t_verify", t_verify), ("t_train", t_train),
                    ("t_broadcast", t_broadcast)):
        if not (math.isfinite(v) and v >= 0):
            raise ValueError(f"{name} must be a non-negative time, got {v!r}")
    if not (math.isfinite(stretch) and stretch >= 1):
        raise ValueError(f"stretch must be >= 1 (the longest is never shorter than the mean), got {stretch!r}")
    for name, v in (("n_actor", n_actor), ("n_learner", n_learner)):
        if not v > 0:
            raise ValueError(f"{name} must be positive, got {v!r}")
    G = n_actor + n_learner
    t_gen = t_gen_busy * stretch
    t_sync = t_gen + t_verify + t_broadcast + t_train
    busy = n_actor * t_gen_busy + n_learner * t_train
    by_place = {"longest response": n_actor * (t_gen - t_gen_busy),
                "learners wait for generation": n_learner * t_gen,
                "verifier": G * t_verify, "weight broadcast": G * t_broadcast,
                "actors wait for training": n_actor * t_train}
    t_async = max(t_gen_busy, t_verify, t_train + t_broadcast)
    return dict(t_sync=t_sync, t_async=t_async, busy=busy, by_place=by_place,
                idle_sync=1.0 - busy / (G * t_sync), idle_async=1.0 - busy / (G * t_async))
