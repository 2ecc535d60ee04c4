"""A model rollout's building blocks: session-sticky routing by version tag, the canary's sample size
from the power of a two-proportion test, the test itself, a seeded simulation of its power, and the
error-budget arithmetic of the rollback rule.

    router = VersionRouter(stable="v1", canary="v2", share=0.05)
    version = router.route(session_id)        # a new session: v2 for 5% of sessions, by hash
    router.set_share(0.25)                    # a session on v2 stays on v2; one on v1 stays on v1
    moved = router.rollback()                 # every v2 session back to v1 (their KV is re-prefilled)
    n = canary_sample_size(0.0005, 0.0105, alpha=0.05, power=0.8, ratio=19)   # canary requests

The rules (tests/serving/test_canary.py holds each):
- A session's version is decided once, at its first request, and stored as its tag; every later request
  follows the tag, whatever the share is now. A long session never switches model mid-conversation
  (its KV cache, its prompt format and its answers' style belong to one version).
- New sessions are split by a hash of the session id against the share (sha256, so the split is the
  same on every gateway and every restart, with no shared state to decide it): raising the share only
  adds sessions to the canary, never moves one back, because a bucket below 5% is below 25% too.
- Rollback is the exception to stickiness: a broken version keeps nobody; its sessions move to the
  stable version and are counted, because each one's context must be prefilled again there.
- The sample size is the normal approximation for a one-sided test of p_canary > p_stable with the
  stable arm `ratio` times larger (it is: it carries the other 95% of the traffic in the same window):
      n = (z_a sqrt(pbar qbar (1 + 1/k)) + z_b sqrt(p1 q1 + p0 q0 / k))^2 / (p1 - p0)^2
  canary requests, with pbar the pooled rate (p1 + k p0)/(1 + k) and z values from the inverse normal
  CDF (statistics.NormalDist), never typed. `simulated_power` draws the two arms' failures at that n
  (seeded) and runs the same pooled z test, so the closed form is checked by counting.

Chapters: model-rollout.
"""
from __future__ import annotations

import hashlib
import math
from statistics import NormalDist

import numpy as np

BUCKETS = 10_000          # the hash's resolution: shares are honoured to a hundredth of a percent

_N = NormalDist()


def z(p: float) -> float:
    """The standard normal quantile: z(0.95) = 1.6449..."""
    if not 0 < p < 1:
        raise ValueError(f"p must be in (0, 1), got {p!r}")
    return _N.inv_cdf(p)


def bucket(session_id: str, salt: str = "") -> int:
    """A session's fixed place in [0, BUCKETS): the same on every gateway, with no state shared."""
    h = hashlib.sha256(f"{salt}:{session_id}".encode()).digest()
    return int.from_bytes(h[:8], "big") % BUCKETS


class VersionRouter:
    """Sticky routing by version tag. `salt` should name the rollout, so each rollout samples afresh."""

    def __init__(self, stable: str, canary: str, share: float, *, salt: str = ""):
        if stable == canary:
            raise ValueError("stable and canary must be different versions")
        self.stable, self.canary, self.salt = stable, canary, salt or f"{stable}->{canary}"
        self.set_share(share)
        self.tags: dict[str, str] = {}
        self.rolled_back = False

    def set_share(self, share: float) -> None:
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 <= share <= 1:
            raise ValueError(f"share must be between 0 and 1, got {share!r}")
        self.share = float(share)

    def route(self, session_id: str) -> str:
        tag = self.tags.get(session_id)
        if tag is None:                                   # first request: decide once, by hash
            canary = not self.rolled_back and bucket(session_id, self.salt) < round(self.share * BUCKETS)
            tag = self.tags[session_id] = self.canary if canary else self.stable
        return tag

    def rollback(self) -> int:
        """Send every session to the stable version from now on; returns how many sessions moved."""
        moved = [s for s, v in self.tags.items() if v == self.canary]
        for s in moved:
            self.tags[s] = self.stable
        self.rolled_back, self.share = True, 0.0
        return len(moved)

    def end(self, session_id: str) -> None:
        """A session ended: forget its tag (the store holds live sessions only)."""
        self.tags.pop(session_id, None)


# --- the canary's statistics -------------------------------------------------------------------------
def _rate(name, v):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < 1:
        raise ValueError(f"{name} must be in (0, 1), got {v!r}")
    return float(v)


def canary_sample_size(p0: float, p1: float, *, alpha: float = 0.05, power: float = 0.8,
                       ratio: float = 1.0) -> int:
    """Canary requests for a one-sided two-proportion test to detect p1 > p0 at significance alpha with
    the given power, the stable arm `ratio` times larger (normal approximation, pooled under H0)."""
    p0, p1, alpha, power = (_rate(n, v) for n, v in (("p0", p0), ("p1", p1), ("alpha", alpha), ("power", power)))
    if p1 <= p0:
        raise ValueError(f"p1 must be above p0 (a regression), got p0={p0!r}, p1={p1!r}")
    if not ratio > 0:
        raise ValueError(f"ratio must be > 0, got {ratio!r}")
    k = float(ratio)
    pbar = (p1 + k * p0) / (1 + k)
    za, zb = z(1 - alpha), z(power)
    root = za * math.sqrt(pbar * (1 - pbar) * (1 + 1 / k)) + zb * math.sqrt(p1 * (1 - p1) + p0 * (1 - p0) / k)
    return math.ceil((root / (p1 - p0)) ** 2)


def z_statistic(x1, n1, x0, n0):
    """The pooled two-proportion z for canary failures x1 of n1 against stable x0 of n0 (arrays welcome)."""
    x1, x0 = np.asarray(x1, float), np.asarray(x0, float)
    pool = (x1 + x0) / (n1 + n0)
    se = np.sqrt(pool * (1 - pool) * (1 / n1 + 1 / n0))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(se > 0, (x1 / n1 - x0 / n0) / np.where(se > 0, se, 1.0), 0.0)


def rejects(x1, n1, x0, n0, alpha: float = 0.05):
    """The rollback decision: the canary's failure rate is above the stable one's at significance alpha."""
    return z_statistic(x1, n1, x0, n0) > z(1 - alpha)


def simulated_power(p0: float, p1: float, n1: int, ratio: float, *, alpha: float = 0.05, trials: int = 4000,
                    seed: int = 0) -> float:
    """The share of seeded trials in which the test rejects: the power when p1 > p0, the false-alarm
    rate when p1 == p0. Each trial draws the canary's failures of n1 and the stable arm's of ratio n1."""
    g = np.random.default_rng(seed)
    n0 = int(round(ratio * n1))
    x1 = g.binomial(n1, p1, trials)
    x0 = g.binomial(n0, p0, trials)
    return float(np.mean(rejects(x1, n1, x0, n0, alpha)))


# --- the error budget ---------------------------------------------------------------------------------
def budget_minutes(slo: float, period_days: float = 30.0) -> float:
    """The error budget in minutes over the period: (1 - SLO) of its minutes."""
    return (1 - slo) * period_days * 24 * 60


def burn_rate(failure_rate: float, slo: float) -> float:
    """How many times faster than the budget allows failures arrive (1: the budget lasts the period)."""
    return failure_rate / (1 - slo)
