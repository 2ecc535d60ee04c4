"""utils/fleet/scheduler.py: the state machine and its wrong edge, gangs never partially placed, EASY backfill
that never delays the reservation, reservations that stop a big gang waiting behind small jobs,
checkpoint-aware victims, the requeue that keeps checkpoint and age, and an indexed queue that makes
the scan's decisions while touching a few hundred entries where the scan touches all of them."""
import pytest

from utils.components.preemptive_queue import Job
from utils.fleet.scheduler import (
    BUGGY_TRANSITIONS,
    TRANSITIONS,
    IllegalTransition,
    IndexedQueue,
    ScanQueue,
    Scheduler,
    simulate,
    tick_cost,
    workload,
)


@pytest.fixture(scope="module")
def jobs():
    return workload(600, 64, 0.9, 0, gang_gpus=48, gang_every=50)


def test_the_wrong_edge_is_refused_by_the_real_table():
    assert "pending" not in TRANSITIONS["preempted"] and BUGGY_TRANSITIONS["preempted"] == {"pending"}
    s = Scheduler(8)
    j = Job("a", 0, 4, 1.0, 0.0)
    s.submit(j, 0.0)
    with pytest.raises(IllegalTransition, match="admitted -> completed"):
        s.move(j, "completed")
    s.state["a"] = "preempted"
    with pytest.raises(IllegalTransition, match="preempted -> pending"):
        s.move(j, "pending")


def test_a_job_too_big_for_the_cluster_fails_at_admission():
    s = Scheduler(8)
    s.tick(0.0, [Job("huge", 0, 16, 1.0, 0.0)])
    assert s.state["huge"] == "failed" and len(s.queue) == 0


def test_a_gang_is_never_partially_placed():
    s = Scheduler(8, preempt=False)
    s.tick(0.0, [Job("small", 0, 6, 2.0, 0.0), Job("gang", 0, 8, 1.0, 0.1)])
    assert s.state["gang"] == "reserved" and s.free == 2          # two GPUs idle, none handed to the gang
    s.tick(2.0)
    assert s.state["gang"] == "running" and s.free == 0


def test_easy_backfill_fits_the_hole_and_never_delays_the_reservation():
    s = Scheduler(8, preempt=False)
    s.tick(0.0, [Job("long", 0, 4, 4.0, 0.0)])
    # the gang waits for the long job (shadow at 4 h); a short job fits before it, a long one does not
    s.tick(0.25, [Job("gang", 0, 8, 1.0, 0.1), Job("short", 0, 4, 2.0, 0.2), Job("tail", 0, 4, 8.0, 0.3)])
    assert s.reserved[1] == pytest.approx(4.0)
    assert s.state["short"] == "running" and s.state["tail"] == "admitted"
    s.tick(4.0)
    assert s.state["gang"] == "running" and s.stats.reservations_kept == 1


def test_without_a_reservation_big_gangs_wait_behind_small_jobs(jobs):
    easy = simulate(jobs, 64, preempt=False)
    greedy = simulate(jobs, 64, preempt=False, reserve=False)
    assert max(easy.waits("gang")) * 3 < max(greedy.waits("gang"))
    assert easy.stats.reservations_broken == 0 and easy.stats.reservations_kept > 0


def test_checkpoint_aware_victims_and_a_requeue_that_keeps_checkpoint_and_age():
    s = Scheduler(8)
    s.tick(0.0, [Job("old", 0, 4, 10.0, 0.0, checkpoint_every=1.0)])
    s.tick(0.75, [Job("new", 0, 4, 10.0, 0.5, checkpoint_every=1.0)])
    s.tick(2.5, [Job("hi", 1, 4, 1.0, 2.5)])
    # old checkpointed at 2 h (0.5 h ago); new at 1.75 h (0.75 h ago): old is the cheaper victim
    assert s.state["new"] == "running" and s.state["hi"] == "running"
    assert s.state["old"] == "reserved" and s.stats.transitions[("preempted", "admitted")] == 1   # queued again
    old = s.queue.best()[1]
    assert old.done == pytest.approx(2.0) and old.submit == 0.0 and old.evictions == 1
    assert s.stats.lost_gpu_hours == pytest.approx(4 * 0.5)


def test_the_resubmit_bug_forgets_work_and_age(jobs):
    keep, bug = simulate(jobs, 64), simulate(jobs, 64, requeue="resubmit")
    assert keep.stats.forgotten_gpu_hours == 0 < keep.stats.evictions
    assert bug.stats.forgotten_gpu_hours > keep.stats.lost_gpu_hours
    assert bug.stats.transitions.get(("preempted", "pending"), 0) == bug.stats.evictions
    assert keep.stats.transitions.get(("preempted", "admitted"), 0) == keep.stats.evictions


def test_equal_priority_never_preempts():
    s = Scheduler(8)
    s.tick(0.0, [Job("first", 1, 8, 2.0, 0.0)])
    s.tick(0.5, [Job("second", 1, 8, 2.0, 0.5)])
    assert s.stats.evictions == 0 and s.state["second"] == "reserved"


@pytest.mark.parametrize("kw", [{}, {"preempt": False}, {"reserve": False}, {"requeue": "resubmit"}])
def test_indexed_and_scan_queues_make_the_same_decisions(jobs, kw):
    a, b = simulate(jobs, 64, **kw), simulate(jobs, 64, queue="scan", **kw)
    assert [(j.start, j.finish) for j in a.jobs] == [(j.start, j.finish) for j in b.jobs]
    assert a.stats.ops < b.stats.ops and a.stats.scan_ops == b.stats.ops     # the scan's count, exactly


@pytest.mark.parametrize("n", [1_000, 10_000])
def test_tick_ops_indexed_against_scan(n):
    a, b = tick_cost(n), tick_cost(n, queue="scan")
    assert a["started"] == b["started"] and a["started"]
    assert a["scan_ops"] == b["ops"]              # the scan's count follows from the lookups exactly
    assert a["ops"] * n // 50 < b["ops"]          # the gap grows with n: 20 times at 1e3, 200 at 1e4


def test_the_indexed_tick_does_not_grow_with_the_queue():
    small, big = tick_cost(1_000), tick_cost(30_000)
    assert big["ops"] < 2 * small["ops"] and big["scan_ops"] > 20 * small["scan_ops"]


def test_queues_count_what_they_touch():
    iq, sq = IndexedQueue(), ScanQueue()
    for i in range(7):
        j = Job(f"x{i}", 0, 1, 1.0, float(i))
        iq.push((0, float(i), i), j)
        sq.push((0, float(i), i), j)
    iq.ops = sq.ops = 0
    assert iq.best()[1].name == sq.best()[1].name == "x0"
    assert iq.ops == 1 and sq.ops == 7


def test_cpu_timing_indexed_tick_is_faster_at_a_large_queue():
    """A CPU timing (this machine; never in a notebook): one tick over a backlog of 10,000. The figures
    at 1e3, 1e4 and 1e5 come from `python -m utils.fleet.scheduler`."""
    from utils.fleet.scheduler import time_ticks
    t = time_ticks(sizes=(10_000,), repeats=1)
    assert t[(10_000, "indexed")] * 10 < t[(10_000, "scan")]
