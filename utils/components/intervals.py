"""Usage intervals: their union, the time at least k of them cover (the intersection), and the overlaps
one GPU should never report.

Intervals are half-open, [start, end): a job that ends at t and one that starts at t do not overlap, and
the union of the two is one interval. Endpoints are any ordered numbers (integer seconds in the billing
code, so every length here is exact).

- union: a sort and a scan. Sort by start; extend the current interval while the next one starts at or
  before its end; otherwise close it and open the next.
- at_least(intervals, k): the same sweep with a counter. Every interval is an event +1 at its start and
  -1 at its end; walk the events in time order, ends before starts at the same instant (half-open), and
  keep the stretches where the counter is >= k. k = 1 is the union again; k = n (one interval per GPU,
  n GPUs) is the time every GPU is busy; two tenants' unions with k = 2 is their overlap.
- The trap: the counter counts intervals, not GPUs. A GPU that reports two overlapping intervals (a
  retried job, a duplicated export, a restart that re-sent its open record) is counted twice while they
  overlap, so "all n GPUs busy" comes out true while one GPU is idle. The answer stays between zero and
  the wall time, so it looks plausible. busy_at_least unions each GPU's intervals first; overlaps finds
  the offending pairs so they can be refused instead of silently merged.

Chapters: gpu-hours-intervals.
"""
from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping


def _checked(intervals: Iterable) -> list[tuple]:
    out = []
    for iv in intervals:
        start, end = iv
        if end < start:
            raise ValueError(f"interval {iv!r} ends before it starts")
        out.append((start, end))
    return out


def union(intervals: Iterable) -> list[tuple]:
    """The union as sorted, disjoint, non-touching intervals (empty intervals vanish)."""
    merged: list[list] = []
    for start, end in sorted(_checked(intervals)):
        if start == end:
            continue
        if merged and start <= merged[-1][1]:          # overlaps or touches the current one: extend it
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(s, e) for s, e in merged]


def length(intervals: Iterable):
    """Total length of the intervals as given (a double count where they overlap)."""
    return sum(e - s for s, e in _checked(intervals))


def covered(intervals: Iterable):
    """Length of the union: time covered at least once."""
    return length(union(intervals))


def at_least(intervals: Iterable, k: int) -> list[tuple]:
    """Stretches covered by at least k of the intervals, by a sweep with a counter."""
    if k < 1 or int(k) != k:
        raise ValueError(f"k must be a whole number >= 1, got {k!r}")
    events = []
    for start, end in _checked(intervals):
        if start < end:
            events += [(start, 1), (end, -1)]
    events.sort()                                       # (t, -1) sorts before (t, +1): ends first
    out, count, opened = [], 0, None
    for t, delta in events:
        count += delta
        if count >= k and opened is None:
            opened = t
        elif count < k and opened is not None:
            if t > opened:
                out.append((opened, t))
            opened = None
    return union(out)                                   # joins stretches that touch at an instant


def intersection(a: Iterable, b: Iterable) -> list[tuple]:
    """The time both sets cover (two tenants' overlap): each unioned first, then at least two."""
    return at_least(union(a) + union(b), 2)


def busy_at_least(by_gpu: Mapping, k: int) -> list[tuple]:
    """Time at least k GPUs are busy: each GPU's intervals unioned first, so a GPU counts once."""
    return at_least([iv for ivs in by_gpu.values() for iv in union(ivs)], k)


def busy_at_least_naive(by_gpu: Mapping, k: int) -> list[tuple]:
    """The plausible-looking wrong answer: the counter run over every record as reported."""
    return at_least([iv for ivs in by_gpu.values() for iv in ivs], k)


def overlaps(intervals: Iterable) -> list[tuple[int, int]]:
    """Index pairs (i, j), i < j, of intervals that share time (touching is not overlapping).

    A sort and a sweep with a heap of the open intervals' ends: O(n log n + pairs)."""
    ivs = _checked(intervals)
    order = sorted(range(len(ivs)), key=lambda i: ivs[i])
    open_ends: list[tuple] = []                         # (end, index) of intervals still open
    pairs = []
    for i in order:
        start, end = ivs[i]
        while open_ends and open_ends[0][0] <= start:   # closed at or before this start: no overlap
            heapq.heappop(open_ends)
        if start < end:
            pairs += [tuple(sorted((j, i))) for _, j in open_ends]
            heapq.heappush(open_ends, (end, i))
    return sorted(pairs)


def overlaps_by_gpu(by_gpu: Mapping) -> dict:
    """{gpu: [(i, j), ...]} for every GPU that reports overlapping intervals (indices into its list)."""
    return {g: p for g, ivs in by_gpu.items() if (p := overlaps(ivs))}
