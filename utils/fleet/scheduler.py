"""A gang scheduler for a GPU cluster whose queue is too long to scan every tick.

One tick is the loop, in order:
- admit: a submitted job is checked (it needs 1..n_gpus GPUs and positive work) and queued, or failed;
- order: the head is the best waiting job by (priority band, highest first; submit time; admission
  sequence), the same key as utils.components.preemptive_queue.JobQueue without aging;
- place: while the head fits in the free GPUs it starts, all of its GPUs at once (a gang is never
  partially placed: half a gang holds GPUs and computes nothing);
- reserve: a head that does not fit gets a reservation, the shadow time at which enough running jobs
  will have ended (their remaining work is their estimate), and the GPUs spare at that time; once made
  it holds until that job starts (sticky=True), so a better arrival cannot push a big gang back forever;
- backfill (EASY): a job behind the head may start now if it fits in the free GPUs and either ends
  before the shadow time or uses only the spare GPUs, so it never delays the reservation;
- preempt: a head that outranks running jobs (utils.components.preemptive_queue.may_preempt) evicts the
  checkpoint-aware cover (utils.components.preemptive_queue.select_victims: the least GPUs x time since the last
  checkpoint) instead of waiting; then no backfill runs that tick, so nothing starts only to be evicted;
  and never while another job's reservation stands (the evicted GPUs would be the promised ones).

The queue. `ScanQueue` keeps a list and finds each head or backfill candidate by looking at all n
entries. `IndexedQueue` keeps one heap per resource shape (GPUs, runtime bucket), each ordered by the key
above: the head is the best of the shapes' heads, and a backfill candidate is the best head among the
shapes that fit the hole, so a tick touches S heads and O(log n) per start, never n. Both count the
entries they touch (`ops`) and make the same decisions (tests/fleet/test_scheduler.py checks it). A shape
fits the backfill window by its bucket's upper bound, so the candidate of a shape is its oldest job:
conservative (a job deeper in a bucket that would fit is not looked for) and the same in both queues.

The state machine (TRANSITIONS): a preempted job goes back to `admitted` with its checkpointed work and
its original submit time and sequence. The edge most designs get wrong is preempted -> pending: the job
is resubmitted as new, so it forgets its checkpoint (done = 0) and its age (submit = now, the back of
its band). `requeue="resubmit"` runs that design (BUGGY_TRANSITIONS), for the chapter to count its cost.

Chapters: job-scheduler-100k.
"""
from __future__ import annotations

import bisect
import heapq
import itertools
import math
from dataclasses import dataclass, field, replace

from utils.components.preemptive_queue import Job, Running, may_preempt, requeue_after_eviction, select_victims

STATES = ("pending", "admitted", "reserved", "running", "preempted", "checkpointing", "completed", "failed")
TRANSITIONS = {
    "pending": {"admitted", "failed"},                  # admission: valid shape, or failed
    "admitted": {"reserved", "running"},
    "reserved": {"running", "admitted"},                # a better head arrived: the reservation moves
    "running": {"checkpointing", "preempted", "completed", "failed"},
    "checkpointing": {"running", "preempted", "failed"},
    "preempted": {"admitted"},                          # back in the queue, checkpoint and age kept
    "completed": set(),
    "failed": set(),
}
BUGGY_TRANSITIONS = {**TRANSITIONS, "preempted": {"pending"}}     # resubmitted as a new job
BUCKETS = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, math.inf)         # runtime buckets' upper bounds, hours


class IllegalTransition(ValueError):
    pass


def depth(n: int) -> int:
    """Entries a heap push or pop touches on a heap of n: its sift path, 1 + floor(log2 n)."""
    return max(1, n.bit_length())


def shape_of(job: Job) -> tuple:
    remaining = job.work - job.done
    return job.gpus, bisect.bisect_left(BUCKETS, remaining)    # the first bucket with remaining <= its bound


class ScanQueue:
    """The waiting jobs as a list: every lookup looks at all of them."""

    def __init__(self):
        self.items: dict = {}           # name -> (key, job); insertion-ordered, O(1) removal
        self.ops = 0
        self.moves = 0                  # pushes and removals
        self.lookups: list = []         # the queue's length at each lookup

    def push(self, key: tuple, job: Job) -> None:
        self.items[job.name] = (key, job)
        self.ops += 1
        self.moves += 1

    def best(self, fits=None):
        self.lookups.append(len(self.items))
        out = None
        for key, job in self.items.values():
            self.ops += 1
            if (fits is None or fits(shape_of(job))) and (out is None or key < out[0]):
                out = (key, job)
        return out

    def remove(self, job: Job) -> None:
        del self.items[job.name]
        self.ops += 1
        self.moves += 1

    def __len__(self) -> int:
        return len(self.items)

    def bulk(self, entries: list) -> None:
        for key, job in entries:
            self.items[job.name] = (key, job)
        self.ops += len(entries)
        self.moves += len(entries)


class IndexedQueue:
    """One heap per resource shape: a lookup touches the shapes' heads; a push or a pop its sift path."""

    def __init__(self):
        self.heaps: dict = {}           # shape -> heap of (key, job)
        self.n = 0
        self.ops = 0
        self.moves = 0                  # pushes and removals: what a scan's list pays one each for
        self.lookups: list = []         # the queue's length at each lookup: what a scan would touch
        self.gone: set = set()          # ids of jobs removed from inside a heap, popped when they surface

    def push(self, key: tuple, job: Job) -> None:
        h = self.heaps.setdefault(shape_of(job), [])
        heapq.heappush(h, (key, job))
        self.moves += 1
        self.n += 1
        self.ops += depth(len(h))

    def best(self, fits=None):
        self.lookups.append(self.n)
        out, empty = None, []
        for shape, h in self.heaps.items():
            if fits is not None and not fits(shape):
                continue
            self._clean(h)
            if not h:
                empty.append(shape)
                continue
            self.ops += 1
            if out is None or h[0][0] < out[0]:
                out = h[0]
        for shape in empty:             # an emptied shape's heap goes (keys are unique: the order of shapes never decides)
            del self.heaps[shape]
        return out

    def remove(self, job: Job) -> None:
        h = self.heaps[shape_of(job)]
        self.moves += 1
        self.n -= 1
        if h[0][1] is job:
            self.ops += depth(len(h))
            heapq.heappop(h)
        else:                                  # a reserved job behind its shape's head: delete lazily
            self.gone.add(id(job))
            self.ops += 1

    def _clean(self, h: list) -> None:
        while h and id(h[0][1]) in self.gone:
            self.gone.discard(id(heapq.heappop(h)[1]))
            self.ops += depth(len(h) + 1)

    def __len__(self) -> int:
        return self.n

    def bulk(self, entries: list) -> None:
        """Load many (key, job) at once: group by shape and heapify each, O(n) (counted as n)."""
        for key, job in entries:
            self.heaps.setdefault(shape_of(job), []).append((key, job))
        for h in self.heaps.values():
            heapq.heapify(h)
        self.n += len(entries)
        self.ops += len(entries)
        self.moves += len(entries)


@dataclass
class Stats:
    ticks: int = 0
    ops: int = 0                        # queue entries touched, all ticks
    ops_max: int = 0                    # the most in one tick
    scan_ops: int = 0                   # what a scan of the same queue would touch for the same decisions
    evicted_gpus: int = 0
    worst_per_gpu: float = 0.0          # the most hours of progress one eviction threw away per GPU
    queue_max: int = 0
    starts: int = 0
    backfilled: int = 0
    preemptions: int = 0
    evictions: int = 0
    lost_gpu_hours: float = 0.0         # GPUs x time since the victims' last checkpoints
    forgotten_gpu_hours: float = 0.0    # checkpointed work a resubmitted victim throws away too
    reservations_kept: int = 0          # a reserved head started no later than its shadow time
    reservations_broken: int = 0
    transitions: dict = field(default_factory=dict)


class Scheduler:
    def __init__(self, n_gpus: int, *, queue: str = "indexed", reserve: bool = True, preempt: bool = True,
                 rule: str = "checkpoint", requeue: str = "keep", dt: float = 0.0, sticky: bool = True):
        if queue not in ("indexed", "scan") or requeue not in ("keep", "resubmit"):
            raise ValueError(f"queue must be indexed or scan, requeue keep or resubmit: {queue!r}, {requeue!r}")
        self.n_gpus, self.free = n_gpus, n_gpus
        self.queue = IndexedQueue() if queue == "indexed" else ScanQueue()
        self.reserve, self.preempt, self.rule, self.requeue = reserve, preempt, rule, requeue
        self.table = TRANSITIONS if requeue == "keep" else BUGGY_TRANSITIONS
        self.state: dict = {}
        self.keys: dict = {}
        self.running: dict = {}             # name -> Running
        self.ends: list = []                # heap of (end, seq, name, run): completions in O(log r)
        self.reserved = None                # (job, shadow time)
        self.seq = itertools.count()
        self.stats = Stats()
        self.shadow_ops = 0
        self.sticky = sticky                # keep a reservation when a better job arrives
        self.dt = dt                        # tick length: a start within one tick of the shadow is on time

    # --- the state machine ------------------------------------------------------------------------
    def move(self, job: Job, new: str) -> None:
        old = self.state.get(job.name)
        if old is not None and new not in self.table[old]:
            raise IllegalTransition(f"{job.name}: {old} -> {new}")
        self.state[job.name] = new
        edge = (old, new)
        self.stats.transitions[edge] = self.stats.transitions.get(edge, 0) + 1

    # --- admit ------------------------------------------------------------------------------------
    def submit(self, job: Job, now: float) -> None:
        self.move(job, "pending")
        if not 0 < job.gpus <= self.n_gpus or job.work <= 0:
            self.move(job, "failed")
            return
        self.keys[job.name] = (-job.priority, job.submit, next(self.seq))
        self.move(job, "admitted")
        self.queue.push(self.keys[job.name], job)

    def submit_many(self, jobs: list, now: float) -> None:
        """Admit a backlog in one pass (the same states and keys as submit, one bulk load)."""
        entries = []
        for job in jobs:
            if not 0 < job.gpus <= self.n_gpus or job.work <= 0:
                self.submit(job, now)
                continue
            self.state[job.name] = "admitted"
            self.keys[job.name] = key = (-job.priority, job.submit, next(self.seq))
            entries.append((key, job))
        self.queue.bulk(entries)

    # --- place ------------------------------------------------------------------------------------
    def start(self, job: Job, now: float) -> None:
        self.queue.remove(job)
        if self.reserved is not None and self.reserved[0] is job:
            kept = now <= self.reserved[1] + self.dt + 1e-9
            self.stats.reservations_kept += kept
            self.stats.reservations_broken += not kept
            self.reserved = None
        self.move(job, "running")
        run = Running(job, now)
        self.running[job.name] = run
        self.free -= job.gpus                 # all of the gang's GPUs at once, or not at all
        job.start = now if job.start is None else job.start
        heapq.heappush(self.ends, (now + job.work - job.done, next(self.seq), job.name, run))
        self.stats.starts += 1

    def complete(self, now: float) -> None:
        while self.ends and self.ends[0][0] <= now + 1e-9:
            _, _, name, run = heapq.heappop(self.ends)
            if self.running.get(name) is not run:     # evicted since: a stale completion
                continue
            del self.running[name]
            self.free += run.job.gpus
            run.job.done, run.job.finish = run.job.work, now
            self.move(run.job, "completed")

    # --- reserve ----------------------------------------------------------------------------------
    def shadow(self, need: int) -> tuple[float, int]:
        """When `need` GPUs will be free if the running jobs end as estimated, and the GPUs spare then."""
        free = self.free
        for end, _, _name, run in sorted(e for e in self.ends if self.running.get(e[2]) is e[3]):
            free += run.job.gpus
            self.shadow_ops += 1              # running entries touched: the same for both queues
            if free >= need:
                return end, free - need
        return math.inf, 0

    def set_reservation(self, head: Job, when: float) -> None:
        if self.reserved is None:                 # the first promise is the one it is held to
            self.move(head, "reserved")
            self.reserved = (head, when)

    # --- preempt ----------------------------------------------------------------------------------
    def evict(self, run: Running, now: float) -> None:
        job = run.job
        del self.running[job.name]
        self.free += job.gpus
        self.move(job, "preempted")
        self.stats.evictions += 1
        self.stats.evicted_gpus += job.gpus
        if self.requeue == "keep":
            lost = requeue_after_eviction(run, now)
            self.stats.lost_gpu_hours += lost
            self.stats.worst_per_gpu = max(self.stats.worst_per_gpu, lost / job.gpus)
            self.move(job, "admitted")
            self.queue.push(self.keys[job.name], job)       # its original key: its place and its age
        else:                                               # the bug: a brand-new job
            self.stats.lost_gpu_hours += run.lost_work(now)
            forgotten = job.gpus * (run.last_checkpoint(now) - run.since + job.done)
            self.stats.forgotten_gpu_hours += forgotten
            self.stats.worst_per_gpu = max(self.stats.worst_per_gpu, (run.lost_work(now) + forgotten) / job.gpus)
            job.done, job.submit = 0.0, now
            job.evictions += 1
            self.submit(job, now)

    def victims(self, head: Job, now: float):
        if not self.preempt:
            return None
        cands = [r for r in self.running.values() if may_preempt(head, r.job, 0.0)]
        return select_victims(cands, head.gpus - self.free, now, self.rule)

    # --- one tick ---------------------------------------------------------------------------------
    def tick(self, now: float, arrivals=()) -> None:
        before = self.queue.ops + self.shadow_ops
        scan_before = len(self.queue.lookups), self.queue.moves, self.shadow_ops
        self.complete(now)
        for job in arrivals:                                    # admit
            self.submit(job, now)
        evicted_for = 0
        while True:
            top = self.queue.best()                             # order
            if top is None:
                break
            top = top[1]
            if self.reserved is not None and self.reserved[0] is not top and not self.sticky:
                self.move(self.reserved[0], "admitted")         # a better job arrived: it moves
                self.reserved = None
            head = self.reserved[0] if self.reserved else top   # a reservation, while it holds
            if head.gpus <= self.free:                          # place
                self.start(head, now)
                continue
            # would evicting lower bands place the top job now? Then no reservation, no backfill.
            # Not while another job's reservation stands: the evicted GPUs would be the promised ones.
            may = top.gpus > self.free and evicted_for < 100 and (self.reserved is None or head is top)
            victims = self.victims(top, now) if may else None
            if not victims:
                if self.reserve:
                    when, spare = self.shadow(head.gpus)        # reserve
                    self.set_reservation(head, when)
                    self.backfill(now, when, spare)             # backfill (EASY)
                else:                                           # no reservation: anything that fits
                    self.backfill(now, math.inf, self.n_gpus)
                break
            self.stats.preemptions += 1                         # preempt
            evicted_for += 1
            for r in victims:
                self.evict(r, now)
            self.start(top, now)
        self.stats.ticks += 1
        spent = self.queue.ops + self.shadow_ops - before
        self.stats.ops += spent
        k, m, sh = scan_before
        self.stats.scan_ops += (sum(self.queue.lookups[k:]) + self.queue.moves - m + self.shadow_ops - sh)
        self.queue.lookups = self.queue.lookups[-1:] if len(self.queue.lookups) > 4096 else self.queue.lookups
        self.stats.ops_max = max(self.stats.ops_max, spent)
        self.stats.queue_max = max(self.stats.queue_max, len(self.queue))

    def backfill(self, now: float, shadow: float, spare: int) -> None:
        """EASY: start the best job that fits now and ends before the shadow time or fits in the spare
        GPUs; repeat until none does."""
        while self.free > 0:
            def fits(shape, window=shadow - now, extra=spare, free=self.free):
                g, b = shape
                return g <= free and (BUCKETS[b] <= window + 1e-9 or g <= extra)

            top = self.queue.best(fits)
            if top is None:
                return
            job = top[1]
            if not BUCKETS[shape_of(job)[1]] <= shadow - now + 1e-9:
                spare -= job.gpus                              # it runs past the shadow: uses spare GPUs
            self.start(job, now)
            self.stats.backfilled += 1


# --- a seeded simulation ------------------------------------------------------------------------------
def workload(n_jobs: int, n_gpus: int, load: float, seed: int, *, gang_gpus: int, gang_every: int,
             mean_work: float = 2.0, checkpoint_every: float = 1.0, sizes=(1, 2, 4, 8),
             priorities=(0, 1, 2), gang_priority: int = 1) -> list[Job]:
    """Poisson arrivals at `load` times the cluster's capacity: small jobs of uniform size and priority,
    and every `gang_every`-th job a big gang of `gang_gpus` GPUs at `gang_priority`."""
    import numpy as np
    rng = np.random.default_rng(seed)
    g = rng.choice(np.array(sizes), n_jobs)
    pr = rng.choice(np.array(priorities), n_jobs)
    w = np.maximum(0.25, rng.exponential(mean_work, n_jobs))
    gang = (np.arange(n_jobs) % gang_every) == gang_every - 1
    g = np.where(gang, gang_gpus, g)
    pr = np.where(gang, gang_priority, pr)
    rate = load * n_gpus / float(np.mean(g * w))
    t = np.cumsum(rng.exponential(1 / rate, n_jobs))
    return [Job(("gang" if gang[i] else "j") + str(i), int(pr[i]), int(g[i]), float(w[i]), float(t[i]),
                checkpoint_every) for i in range(n_jobs)]


@dataclass
class Run:
    jobs: list
    stats: Stats
    horizon: float

    def waits(self, prefix: str = "") -> list[float]:
        """Submit to first start (to the horizon for a job that never started: a lower bound)."""
        return [(j.start if j.start is not None else self.horizon) - j.submit
                for j in self.jobs if j.name.startswith(prefix)]


def simulate(jobs: list[Job], n_gpus: int, *, dt: float = 0.25, horizon: float = math.inf, **kw) -> Run:
    """Tick every dt hours until every job has ended (or the horizon). Jobs are copied, never changed;
    a resubmitted job's submit time changes, so its wait is measured from the original one."""
    jobs = [replace(j, done=0.0, evictions=0, start=None, finish=None) for j in jobs]
    first = {j.name: j.submit for j in jobs}
    s = Scheduler(n_gpus, dt=dt, **kw)
    arrivals = sorted(jobs, key=lambda j: j.submit)
    i, now = 0, 0.0
    while now <= horizon:
        batch = []
        while i < len(arrivals) and arrivals[i].submit <= now:
            batch.append(arrivals[i])
            i += 1
        s.tick(now, batch)
        if i == len(arrivals) and not s.running and not len(s.queue):
            break
        now = round(now + dt, 9)
    for j in jobs:
        j.submit = first[j.name]
    return Run(jobs, s.stats, now)


def backlog(n: int, n_gpus: int, seed: int) -> list[Job]:
    """n waiting jobs of every shape, for one tick's cost: small and big, short and long."""
    import numpy as np
    rng = np.random.default_rng(seed)
    g = rng.choice(np.array([1, 2, 4, 8, n_gpus // 2, n_gpus]), n).tolist()
    w = np.maximum(0.25, rng.exponential(4.0, n)).tolist()
    pr = rng.choice(np.array([0, 1, 2]), n).tolist()
    sub = (-(n - np.arange(n)) * 1e-3).tolist()
    return [Job(f"b{i}", pr[i], g[i], w[i], sub[i], 1.0) for i in range(n)]


def tick_cost(n: int, n_gpus: int = 64, seed: int = 0, queue: str = "indexed") -> dict:
    """One scheduling tick over a backlog of n waiting jobs, the cluster emptied by a completion of
    half of it: the queue entries the tick touches, and what it started."""
    jobs = backlog(n, n_gpus, seed)
    s = Scheduler(n_gpus, queue=queue, preempt=False)
    s.submit_many(jobs, 0.0)
    s.running["hold"] = hold = Running(Job("hold", 0, n_gpus // 2, 3.0, -1.0), -1.0)   # a half-cluster job
    heapq.heappush(s.ends, (2.0, -1, "hold", hold))
    s.free -= n_gpus // 2
    s.queue.ops = s.shadow_ops = 0
    s.queue.lookups = []
    s.tick(0.0)
    started = [name for name, st in s.state.items() if st == "running"]
    # a scan makes the same decisions and touches every waiting entry at each lookup, once per removal
    scan = sum(s.queue.lookups) + len(started) + s.shadow_ops
    return dict(n=n, ops=s.stats.ops, scan_ops=scan, lookups=len(s.queue.lookups), started=started,
                queue=len(s.queue))


def time_ticks(sizes=(1_000, 10_000, 100_000), repeats: int = 3) -> dict:
    """CPU timing (seconds per tick, the best of `repeats`) of tick_cost for both queues. Never printed
    in a notebook: timings differ by machine."""
    import time
    out = {}
    for n in sizes:
        for queue in ("indexed", "scan"):
            best = math.inf
            for _ in range(repeats):
                jobs = backlog(n, 64, 0)
                s = Scheduler(64, queue=queue, preempt=False)
                s.submit_many(jobs, 0.0)
                s.running["hold"] = hold = Running(Job("hold", 0, 32, 3.0, -1.0), -1.0)
                heapq.heappush(s.ends, (2.0, -1, "hold", hold))
                s.free -= 32
                t0 = time.perf_counter()
                s.tick(0.0)
                best = min(best, time.perf_counter() - t0)
            out[(n, queue)] = best
    return out


if __name__ == "__main__":          # python -m utils.fleet.scheduler: the CPU timing of one tick
    for (n, queue), sec in time_ticks().items():
        print(f"n = {n:>7,}  {queue:>8}: {sec * 1e3:9.3f} ms per tick (CPU timing, this machine)")
