"""A circuit breaker: three states, two thresholds, a timeout and a probe limit; a clock you can fake.

    CLOSED     calls go through; outcomes land in a sliding window of `window_s` seconds. On a failure,
               if the window holds at least `min_requests` outcomes and their failure rate is at least
               `failure_rate`, the breaker OPENS (a rate over a window: noise does not trip it, a real
               degradation does, and a quiet service is not judged on three requests).
    OPEN       calls are refused without touching the backend, which is what lets it recover. After
               `open_timeout_s` the next call finds it HALF_OPEN.
    HALF_OPEN  at most `probe_limit` calls are let through as probes; `close_after` successes close it
               (with an empty window), a single failure opens it again for another timeout.

`ConsecutiveBreaker` is the same machine with the rule this chapter argues against: open after `k`
failures in a row. `FlakyBackend` fails with a probability that is a function of time, from a seeded
generator, and `simulate` drives a breaker with requests at a fixed rate on a `FakeClock`.

    clock = FakeClock()
    cb = CircuitBreaker(failure_rate=0.2, window_s=30, min_requests=20, open_timeout_s=30,
                        probe_limit=5, close_after=3, clock=clock)
    permit = cb.allow()                  # a Permit, or None when the call is refused
    if permit:
        cb.record(permit, ok=call_backend())

The contract, Resilience4j's, kept for every input (tests/components/test_circuit_breaker_adversarial.py):
- Half-open permits are counted: at most `probe_limit` calls are let through, and only an answer to one of
  them counts towards closing. Every call let through gets a `Permit` naming the spell (one stay in one
  state) it was let through in, and `record` takes it back with the outcome: an answer to a call from an
  earlier spell (let through before the breaker opened, or a probe of a half-open spell that has ended)
  changes no state, even while probes are out; it is only counted, in `stale`. A permit is answered once,
  and only by the breaker that gave it. A probe that never answers does not hold its permit for ever: once
  a probe has been out `probe_timeout_s` (default: open_timeout_s) without closing the breaker, it counts
  as a failure and the breaker opens again (Resilience4j's maxWaitDurationInHalfOpenState), so it
  half-opens again later with fresh permits instead of refusing every call for good.
- Arguments are checked: rates in (0, 1], durations finite and > 0, counts whole numbers >= 1 (k too),
  `ok` a bool (None is not a failure), a permit this breaker gave and nobody answered yet; anything else
  raises ValueError and changes nothing.

Chapters: circuit-breaker.
"""
from __future__ import annotations

import math
import random
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

CLOSED, OPEN, HALF_OPEN = "closed", "open", "half-open"


class FakeClock:
    """Monotonic seconds that move only when told: tests and simulations own time."""

    def __init__(self, t: float = 0.0):
        self.t = float(t)

    def __call__(self) -> float:
        return self.t

    def advance(self, dt: float) -> None:
        if dt < 0:
            raise ValueError("a monotonic clock does not go back")
        self.t += dt


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and not math.isnan(v)


class CircuitOpen(Exception):
    """Raised by `call` when the breaker refuses: the caller fails fast instead of waiting on a dead backend."""


class Permit:
    """One call let through: `record` takes it back, so an answer is matched to the spell that let it through."""
    __slots__ = ("breaker", "spell", "state", "answered")

    def __init__(self, breaker: CircuitBreaker, spell: int, state: str):
        self.breaker, self.spell, self.state, self.answered = breaker, spell, state, False

    def __repr__(self) -> str:
        return f"Permit(spell={self.spell}, state={self.state!r}, answered={self.answered})"


class CircuitBreaker:
    def __init__(self, *, failure_rate: float = 0.5, window_s: float = 30.0, min_requests: int = 20,
                 open_timeout_s: float = 30.0, probe_limit: int = 5, close_after: int = 3,
                 probe_timeout_s: float | None = None, clock: Callable[[], float] = time.monotonic):
        probe_timeout_s = open_timeout_s if probe_timeout_s is None else probe_timeout_s
        if not _number(failure_rate) or not 0 < failure_rate <= 1:
            raise ValueError(f"failure_rate must be in (0, 1], got {failure_rate!r}")
        if not all(_number(v) and 0 < v < math.inf for v in (window_s, open_timeout_s, probe_timeout_s)):
            raise ValueError("window_s, open_timeout_s and probe_timeout_s must be finite and > 0")
        if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1
                   for v in (min_requests, probe_limit, close_after)):
            raise ValueError("min_requests, probe_limit and close_after must be whole numbers >= 1")
        if close_after > probe_limit:
            raise ValueError(f"close_after ({close_after}) > probe_limit ({probe_limit}): it could never close")
        self.failure_rate, self.window_s, self.min_requests = failure_rate, window_s, min_requests
        self.open_timeout_s, self.probe_limit, self.close_after = open_timeout_s, probe_limit, close_after
        self.probe_timeout_s, self.half_opened_at = probe_timeout_s, 0.0
        self.clock = clock                     # monotonic: a wall clock stepped back would hold it open
        self._state, self.opened_at = CLOSED, 0.0
        self._spell = 0                        # counts the states entered: a permit belongs to the one that gave it
        self.stale = 0                         # answers to calls from an earlier spell: counted, nothing more
        self.window: deque[tuple[float, bool]] = deque()   # (time, failed) of the calls let through
        self.failures = 0                      # failures in the window, kept with it
        self.probes = self.probe_successes = 0
        self.transitions: list[tuple[float, str]] = []

    # --- the state machine ---------------------------------------------------------------------
    @property
    def state(self) -> str:
        if self._state == OPEN and self.clock() - self.opened_at >= self.open_timeout_s:
            self._to(HALF_OPEN)                 # lazily: no timer thread, the next caller sees it
        elif (self._state == HALF_OPEN and self.probes > self.probe_successes
              and self.clock() - self.half_opened_at >= self.probe_timeout_s):
            self._to(OPEN)                      # a probe that never answered is a failure
        return self._state

    def _to(self, state: str) -> None:
        self._state = state
        self._spell += 1
        self.transitions.append((self.clock(), state))
        if state == OPEN:
            self.opened_at = self.clock()
        if state == HALF_OPEN:
            self.probes = self.probe_successes = 0
            self.half_opened_at = self.clock()
        if state == CLOSED:
            self.window.clear()                 # judged afresh: old failures do not reopen it
            self.failures = 0

    def allow(self) -> Permit | None:
        """May this call go to the backend? A Permit to hand back to `record`, or None (refused). In
        half-open, each permit is one of the limited probes."""
        state = self.state
        if state == HALF_OPEN and self.probes < self.probe_limit:
            self.probes += 1
        elif state != CLOSED:
            return None
        return Permit(self, self._spell, state)

    def record(self, permit: Permit, ok: bool) -> None:
        """The outcome of the call `allow` gave `permit` to."""
        if type(ok).__name__ not in ("bool", "bool_"):          # numpy's bool too; None is not a failure
            raise ValueError(f"ok must be True or False, got {ok!r}")
        if not isinstance(permit, Permit) or permit.breaker is not self:
            raise ValueError(f"record takes a permit this breaker's allow() gave, got {permit!r}")
        if permit.answered:
            raise ValueError(f"{permit!r} was answered already: one answer per call")
        permit.answered, ok = True, bool(ok)
        state = self.state
        if permit.spell != self._spell:
            self.stale += 1                     # let through in an earlier spell: not this spell's evidence
            return
        if state == HALF_OPEN:
            if not ok:
                self._to(OPEN)                  # still broken: another full timeout before the next probe
            else:
                self.probe_successes += 1
                if self.probe_successes >= self.close_after:
                    self._to(CLOSED)
            return
        self._observe(ok)                       # closed: no permit is given while open
        if not ok and self._tripped():
            self._to(OPEN)

    # --- the rule that opens it (a subclass changes only these two) -------------------------------
    def _observe(self, ok: bool) -> None:
        now = self.clock()
        self.window.append((now, not ok))
        self.failures += not ok
        while self.window and self.window[0][0] <= now - self.window_s:
            self.failures -= self.window.popleft()[1]

    def _tripped(self) -> bool:
        n = len(self.window)
        return n >= self.min_requests and self.failures >= self.failure_rate * n

    # --- convenience ------------------------------------------------------------------------------
    def call(self, fn: Callable[[], object]):
        permit = self.allow()
        if permit is None:
            raise CircuitOpen(f"circuit {self.state}: call refused")
        try:
            out = fn()
        except Exception:
            self.record(permit, ok=False)
            raise
        self.record(permit, ok=True)
        return out


class ConsecutiveBreaker(CircuitBreaker):
    """Opens after `k` failures in a row: the rule that opens on noise when k is small and never when
    k is large enough not to."""

    def __init__(self, k: int = 5, **kw):
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise ValueError(f"k must be >= 1, got {k!r}")
        super().__init__(**kw)
        self.k, self.run = k, 0

    def _observe(self, ok: bool) -> None:
        self.run = 0 if ok else self.run + 1

    def _tripped(self) -> bool:
        return self.run >= self.k

    def _to(self, state: str) -> None:
        super()._to(state)
        if state == CLOSED:
            self.run = 0


@dataclass
class FlakyBackend:
    """Fails each call with probability error_rate(t), from its own seeded generator."""
    error_rate: Callable[[float], float]
    seed: int = 0
    calls: int = 0
    rng: random.Random = field(init=False)

    def __post_init__(self):
        self.rng = random.Random(self.seed)

    def __call__(self, t: float) -> bool:
        self.calls += 1
        return self.rng.random() >= self.error_rate(t)      # True = success


def step_error_rate(healthy: float, degraded: float, onset_s: float, end_s: float) -> Callable[[float], float]:
    """An error rate that is `healthy`, then `degraded` from onset_s to end_s, then healthy again."""
    return lambda t: degraded if onset_s <= t < end_s else healthy


def simulate(breaker: CircuitBreaker, backend: FlakyBackend, clock: FakeClock, *, rate: float,
             duration_s: float) -> dict:
    """Requests at a fixed rate for duration_s: what reached the backend, what failed, what was refused,
    and the breaker's transitions. Each call is instantaneous on the fake clock."""
    n = int(round(rate * duration_s))
    sent = failed = refused = 0
    for i in range(n):
        clock.t = i / rate
        permit = breaker.allow()
        if permit is None:
            refused += 1
            continue
        sent += 1
        ok = backend(clock.t)
        failed += not ok
        breaker.record(permit, ok)
    return dict(requests=n, sent=sent, failed=failed, refused=refused, transitions=list(breaker.transitions))


# --- the arithmetic of the two rules ----------------------------------------------------------------
def run_probability(n: int, k: int, p: float) -> float:
    """P(at least one run of k or more failures among n independent calls failing with probability p):
    a Markov chain over the current run length (0..k-1, and k absorbing), its n-th power by squaring."""
    import numpy as np
    if k > n:
        return 0.0                             # fewer calls than the run: it cannot happen
    T = np.zeros((k + 1, k + 1))
    for j in range(k):
        T[j, 0] = 1 - p                        # a success resets the run
        T[j, j + 1] = p                        # a failure extends it
    T[k, k] = 1.0                              # tripped stays tripped
    return float(np.linalg.matrix_power(T, int(n))[0, k])


def run_probability_approx(n: int, k: int, p: float) -> float:
    """The Poisson route: runs of k start about (n - k)(1 - p) p^k + p^k times, rarely enough to be
    nearly independent, so P(none) ~ exp(-that)."""
    import math
    return 1 - math.exp(-((n - k) * (1 - p) * p ** k + p ** k))


def binomial_tail(n: int, p: float, m: int) -> float:
    """P(X >= m) for X ~ Binomial(n, p), summed in logs so no term under- or overflows."""
    import math
    if m <= 0:
        return 1.0
    if p <= 0:
        return 0.0
    if p >= 1:
        return 1.0 if m <= n else 0.0
    lp, lq = math.log(p), math.log1p(-p)
    # Terms more than 40 standard deviations (and 40) from the mean, or from m past it, are below e^-700 of the
    # largest: nothing to a double's sum, so the sum costs the square root of n, not n.
    mean, sd = n * p, math.sqrt(n * p * (1 - p))
    lo, hi = max(m, math.floor(mean - 40 * sd - 40)), min(n, math.ceil(max(m, mean) + 40 * sd + 40))
    terms = [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * lp + (n - i) * lq
             for i in range(lo, hi + 1)]
    if not terms:
        return 0.0
    top = max(terms)
    return min(1.0, math.exp(top) * sum(math.exp(t - top) for t in terms))
