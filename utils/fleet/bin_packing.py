"""Sharding a long tail of eval sizes onto GPUs: split, then longest-processing-time-first (LPT).

Naive round robin deals evals to replicas in the order they are listed, so one replica can draw the
largest eval and everyone else waits for it. LPT sorts the work largest first and gives each piece to
the least-loaded replica (a heap), which Graham (1969) bounds at (4/3 - 1/(3m)) of the best makespan on
m machines. Neither can beat the largest indivisible piece, so an eval bigger than the mean load is
split into shards of at most `max_shard` prompts first.

Chapters: eval-pipeline.
"""
from __future__ import annotations

import heapq

import numpy as np


def shard(sizes, max_shard: int) -> list[int]:
    """Each eval split into ceil(size / max_shard) near-equal shards; the total is unchanged."""
    if max_shard < 1:
        raise ValueError(f"max_shard must be >= 1, got {max_shard!r}")
    out = []
    for s in sizes:
        s = int(s)
        if s < 0:
            raise ValueError(f"sizes must be >= 0, got {s!r}")
        n = max(1, -(-s // max_shard))
        base, extra = divmod(s, n)
        out.extend([base + 1] * extra + [base] * (n - extra))
    return out


def round_robin(sizes, bins: int) -> np.ndarray:
    """Loads when piece i goes to bin i mod bins."""
    loads = np.zeros(bins)
    np.add.at(loads, np.arange(len(sizes)) % bins, np.asarray(sizes, float))
    return loads


def shard_counts(sizes, max_shard: int) -> tuple[np.ndarray, np.ndarray]:
    """shard(sizes, max_shard) as (piece size, how many), for a suite whose shards would not fit in memory:
    each eval's shards take two sizes, base + 1 and base."""
    if max_shard < 1:
        raise ValueError(f"max_shard must be >= 1, got {max_shard!r}")
    s = np.asarray(sizes, dtype=np.int64)
    if (s < 0).any():
        raise ValueError(f"sizes must be >= 0, got {int(s.min())!r}")
    n = np.maximum(1, -(-s // max_shard))
    base, extra = np.divmod(s, n)
    size, count = np.concatenate([base + 1, base]), np.concatenate([extra, n - extra])
    values, where = np.unique(size[count > 0], return_inverse=True)
    return values, np.bincount(where, weights=count[count > 0]).astype(np.int64)


def lpt(sizes, bins: int, counts=None) -> np.ndarray:
    """Loads when the largest remaining piece goes to the least-loaded bin (ties to the lowest index).
    counts: how many pieces of each size (default one each). When `bins` equal pieces have gone one to each bin,
    the bins' order is what it was, so every further round does the same: a long run is dealt a round at a time."""
    if bins < 1:
        raise ValueError(f"bins must be >= 1, got {bins!r}")
    heap = [(0.0, b) for b in range(bins)]
    loads = np.zeros(bins)
    pieces = sorted(zip((float(x) for x in sizes), counts if counts is not None else [1] * len(sizes)),
                    key=lambda sc: sc[0], reverse=True)
    for s, c in pieces:
        c = int(c)
        while c:
            before = loads.copy() if c >= bins else None
            for _ in range(min(c, bins)):
                load, b = heapq.heappop(heap)
                loads[b] = load + s
                heapq.heappush(heap, (loads[b], b))
            c -= min(c, bins)
            if before is not None and c >= bins and (loads - before == s).all():    # one each: repeat c // bins times
                rounds = c // bins
                loads += rounds * s
                heap = sorted((load + rounds * s, b) for load, b in heap)
                c -= rounds * bins
    return loads


def makespan(loads) -> float:
    return float(np.max(loads))


def utilisation(loads) -> float:
    """Busy share of bins x makespan: mean load over the largest."""
    m = makespan(loads)
    return float(np.mean(loads) / m) if m > 0 else 1.0


def lower_bound(sizes, bins: int) -> float:
    """No schedule finishes before the mean load or the largest piece."""
    s = np.asarray(sizes, float)
    return float(max(s.sum() / bins, s.max(initial=0.0)))
