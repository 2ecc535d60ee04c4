"""Token rate limits: two buckets per tenant per model, reserve-then-settle, in Python and in Redis.

    limits = Limits(requests_per_s=5, request_burst=10, tokens_per_s=20_000, token_burst=200_000)
    lim = TwoBucketLimiter(limits, clock=FakeClock())          # the reference, one process
    lim = RedisTokenLimiter(Resp(host, port), limits)          # the same logic, one Redis for every gateway
    a = lim.admit("acme", "llama-3-70b", "req-1", prompt_tokens=900, max_tokens=4000)
    ...                                                        # stream the reply
    lim.settle("acme", "llama-3-70b", "req-1", output_tokens=312)   # refunds the 3,688 not used

Why two buckets: a request costs 50 tokens or 50,000, so a request bucket alone bounds nothing the GPUs
care about, and a token bucket alone lets a tenant open thousands of tiny requests (connections, KV
slots, per-request overhead). Each (tenant, model) pair has both, and a request is admitted only when
both have room: one request from the request bucket, prompt + max_tokens from the token bucket, taken
together or not at all.

Why reserve-then-settle: the output length is unknown at admission. Charging the prompt alone lets a
tenant overshoot by every reply; charging max_tokens and keeping it makes a tenant who asks for 4,000
and uses 300 pay thirteen times over. So admission reserves max_tokens, and settle refunds the unused
part when the reply ends (capped at the capacity, like any refill). A settle runs once per request id:
a retried settle refunds nothing the second time, and a reservation never settled (the gateway died)
is never refunded: the tenant pays max_tokens, the safe side.

The arithmetic is TokenBucket's (utils/components/token_bucket.py): lazy refill min(C, tokens + r dt), a negative
dt earns nothing, admitted when tokens + EPS >= n, retry-after (n - tokens)/r; the two buckets of a pair
share one clock reading per decision. The Lua scripts below do the same operations in the same order on
doubles, and store every level as "%.17g" (a double's exact round trip), so on the same sequence the
Redis limiter and this reference give the same decisions and the same levels to the last bit
(tests/serving/test_token_limits.py runs both on a seeded sequence). Redis runs a script atomically: no other
command interleaves between the read and the write, which is what makes one counter safe for many
gateways. The clock of the Redis limiter is Redis's own TIME (one clock for every gateway: monotonic
clocks on two hosts are not comparable), unless a clock is passed (the tests pass a fake one).
Keys: "tl:{tenant:model}" and "tl:{tenant:model}:r:<request id>": the braces are a Redis Cluster hash
tag, so a pair's bucket and its reservations live in one slot and one script may touch them all.

Chapters: token-rate-limits.
"""
from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from typing import Callable, NamedTuple

import numpy as np

from utils.components.token_bucket import EPS, FakeClock, TokenBucket

__all__ = ["Limits", "Admission", "Settlement", "TwoBucketLimiter", "RedisTokenLimiter", "ADMIT_LUA",
           "SETTLE_LUA", "request_sequence", "replay", "FakeClock"]


@dataclass(frozen=True)
class Limits:
    """One (tenant, model) pair's limits: requests per second and burst, tokens per second and burst."""
    requests_per_s: float
    request_burst: float
    tokens_per_s: float
    token_burst: float

    def __post_init__(self):
        for name in ("requests_per_s", "request_burst", "tokens_per_s", "token_burst"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
                raise ValueError(f"{name} must be a finite number > 0, got {v!r}")
        if self.request_burst < 1:
            raise ValueError(f"request_burst must be at least 1 (one request), got {self.request_burst!r}")

    def idle_ms(self) -> int:
        """How long an untouched pair's state is kept: past the time either bucket takes to fill, plus a
        minute, so a key that expires would have read full anyway."""
        fill = max(self.request_burst / self.requests_per_s, self.token_burst / self.tokens_per_s)
        return int(math.ceil(fill * 1000)) + 60_000


class Admission(NamedTuple):
    admitted: bool
    retry_after: float      # seconds until both buckets have room; inf: larger than the token burst (413)
    reserved: float         # tokens taken now: prompt + max_tokens (0 for a refusal or a repeated id)
    requests_left: float
    tokens_left: float


class Settlement(NamedTuple):
    settled: bool           # False: no such reservation (already settled, never admitted, or expired)
    refunded: float         # max_tokens - output_tokens; negative when a reply overran (charged)
    tokens_left: float


def _count(name: str, v) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {v!r}")
    return float(v)


# --- the reference: one process ---------------------------------------------------------------------
class _Bucket(TokenBucket):
    """TokenBucket with the moves a pair needs at the limiter's one clock reading (lock held by the caller)."""

    def level_at(self, now: float) -> float:
        self._refill(now)
        return self._tokens

    def take(self, n: float) -> None:
        self._tokens = max(0.0, self._tokens - n)

    def credit(self, n: float) -> None:
        self._tokens = min(self.capacity, self._tokens + n)


class TwoBucketLimiter:
    """The reference implementation: a dict of bucket pairs and reservations under one lock."""

    def __init__(self, limits: Limits, *, clock: Callable[[], float]):
        self.limits, self.clock = limits, clock
        self._pairs: dict = {}
        self._reserved: dict = {}
        self._lock = threading.Lock()

    def _pair(self, key, now):
        if key not in self._pairs:                           # first sight: both buckets full
            L = self.limits
            self._pairs[key] = (_Bucket(L.request_burst, L.requests_per_s, clock=lambda: now),
                                _Bucket(L.token_burst, L.tokens_per_s, clock=lambda: now))
        return self._pairs[key]

    def admit(self, tenant: str, model: str, request_id: str, prompt_tokens: float, max_tokens: float) -> Admission:
        n = _count("prompt_tokens", prompt_tokens) + _count("max_tokens", max_tokens)
        now = self.clock()
        key = (tenant, model)
        with self._lock:
            rb, tb = self._pair(key, now)
            r, t = rb.level_at(now), tb.level_at(now)
            if (key, request_id) in self._reserved:          # a retried admission: charged once
                return Admission(True, 0.0, 0.0, r, t)
            if n > tb.capacity + EPS:
                return Admission(False, math.inf, 0.0, r, t)
            wait = 0.0
            if r + EPS < 1.0:
                wait = max(wait, (1.0 - r) / rb.rate)
            if t + EPS < n:
                wait = max(wait, (n - t) / tb.rate)
            if wait > 0.0:
                return Admission(False, wait, 0.0, r, t)
            rb.take(1.0)
            tb.take(n)
            self._reserved[(key, request_id)] = float(max_tokens)
            return Admission(True, 0.0, n, rb._tokens, tb._tokens)

    def settle(self, tenant: str, model: str, request_id: str, output_tokens: float) -> Settlement:
        used = _count("output_tokens", output_tokens)
        now = self.clock()
        key = (tenant, model)
        with self._lock:
            reserved = self._reserved.pop((key, request_id), None)
            if reserved is None:
                pair = self._pairs.get(key)
                return Settlement(False, 0.0, pair[1]._tokens if pair else float(self.limits.token_burst))
            rb, tb = self._pair(key, now)
            rb.level_at(now)
            tb.level_at(now)
            refund = reserved - used
            tb.credit(refund)
            return Settlement(True, refund, tb._tokens)


# --- the same logic as two Lua scripts, run atomically by Redis -------------------------------------
_PRELUDE = r"""
local function fmt(x) return string.format('%.17g', x) end
local now
if ARGV[1] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) + tonumber(t[2]) / 1000000
else
  now = tonumber(ARGV[1])
end
local rc, rr, tc, tr = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local idle = tonumber(ARGV[6])
local EPS = 1e-9
local s = redis.call('HMGET', KEYS[1], 'req', 'tok', 'ts')
local req = tonumber(s[1]) or rc
local tok = tonumber(s[2]) or tc
local last = tonumber(s[3]) or now
local el = now - last
if el > 0 then                       -- lazy refill; a clock that stepped back earns nothing
  req = math.min(rc, req + el * rr)
  tok = math.min(tc, tok + el * tr)
end
local function save()
  redis.call('HSET', KEYS[1], 'req', fmt(req), 'tok', fmt(tok), 'ts', fmt(now))
  redis.call('PEXPIRE', KEYS[1], idle)
end
"""

ADMIT_LUA = _PRELUDE + r"""
-- ARGV[7] prompt + max_tokens, ARGV[8] max_tokens (the reservation); KEYS[2] the reservation's key
local n, m = tonumber(ARGV[7]), tonumber(ARGV[8])
if redis.call('EXISTS', KEYS[2]) == 1 then            -- a retried admission: charged once
  save()
  return {1, fmt(0), fmt(0), fmt(req), fmt(tok)}
end
if n > tc + EPS then
  save()
  return {0, fmt(math.huge), fmt(0), fmt(req), fmt(tok)}
end
local wait = 0
if req + EPS < 1 then wait = math.max(wait, (1 - req) / rr) end
if tok + EPS < n then wait = math.max(wait, (n - tok) / tr) end
if wait > 0 then
  save()
  return {0, fmt(wait), fmt(0), fmt(req), fmt(tok)}
end
req = math.max(0, req - 1)
tok = math.max(0, tok - n)
save()
redis.call('SET', KEYS[2], fmt(m), 'PX', idle)
return {1, fmt(0), fmt(n), fmt(req), fmt(tok)}
"""

SETTLE_LUA = r"""
local reserved = redis.call('GET', KEYS[2])
if not reserved then                                  -- settled already, never admitted, or expired
  local t = redis.call('HGET', KEYS[1], 'tok')
  return {0, string.format('%.17g', 0), t or string.format('%.17g', tonumber(ARGV[4]))}
end
redis.call('DEL', KEYS[2])
""" + _PRELUDE + r"""
local refund = tonumber(reserved) - tonumber(ARGV[7])
tok = math.min(tc, tok + refund)
save()
return {1, fmt(refund), fmt(tok)}
"""


class RedisTokenLimiter:
    """The two-bucket limiter on Redis: one EVALSHA per admission and one per settle.
    clock=None uses Redis's TIME inside the script; pass a clock (seconds) to drive it from outside."""

    def __init__(self, conn, limits: Limits, *, clock: Callable[[], float] | None = None):
        self.conn, self.limits, self.clock = conn, limits, clock
        self._sha = {name: conn.call("SCRIPT", "LOAD", src).decode()
                     for name, src in (("admit", ADMIT_LUA), ("settle", SETTLE_LUA))}
        self._src = {"admit": ADMIT_LUA, "settle": SETTLE_LUA}

    def _keys(self, tenant, model, request_id):
        base = f"tl:{{{tenant}:{model}}}"
        return base, f"{base}:r:{request_id}"

    def _args(self, *extra):
        L = self.limits
        now = "" if self.clock is None else float(self.clock())
        return (now, float(L.request_burst), float(L.requests_per_s), float(L.token_burst), float(L.tokens_per_s),
                L.idle_ms(), *extra)

    def _run(self, name, keys, args):
        from utils.serving.resp import RespError
        try:
            return self.conn.call("EVALSHA", self._sha[name], len(keys), *keys, *args)
        except RespError as e:            # the script cache was flushed (a restart, SCRIPT FLUSH): send it
            if e.code != "NOSCRIPT":
                raise
            return self.conn.call("EVAL", self._src[name], len(keys), *keys, *args)

    def admit(self, tenant: str, model: str, request_id: str, prompt_tokens: float, max_tokens: float) -> Admission:
        n = _count("prompt_tokens", prompt_tokens) + _count("max_tokens", max_tokens)
        r = self._run("admit", self._keys(tenant, model, request_id), self._args(n, float(max_tokens)))
        return Admission(bool(r[0]), *(float(x) for x in r[1:]))

    def settle(self, tenant: str, model: str, request_id: str, output_tokens: float) -> Settlement:
        used = _count("output_tokens", output_tokens)
        r = self._run("settle", self._keys(tenant, model, request_id), self._args(used))
        return Settlement(bool(r[0]), float(r[1]), float(r[2]))


# --- a seeded request sequence and a replay that drives either limiter -------------------------------
def request_sequence(n: int, seed: int, *, rate: float = 8.0, tenants=("acme", "beta"), model: str = "m",
                     decode_tps: float = 50.0) -> list[dict]:
    """n requests, Poisson arrivals at `rate` per second, prompts from 50 to 50,000 tokens (log-uniform),
    max_tokens from a menu, the reply a uniform share of max_tokens; a reply ends output/decode_tps later."""
    g = np.random.default_rng(seed)
    t = np.cumsum(g.exponential(1.0 / rate, n))
    prompt = np.round(np.exp(g.uniform(math.log(50), math.log(50_000), n)))
    max_tokens = g.choice([256, 1024, 4096], n)
    output = np.floor(max_tokens * g.uniform(0.0, 1.0, n))
    who = g.integers(0, len(tenants), n)
    return [dict(t=float(t[i]), id=f"r{i}", tenant=tenants[who[i]], model=model, prompt=float(prompt[i]),
                 max_tokens=float(max_tokens[i]), output=float(output[i]),
                 done=float(t[i] + output[i] / decode_tps)) for i in range(n)]


def replay(limiter, clock: FakeClock, seq: list[dict], *, settle: bool = True) -> list[tuple]:
    """Admit each request at its arrival and settle each admitted one when its reply ends, in time order
    (ties: settles first). Returns every decision in order, for comparing two limiters."""
    events = [(r["t"], 1, i) for i, r in enumerate(seq)]
    out, pending = [], []
    import heapq
    for t, _, i in events:
        while pending and pending[0][0] <= t:
            td, j = heapq.heappop(pending)
            clock.t = td
            out.append(("settle", seq[j]["id"], limiter.settle(seq[j]["tenant"], seq[j]["model"], seq[j]["id"],
                                                               seq[j]["output"])))
        clock.t = t
        r = seq[i]
        a = limiter.admit(r["tenant"], r["model"], r["id"], r["prompt"], r["max_tokens"])
        out.append(("admit", r["id"], a))
        if a.admitted and settle:
            heapq.heappush(pending, (r["done"], i))
    while pending:
        td, j = heapq.heappop(pending)
        clock.t = td
        out.append(("settle", seq[j]["id"], limiter.settle(seq[j]["tenant"], seq[j]["model"], seq[j]["id"],
                                                           seq[j]["output"])))
    return out
