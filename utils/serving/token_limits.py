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
tag, so a pair's bucket and its reservations live in one slot and one script may touch them all. Tenant
and model are percent-encoded in the key (every character but letters, digits and "-_.~"), so no
separator or brace inside a name can make two pairs share a key or split a pair's hash tag.

The contract, redis-cell's (GCRA on the server's clock, one atomic script per decision), kept for every
input (tests/serving/test_token_limits_adversarial.py runs it on Redis's real clock, with gateway processes
killed mid-admission):
- Over any window of T seconds a pair admits at most burst + rate x T tokens and requests, however many
  gateways (processes, hosts) share the server, since every decision is one script on one clock.
- A reservation lives `reservation_s` (Limits; an hour by default: the longest a reply may stream), not
  the bucket's idle time: a reply that streams past the idle time still gets its refund, into a bucket
  that has expired (and so reads full) or not.
- Validation at the boundary: tenant, model and request id are UTF-8 strings of 1 to MAX_NAME characters;
  counts are finite numbers >= 0 (not bools); anything else raises ValueError before a key is written.

Chapters: token-rate-limits.
"""
from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from typing import Callable, NamedTuple

from utils.components.idempotent_api import checked_name
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
    idle_margin_s: float = 60.0       # an untouched pair's state is kept this long past the time to fill
    reservation_s: float = 3600.0     # a reservation is kept this long: the longest a reply may stream

    def __post_init__(self):
        for name in ("requests_per_s", "request_burst", "tokens_per_s", "token_burst", "idle_margin_s",
                     "reservation_s"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
                raise ValueError(f"{name} must be a finite number > 0, got {v!r}")
        if self.request_burst < 1:
            raise ValueError(f"request_burst must be at least 1 (one request), got {self.request_burst!r}")

    def idle_ms(self) -> int:
        """How long an untouched pair's state is kept: past the time either bucket takes to fill, plus a
        minute, so a key that expires would have read full anyway."""
        fill = max(self.request_burst / self.requests_per_s, self.token_burst / self.tokens_per_s)
        return int(math.ceil(fill * 1000)) + int(math.ceil(self.idle_margin_s * 1000))

    def reservation_ms(self) -> int:
        return int(math.ceil(self.reservation_s * 1000))


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


MAX_NAME = 256       # characters of a tenant, model or request id


def _name(what: str, v) -> str:
    return checked_name(what, v, MAX_NAME)


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
        _names(tenant, model, request_id)
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
        _names(tenant, model, request_id)
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


def pair_key(tenant: str, model: str) -> str:
    """The pair's bucket key: names percent-encoded, so no separator or brace in a name makes two pairs share
    a key or splits the hash tag."""
    from urllib.parse import quote
    return f"tl:{{{quote(_name('tenant', tenant), safe='')}:{quote(_name('model', model), safe='')}}}"


def _names(tenant, model, request_id) -> None:
    _name("tenant", tenant)
    _name("model", model)
    _name("request_id", request_id)


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
redis.call('SET', KEYS[2], fmt(m), 'PX', tonumber(ARGV[9]))   -- the reply's lifetime, not the bucket's idle
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
        _name("request_id", request_id)
        base = pair_key(tenant, model)
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
        r = self._run("admit", self._keys(tenant, model, request_id),
                      self._args(n, float(max_tokens), self.limits.reservation_ms()))
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
    import numpy as np  # the seeded draws only: the limiter itself is plain Python

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


# --- the contract, small and in-process (the chapter's check; the tests run it on Redis's real clock) --------
def contract_scenarios() -> dict:
    """Pairs whose names contain the separator or braces, hostile names and counts, on the reference
    limiter and the Redis key scheme: {scenarios, held}. The reservation that outlives the idle time and
    the gateway processes killed mid-admission need a real Redis: the adversarial test file's."""
    pairs = [("a:b", "c"), ("a", "b:c"), ("a}", "{b"), ("a", "}{b"), ("a%3Ab", "c")]
    held = len({pair_key(t, m) for t, m in pairs}) == len(pairs)
    lim = TwoBucketLimiter(Limits(1.0, 1, 10.0, 100), clock=FakeClock())
    hostile = [(None, "m", "r", 1, 1), ("", "m", "r", 1, 1), ("\ud800", "m", "r", 1, 1), ("a", "m", None, 1, 1),
               ("a", "m", "r", float("nan"), 1), ("a", "m", "r", 1, float("inf")), ("a", "m", "r", -1, 1),
               ("a", "m", "r", True, 1)]
    for args in hostile:
        try:
            lim.admit(*args)
        except ValueError:
            held += not lim._pairs and not lim._reserved
    held += Limits(1.0, 1, 10.0, 100).reservation_ms() > Limits(1.0, 1, 10.0, 100).idle_ms()
    return dict(scenarios=2 + len(hostile), held=held)
