"""A preemptive job queue for a GPU cluster: a heap orders the waiting jobs, and the logic that matters
is which running jobs may be evicted, how many, and what happens to them.

- Order. Waiting jobs are popped by effective priority (highest first), then by original submit time
  (oldest first), then by a sequence number (so two exact ties never compare Job objects and come out
  first-in, first-out). Aging raises a waiting job's effective priority by `aging` levels per hour:
  p_eff(t) = p + aging (t - submit). With one rate for every job, the difference between two jobs'
  effective priorities never changes, so the heap key p - aging * submit is static and the heap stays
  valid without re-keying.
- Who may be evicted. Only a running job with strictly lower base priority AND strictly lower effective
  priority than the job that needs the GPUs. Equal priority never preempts (two equal jobs would evict
  each other forever); an aged job is protected from the fresh arrivals it now outranks (or aging
  would only turn starvation into eviction after eviction). Both orders are static, so no pair of jobs
  can ever preempt each other in turn.
- How many. Just enough: the set of eligible victims that frees at least the GPUs still missing with
  the least lost work, then the fewest GPUs freed, then the fewest victims (an exact 0/1 cover by
  dynamic programming over freed GPUs). Lost work is GPUs x time since the victim's last checkpoint.
  If even every eligible job would not free enough, nobody is evicted.
- What happens to them. A victim keeps the work its last checkpoint saved and goes back in the queue
  with its original submit time, so it keeps its place and its age.

The contract for every input (tests/components/test_preemptive_queue_adversarial.py feeds each): a job's
name is its key (a victim is found, evicted and requeued by it), so names are unique within a run; GPUs a
whole number from 1 to the cluster; priority a whole number; work, submit and checkpoint_every finite
(a NaN compares false with everything and would silently corrupt the heap's order); aging finite and
>= 0. Anything else raises ValueError naming the job and the field, before any job runs. GPUs are never
over-committed: `Outcome.runs` records every run (a start or a resume, to its completion or eviction), and
at no instant do the runs hold more than the cluster's GPUs (`peak_gpus`).

Chapters: preemptive-job-queue.
"""
from __future__ import annotations

import heapq
import itertools
import math
from dataclasses import dataclass, field, replace

RULES = ("checkpoint", "newest", "largest")


@dataclass
class Job:
    name: str
    priority: int             # higher runs first
    gpus: int
    work: float               # hours of running time to finish
    submit: float             # hours; the original submit time, kept across evictions
    checkpoint_every: float = 0.0   # hours between checkpoints while running; 0 = never
    done: float = 0.0         # hours of work saved by checkpoints
    evictions: int = 0
    start: float | None = None       # first start
    finish: float | None = None


def _whole(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _finite(v) -> bool:
    return not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v)


def _check_jobs(jobs: list[Job], n_gpus: int, aging: float) -> None:
    """ValueError for the first job (or argument) the scheduler could not order or account for."""
    if not _whole(n_gpus) or n_gpus < 1:
        raise ValueError(f"n_gpus must be a whole number >= 1, got {n_gpus!r}")
    if not _finite(aging) or aging < 0:
        raise ValueError(f"aging must be a finite number >= 0, got {aging!r}")
    names = set()
    for j in jobs:
        if not isinstance(j.name, str) or j.name in names:
            raise ValueError(f"job names must be unique strings: {j.name!r} is not")
        names.add(j.name)
        if not _whole(j.gpus) or not 0 < j.gpus <= n_gpus:
            raise ValueError(f"job {j.name}: needs 1 to {n_gpus} GPUs, a whole number, got {j.gpus!r}")
        if not _whole(j.priority):
            raise ValueError(f"job {j.name}: priority must be a whole number, got {j.priority!r}")
        if not _finite(j.work) or j.work <= 0:
            raise ValueError(f"job {j.name}: work must be finite and > 0, got {j.work!r}")
        if not _finite(j.submit) or not _finite(j.checkpoint_every) or j.checkpoint_every < 0:
            raise ValueError(f"job {j.name}: submit and checkpoint_every must be finite "
                             f"(checkpoint_every >= 0), got {j.submit!r}, {j.checkpoint_every!r}")


class JobQueue:
    """The waiting jobs, a binary heap: push and pop in O(log n)."""

    def __init__(self, aging: float = 0.0):
        self.aging = aging
        self._heap: list = []
        self._seq = itertools.count()

    def key(self, job: Job) -> tuple:
        # p + aging (now - submit) ranks jobs as p - aging * submit does: the now term is common.
        return (-(job.priority - self.aging * job.submit), job.submit, next(self._seq))

    def push(self, job: Job) -> None:
        heapq.heappush(self._heap, (*self.key(job), job))

    def peek(self) -> Job:
        return self._heap[0][-1]

    def pop(self) -> Job:
        return heapq.heappop(self._heap)[-1]

    def __len__(self) -> int:
        return len(self._heap)


@dataclass
class Running:
    job: Job
    since: float              # when this run (a start or a resume) began

    def last_checkpoint(self, now: float) -> float:
        tau = self.job.checkpoint_every
        if tau <= 0:
            return self.since
        # the small slack keeps a checkpoint that lands exactly on `now` from rounding down a step
        return self.since + math.floor((now - self.since) / tau + 1e-9) * tau

    def lost_work(self, now: float) -> float:
        """GPU-hours thrown away if evicted now: GPUs x time since the last checkpoint."""
        return self.job.gpus * (now - self.last_checkpoint(now))


def may_preempt(head: Job, victim: Job, aging: float, *, allow_equal: bool = False) -> bool:
    """Strictly lower base priority and strictly lower effective priority (the static heap key)."""
    if allow_equal:                                    # the bug the chapter shows: equals evict each other
        return victim.priority <= head.priority
    return (victim.priority < head.priority
            and victim.priority - aging * victim.submit < head.priority - aging * head.submit)


def select_victims(candidates: list[Running], need: int, now: float, rule: str = "checkpoint"):
    """Victims that free at least `need` GPUs, or None when all the candidates together cannot."""
    if rule not in RULES:
        raise ValueError(f"rule must be one of {RULES}, got {rule!r}")
    if need <= 0:
        return []
    if sum(r.job.gpus for r in candidates) < need:
        return None
    if rule == "checkpoint":
        return min_lost_cover(candidates, need, now)
    order = (lambda r: (-r.since, r.job.name)) if rule == "newest" else (lambda r: (-r.job.gpus, -r.since, r.job.name))
    out, freed = [], 0
    for r in sorted(candidates, key=order):           # the naive rules: take in order until enough
        out.append(r)
        freed += r.job.gpus
        if freed >= need:
            return out
    return None


def min_lost_cover(candidates: list[Running], need: int, now: float) -> list[Running]:
    """Exact: the subset freeing >= need GPUs with the least (lost work, GPUs freed, victims).
    best[f] is the cheapest way found to free f GPUs, f capped at need; O(candidates x need)."""
    best: list = [None] * (need + 1)
    best[0] = (0.0, 0, 0, ())
    for i, r in enumerate(candidates):
        cost, g = r.lost_work(now), r.job.gpus
        for f in range(need, -1, -1):                  # downwards: each candidate used at most once
            if best[f] is None:
                continue
            lost, freed, n, chosen = best[f]
            new = (lost + cost, freed + g, n + 1, chosen + (i,))
            t = min(need, f + g)
            if best[t] is None or new[:3] < best[t][:3]:
                best[t] = new
    return [candidates[i] for i in best[need][3]]


@dataclass
class Outcome:
    jobs: list[Job]
    lost_gpu_hours: float = 0.0
    evictions: int = 0
    evicted_gpus: int = 0
    preemptions: int = 0        # scheduling decisions that evicted someone
    livelock: bool = False      # the eviction cap was hit at one instant
    horizon: float = math.inf
    log: list = field(default_factory=list)
    shadow: dict = field(default_factory=dict)   # rule -> GPU-hours it would have lost at the same decisions
    runs: list = field(default_factory=list)     # (job, gpus, start, end) of every run; end inf: still running

    def job(self, name: str) -> Job:
        return next(j for j in self.jobs if j.name == name)


def simulate(jobs: list[Job], n_gpus: int, *, rule: str = "checkpoint", aging: float = 0.0,
             allow_equal: bool = False, horizon: float = math.inf, eviction_cap: int = 1000,
             shadow: tuple = ()) -> Outcome:
    """Event-driven run of a cluster of n_gpus: arrivals, completions, and at every event the head of the
    queue placed (evicting victims if it must) until it cannot be. No backfill: a head that cannot be
    placed waits, and everything behind it waits too. The input jobs are copied, never changed.

    shadow: other rules to score at each of this run's decisions, on the same cluster state (the run
    follows `rule`; whole runs under different rules diverge, and their totals compare trajectories)."""
    jobs = [replace(j, done=0.0, evictions=0, start=None, finish=None) for j in jobs]
    _check_jobs(jobs, n_gpus, aging)
    out = Outcome(jobs, horizon=horizon, shadow={r: 0.0 for r in shadow})
    queue, running, free = JobQueue(aging), {}, n_gpus
    events, seq = [], itertools.count()
    for j in jobs:
        heapq.heappush(events, (j.submit, 1, next(seq), j, None))      # 1: arrivals after completions

    def start(j: Job, now: float) -> None:
        nonlocal free
        run = Running(j, now)
        running[j.name] = run
        free -= j.gpus
        j.start = now if j.start is None else j.start
        heapq.heappush(events, (now + j.work - j.done, 0, next(seq), j, run))

    def evict(run: Running, now: float) -> None:
        nonlocal free
        j = run.job
        out.lost_gpu_hours += run.lost_work(now)
        j.done += run.last_checkpoint(now) - run.since
        j.evictions += 1
        out.evictions += 1
        out.evicted_gpus += j.gpus
        out.runs.append((j.name, j.gpus, run.since, now))
        del running[j.name]
        free += j.gpus
        queue.push(j)                                   # same submit time: same place, same age

    def schedule(now: float) -> None:
        evicted = 0
        while len(queue):
            head = queue.peek()
            victims = []
            if head.gpus > free:
                cands = [r for r in running.values() if may_preempt(head, r.job, aging, allow_equal=allow_equal)]
                victims = select_victims(cands, head.gpus - free, now, rule)
                if victims is None:
                    return
                for other in shadow:
                    out.shadow[other] += sum(r.lost_work(now) for r in select_victims(cands, head.gpus - free,
                                                                                        now, other))
            queue.pop()
            if victims:
                out.preemptions += 1
                evicted += len(victims)
                if evicted > eviction_cap:
                    out.livelock = True
                    queue.push(head)
                    return
                out.log.append((now, head.name, [v.job.name for v in victims]))
                for v in victims:
                    evict(v, now)
            start(head, now)

    while events and not out.livelock:
        now, kind, _, j, run = heapq.heappop(events)
        if now > horizon:
            break
        if kind == 0:
            if running.get(j.name) is not run:          # this run was evicted: a stale completion
                continue
            del running[j.name]
            free += j.gpus
            j.done, j.finish = j.work, now
            out.runs.append((j.name, j.gpus, run.since, now))
        else:
            queue.push(j)
        schedule(now)
    out.runs += [(r.job.name, r.job.gpus, r.since, math.inf) for r in running.values()]
    return out


def peak_gpus(runs) -> int:
    """The most GPUs that (job, gpus, start, end) runs hold at once, counted on each interval between
    event times: a run that ends at t has let its GPUs go by the time one starting at t holds them."""
    level, peak, deltas = 0, 0, {}
    for _, gpus, start, end in runs:
        deltas[start] = deltas.get(start, 0) + gpus
        deltas[end] = deltas.get(end, 0) - gpus
    for t in sorted(deltas):
        level += deltas[t]
        peak = max(peak, level)
    return peak


def wait(job: Job, horizon: float) -> float:
    """Hours from submit to first start (to the horizon, if it never started: a lower bound)."""
    return (job.start if job.start is not None else horizon) - job.submit


def workload(n_jobs: int, n_gpus: int, load: float, seed: int, *, checkpoint_every: float = 1.0,
             mean_work: float = 4.0, sizes=(1, 2, 4, 8, 16), priorities=(0, 1, 2)) -> list[Job]:
    """A seeded mix: Poisson arrivals at `load` times what the cluster can serve, sizes and priorities
    uniform over their choices, exponential work (at least a tenth of an hour)."""
    import numpy as np
    rng = np.random.default_rng(seed)
    g = rng.choice(np.array([s for s in sizes if s <= n_gpus]), n_jobs)
    w = np.maximum(0.1, rng.exponential(mean_work, n_jobs))
    pr = rng.choice(np.array(priorities), n_jobs)
    rate = load * n_gpus / float(np.mean(g) * mean_work)           # arrivals per hour
    t = np.cumsum(rng.exponential(1 / rate, n_jobs))
    return [Job(f"j{i}", int(pr[i]), int(g[i]), float(w[i]), float(t[i]), checkpoint_every) for i in range(n_jobs)]


def starvation_workload(n_gpus: int, load: float, hours: float, seed: int, *, low_submit: float = 1.0,
                        low_gpus: int = 4, low_work: float = 2.0, high_gpus: int = 4, mean_work: float = 1.0,
                        checkpoint_every: float = 1.0) -> list[Job]:
    """A stream of higher-priority jobs from time zero, offered at `load` times the cluster's capacity
    for `hours` (more than it can serve, so their queue never empties), and one low-priority job
    submitted at `low_submit`, once the stream has filled the cluster."""
    import numpy as np
    rng = np.random.default_rng(seed)
    rate = load * n_gpus / (high_gpus * mean_work)
    t, out = 0.0, [Job("low", 0, low_gpus, low_work, low_submit, checkpoint_every)]
    while True:
        t += float(rng.exponential(1 / rate))
        if t > hours:
            return out
        out.append(Job(f"h{len(out)}", 1, high_gpus, max(0.1, float(rng.exponential(mean_work))), t,
                       checkpoint_every))


def brute_force_cover(candidates: list[Running], need: int, now: float):
    """Every subset, for checking min_lost_cover: the least (lost work, GPUs freed, victims), or None."""
    best = None
    for n in range(len(candidates) + 1):
        for subset in itertools.combinations(candidates, n):
            if sum(r.job.gpus for r in subset) < need:
                continue
            cost = (sum(r.lost_work(now) for r in subset), sum(r.job.gpus for r in subset), n)
            if best is None or cost < best[0]:
                best = (cost, list(subset))
    return None if best is None else best


def random_cluster(seed: int, n_running: int = 8, now: float = 10.0):
    """A small seeded cluster state for the cover checks: running jobs with random sizes, start times and
    checkpoint intervals, and a GPU count still missing."""
    import numpy as np
    rng = np.random.default_rng(seed)
    runs = [Running(Job(f"r{i}", 0, int(rng.choice([1, 2, 4, 8])), 100.0, 0.0, float(rng.choice([0.0, 0.5, 1.0, 2.0]))),
                    float(np.round(rng.uniform(0, now), 2))) for i in range(n_running)]
    need = int(rng.integers(1, sum(r.job.gpus for r in runs) + 2))    # sometimes more than all of them free
    return runs, need, now


def requeue_after_eviction(run: Running, now: float) -> float:
    """The bookkeeping `simulate` does for a victim, for other schedulers to share (utils/fleet/scheduler.py):
    the job keeps the work its last checkpoint saved, counts the eviction and keeps its submit time
    (so it keeps its place and its age). Returns the GPU-hours thrown away: GPUs x time since the last
    checkpoint."""
    lost = run.lost_work(now)
    run.job.done += run.last_checkpoint(now) - run.since
    run.job.evictions += 1
    return lost
