"""Routing requests over replicas that each keep a prefix cache: which replica gets a request decides
how much of its prompt is already there.

Three routers, each with `route(prompt, loads) -> replica index`, where `loads[i]` is the number of
requests in flight on replica i:

- `RandomRouter`: a seeded uniform choice. It spreads load evenly and ignores the caches, so a
  conversation's next turn lands on the replica holding its history with probability 1/R.
- `BoundedHashRouter`: consistent hashing with bounded loads (Mirrokni, Thorup and Zadimoghaddam,
  "Consistent Hashing with Bounded Loads", SODA 2018). The key is the hash of the prompt's first
  `key_tokens` tokens, placed on a ring of `vnodes` points per replica; the request goes to the first
  replica clockwise whose load is below ceil((1 + epsilon) (in flight + 1) / R). The same prefix goes
  to the same replica until that replica is full, then to the next on the ring: affinity without a
  hot spot, and without the router knowing anything of the caches.
- `CacheAwareRouter`: knows what every replica holds, approximately, the way a KV-aware router does
  it: an index from chained block hash (utils.serving.prefix_cache.block_hashes) to the replicas it sent those
  blocks to. A request goes to the least-loaded replica among those holding its longest indexed prefix,
  if that replica is under the same load bound; otherwise to the least-loaded replica. Evictions are
  not reported back, so the index over-states what is cached (as a router without eviction events does).

`multi_tenant_trace` builds a seeded trace of several tenants, each with its own system prompt and its
own multi-turn conversations (utils.serving.prefix_cache.multi_turn_trace, token ids offset per tenant so no
two tenants share a token by chance), interleaved in a seeded order. `simulate_fleet` runs a router
over it with one RadixCache per replica; in flight means assigned within the last `window` requests
(Little's law with a constant service time), so no clock is needed and every count is exact.

Chapters: fleet-10k-rps.
"""
from __future__ import annotations

import bisect
import hashlib
import math
import random
from array import array
from collections import deque
from dataclasses import dataclass

from utils.serving.prefix_cache import RadixCache, Request, block_hashes, multi_turn_trace

__all__ = ["RandomRouter", "BoundedHashRouter", "CacheAwareRouter", "load_bound", "multi_tenant_trace",
           "simulate_fleet", "TenantRequest"]


def _whole(name: str, v, minimum: int = 1) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
        raise ValueError(f"{name} must be a whole number >= {minimum}, got {v!r}")
    return v


def _h64(data: bytes) -> int:
    """A stable 64-bit hash (blake2b): the same on every machine and every run."""
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big")


def prefix_key(prompt, key_tokens: int) -> int:
    """The routing key: a stable hash of the prompt's first key_tokens token ids."""
    return _h64(array("Q", prompt[:key_tokens]).tobytes())


def load_bound(in_flight: int, n_replicas: int, epsilon: float) -> int:
    """The most requests one replica may hold: ceil((1 + epsilon) (in flight + 1) / R), counting the
    request being placed. At least 1, so a fleet can always place a request."""
    return max(1, math.ceil((1 + epsilon) * (in_flight + 1) / n_replicas))


class RandomRouter:
    def __init__(self, n_replicas: int, seed: int = 0):
        self.n = _whole("n_replicas", n_replicas)
        self.rng = random.Random(seed)

    def route(self, prompt, loads) -> int:
        return self.rng.randrange(self.n)

    def sent(self, replica: int, tokens) -> None:   # a random router remembers nothing
        pass


class BoundedHashRouter:
    def __init__(self, n_replicas: int, key_tokens: int = 256, epsilon: float = 0.25, vnodes: int = 64):
        self.n = _whole("n_replicas", n_replicas)
        self.key_tokens = _whole("key_tokens", key_tokens)
        if not epsilon > 0:
            raise ValueError(f"epsilon must be > 0 (a bound of exactly the mean cannot place every request), got {epsilon!r}")
        self.epsilon = float(epsilon)
        points = sorted((_h64(f"{r}/{v}".encode()), r) for r in range(self.n) for v in range(_whole("vnodes", vnodes)))
        self._points = [h for h, _ in points]
        self._owners = [r for _, r in points]

    def ring_order(self, key: int):
        """Replicas in the order a key meets them clockwise on the ring, each once."""
        i, seen = bisect.bisect_right(self._points, key), set()
        for j in range(len(self._points)):
            r = self._owners[(i + j) % len(self._points)]
            if r not in seen:
                seen.add(r)
                yield r

    def route(self, prompt, loads) -> int:
        cap = load_bound(sum(loads), self.n, self.epsilon)
        for r in self.ring_order(prefix_key(prompt, self.key_tokens)):
            if loads[r] < cap:
                return r
        raise AssertionError("unreachable: the bound exceeds the mean load, so some replica is under it")

    def sent(self, replica: int, tokens) -> None:
        pass


class CacheAwareRouter:
    def __init__(self, n_replicas: int, block_tokens: int = 16, epsilon: float = 0.25):
        self.n = _whole("n_replicas", n_replicas)
        self.block_tokens = _whole("block_tokens", block_tokens)
        if not epsilon > 0:
            raise ValueError(f"epsilon must be > 0, got {epsilon!r}")
        self.epsilon = float(epsilon)
        self.index: dict[int, set[int]] = {}      # chained block hash -> replicas it was sent to

    def route(self, prompt, loads) -> int:
        cap = load_bound(sum(loads), self.n, self.epsilon)
        holders = None
        for h in block_hashes(prompt, self.block_tokens):    # longest indexed prefix, block by block
            s = self.index.get(h)
            nxt = s if holders is None else (holders & s if s else None)
            if not nxt:
                break
            holders = nxt
        if holders:
            best = min(holders, key=lambda r: (loads[r], r))
            if loads[best] < cap:
                return best
        return min(range(self.n), key=lambda r: (loads[r], r))

    def sent(self, replica: int, tokens) -> None:
        """Record that `tokens` (prompt + reply) now sit in `replica`'s cache."""
        for h in block_hashes(tokens, self.block_tokens):
            self.index.setdefault(h, set()).add(replica)


@dataclass(frozen=True)
class TenantRequest:
    tenant: int
    request: Request

    @property
    def prompt(self):
        return self.request.prompt

    @property
    def completion(self):
        return self.request.completion


TENANT_MARK = 1 << 40      # token ids of the tenants' marks, far above any id a trace draws


def multi_tenant_trace(*, sessions: tuple, system_tokens: tuple, turns: int, user_tokens: tuple,
                       reply_tokens: tuple, concurrency: int = 4, seed: int = 0) -> list[TenantRequest]:
    """One multi_turn_trace per tenant (sessions[i] conversations on a system prompt of system_tokens[i]
    tokens plus the tenant's mark), merged in a seeded order that keeps each tenant's own order."""
    if len(sessions) != len(system_tokens) or not sessions:
        raise ValueError("sessions and system_tokens must name the same tenants, at least one")
    per = []
    for t, (n, s) in enumerate(zip(sessions, system_tokens)):
        tr = multi_turn_trace(n_conversations=n, turns=turns, system_tokens=s, user_tokens=user_tokens,
                              reply_tokens=reply_tokens, concurrency=concurrency, seed=seed * 1000 + t)
        # Each tenant's trace numbers its tokens from 0, so two tenants' ids coincide; a first token of
        # the tenant's own (its system prompt begins with it) puts each tenant under its own root branch
        # of a radix tree and its own chain of block hashes, so no match crosses tenants.
        mark = (TENANT_MARK + t,)
        per.append(deque(TenantRequest(t, Request(r.conversation, r.turn, r.kind, mark + r.prompt, r.completion))
                         for r in tr))
    rng = random.Random(seed)
    weights = [len(d) for d in per]
    out = []
    while any(per):                # draw the next tenant in proportion to what it has left
        t = rng.choices(range(len(per)), weights=weights)[0]
        out.append(per[t].popleft())
        weights[t] -= 1
    return out


def simulate_fleet(trace, router, n_replicas: int, capacity_tokens: int | None, window: int) -> dict:
    """Route every request, serve it from its replica's RadixCache, and count: prompt, matched and
    prefilled tokens, the hit rate, and per-replica prefill and peak in-flight load."""
    n_replicas, window = _whole("n_replicas", n_replicas), _whole("window", window)
    caches = [RadixCache(capacity_tokens) for _ in range(n_replicas)]
    loads, recent = [0] * n_replicas, deque()
    prompt = matched = 0
    prefilled = [0] * n_replicas
    peak = 0
    for req in trace:
        if len(recent) == window:            # the oldest in-flight request finishes
            loads[recent.popleft()] -= 1
        r = router.route(req.prompt, loads)
        m, pf = caches[r].serve(req.prompt, req.completion)
        router.sent(r, req.prompt + req.completion)
        loads[r] += 1
        recent.append(r)
        peak = max(peak, loads[r])
        prompt += len(req.prompt)
        matched += m
        prefilled[r] += pf
    if prompt == 0:
        raise ValueError("empty trace")
    mean_pf = sum(prefilled) / n_replicas
    return dict(requests=len(trace), prompt_tokens=prompt, matched_tokens=matched, prefilled_tokens=prompt - matched,
                hit_rate=matched / prompt, peak_load=peak, mean_load=window / n_replicas,
                prefill_imbalance=max(prefilled) / mean_pf if mean_pf else 1.0)
