"""A warm pool of started instances, sized by Little's law and the Poisson tail, and run as a simulator.

Each request that arrives takes a warm instance and starts one replacement, which takes a cold start
T_c to become warm. Starts in flight form an infinite-server queue fed at the arrival rate lambda, so by
Little's law their mean is a = lambda T_c, and (Poisson arrivals, any start-time distribution) their
number is Poisson(a). With a target of k warm instances, every start in flight is one missing from the
pool, so warm - waiting = k - in flight: an arrival finds the pool empty, and waits for a start, exactly
when k or more starts are in flight,

    P(cold) = P(Poisson(a) >= k),        the smallest k with P(cold) <= epsilon sizes the pool.

If instead a request that finds the pool empty is shed (sent elsewhere, no start), starts in flight
are an M/G/k/k loss system and the share shed is Erlang B, B(k, a). `simulate` runs the pool itself,
event by event, so both formulas are checked against the machine they describe, not against each other.

Chapters: serverless-cold-start.
"""
from __future__ import annotations

import heapq
import math
from collections import deque

import numpy as np

POLICIES = ("wait", "shed")


def _negligible_below(a: float) -> int:
    """A count below which Poisson(a) holds under e^-50 in all (the Chernoff bound exp(-d^2 / 2a), d = 10 sqrt(a)):
    each term is below half a double's step at 1, so sums may start here and cost the square root of a, not a."""
    return max(0, math.floor(a - 10 * math.sqrt(a) - 10))


def poisson_tail(a: float, k: int) -> float:
    """P(N >= k) for N ~ Poisson(a): 1 - sum_{i<k} e^-a a^i / i!, summed in logs so a large a is safe."""
    if k <= 0:
        return 1.0
    if a <= 0:
        return 0.0
    term, cdf = math.exp(-a), 0.0
    if term == 0.0:        # a very large: sum the lower terms in log space
        logs = [i * math.log(a) - a - math.lgamma(i + 1) for i in range(min(k, _negligible_below(a)), k)]
        return max(0.0, 1.0 - sum(math.exp(x) for x in logs))
    for i in range(k):
        cdf += term
        term *= a / (i + 1)
    return max(0.0, 1.0 - cdf)


def erlang_b(k: int, a: float) -> float:
    """Erlang B: the share of arrivals that find all k servers busy, offered load a (the stable recursion
    B(0) = 1, B(n) = a B(n-1) / (n + a B(n-1)))."""
    b = 1.0
    for n in range(1, int(k) + 1):
        b = a * b / (n + a * b)
    return b


def pool_size(rate: float, cold_start: float, target: float, policy: str = "wait") -> int:
    """The smallest warm pool k at which the share of requests that meet a cold start (policy "wait")
    or are shed (policy "shed") is at most `target`."""
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")
    if not 0 < target <= 1:
        raise ValueError(f"target must be a share in (0, 1], got {target!r}")
    a = rate * cold_start
    # One pass up k, each share from the last (O(k), not O(k^2)): the Poisson cdf adds the next term in logs
    # (safe for a large a); Erlang B steps its own recursion. Waiting, the pass starts where the terms below
    # leave the tail exactly 1.0 (no pool that small meets a target below 1); Erlang B needs every step.
    k = _negligible_below(a) if policy == "wait" and target < 1 else 0
    tail, b = 1.0, 1.0
    while (tail if policy == "wait" else b) > target:
        tail = max(0.0, tail - math.exp(k * math.log(a) - a - math.lgamma(k + 1))) if a > 0 else 0.0
        k += 1
        b = a * b / (k + a * b)
    return k


def mean_idle(a: float, k: int) -> float:
    """Mean warm instances idle in the pool, E[(k - N)+] with N ~ Poisson(a): what the provider pays for
    and nobody is billed for."""
    if a > 700:     # e^-a falls below the smallest normal double (and to zero past 745): sum each term in logs
        return sum((k - i) * math.exp(i * math.log(a) - a - math.lgamma(i + 1))
                   for i in range(min(k, _negligible_below(a)), k))
    term, out = math.exp(-a), 0.0
    for i in range(k):
        out += (k - i) * term
        term *= a / (i + 1)
    return out


class WarmPool:
    """The pool as a state machine on an explicit clock: `arrive(t)` and the starts it schedules.

    warm: instances started and idle; starts: completion times of starts in flight (a heap); waiting:
    arrival times of requests waiting for a start. Time only moves forward (arrive in order)."""

    def __init__(self, k: int, cold_start: float, policy: str = "wait"):
        if policy not in POLICIES:
            raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")
        if k < 0 or cold_start <= 0:
            raise ValueError("k must be >= 0 and cold_start > 0")
        self.k, self.cold_start, self.policy = int(k), float(cold_start), policy
        self.warm, self.starts, self.waiting, self.now = int(k), [], deque(), 0.0
        self.waits: list[float] = []

    def advance(self, t: float) -> None:
        """Finish every start due by t: each serves the oldest waiting request, or joins the pool."""
        if t < self.now:
            raise ValueError(f"time runs forward: {t} < {self.now}")
        while self.starts and self.starts[0] <= t:
            done = heapq.heappop(self.starts)
            if self.waiting:
                self.waits.append(done - self.waiting.popleft())
            else:
                self.warm += 1
        self.now = t

    def arrive(self, t: float) -> str:
        """A request at time t: "warm" (took an idle instance, started a replacement), "cold" (waits for
        a start) or "shed" (policy shed, pool empty: sent elsewhere, nothing started)."""
        self.advance(t)
        if self.warm > 0:
            self.warm -= 1
            heapq.heappush(self.starts, t + self.cold_start)
            return "warm"
        if self.policy == "shed":
            return "shed"
        self.waiting.append(t)
        heapq.heappush(self.starts, t + self.cold_start)
        return "cold"

    @property
    def in_flight(self) -> int:
        return len(self.starts)


def simulate(rate: float, cold_start: float, k: int, n: int, seed: int, policy: str = "wait",
             warmup: float = 0.1) -> dict:
    """Run the pool over n seeded Poisson arrivals; the first `warmup` share of them is discarded (the
    pool starts full). Returns the share that met a cold start or was shed, its standard error, and the
    mean idle pool seen by arrivals."""
    rng = np.random.default_rng(seed)
    times = np.cumsum(rng.exponential(1.0 / rate, size=n))
    pool, outcomes, idle = WarmPool(k, cold_start, policy), [], []
    for t in times:
        pool.advance(float(t))
        idle.append(pool.warm)
        outcomes.append(pool.arrive(float(t)))
    skip = int(warmup * n)
    bad = np.array([o != "warm" for o in outcomes[skip:]], float)
    share = float(bad.mean())
    return dict(share=share, stderr=math.sqrt(max(share * (1 - share), 1e-12) / len(bad)),
                idle=float(np.mean(idle[skip:])), n=len(bad))
