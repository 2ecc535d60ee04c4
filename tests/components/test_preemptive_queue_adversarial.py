"""utils/components/preemptive_queue.py against hostile jobs: a name that would mean two jobs, a NaN that would
corrupt the heap's order, fractional or out-of-range GPUs: refused before anything runs; a valid seeded
workload keeps its invariants (every job finishes once; GPUs never over-committed, checked on the runs' start
and end times over several seeded workloads with and without aging)."""
import math
from dataclasses import replace

import pytest

from utils.components.preemptive_queue import Job, peak_gpus, simulate, starvation_workload, workload

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


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("aging", [0.0, 0.5])
@pytest.mark.parametrize("load", [0.9, 1.3])
def test_gpus_are_never_over_committed(seed, aging, load):
    """At every instant the running jobs hold at most the cluster's GPUs, and the runs account for every
    start: one run per job plus one per eviction, each ending at a completion or an eviction."""
    out = simulate(workload(60, 16, load, seed=seed), 16, aging=aging)
    assert len(out.runs) == len(out.jobs) + out.evictions
    assert all(start <= end < math.inf for _, _, start, end in out.runs)
    assert peak_gpus(out.runs) <= 16
    assert peak_gpus(out.runs) > 8                      # the cluster did fill: the bound was tested, not idle


@pytest.mark.parametrize("aging", [0.0, 0.1])
def test_gpus_are_never_over_committed_under_a_starving_stream(aging):
    out = simulate(starvation_workload(8, 1.25, 48.0, seed=0), 8, aging=aging)
    assert len(out.runs) == len(out.jobs) + out.evictions
    assert peak_gpus(out.runs) == 8                     # full, and never more


def test_the_peak_counts_overlap_and_not_a_hand_over():
    assert peak_gpus([("a", 8, 0.0, 2.0), ("b", 8, 1.0, 3.0)]) == 16       # an over-commit is seen
    assert peak_gpus([("a", 8, 0.0, 1.0), ("b", 8, 1.0, 3.0)]) == 8        # b starts as a ends
    assert peak_gpus([("a", 8, 1.0, 1.0), ("b", 8, 1.0, 3.0)]) == 8        # evicted the instant it started
    assert peak_gpus([("a", 4, 0.0, math.inf), ("b", 4, 5.0, 6.0)]) == 8   # still running at the end
