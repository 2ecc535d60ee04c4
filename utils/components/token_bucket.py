"""A token bucket: two parameters, one lazy refill and one lock.

    bucket = TokenBucket(capacity=50, rate=10.0)        # bursts of up to 50, 10 per second sustained
    d = bucket.try_acquire()                            # Decision(admitted, retry_after, tokens)
    if not d.admitted:
        respond(429, headers={"Retry-After": retry_after_header(d.retry_after)})

The rules (tests/chains/test_token_bucket.py holds each of them):
- capacity (tokens) is the largest burst: a bucket left idle fills to it and no further. rate (tokens
  per second) is the sustained throughput. Over any window of T seconds the bucket admits at most
  capacity + rate * T, and a client that keeps asking gets rate * T once the burst is spent. They are two
  numbers with two units; a bucket built with capacity = rate has silently chosen a burst of "one
  second's worth", which is rarely what the policy said.
- Lazy refill: no timer thread. Each call computes the tokens earned since the last call,
  min(capacity, tokens + elapsed * rate), so the bucket costs nothing while nobody asks.
- The clock is time.monotonic by default. A wall clock (time.time) steps when NTP or an operator sets
  it: a step forward refills the bucket at once, and a step back makes elapsed negative, which an
  unguarded refill turns into a debt of rate * step tokens (a refusal lasting as long as the step).
  This bucket ignores a negative elapsed and restarts from the new reading, but only a monotonic clock
  fixes the forward step: nothing inside the bucket can tell a step from real time passing.
- One lock around read-clock, refill and decide: a clock read outside the lock lets a thread with an
  older reading move `last` backwards, so the same interval is refilled twice.
- retry_after is computed from the deficit: (n - tokens) / rate seconds, the exact wait after which the
  same request is admitted (if nobody else takes the tokens first). An HTTP Retry-After header holds
  whole seconds, so it is rounded up, never down: a client told to come back early is refused again.
- Tokens are floats; a decision compares with a tolerance of EPS tokens so that ten refills of a tenth
  of a token admit one request (0.1 summed ten times is 0.9999999999999999).
Bad arguments raise ValueError with one line naming the argument.

The contract for every input (tests/components/test_token_bucket_adversarial.py feeds each, from threads): over
any window of T seconds at most capacity + rate * T tokens are admitted, whatever the callers; n is a finite
number > 0 (not a bool, not None); a clock reading that is not a finite number raises ValueError and
changes nothing (a NaN kept as `last` would make every later elapsed NaN: a bucket that never refills).

Chapters: playground-abuse, token-bucket.
"""
from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from typing import Callable, NamedTuple

EPS = 1e-9     # tokens: below any request's cost, above float rounding in a refill


class Decision(NamedTuple):
    admitted: bool
    retry_after: float     # seconds until the same request would be admitted; 0 when admitted
    tokens: float          # tokens left after the decision


def _positive(name: str, v) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {v!r}")
    return float(v)


class TokenBucket:
    """capacity: the largest burst (tokens); rate: the sustained refill (tokens per second);
    clock: seconds, monotonic (the default, time.monotonic); tokens: the starting level (full)."""

    def __init__(self, capacity: float, rate: float, *, clock: Callable[[], float] = time.monotonic,
                 tokens: float | None = None):
        self.capacity = _positive("capacity", capacity)
        self.rate = _positive("rate", rate)
        self.clock = clock
        start = self.capacity if tokens is None else float(tokens)
        if not 0 <= start <= self.capacity:
            raise ValueError(f"tokens must be between 0 and capacity ({self.capacity:g}), got {tokens!r}")
        self._tokens = start
        self._last = clock()
        if isinstance(self._last, bool) or not isinstance(self._last, (int, float)) or not math.isfinite(self._last):
            raise ValueError(f"clock must read a finite number of seconds, got {self._last!r}")
        self._lock = threading.Lock()

    def _refill(self, now: float) -> None:
        # Called with the lock held. A negative elapsed (a clock that stepped back) earns nothing, and
        # `last` follows the clock so the bucket resumes refilling from the new reading at once.
        if isinstance(now, bool) or not isinstance(now, (int, float)) or not math.isfinite(now):
            raise ValueError(f"the clock must read a finite number of seconds, got {now!r}")
        elapsed = now - self._last
        if elapsed > 0:
            self._tokens = min(self.capacity, self._tokens + elapsed * self.rate)
        self._last = now

    def try_acquire(self, n: float = 1.0) -> Decision:
        """Take n tokens if they are there; otherwise take nothing and say how long to wait."""
        n = _positive("n", n)
        if n > self.capacity + EPS:
            raise ValueError(f"n must be <= capacity ({self.capacity:g}): {n:g} tokens can never be admitted")
        with self._lock:
            self._refill(self.clock())          # the clock is read under the lock (see module doc)
            if self._tokens + EPS >= n:
                self._tokens = max(0.0, self._tokens - n)
                return Decision(True, 0.0, self._tokens)
            return Decision(False, (n - self._tokens) / self.rate, self._tokens)

    def tokens(self) -> float:
        """The level now (refilled to the clock's current reading)."""
        with self._lock:
            self._refill(self.clock())
            return self._tokens


class UnguardedBucket(TokenBucket):
    """The common bug, kept to show it: the refill trusts the clock, so a step back becomes a debt."""

    def _refill(self, now: float) -> None:
        self._tokens = min(self.capacity, self._tokens + (now - self._last) * self.rate)
        self._last = now


def retry_after_header(seconds: float) -> str:
    """The Retry-After header's value (RFC 9110: a whole number of seconds), rounded up."""
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"seconds must be finite and >= 0, got {seconds!r}")
    return str(math.ceil(seconds - EPS)) if seconds > EPS else "0"


def max_admitted(capacity: float, rate: float, window: float) -> float:
    """The most a full bucket admits in a window of `window` seconds: the burst plus the refill."""
    return capacity + rate * window


@dataclass
class FakeClock:
    """A clock for tests and the chapter: time moves only when told. `step` jumps it (an NTP step)."""
    t: float = 0.0

    def __call__(self) -> float:
        return self.t

    def advance(self, dt: float) -> None:
        if dt < 0:
            raise ValueError("advance is forward only; use step() for a clock that jumps")
        self.t += dt

    def step(self, dt: float) -> None:
        self.t += dt


def drive(bucket: TokenBucket, clock: FakeClock, arrivals) -> list[Decision]:
    """Offer one request at each reading in `arrivals` (what `clock` shows at each request, in order;
    a wall clock's readings may step) and return the decisions. The chapter and the tests use it."""
    out = []
    for t in arrivals:
        clock.t = float(t)
        out.append(bucket.try_acquire())
    return out
