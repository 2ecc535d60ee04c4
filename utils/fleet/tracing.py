"""Observability arithmetic for an inference request: the seven spans laid end to end, what a naive trace
leaves out, the metrics store's series count, and cost attribution by a step's token share.

- spans(durations): the seven spans from arrival to last token, each starting where the last ended.
- hidden(...): the three places latency hides from a trace that starts at the first handler's span and
  ends at the last server-side write: the wait for a batch slot before the engine opens a span, the
  step a request shares with the batch (its TPOT is set by the others' work), and the client's flush.
- series(cardinalities): a metric's series are the product of its labels' cardinalities (an upper
  bound: only combinations that occur are stored); a unique-per-request label makes every request new.
- attribute(...): a continuous-batching run step by step; each step's GPU-seconds split over the
  requests in it by their share of the step's tokens, so the charges add up to the GPU time exactly.

Chapters: observability-budget.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from utils.serving import batching

SPAN_NAMES = ("gateway", "auth", "queue", "router", "prefill", "decode", "stream flush")


@dataclass(frozen=True)
class Span:
    name: str
    start: float      # seconds since the request arrived
    end: float

    @property
    def duration(self) -> float:
        return self.end - self.start


def spans(durations: dict) -> list[Span]:
    """The seven spans end to end from arrival (t = 0); durations in seconds, keyed by SPAN_NAMES."""
    missing = [n for n in SPAN_NAMES if n not in durations]
    if missing:
        raise ValueError(f"durations lack {missing}")
    out, t = [], 0.0
    for n in SPAN_NAMES:
        d = float(durations[n])
        if d < 0:
            raise ValueError(f"span {n} has a negative duration")
        out.append(Span(n, t, t + d))
        t += d
    return out


def hidden(durations: dict, client_flush: float) -> dict:
    """What the client waits for against what a naive trace shows (seconds). The naive trace has no
    span for the admission queue (the request sits in a list; nothing runs), and ends at the server's
    last write, before the client's flush."""
    s = spans(durations)
    server = s[-1].end
    naive = server - durations["queue"]
    client = server + client_flush
    ttft_client = s[SPAN_NAMES.index("prefill")].end
    return dict(client=client, naive=naive, missing=client - naive, ttft_client=ttft_client,
                ttft_naive=ttft_client - durations["queue"], queue=durations["queue"], flush=client_flush)


def series(cardinalities) -> int:
    """Series of one metric: the product of its labels' cardinalities."""
    n = 1
    for c in cardinalities:
        if int(c) != c or c < 1:
            raise ValueError(f"a label's cardinality is a whole number >= 1, got {c!r}")
        n *= int(c)
    return n


def attribute(e: batching.Engine, prompts, outputs, B: int, chunk: int, tenants=None, gpus: int = 1) -> dict:
    """Continuous batching of the requests in order, B slots, each step giving up to `chunk` prompt tokens
    to the oldest requests still prefilling and one token to each decoding one. Every step's GPU-seconds
    (step time x gpus) are split over the requests in it by their share of its tokens. Returns each
    request's charge, the total, and the naive charge (each request billed its whole time in the batch)."""
    prompts, outputs = np.asarray(prompts, int), np.asarray(outputs, int)
    n = len(prompts)
    left_p, left_o = prompts.copy(), outputs.copy()
    charge, wall = np.zeros(n), np.zeros(n)
    running, nxt, total, steps = [], 0, 0.0, 0
    while nxt < n or running:
        while len(running) < B and nxt < n:
            running.append(nxt)
            nxt += 1
        budget, tok = chunk, {}
        for i in running:                                  # oldest first: prefill chunks, then decode
            if left_p[i] > 0:
                if budget > 0:
                    take = min(budget, left_p[i])
                    tok[i] = take
                    budget -= take
            else:
                tok[i] = 1
        n_dec = sum(1 for i in tok if left_p[i] == 0)
        c = chunk - budget
        t = float(batching.step_time(e, n_dec, chunk_bytes=e.akv * c, chunk_flops=e.kNa * c)) * gpus
        steps += 1
        total += t
        all_tok = sum(tok.values())
        for i, k in tok.items():
            charge[i] += t * k / all_tok
        for i in running:
            wall[i] += t
        done = []
        for i, k in tok.items():
            if left_p[i] > 0:
                left_p[i] -= k
                if left_p[i] == 0:
                    left_o[i] -= 1                     # the last chunk's pass gives the first token
            else:
                left_o[i] -= 1
            if left_p[i] == 0 and left_o[i] <= 0:
                done.append(i)
        running = [i for i in running if i not in done]
    out = dict(charge=charge, total=total, naive=wall, steps=steps)
    if tenants is not None:
        tenants = np.asarray(tenants)
        out["by_tenant"] = {str(t): float(charge[tenants == t].sum()) for t in np.unique(tenants)}
        out["naive_by_tenant"] = {str(t): float(wall[tenants == t].sum()) for t in np.unique(tenants)}
        out["requests_by_tenant"] = {str(t): int((tenants == t).sum()) for t in np.unique(tenants)}
    return out


def counters(e: batching.Engine, n_dec: int) -> dict:
    """What DCGM's activity counters would read on the roofline's step at n_dec sequences (shares of
    peak): the tensor pipe's FLOPs over peak, HBM bytes over peak bandwidth; GPU_UTIL (any kernel
    running) is 1 whenever steps run back to back."""
    t = float(batching.step_time(e, n_dec))
    return dict(step=t, gpu_util=1.0, tensor=n_dec * e.f / (e.P * t), dram=(e.wbytes + n_dec * e.kvs) / (e.W * t),
                tokens_per_s=n_dec / t)
