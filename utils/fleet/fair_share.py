"""Quotas with guarantees and borrowing, a decayed fair share, and preemption that reclaims borrowed GPUs
first: the four layers of a shared research cluster's policy, as one small scheduler.

- **The quota tree.** Every team sits under groups (`parents`); every node has a guarantee in GPUs. A job
  is *guaranteed* when its team and every ancestor stay within their guarantees with it; otherwise it is
  *borrowed*: it runs on capacity someone else is guaranteed but not using, and may be preempted.
- **Decayed usage.** A team's usage is GPU-hours decayed by 0.5^(dt / half_life) (`DecayedUsage`; held
  exactly for a constant rate between events, so the answer does not depend on how often it is read).
- **Fair share.** Slurm's classic factor F = 2^(-U/S): U the team's share of all decayed usage, S its
  share of the guarantees. F = 1/2 when a team used exactly its share; waiting jobs are ordered by F.
- **Preemption.** A guaranteed request that does not fit reclaims borrowed jobs only (never guaranteed
  ones), the least lost work first (lost work = GPUs x hours since the victim's last checkpoint), and
  only as many as it needs; if all borrowed jobs together would not free enough, nobody is evicted.
- **Hoarding.** A job holds its GPUs whether it uses them or not, so its usage accrues at the GPUs held:
  a team that hoards idle GPUs pays in F, and its next burst waits behind teams that did not.

Bad arguments raise ValueError with one line naming the argument. Time is in hours, given by the caller
(a fake clock in the tests): the scheduler never reads the wall clock.

Chapters: quota-fair-share.
"""
from __future__ import annotations

import math
from dataclasses import dataclass


class DecayedUsage:
    """GPU-hours decayed with a half-life, for a usage rate (GPUs held) that is constant between calls."""

    def __init__(self, half_life: float, t0: float = 0.0):
        if not half_life > 0:
            raise ValueError(f"half_life must be > 0 hours, got {half_life!r}")
        self.half_life, self.t, self.value, self.rate = float(half_life), float(t0), 0.0, 0.0

    def advance(self, t: float) -> float:
        """Decay what is held to time t and add the rate's decayed integral since the last call."""
        if t < self.t:
            raise ValueError(f"time went backwards: {t!r} < {self.t!r}")
        x = (t - self.t) / self.half_life * math.log(2)
        # integral over [t0, t] of rate * 0.5^((t - s)/h) ds = rate * h / ln 2 * (1 - d), 1 - d as -expm1(-x) so
        # a short span keeps its digits (a window of a second in a usage history is not rounded away)
        self.value = self.value * math.exp(-x) - self.rate * self.half_life / math.log(2) * math.expm1(-x)
        self.t = float(t)
        return self.value

    def set_rate(self, t: float, gpus: float) -> None:
        self.advance(t)
        self.rate = float(gpus)

    def add(self, t: float, gpu_hours: float) -> None:
        """A lump of usage at time t (a job accounted at its end)."""
        self.advance(t)
        self.value += float(gpu_hours)


def fair_share_factor(usage_share: float, share: float) -> float:
    """Slurm's classic fair-share factor, 2^(-U/S)."""
    if not share > 0:
        raise ValueError(f"share must be > 0, got {share!r}")
    if usage_share < 0:
        raise ValueError(f"usage_share must be >= 0, got {usage_share!r}")
    return 2.0 ** (-usage_share / share)


def decayed_usage(records, half_life: float) -> dict:
    """Each team's decayed GPU-hours now, from a usage history: records (team, gpu_hours, start_ago, end_ago),
    ages in hours before now, each record's GPU-hours spread evenly over [start_ago, end_ago] ago (what an
    accounting report over a window gives) or, with start_ago == end_ago, a lump at that age (a job accounted at
    its end). Held by DecayedUsage, so a history and a scheduler that ran it agree."""
    out = {}
    for team, gpu_hours, start, end in records:
        if not start >= end >= 0:
            raise ValueError(f"{team}: a record runs from start_ago back to end_ago >= 0, got {start!r} to {end!r}")
        u = DecayedUsage(half_life, t0=-start)
        if start > end:
            u.set_rate(-start, gpu_hours / (start - end))
            u.set_rate(-end, 0.0)
        else:
            u.add(-end, gpu_hours)
        out[team] = out.get(team, 0.0) + u.advance(0.0)
    return out


def start_order(factors: dict) -> list:
    """Teams in the order their waiting jobs start: the highest fair-share factor first (ties by name, as
    Cluster.schedule breaks them by job name)."""
    return sorted(factors, key=lambda k: (-factors[k], k))


@dataclass
class Job:
    name: str
    team: str
    gpus: int
    last_checkpoint: float = 0.0      # hours: when the job last saved its state
    guaranteed: bool = False
    running: bool = False


class Cluster:
    def __init__(self, capacity: int, guarantees: dict, *, parents: dict | None = None, half_life: float = 168.0):
        if int(capacity) != capacity or capacity < 1:
            raise ValueError(f"capacity must be a whole number of GPUs >= 1, got {capacity!r}")
        self.capacity = int(capacity)
        self.parents = dict(parents or {})
        self.guarantees = {k: int(v) for k, v in guarantees.items()}
        if any(v < 0 for v in self.guarantees.values()):
            raise ValueError("guarantees must be >= 0 GPUs")
        self.teams = [k for k in self.guarantees if k not in self.parents.values()]
        top = [k for k in self.guarantees if k not in self.parents]
        if sum(self.guarantees[k] for k in top) > self.capacity:
            raise ValueError(f"guarantees at the top of the tree sum to more than the capacity {capacity}")
        for node, parent in self.parents.items():
            kids = [k for k, p in self.parents.items() if p == parent]
            if sum(self.guarantees[k] for k in kids) > self.guarantees[parent]:
                raise ValueError(f"the guarantees under {parent!r} sum to more than its own")
            if node not in self.guarantees or parent not in self.guarantees:
                raise ValueError(f"{node!r} -> {parent!r}: every node of the tree needs a guarantee")
        total = sum(self.guarantees[k] for k in self.teams) or 1
        self.share = {k: self.guarantees[k] / total for k in self.teams}
        self.usage = {k: DecayedUsage(half_life) for k in self.teams}
        self.running: list[Job] = []
        self.waiting: list[Job] = []
        self.preempted: list[tuple[Job, float]] = []     # (victim, GPU-hours of work it lost)

    # --- reading -----------------------------------------------------------------------------------
    def path(self, team: str) -> list[str]:
        out = [team]
        while out[-1] in self.parents:
            out.append(self.parents[out[-1]])
        return out

    def held(self, node: str, *, guaranteed_only: bool = False) -> int:
        return sum(j.gpus for j in self.running if node in self.path(j.team)
                   and (j.guaranteed or not guaranteed_only))

    def free(self) -> int:
        return self.capacity - sum(j.gpus for j in self.running)

    def within_guarantee(self, team: str, gpus: int) -> bool:
        return all(self.held(n, guaranteed_only=True) + gpus <= self.guarantees[n] for n in self.path(team))

    def factors(self, t: float) -> dict:
        used = {k: u.advance(t) for k, u in self.usage.items()}
        total = sum(used.values())
        return {k: fair_share_factor(used[k] / total if total else 0.0, self.share[k]) for k in self.teams}

    # --- acting ------------------------------------------------------------------------------------
    def _start(self, t: float, job: Job) -> None:
        job.guaranteed, job.running = self.within_guarantee(job.team, job.gpus), True
        self.running.append(job)
        self._rates(t)

    def _rates(self, t: float) -> None:
        for k in self.teams:
            self.usage[k].set_rate(t, self.held(k))

    def submit(self, t: float, job: Job) -> list[Job]:
        """Start the job if it fits (reclaiming borrowed GPUs for a guaranteed request); else it waits.
        Returns the jobs preempted to make room."""
        if job.team not in self.teams:
            raise ValueError(f"unknown team {job.team!r}; teams are {self.teams}")
        if int(job.gpus) != job.gpus or job.gpus < 1 or job.gpus > self.capacity:
            raise ValueError(f"gpus must be a whole number in [1, {self.capacity}], got {job.gpus!r}")
        if job.gpus <= self.free():
            self._start(t, job)
            return []
        if self.within_guarantee(job.team, job.gpus):
            victims = self.victims(t, job.gpus - self.free())
            if victims is not None:
                for v in victims:
                    self.running.remove(v)
                    v.running = False
                    self.preempted.append((v, v.gpus * (t - v.last_checkpoint)))
                    self.waiting.append(v)          # back in the queue, its checkpoint kept
                self._start(t, job)
                return victims
        self.waiting.append(job)
        return []

    def victims(self, t: float, need: int) -> list[Job] | None:
        """Borrowed jobs only, least lost work per GPU freed first, until `need` GPUs are free."""
        borrowed = sorted((j for j in self.running if not j.guaranteed),
                          key=lambda j: ((t - j.last_checkpoint), -j.gpus, j.name))
        if sum(j.gpus for j in borrowed) < need:
            return None
        out, got = [], 0
        for j in borrowed:
            if got >= need:
                break
            out.append(j)
            got += j.gpus
        return out

    def finish(self, t: float, name: str) -> None:
        job = next((j for j in self.running if j.name == name), None)
        if job is None:
            raise ValueError(f"no running job {name!r}")
        self.running.remove(job)
        job.running = False
        self._rates(t)
        self.schedule(t)

    def schedule(self, t: float) -> list[Job]:
        """Start waiting jobs that fit, the team with the highest fair-share factor first."""
        f = self.factors(t)
        started = []
        for job in sorted(self.waiting, key=lambda j: (-f[j.team], j.name)):
            if job.gpus <= self.free():
                self.waiting.remove(job)
                self._start(t, job)
                started.append(job)
        return started


# --- the pooling arithmetic ------------------------------------------------------------------------
def binomial_pmf(n: int, p: float) -> list[float]:
    return [math.comb(n, k) * p ** k * (1 - p) ** (n - k) for k in range(n + 1)]


def pooled_size(n: int, p: float, overflow: float) -> int:
    """The fewest team-peaks of GPUs that serve every busy team with probability at least 1 - overflow."""
    cdf = 0.0
    for k, pk in enumerate(binomial_pmf(n, p)):
        cdf += pk
        if cdf >= 1 - overflow - 1e-12:
            return max(k, 1)
    return n


def pooled_idle(n: int, p: float, k: int) -> float:
    """Idle share of a pooled fleet of k team-peaks when each of n teams is busy (at its peak) with
    probability p: 1 - E[min(busy, k)] / k."""
    return 1 - sum(min(j, k) * pj for j, pj in enumerate(binomial_pmf(n, p))) / k


def simulate_pool(rng, n: int, p: float, k: int, steps: int, burst: float) -> dict:
    """On/off teams as a two-state Markov chain (busy share p, mean burst length `burst` steps): the
    static partitions' idle share, the pooled fleet's idle share and the demand it turns away."""
    import numpy as np
    leave = 1 / burst                          # busy -> idle per step
    enter = leave * p / (1 - p)                # idle -> busy, so the stationary busy share is p
    state = rng.random(n) < p
    draws = rng.random((steps, n))
    busy = np.empty(steps)
    for s in range(steps):
        state = np.where(state, draws[s] >= leave, draws[s] < enter)
        busy[s] = state.sum()
    served = np.minimum(busy, k)
    return dict(static_idle=float(1 - busy.mean() / n), pooled_idle=float(1 - served.mean() / k),
                turned_away=float((busy - served).sum() / max(busy.sum(), 1)), busy=busy)
