"""Service-level objectives as arithmetic: the error budget, the burn rate, and a multiwindow,
multi-burn-rate alert evaluated over a time series of request counts.

An objective o (0.999) over a period T allows a share 1 - o of the period's requests to be bad: the
error budget, which for a full outage is (1 - o) T of wall-clock time. A window whose bad share is e
burns the budget at b = e / (1 - o) times the sustainable rate ("burn rate"); a rule that pages when a
long window W shows b >= k has spent k W / T of the budget when it fires, whatever the failure's size.

A failure that starts at t = 0 with bad share e over a baseline e0 raises a window's bad share linearly,
e0 + (e - e0) t / W, so the long window reaches k (1 - o) after

    t_detect = W (k (1 - o) - e0) / (e - e0)      (never, if e < k (1 - o))

The short window (the Site Reliability Workbook's 1/12 of the long one) changes little about when a rule
fires; it makes the alert stop within a short window of the failure's end instead of a long one.

    rules = workbook_rules(30 * 86400)                      # 1 h / 5 min 14.4x, 6 h / 30 min 6x, 3 d / 6 h 1x
    fired = evaluate(total, bad, 60.0, 0.999, rules)        # per-minute counts -> {rule: Firing}

Everything here is plain floats and numpy arrays (seconds, counts, shares); the chapter wraps them in
quantities.

Chapters: slo-error-budgets.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

WORKBOOK_SOURCE = ("The Site Reliability Workbook (Beyer et al., O'Reilly 2018), ch. 5 'Alerting on SLOs', "
                   "Table 5-8, recommended parameters for a 99.9% objective over 30 days: page at 14.4x over "
                   "1 hour and 5 minutes (2% of budget), page at 6x over 6 hours and 30 minutes (5%), ticket "
                   "at 1x over 3 days and 6 hours (10%); the short window 1/12 of the long; "
                   "https://sre.google/workbook/alerting-on-slos/, read 2026-12-01")
# (severity, long window s, short window s, share of the period's budget spent when it fires)
WORKBOOK = (("page", 3600.0, 300.0, 0.02), ("page", 6 * 3600.0, 1800.0, 0.05), ("ticket", 3 * 86400.0, 6 * 3600.0, 0.10))


def error_budget(objective: float, period_s: float) -> float:
    """The budget as seconds of full outage: (1 - o) T."""
    _check_objective(objective)
    return (1.0 - objective) * period_s


def burn_rate(bad_share, objective: float):
    """How many times faster than sustainable a window with bad share e spends the budget: e / (1 - o)."""
    _check_objective(objective)
    return np.asarray(bad_share, float) / (1.0 - objective) if np.ndim(bad_share) else bad_share / (1.0 - objective)


def threshold(budget_share: float, window_s: float, period_s: float) -> float:
    """The burn rate at which a window of W spends a share s of the period's budget: s T / W."""
    return budget_share * period_s / window_s


def exhaustion_time(burn: float, period_s: float) -> float:
    """At a steady burn rate b the whole budget lasts T / b."""
    return period_s / burn


def detection_time(bad_share: float, objective: float, burn: float, window_s: float, baseline: float = 0.0) -> float:
    """Seconds from a step failure (bad share e over baseline e0) until a window of W shows burn k:
    W (k (1 - o) - e0) / (e - e0); infinity when the failure never reaches the threshold."""
    need = burn * (1.0 - objective)
    if bad_share < need * (1 - 1e-12) or bad_share <= baseline:     # a relative hair: 14.4 x 0.001 in floats
        return float("inf")
    return window_s * max(need - baseline, 0.0) / (bad_share - baseline)


@dataclass(frozen=True)
class Rule:
    """Fire when both windows' burn rates reach `burn`: the long one says it matters, the short one that
    it is still happening."""
    name: str
    long_s: float
    short_s: float
    burn: float
    severity: str = "page"


def workbook_rules(period_s: float, table=WORKBOOK) -> tuple[Rule, ...]:
    """The workbook's three rules, each burn rate derived from its budget share and the period."""
    return tuple(Rule(f"{_span(w)} / {_span(s)}", w, s, threshold(share, w, period_s), sev)
                 for sev, w, s, share in table)


@dataclass(frozen=True)
class Firing:
    firing: np.ndarray        # bool per sample: both windows at or above the burn rate
    long_burn: np.ndarray     # burn rate over the long window, per sample
    short_burn: np.ndarray

    def first(self, after: int = 0) -> int | None:
        """Index of the first firing sample at or after `after`, or None."""
        hits = np.flatnonzero(self.firing[after:])
        return int(hits[0]) + after if len(hits) else None

    def last(self) -> int | None:
        hits = np.flatnonzero(self.firing)
        return int(hits[-1]) if len(hits) else None


def window_burn(total, bad, n: int, objective: float) -> np.ndarray:
    """Burn rate over the trailing n samples at every sample: (sum of bad) / (sum of total) / (1 - o).
    A ratio of sums, never a mean of per-sample ratios (a quiet minute's one error would count as much as
    a busy minute's thousand); before n samples exist, the samples there are."""
    ct = np.concatenate([[0.0], np.cumsum(np.asarray(total, float))])
    cb = np.concatenate([[0.0], np.cumsum(np.asarray(bad, float))])
    i = np.arange(1, len(ct))
    lo = np.maximum(i - n, 0)
    t, b = ct[i] - ct[lo], cb[i] - cb[lo]
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(t > 0, b / np.where(t > 0, t, 1.0), 0.0)
    return share / (1.0 - objective)


def evaluate(total, bad, step_s: float, objective: float, rules) -> dict[str, Firing]:
    """Each rule over a series of per-sample request counts (total and bad) taken every step_s seconds."""
    _check_objective(objective)
    if len(total) != len(bad):
        raise ValueError("total and bad must have the same length")
    if np.any(np.asarray(bad) > np.asarray(total)):
        raise ValueError("a sample cannot have more bad requests than requests")
    out = {}
    for r in rules:
        n_long, n_short = _samples(r.long_s, step_s), _samples(r.short_s, step_s)
        lb, sb = window_burn(total, bad, n_long, objective), window_burn(total, bad, n_short, objective)
        out[r.name] = Firing(firing=(lb >= r.burn) & (sb >= r.burn), long_burn=lb, short_burn=sb)
    return out


def incident_series(minutes: int, start: int, end: int, bad_share: float, *, per_minute: float,
                    baseline: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A seeded series of per-minute request counts (Poisson) and bad counts (binomial at the baseline
    share, at bad_share from minute `start` up to `end`)."""
    rng = np.random.default_rng(int(seed))
    total = rng.poisson(per_minute, minutes)
    share = np.full(minutes, float(baseline))
    share[start:end] = bad_share
    return total, rng.binomial(total, share)


def _samples(window_s: float, step_s: float) -> int:
    n = window_s / step_s
    if n < 1 or abs(n - round(n)) > 1e-9:
        raise ValueError(f"a window of {window_s:g} s is not a whole number of {step_s:g} s samples")
    return int(round(n))


def _span(s: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if s >= size and s % size == 0:
            return f"{int(s // size)} {unit}"
    return f"{s:g} s"


def _check_objective(objective: float) -> None:
    if not 0.0 < objective < 1.0:
        raise ValueError(f"an objective must be between 0 and 1 (exclusive), got {objective!r}")
