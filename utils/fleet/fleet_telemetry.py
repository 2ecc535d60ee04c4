"""A synthetic fleet's GPU telemetry, and the classifier that names why an allocated GPU is not working.

Allocated means the scheduler handed a GPU to a job; utilised means the GPU did work. Four causes open
the gap between them, and one metric alone cannot tell them apart:

    cause            process on GPU   tensor-active   minutes since the job's last step
    working          yes              high            small
    idle notebook    yes              ~0              large (a notebook reports no steps)
    data wait        yes              low (~0.2)      small (it steps, slowly)
    failed, holding  no               0               large (it stopped stepping when it died)
    over-requested   no               0               small (the gang steps on its other GPUs)

So three metrics separate them, each one needed: the share of the interval with a process on the GPU
(`proc`), tensor-active per allocated GPU-interval (`tensor`), and the minutes since the job's last
step (`since_step`). Drop `proc` and a failed job reads like a notebook, a gang's spare GPU like a
loader-bound one; drop `since_step` and a failed job reads like a gang's spare GPU, a notebook like a
loader-bound run; drop `tensor` and a loader-bound run reads like a working one. `classify(..., drop=...)` shows each confusion.

`generate` draws one row per allocated GPU per interval from a seeded numpy Generator, each cause filling
its stated share of the allocated GPU-intervals. The one realistic blur it keeps: a job that fails
mid-interval still shows a process for part of that interval and a recent step, so the first interval
after a crash can read as something else (detection lags by about one interval).

Chapters: allocated-vs-utilized.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

CAUSES = ("working", "idle notebook", "data wait", "failed, holding", "over-requested")
METRICS = ("proc", "tensor", "since_step")
TENANTS = ("pretraining", "research", "evals", "products")
# Which tenant holds each cause's rows (rows: CAUSES, columns: TENANTS): each tenant has a habit, so the
# per-tenant table has something to name. This book's assumption, for the synthetic fleet only.
TENANT_MIX = ((0.55, 0.15, 0.10, 0.20),    # working
              (0.05, 0.75, 0.05, 0.15),    # idle notebooks: interactive research
              (0.15, 0.10, 0.60, 0.15),    # data waits: eval harnesses reading from object storage
              (0.10, 0.20, 0.20, 0.50),    # failed, holding: a product team's unattended jobs
              (0.70, 0.10, 0.10, 0.10))    # over-requested: pre-training gangs asking for whole nodes


@dataclass(frozen=True)
class Thresholds:
    proc: float = 0.5          # share of the interval with a process: below it, nobody is on the GPU
    tensor: float = 0.4        # tensor-active: below it, a stepping job is waiting on something
    stale_min: float = 30.0    # minutes since the last step: above it, the job is not making progress


@dataclass(frozen=True)
class Telemetry:
    job: np.ndarray            # job index of each row (one row per allocated GPU per interval)
    tenant: np.ndarray         # tenant index of each row, an index into TENANTS
    cause: np.ndarray          # the injected cause, an index into CAUSES (the truth the classifier hides from)
    proc: np.ndarray           # share of the interval a process held the GPU
    tensor: np.ndarray         # tensor-active over the interval
    since_step: np.ndarray     # minutes since the job last reported a step, at the interval's end
    interval_h: float

    @property
    def rows(self) -> int:
        return len(self.job)


def generate(shares: dict, *, tensor_working=0.75, tensor_data_wait=0.2, n_rows=60000, interval_h=1.0,
             seed=0) -> Telemetry:
    """Rows of allocated GPU-intervals; `shares` maps each cause in CAUSES to its share of them (sum 1)."""
    if set(shares) != set(CAUSES):
        raise ValueError(f"shares must name exactly {CAUSES}, got {sorted(shares)}")
    s = np.array([float(shares[c]) for c in CAUSES])
    if (s < 0).any() or abs(s.sum() - 1) > 1e-9:
        raise ValueError(f"shares must be >= 0 and sum to one, got {s.sum()!r}")
    for name, v in (("tensor_working", tensor_working), ("tensor_data_wait", tensor_data_wait)):
        if not 0 < v < 1:
            raise ValueError(f"{name} must be in (0, 1), got {v!r}")
    if int(n_rows) < 1 or interval_h <= 0:
        raise ValueError("n_rows must be >= 1 and interval_h > 0")
    rng = np.random.default_rng(int(seed))
    n = int(n_rows)
    counts = np.floor(s * n).astype(int)
    counts[0] += n - counts.sum()
    cause = np.repeat(np.arange(len(CAUSES)), counts)
    mins = 60.0 * interval_h
    # Jobs: runs of rows of one cause (a job holds a few GPUs for a few intervals); the index is for display.
    job = np.cumsum(rng.random(n) < 1 / 16)
    proc, tensor, since = np.empty(n), np.empty(n), np.empty(n)
    for k, c in enumerate(CAUSES):
        m = cause == k
        r = int(m.sum())
        if c == "working":
            proc[m] = 1.0
            tensor[m] = np.clip(rng.normal(tensor_working, 0.08, r), 0.05, 1.0)
            since[m] = rng.exponential(0.5, r)                   # a step every few seconds
        elif c == "idle notebook":
            proc[m] = 1.0                                         # the kernel holds a CUDA context
            burst = rng.random(r) < 0.05                          # someone ran a cell this hour
            tensor[m] = np.where(burst, rng.uniform(0.1, 0.5, r), rng.uniform(0.0, 0.01, r))
            since[m] = mins * (1 + rng.integers(0, 48, r))         # no training loop: no step, ever
        elif c == "data wait":
            proc[m] = 1.0
            tensor[m] = np.clip(rng.normal(tensor_data_wait, 0.05, r), 0.0, 1.0)
            since[m] = rng.exponential(3.0, r)                   # steps, slowly
        elif c == "failed, holding":
            age = rng.integers(0, 12, r)                          # intervals since the crash
            died_at = rng.random(r)                              # when in its first interval it died
            first = age == 0
            proc[m] = np.where(first, died_at, 0.0)
            tensor[m] = np.where(first, died_at * tensor_working, 0.0)
            since[m] = mins * (age + 1 - died_at)
        else:                                                     # over-requested: a gang's spare GPU
            proc[m] = 0.0
            tensor[m] = 0.0
            since[m] = rng.exponential(0.5, r)                   # the gang steps on its other GPUs
    tenant = np.empty(n, dtype=int)
    for k in range(len(CAUSES)):
        m = cause == k
        tenant[m] = rng.choice(len(TENANTS), size=int(m.sum()), p=TENANT_MIX[k])
    return Telemetry(job, tenant, cause, proc, tensor, since, float(interval_h))


def classify(t: Telemetry, th: Thresholds = Thresholds(), *, drop: str | None = None) -> np.ndarray:
    """The cause index of each row from the three metrics. `drop` removes one metric (it then reads as
    if it showed nothing wrong: a process present, the GPU busy, a recent step) to show what it separates."""
    if drop not in (None, *METRICS):
        raise ValueError(f"drop must be None or one of {METRICS}, got {drop!r}")
    has_proc = t.proc >= th.proc if drop != "proc" else np.ones(t.rows, bool)
    busy = t.tensor >= th.tensor if drop != "tensor" else np.ones(t.rows, bool)
    stale = t.since_step > th.stale_min if drop != "since_step" else np.zeros(t.rows, bool)
    out = np.where(has_proc,
                   np.where(stale, 1, np.where(busy, 0, 2)),      # notebook / working / data wait
                   np.where(stale, 3, 4))                         # failed / over-requested
    return out


def confusion(t: Telemetry, predicted: np.ndarray) -> np.ndarray:
    """Rows: the injected cause; columns: the classified one (counts)."""
    k = len(CAUSES)
    return np.bincount(t.cause * k + predicted, minlength=k * k).reshape(k, k)


def waste(t: Telemetry) -> dict:
    """Per cause: allocated GPU-hours, the GPU-hours they did work (tensor-active x time) and the rest."""
    h = t.interval_h
    alloc = np.bincount(t.cause, minlength=len(CAUSES)) * h
    used = np.bincount(t.cause, weights=t.tensor, minlength=len(CAUSES)) * h
    return dict(allocated=alloc, utilised=used, wasted=alloc - used)


def per_tenant(t: Telemetry, predicted: np.ndarray) -> np.ndarray:
    """GPU-hours wasted (allocated minus tensor-active) per tenant (rows) per classified cause (columns):
    the table that names who holds idle GPUs and why, from the classifier, not from the injected truth."""
    k = len(CAUSES)
    idx = t.tenant * k + predicted
    return np.bincount(idx, weights=(1 - t.tensor) * t.interval_h, minlength=len(TENANTS) * k).reshape(-1, k)


def signature(t: Telemetry) -> dict:
    """Per cause, the median of each metric: the table's signature columns."""
    return {c: {m: float(np.median(getattr(t, m)[t.cause == k])) if (t.cause == k).any() else float("nan")
                for m in METRICS} for k, c in enumerate(CAUSES)}
