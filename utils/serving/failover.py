"""Losing a region: the survivor's load, the seconds after the drop, and where a request may go.

    survivor_utilisation(regions=2, utilisation=0.6)          # 1.2: the survivor is 20% over
    n_minus_one_ceiling(regions=3)                              # 2/3: the most each region may run at
    r = simulate(Drop(capacity=300, utilisation=0.6), Clients("full_jitter", budget=0.1), admission_s=2.0)
    route("eu", {"eu-west": False, "us-east": True}, RTT, RESIDENCY)   # None: EU data stays in the EU

The drop (`simulate`), binned at DT seconds and seeded:
- Two regions serve the same rate each. At `t_drop` one dies: its in-flight requests fail, and its new
  requests keep failing (connection refused) until routing notices, `detect_s` later; from then on the
  survivor receives both regions' traffic. The survivor serves at most `capacity` requests a second,
  first in first out, plus whatever the autoscaler adds: it asks for replicas `scale_lag_s` after the
  routing change (its metrics window) and they serve `start_s` after that (a replica's start-up).
- A client gives up on an attempt after `timeout_s` and retries; a refused attempt retries at once. The
  sleep before retry k comes from utils.components.retry's policies (constant, exponential, full or equal jitter),
  up to `max_attempts` attempts, and, with `budget`, a retry ratio cap (utils.components.retry.RetryBudget, used in
  bulk: m requests, then as many of m retries as the cap allows).
- The server keeps working on a request whose client has given up (it cannot know): that is wasted
  capacity. With admission control (`admission_s`), a request that would wait longer than that is
  refused at once with 429 (it costs nothing) and its client retries per its policy.
Goodput counts requests served within their client's timeout.

Routing (`route`): the healthy region with the lowest round-trip time among those the request's
residency allows; None (fail, never cross) when no allowed region is healthy.

Chapters: multi-region-failover.
"""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from utils.components import retry

DT = 0.1          # seconds per bin


def survivor_utilisation(regions: int, utilisation: float) -> float:
    """N regions at u each; one fails; the N - 1 left carry N u between them: N u / (N - 1)."""
    if regions < 2:
        raise ValueError(f"regions must be at least 2 to fail over, got {regions!r}")
    return regions * utilisation / (regions - 1)


def n_minus_one_ceiling(regions: int) -> float:
    """The highest utilisation N regions may run at so that N - 1 carry the load at 100%: (N - 1) / N."""
    if regions < 2:
        raise ValueError(f"regions must be at least 2 to fail over, got {regions!r}")
    return (regions - 1) / regions


@dataclass(frozen=True)
class Drop:
    capacity: float               # requests/s the survivor serves (before the autoscaler adds any)
    utilisation: float            # each region's load over its capacity before the drop
    t_drop: float = 5.0           # when the other region dies, s
    detect_s: float = 5.0         # health checks + routing change, s
    in_flight_s: float = 2.0      # the dead region's in-flight requests: this many seconds of its arrivals
    scale_lag_s: float = 30.0     # autoscaler's metrics window after the routing change, s
    start_s: float = 300.0        # a new replica's start-up, s
    horizon: float = 40.0         # simulated seconds
    added: float = 0.0            # requests/s the autoscaler's replicas add once they serve
    arriving: float | None = None # the dead region's traffic this survivor takes, over capacity (None: utilisation,
                                  # two regions); with N regions, N u / (N - 1) - u


@dataclass(frozen=True)
class Clients:
    policy: str = "constant"      # a utils.components.retry policy (not decorrelated: it needs each client's past)
    base: float = 1.0             # s
    cap: float = 20.0             # s
    timeout_s: float = 10.0       # s a client waits for an attempt
    max_attempts: int = 4
    budget: float | None = None   # retry ratio cap (0.1 = retries at most a tenth of requests)


@dataclass
class Run:
    t: np.ndarray                 # bin start times
    offered: np.ndarray           # attempts arriving per second, per bin (new and retries)
    new: np.ndarray               # new requests per second, per bin
    good: np.ndarray              # requests served within their client's timeout, per second
    wasted: np.ndarray            # capacity spent on requests whose client had left, per second
    refused: np.ndarray           # attempts refused by admission control or a dead region, per second
    wait: np.ndarray              # queue wait of a request admitted in the bin, s
    gave_up: int                  # clients out of attempts or denied by the budget
    capacity: np.ndarray          # survivor capacity, requests/s

    def window(self, t0: float, t1: float) -> dict:
        """Totals over [t0, t1): goodput share of new demand, amplification, wasted share, worst wait."""
        s = (self.t >= t0 - 1e-9) & (self.t < t1 - 1e-9)
        new, off = self.new[s].sum(), self.offered[s].sum()
        return dict(goodput=float(self.good[s].sum() / new), amplification=float(off / new),
                    wasted=float(self.wasted[s].sum() / (self.capacity[s].sum())),
                    worst_wait=float(self.wait[s].max()), refused=float(self.refused[s].sum() / off))


def _sleep(c: Clients, k: int, m: int, rng) -> np.ndarray:
    if c.policy == "constant":
        return np.full(m, c.base)
    if c.policy == "exponential":
        return np.full(m, float(retry.exponential(k, c.base, c.cap)))
    if c.policy == "full_jitter":
        return retry.full_jitter(k, rng, c.base, c.cap, m)
    if c.policy == "equal_jitter":
        return retry.equal_jitter(k, rng, c.base, c.cap, m)
    raise ValueError(f"policy must be constant, exponential, full_jitter or equal_jitter, got {c.policy!r}")


BULK = 10_000     # retries scheduled at once past this many are drawn as counts per bin (a multinomial), not one by one


def _retry_bins(c: Clients, k: int, m: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """(bin offsets, clients per offset) for m clients sleeping before retry k: each client's own sleep, or for
    more than BULK clients the same distribution as counts per bin, so the work is the bins, not the clients."""
    def offset(sleep):
        return np.maximum(1, np.ceil(np.asarray(sleep) / DT - 1e-9)).astype(int)
    if c.policy in ("constant", "exponential"):        # one sleep for all: no draw
        return offset([_sleep(c, k, 1, rng)[0]]), np.array([m])
    if m <= BULK:
        return offset(_sleep(c, k, m, rng)), np.ones(m, dtype=np.int64)
    w = float(retry.window(k, c.base, c.cap))
    lo = w / 2 if c.policy == "equal_jitter" else 0.0   # uniform on [lo, w)
    if c.policy not in ("full_jitter", "equal_jitter"):
        raise ValueError(f"policy must be constant, exponential, full_jitter or equal_jitter, got {c.policy!r}")
    js = np.arange(offset([lo])[0], offset([w])[0] + 1)
    edges = np.clip((np.concatenate([[js[0] - 1], js]) + 1e-9) * DT, lo, w)    # sleep s lands at j when s/DT - 1e-9 <= j
    edges[0] = lo                                       # (a sleep under a bin lands in the first)
    share = np.diff(edges) / (w - lo)
    return js, rng.multinomial(m, share / share.sum())


def simulate(d: Drop, c: Clients, *, admission_s: float | None = None, seed: int = 0) -> Run:
    """The survivor's seconds after the other region drops (see the module doc)."""
    for name, v in (("capacity", d.capacity), ("horizon", d.horizon), ("timeout_s", c.timeout_s)):
        if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
            raise ValueError(f"{name} must be a positive number, got {v!r}")
    if c.max_attempts < 1:
        raise ValueError(f"max_attempts must be at least 1, got {c.max_attempts!r}")
    rng = np.random.default_rng(int(seed))
    n = int(round(d.horizon / DT))
    t = np.arange(n) * DT
    lam = d.utilisation * d.capacity                      # this region's own arrival rate
    lam_o = (d.utilisation if d.arriving is None else d.arriving) * d.capacity
    t_route = d.t_drop + d.detect_s
    t_more = t_route + d.scale_lag_s + d.start_s
    cap_t = np.where(t >= t_more, d.capacity + d.added, d.capacity)
    # Retries due per bin, by attempt index. Each attempt lands at least a bin after the last, so no index past n
    # is ever due inside the horizon: the columns stop there however many attempts are allowed.
    width = min(c.max_attempts, n + 1)
    due = np.zeros((n + 1, width), dtype=np.int64)
    budget = retry.RetryBudget(c.budget) if c.budget is not None else None
    q: deque = deque()                                     # [bin admitted, count, abandoned, attempt index]
    queued = 0
    credit = 0.0
    out = {k: np.zeros(n) for k in ("offered", "new", "good", "wasted", "refused", "wait")}
    gave_up = 0

    def fail(m: int, k: int, i: int) -> None:
        """m clients whose attempt k failed at bin i: retry if attempts and the budget allow."""
        nonlocal gave_up
        if m <= 0:
            return
        if k + 1 >= c.max_attempts:
            gave_up += m
            return
        allowed = m
        if budget is not None:
            allowed = max(0, min(m, int(math.floor(budget.reserve + budget.ratio * budget.requests
                                                    - budget.retries + 1e-9))))
            budget.retries += allowed
            gave_up += m - allowed
        if allowed and k + 1 < width:                      # (past the columns: due after the horizon)
            offsets, counts = _retry_bins(c, k, allowed, rng)
            np.add.at(due[:, k + 1], np.minimum(i + offsets, n), counts)

    for i in range(n):
        ti = t[i]
        own = int(rng.poisson(lam * DT))
        other = int(rng.poisson(lam_o * DT)) if ti >= d.t_drop - 1e-9 else 0   # before the drop: served at home
        if abs(ti - d.t_drop) < DT / 2:
            other += int(rng.poisson(lam_o * d.in_flight_s))   # the dead region's in-flight requests fail
        if budget is not None:
            budget.requests += own + other
        out["new"][i] = own + other
        arrivals = [(own, 0)] + [(int(due[i, k]), k) for k in np.flatnonzero(due[i, 1:]) + 1]
        if ti < t_route - 1e-9:                            # routing still sends them to the dead region
            out["refused"][i] += other
            fail(other, 0, i)
        else:
            arrivals.append((other, 0))
        out["offered"][i] = sum(m for m, _ in arrivals) + (other if ti < t_route - 1e-9 else 0)
        limit = admission_s * cap_t[i] if admission_s is not None else math.inf
        for m, k in arrivals:                              # admission: refuse what would wait too long
            take = int(min(m, max(0, limit - queued)))
            if take:
                q.append([i, take, False, k])
                queued += take
            if m - take:
                out["refused"][i] += m - take
                fail(m - take, k, i)
        out["wait"][i] = queued / cap_t[i]
        credit += cap_t[i] * DT                            # serve, oldest first
        while q and credit >= 1:
            chunk = q[0]
            s = int(min(chunk[1], math.floor(credit)))
            credit -= s
            chunk[1] -= s
            queued -= s
            out["wasted" if chunk[2] else "good"][i] += s
            if chunk[1] == 0:
                q.popleft()
        if not q:
            credit = min(credit, 1.0)                      # an idle server banks no capacity
        for chunk in q:                                    # clients whose attempt timed out leave, retry
            if chunk[2]:
                continue
            if (i - chunk[0] + 1) * DT >= c.timeout_s - 1e-9:
                chunk[2] = True
                fail(chunk[1], chunk[3], i)
            else:
                break
    for k in ("offered", "new", "good", "wasted", "refused"):
        out[k] /= DT
    return Run(t=t, gave_up=gave_up, capacity=cap_t, **out)


# --- routing -------------------------------------------------------------------------------------
def route(residency: str | None, healthy: dict[str, bool], rtt_ms: dict[str, float],
          allowed: dict[str, tuple[str, ...]]) -> str | None:
    """The healthy region with the lowest RTT among those `residency` allows (any, when None); None when
    none is healthy: a resident request fails rather than cross its border."""
    if residency is not None and residency not in allowed:
        raise ValueError(f"unknown residency {residency!r}; known: {', '.join(sorted(allowed))}")
    options = [r for r in (allowed[residency] if residency is not None else tuple(rtt_ms)) if healthy.get(r)]
    return min(options, key=lambda r: (rtt_ms[r], r)) if options else None
