"""Admission control for one replica: admit a request only when its KV cache fits, queue the rest in
order for a bounded time, and shed what cannot wait (the 429 or 503 a gateway returns).

A request reserves its prompt plus its max_tokens of KV up front (it cannot be counted in advance, so it
is reserved, then settled on release). The queue is strict first-in first-out: a large request at the
head is not overtaken by small ones behind it, so it cannot starve. A request that waits longer than
max_wait is shed, because a client whose request sits in a queue past its timeout has already retried.

    adm = Admission(kv_tokens=1_000_000, max_queue=64, max_wait=2.0, clock=fake_clock)
    adm.offer("r1", 5000)   # "admitted" | "queued" | "shed"
    adm.release("r1")       # frees its tokens; returns the ids admitted from the queue
    adm.expire()            # sheds the queued requests that waited past max_wait; returns their ids

Chapters: api-gateway-sizing.
"""
from __future__ import annotations

import time
from collections import OrderedDict


class Admission:
    def __init__(self, kv_tokens: int, max_queue: int, max_wait: float, clock=time.monotonic):
        if kv_tokens <= 0 or max_queue < 0 or max_wait < 0:
            raise ValueError("kv_tokens must be > 0, max_queue and max_wait >= 0")
        self.capacity, self.max_queue, self.max_wait, self.clock = int(kv_tokens), int(max_queue), max_wait, clock
        self.running: dict[str, int] = {}
        self.queue: OrderedDict[str, tuple[int, float]] = OrderedDict()   # id -> (tokens, enqueued at)
        self.shed: list[str] = []

    @property
    def used(self) -> int:
        return sum(self.running.values())

    def _fits(self, tokens: int) -> bool:
        return self.used + tokens <= self.capacity

    def offer(self, rid: str, tokens: int) -> str:
        """A new request reserving `tokens` of KV: admitted now, queued, or shed (queue full, or larger
        than the whole budget, which no amount of waiting would fit)."""
        if rid in self.running or rid in self.queue:
            raise ValueError(f"request {rid!r} is already here")
        if tokens <= 0:
            raise ValueError(f"request {rid!r} reserves {tokens} tokens; a request reserves at least one")
        self.expire()
        if tokens > self.capacity:
            self.shed.append(rid)
            return "shed"
        if not self.queue and self._fits(tokens):    # nobody ahead of it: FIFO is kept
            self.running[rid] = tokens
            return "admitted"
        if len(self.queue) >= self.max_queue:
            self.shed.append(rid)
            return "shed"
        self.queue[rid] = (tokens, self.clock())
        return "queued"

    def _drain(self) -> list[str]:
        admitted = []
        while self.queue:
            rid, (tokens, _) = next(iter(self.queue.items()))
            if not self._fits(tokens):
                break                                 # the head waits; nobody overtakes it
            self.queue.popitem(last=False)
            self.running[rid] = tokens
            admitted.append(rid)
        return admitted

    def release(self, rid: str) -> list[str]:
        """A request finished (or was cancelled): free its reservation, admit from the head of the queue."""
        if rid in self.queue:                         # cancelled while waiting
            del self.queue[rid]
            return self._drain()
        if rid not in self.running:
            raise KeyError(f"request {rid!r} is neither running nor queued")
        del self.running[rid]
        self.expire()
        return self._drain()

    def expire(self) -> list[str]:
        """Shed every queued request that has waited longer than max_wait."""
        now, gone = self.clock(), []
        for rid, (_, since) in list(self.queue.items()):
            if now - since > self.max_wait:
                del self.queue[rid]
                gone.append(rid)
        self.shed += gone
        if gone:
            self._drain()
        return gone
