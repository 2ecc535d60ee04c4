"""Dominant Resource Fairness (Ghodsi et al., NSDI 2011): fair shares of several resources at once.

A user's dominant share is the largest fraction of any one resource it holds; DRF equalises dominant
shares. The greedy loop (the paper's Algorithm 1, "progressive filling" in tasks):

    alloc = allocate(capacity=(9, 18), demands=[(1, 4), (3, 1)])   # the paper's example
    alloc.tasks == (3, 2); alloc.shares == (Fraction(2, 3), Fraction(2, 3))

The rules, stated once (tests/components/test_drf.py holds each of them):
- Arithmetic is exact (fractions.Fraction): a tie in the shares is a real tie, never a rounding accident.
- Each round gives one task to the active user with the lowest comparison key; ties go to the lowest
  index (`tie="index"`, the first user) or the highest (`tie="reverse"`).
- `key="dominant"` is DRF. Two buggy keys are kept to show the bug: `key="floor"` compares the dominant
  share rounded down to an integer (integer division, as in `used // capacity` on ints), so every share
  is 0 until a user holds a whole resource, every round ties and the tie-break hands the first user
  every task; `key="raw"` compares raw usage of resource 0 (GPUs held), so a user who needs none of it
  always looks poorest.
- `stop="skip"` (default): a user whose next task does not fit is dropped and the loop goes on until
  no one's task fits (the allocation is then Pareto efficient in tasks). `stop="paper"`: the loop ends at
  the first task that does not fit, as the paper's pseudo-code returns "the cluster is full".
- `progressive_filling` is the divisible version (tasks may be fractional): every user's dominant
  share rises at one rate and a user freezes when a resource it uses runs out. It is the allocation
  the paper's properties (sharing incentive, strategy-proofness, envy-freeness, Pareto efficiency)
  are proved for; the task loop approximates it to within one task per user.
Bad arguments raise ValueError with one line naming the argument.

Chapters: dominant-resource-fairness.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

KEYS = ("dominant", "floor", "raw")
TIES = ("index", "reverse")
STOPS = ("skip", "paper")


def _exact(x, name: str) -> Fraction:
    if isinstance(x, bool) or not isinstance(x, (int, float, Fraction)) or x != x or x in (float("inf"), -float("inf")):
        raise ValueError(f"{name} must be a finite number, got {x!r}")
    return Fraction(x)


def check(capacity, demands) -> tuple[tuple[Fraction, ...], tuple[tuple[Fraction, ...], ...]]:
    """Capacity > 0 in every resource; each demand a vector of the same length, >= 0, not all zero."""
    cap = tuple(_exact(c, "capacity") for c in capacity)
    if not cap or any(c <= 0 for c in cap):
        raise ValueError(f"capacity must be a non-empty vector of numbers > 0, got {tuple(capacity)!r}")
    dem = []
    for i, d in enumerate(demands):
        d = tuple(_exact(x, f"demands[{i}]") for x in d)
        if len(d) != len(cap):
            raise ValueError(f"demands[{i}] has {len(d)} resources, capacity has {len(cap)}")
        if any(x < 0 for x in d) or not any(d):
            raise ValueError(f"demands[{i}] must be >= 0 in every resource and > 0 in one, got {d!r}")
        dem.append(d)
    if not dem:
        raise ValueError("demands must name at least one user")
    return cap, tuple(dem)


def dominant_share(used, capacity) -> Fraction:
    """The largest fraction of any one resource that `used` holds."""
    return max(Fraction(u) / Fraction(c) for u, c in zip(used, capacity))


def dominant_resource(demand, capacity) -> int:
    """The index of the resource a demand holds the largest fraction of (the first, on a tie)."""
    shares = [Fraction(d) / Fraction(c) for d, c in zip(demand, capacity)]
    return shares.index(max(shares))


@dataclass(frozen=True)
class Allocation:
    tasks: tuple[int, ...]                      # tasks per user
    used: tuple[tuple[Fraction, ...], ...]      # per user, per resource
    shares: tuple[Fraction, ...]                # dominant share per user
    order: tuple[int, ...]                      # which user got each task, in order
    free: tuple[Fraction, ...]                  # capacity left, per resource

    def utilisation(self, capacity) -> tuple[Fraction, ...]:
        return tuple(1 - f / Fraction(c) for f, c in zip(self.free, capacity))


def _key(kind: str, used, capacity):
    if kind == "dominant":
        return dominant_share(used, capacity)
    if kind == "floor":       # the bug: integer division, 0 until a whole resource is held
        return max(int(u // c) for u, c in zip(used, capacity))
    return used[0]            # "raw": GPUs held, in GPUs


def allocate(capacity, demands, *, key: str = "dominant", tie: str = "index", stop: str = "skip",
             max_tasks: int | None = None) -> Allocation:
    """The greedy loop: one task per round to the active user with the lowest key (see the module doc)."""
    if key not in KEYS:
        raise ValueError(f"key must be one of {KEYS}, got {key!r}")
    if tie not in TIES:
        raise ValueError(f"tie must be one of {TIES}, got {tie!r}")
    if stop not in STOPS:
        raise ValueError(f"stop must be one of {STOPS}, got {stop!r}")
    cap, dem = check(capacity, demands)
    n, m = len(dem), len(cap)
    used = [[Fraction(0)] * m for _ in range(n)]
    free = list(cap)
    tasks, order, active = [0] * n, [], set(range(n))
    while active and (max_tasks is None or len(order) < max_tasks):
        sign = 1 if tie == "index" else -1     # min over (key, +-index): the tie-break is explicit
        i = min(active, key=lambda j: (_key(key, used[j], cap), sign * j))
        if any(d > f for d, f in zip(dem[i], free)):
            if stop == "paper":                # "the cluster is full": one refusal ends the loop
                break
            active.discard(i)                  # usage only grows: it will never fit again
            continue
        for r in range(m):
            used[i][r] += dem[i][r]
            free[r] -= dem[i][r]
        tasks[i] += 1
        order.append(i)
    return Allocation(tuple(tasks), tuple(tuple(u) for u in used),
                      tuple(dominant_share(u, cap) for u in used), tuple(order), tuple(free))


def progressive_filling(capacity, demands) -> tuple[Fraction, ...]:
    """Divisible DRF: tasks per user (fractions) when every active user's dominant share rises at one
    rate t and a user freezes once a resource it uses is exhausted."""
    cap, dem = check(capacity, demands)
    n, m = len(dem), len(cap)
    per_task = [dominant_share(d, cap) for d in dem]       # dominant share of one task
    x = [Fraction(0)] * n
    active, t = set(range(n)), Fraction(0)
    while active:
        used = [sum(x[i] * dem[i][r] for i in range(n)) for r in range(m)]
        rate = [sum(dem[i][r] / per_task[i] for i in active) for r in range(m)]   # d(usage)/dt
        dt = min((cap[r] - used[r]) / rate[r] for r in range(m) if rate[r] > 0)
        t += dt
        for i in active:
            x[i] = t / per_task[i]
        used = [sum(x[i] * dem[i][r] for i in range(n)) for r in range(m)]
        full = {r for r in range(m) if used[r] >= cap[r]}
        active -= {i for i in active if any(dem[i][r] > 0 for r in full)}
    return tuple(x)


def partition_tasks(capacity, demands, *, whole: bool = True):
    """Tasks each user could run in its own 1/n slice of every resource (the sharing-incentive floor)."""
    cap, dem = check(capacity, demands)
    n = len(dem)
    out = []
    for d in dem:
        t = min(c / n / x for c, x in zip(cap, d) if x > 0)
        out.append(int(t) if whole else t)
    return tuple(out)
