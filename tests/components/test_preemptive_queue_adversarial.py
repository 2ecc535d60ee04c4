"""utils/components/preemptive_queue.py against hostile jobs: a name that would mean two jobs, a NaN that would
corrupt the heap's order, fractional or out-of-range GPUs: refused before anything runs; a valid seeded
workload keeps its invariants (every job finishes once, GPUs never over-committed)."""
import math
from dataclasses import replace

import pytest

from utils.components.preemptive_queue import Job, simulate, workload

OK = Job("a", 1, 2, 1.0, 0.0, 0.5)


@pytest.mark.parametrize("bad", [
    dict(name="b"),                                 # with a second job "b": two jobs, one name
    dict(gpus=0), dict(gpus=9), dict(gpus=1.5), dict(gpus=True), dict(priority=1.5), dict(priority=float("nan")),
    dict(work=float("nan")), dict(work=0.0), dict(work=float("inf")), dict(submit=float("nan")),
    dict(checkpoint_every=-1.0), dict(checkpoint_every=float("nan")), dict(name=None)])
def test_a_hostile_job_is_refused_before_anything_runs(bad):
    jobs = [replace(OK, name="b", priority=0), replace(OK, **bad)]
    with pytest.raises(ValueError):
        simulate(jobs, 8)


@pytest.mark.parametrize("kw", [dict(aging=float("nan")), dict(aging=-1.0)])
def test_hostile_arguments_are_refused(kw):
    with pytest.raises(ValueError):
        simulate([OK], 8, **kw)
    with pytest.raises(ValueError):
        simulate([OK], 8.0)


def test_a_seeded_workload_keeps_its_invariants():
    jobs = workload(60, 16, 0.9, seed=3)
    out = simulate(jobs, 16, aging=0.5)
    assert sorted(j.name for j in out.jobs) == sorted(j.name for j in jobs)
    assert all(j.finish is not None and math.isfinite(j.finish) and j.finish >= j.submit for j in out.jobs)
