"""Retries for a population: backoff policies, the herd simulation binned in time, two budgets, and
what is safe to retry at all.

    d = full_jitter(attempt=2, rng=np.random.default_rng(0), base=1.0, cap=60.0, size=1000)
    sim = simulate("full_jitter", n_clients=1000, outage=20.0, max_attempts=6, base=1.0, cap=60.0, seed=0)
    counts, edges = histogram(sim.times[sim.attempt > 0], bin_s=0.1, horizon=40.0)
    classify("POST", 503)        # (True, "...")

The rules (tests/components/test_retry.py holds each of them):
- The policies are those of M. Brooker, "Exponential Backoff And Jitter", AWS Architecture Blog (2015),
  with its simulator's formulas (github.com/aws-samples/aws-arch-backoff-simulator): attempt k = 0 is the
  first retry, and its window is w_k = min(cap, base * 2**k).
    exponential  sleep = w_k                          (every client the same: no jitter)
    full jitter  sleep = uniform(0, w_k)
    equal jitter sleep = w_k / 2 + uniform(0, w_k / 2)
    decorrelated sleep = min(cap, uniform(base, 3 * previous sleep)), the previous sleep starting at base
    constant     sleep = base (a fixed retry interval, for comparison)
  Each is a pure function of the attempt (or the previous sleep) and a numpy Generator: vectorised
  over clients, seeded, so a simulation is the same on every machine.
- simulate: n clients send one request each at t = 0, when the server is down; it stays down until
  `outage` seconds. An attempt that arrives before then fails and the client sleeps and retries, up to
  max_attempts attempts in all; the first attempt at or after `outage` succeeds. Every attempt is an
  arrival at the server, recorded with its time and attempt number.
- Two budgets bound the damage. A per-client token budget (a TokenBucket of `client_tokens`, refilled at
  `client_refill` per second) caps each client's retries at tokens + refill * T. A retry ratio cap
  (RetryBudget: retries <= reserve + ratio * requests, the 10% of Google's SRE book) caps the whole
  population's retries, applied in time order. A retry the budget denies is not sent; that client gives
  up (fails fast) instead.
- classify: what may be retried. 429 and 503 say the server did not act, so any method may retry (after
  Retry-After); other 4xx will fail again the same way, never retry; 500, 502, 504 and a timeout after
  sending leave the outcome unknown, so only an idempotent method (RFC 9110 section 9.2.2: GET, HEAD,
  OPTIONS, TRACE, PUT, DELETE) or a request carrying an idempotency key may retry; a request that was
  never sent (connection refused) may always retry.
Bad arguments raise ValueError with one line naming the argument.

Chapters: retry-jitter.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from utils.components.token_bucket import FakeClock, TokenBucket

POLICIES = ("constant", "exponential", "equal_jitter", "full_jitter", "decorrelated")
IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"})


def _check(name: str, v, *, minimum: float = 0.0, strict: bool = True) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not math.isfinite(v) \
            or (v <= minimum if strict else v < minimum):
        rule = ">" if strict else ">="
        raise ValueError(f"{name} must be a finite number {rule} {minimum:g}, got {v!r}")
    return float(v)


def window(attempt, base: float, cap: float):
    """w_k = min(cap, base * 2**k): the exponential backoff of retry k (k = 0 is the first retry)."""
    return np.minimum(cap, base * 2.0 ** np.asarray(attempt, dtype=float))


def exponential(attempt, base: float, cap: float):
    return window(attempt, base, cap)


def full_jitter(attempt, rng: np.random.Generator, base: float, cap: float, size=None):
    return rng.uniform(0.0, window(attempt, base, cap), size)


def equal_jitter(attempt, rng: np.random.Generator, base: float, cap: float, size=None):
    w = window(attempt, base, cap)
    return w / 2 + rng.uniform(0.0, w / 2, size)


def decorrelated_jitter(previous, rng: np.random.Generator, base: float, cap: float, size=None):
    """min(cap, uniform(base, 3 * previous)); `previous` is the last sleep (base before the first)."""
    return np.minimum(cap, rng.uniform(base, 3.0 * np.asarray(previous, dtype=float), size))


def sleeps(policy: str, n: int, retries: int, rng: np.random.Generator, base: float, cap: float) -> np.ndarray:
    """An (n, retries) array: each client's sleep before each retry, under `policy`."""
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {', '.join(POLICIES)}, got {policy!r}")
    out = np.empty((n, retries))
    previous = np.full(n, base)
    for k in range(retries):
        if policy == "constant":
            out[:, k] = base
        elif policy == "exponential":
            out[:, k] = exponential(k, base, cap)
        elif policy == "full_jitter":
            out[:, k] = full_jitter(k, rng, base, cap, n)
        elif policy == "equal_jitter":
            out[:, k] = equal_jitter(k, rng, base, cap, n)
        else:
            out[:, k] = previous = decorrelated_jitter(previous, rng, base, cap, n)
    return out


class RetryBudget:
    """A retry ratio cap: a retry is allowed while retries + 1 <= reserve + ratio * requests.
    (Finagle's and gRPC's budgets also let the counts decay over a window; this one counts since start,
    which is the same over one incident.)"""

    def __init__(self, ratio: float, reserve: int = 0):
        self.ratio = _check("ratio", ratio, strict=False)
        self.reserve = int(_check("reserve", reserve, strict=False))
        self.requests = 0
        self.retries = 0

    def request(self) -> None:
        self.requests += 1

    def try_retry(self) -> bool:
        if self.retries + 1 <= self.reserve + self.ratio * self.requests + 1e-9:
            self.retries += 1
            return True
        return False


@dataclass
class Simulation:
    times: np.ndarray          # arrival time of every attempt made, seconds
    attempt: np.ndarray        # 0 for the first attempt, k for the k-th retry
    client: np.ndarray
    succeeded: int             # clients whose request finally succeeded
    gave_up: int               # clients that ran out of attempts or were denied by a budget
    denied: int                # retries a budget refused to send

    @property
    def retries(self) -> int:
        return int((self.attempt > 0).sum())


def simulate(policy: str, n_clients: int, outage: float, max_attempts: int, base: float, cap: float,
             seed: int, *, client_tokens: float | None = None, client_refill: float = 0.0,
             ratio_cap: float | None = None, reserve: int = 0) -> Simulation:
    """n clients fail together at t = 0 against a server down until `outage` (see the module doc)."""
    n = int(_check("n_clients", n_clients))
    a = int(_check("max_attempts", max_attempts))
    _check("outage", outage, strict=False), _check("base", base), _check("cap", cap)
    if cap < base:
        raise ValueError(f"cap must be >= base ({base:g}), got {cap!r}")
    rng = np.random.default_rng(int(seed))
    # Each client's schedule: the sleeps do not depend on the outcome, so draw them all, then cut each
    # schedule at its first success and at max_attempts.
    t = np.concatenate([np.zeros((n, 1)), np.cumsum(sleeps(policy, n, a - 1, rng, base, cap), axis=1)], axis=1)
    ok = t >= outage
    first_ok = np.where(ok.any(axis=1), ok.argmax(axis=1), a)           # index of the successful attempt
    made = np.arange(a)[None, :] <= np.minimum(first_ok, a - 1)[:, None]
    if client_tokens is None and ratio_cap is None:
        ci, k = np.nonzero(made)
        return Simulation(t[ci, k], k, ci, int((first_ok < a).sum()), int((first_ok >= a).sum()), 0)
    # With a budget, retries are decided in time order; a denied retry ends that client's schedule.
    ci, k = np.nonzero(made)
    order = np.lexsort((k, t[ci, k]))
    ci, k = ci[order], k[order]
    shared = RetryBudget(ratio_cap, reserve) if ratio_cap is not None else None
    clocks = [FakeClock() for _ in range(n)] if client_tokens is not None else None
    buckets = ([TokenBucket(client_tokens, client_refill or 1e-12, clock=c) for c in clocks]
               if client_tokens is not None else None)
    stopped = np.zeros(n, dtype=bool)
    keep = np.zeros(ci.size, dtype=bool)
    denied = 0
    for i, (c, kk) in enumerate(zip(ci.tolist(), k.tolist())):
        if stopped[c]:
            continue
        if kk == 0:
            if shared is not None:
                shared.request()
            keep[i] = True
            continue
        allowed = True
        if buckets is not None:
            clocks[c].t = t[c, kk]
            allowed = buckets[c].try_acquire().admitted
        if allowed and shared is not None:
            allowed = shared.try_retry()
        if allowed:
            keep[i] = True
        else:
            denied += 1
            stopped[c] = True
    ci, k = ci[keep], k[keep]
    success = (t[ci, k] >= outage)
    return Simulation(t[ci, k], k, ci, int(success.sum()), n - int(success.sum()), denied)


def histogram(times, bin_s: float, horizon: float) -> tuple[np.ndarray, np.ndarray]:
    """Arrivals per bin of bin_s seconds over [0, horizon)."""
    _check("bin_s", bin_s), _check("horizon", horizon)
    edges = np.arange(0.0, horizon + bin_s / 2, bin_s)
    counts, _ = np.histogram(np.asarray(times), bins=edges)
    return counts, edges


def full_jitter_expected(n: int, outage: float, max_attempts: int, base: float, cap: float, bin_s: float,
                         horizon: float, grid: int = 20) -> np.ndarray:
    """Expected retry arrivals per bin under full jitter, without sampling: the density of the k-th
    retry's time is that of the (k-1)-th, cut at the outage (a success stops the client), convolved with
    uniform(0, w_k). The first retry alone gives n * bin_s / w_0 per bin: the closed form."""
    dt = bin_s / grid
    m = int(round(horizon / dt))
    arrive = np.zeros(m)                     # density (per step) of the attempt being scheduled
    arrive[0] = 1.0                          # the first attempt: everyone at t = 0
    total = np.zeros(m)
    edges_t = np.arange(m) * dt
    for k in range(max_attempts - 1):
        failing = np.where(edges_t < outage, arrive, 0.0)
        w = float(window(k, base, cap))
        width = max(1, int(round(w / dt)))
        cs = np.concatenate([[0.0], np.cumsum(failing)])      # a box filter: O(m), not O(m * width)
        arrive = (cs[1:] - cs[np.maximum(np.arange(1, m + 1) - width, 0)]) / width
        total += arrive
    return n * total.reshape(-1, grid).sum(axis=1)


def classify(method: str, status: int | None = None, *, sent: bool = True,
             idempotency_key: bool = False) -> tuple[bool, str]:
    """May this failed request be retried? (retry, why). status None with sent=True is a timeout."""
    if not isinstance(method, str) or not method.isalpha():
        raise ValueError(f"method must be an HTTP method name, got {method!r}")
    m = method.upper()
    safe_to_repeat = m in IDEMPOTENT or idempotency_key
    if not sent:
        return True, "never reached the server: nothing happened, any method may retry"
    if status is not None and not (isinstance(status, int) and 100 <= status <= 599):
        raise ValueError(f"status must be an HTTP status code (100-599) or None, got {status!r}")
    if status is not None and status < 400:
        return False, "not a failure"
    if status in (429, 503):
        return True, "the server refused before acting: retry after Retry-After, with jitter"
    if status is not None and 400 <= status < 500 and status != 408:
        return False, "the request itself is wrong: it will fail the same way again"
    if safe_to_repeat:
        why = "idempotent method" if m in IDEMPOTENT else "the idempotency key makes a repeat safe"
        return True, f"outcome unknown, but repeating is harmless ({why})"
    return False, "outcome unknown and the method is not idempotent: a retry may do it twice"
