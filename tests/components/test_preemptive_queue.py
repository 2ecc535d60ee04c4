"""utils/components/preemptive_queue.py: the heap order, the exact victim cover (against every subset), the
equal-priority rule, requeue with the original submit time, and starvation without aging."""
import pytest

from utils.components.preemptive_queue import (
    Job,
    JobQueue,
    Running,
    brute_force_cover,
    may_preempt,
    random_cluster,
    select_victims,
    simulate,
    starvation_workload,
    workload,
)


def cost(victims, now):
    return (sum(r.lost_work(now) for r in victims), sum(r.job.gpus for r in victims), len(victims))


def test_heap_orders_by_priority_then_age_then_arrival():
    q = JobQueue()
    for j in [Job("late-high", 2, 1, 1, 5.0), Job("low", 0, 1, 1, 0.0), Job("early-high", 2, 1, 1, 1.0),
              Job("tie-a", 1, 1, 1, 3.0), Job("tie-b", 1, 1, 1, 3.0)]:
        q.push(j)
    assert [q.pop().name for _ in range(len(q))] == ["early-high", "late-high", "tie-a", "tie-b", "low"]


def test_aging_key_is_static_and_lets_an_old_job_overtake():
    q = JobQueue(aging=0.1)                       # one level per ten hours
    q.push(Job("old-low", 0, 1, 1, 0.0))
    q.push(Job("new-high", 1, 1, 1, 12.0))        # 12 h later: the old job has gained 1.2 levels
    q.push(Job("newish-high", 1, 1, 1, 8.0))      # only 0.8 levels behind: still ahead of old-low
    assert [q.pop().name for _ in range(3)] == ["newish-high", "old-low", "new-high"]


@pytest.mark.parametrize("seed", range(150))
def test_exact_cover_matches_every_subset(seed):
    runs, need, now = random_cluster(seed)
    got, best = select_victims(runs, need, now), brute_force_cover(runs, need, now)
    assert (got is None) == (best is None)
    if got is not None:
        c = cost(got, now)
        assert c[0] == pytest.approx(best[0][0], abs=1e-9) and c[1:] == best[0][1:]
        assert c[1] >= need
        # irredundant: dropping any victim leaves too few GPUs (a zero-loss extra would be caught here)
        assert all(c[1] - r.job.gpus < need for r in got)


def test_naive_rules_can_free_more_than_needed_and_lose_more():
    now = 10.0
    runs = [Running(Job("big-new", 0, 8, 100, 0, 1.0), 9.2),        # newest: 0.8 h since start, 8 GPUs
            Running(Job("small-old", 0, 2, 100, 0, 1.0), 3.95)]     # checkpointed 0.05 h ago
    assert [r.job.name for r in select_victims(runs, 2, now, "newest")] == ["big-new"]
    assert [r.job.name for r in select_victims(runs, 2, now, "largest")] == ["big-new"]
    aware = select_victims(runs, 2, now)
    assert [r.job.name for r in aware] == ["small-old"]
    assert cost(aware, now)[0] == pytest.approx(0.1) and runs[0].lost_work(now) == pytest.approx(6.4)


def test_no_victims_when_all_of_them_would_not_be_enough():
    runs = [Running(Job("a", 0, 2, 100, 0), 0.0), Running(Job("b", 0, 2, 100, 0), 0.0)]
    for rule in ("checkpoint", "newest", "largest"):
        assert select_victims(runs, 5, 1.0, rule) is None
        assert select_victims(runs, 0, 1.0, rule) == []


def test_last_checkpoint_and_lost_work():
    r = Running(Job("a", 0, 4, 100, 0, 0.5), 1.0)
    assert r.last_checkpoint(2.2) == pytest.approx(2.0) and r.lost_work(2.2) == pytest.approx(0.8)
    assert r.last_checkpoint(3.0) == pytest.approx(3.0)                 # a checkpoint exactly now counts
    never = Running(Job("b", 0, 2, 100, 0, 0.0), 1.0)
    assert never.lost_work(4.0) == pytest.approx(6.0)                  # no checkpoints: all since start


def test_only_strictly_lower_priority_may_be_evicted():
    head, same, lower = Job("h", 1, 1, 1, 5.0), Job("s", 1, 1, 1, 0.0), Job("l", 0, 1, 1, 0.0)
    assert not may_preempt(head, same, 0.0) and may_preempt(head, lower, 0.0)
    assert may_preempt(head, same, 0.0, allow_equal=True)
    # aged: the low job submitted 12 h before the head outranks it at 0.1 levels/h, so it is protected
    assert not may_preempt(Job("h", 1, 1, 1, 12.0), lower, 0.1)


def test_equal_priority_never_preempts_and_allowing_it_never_settles():
    jobs = [Job("first", 1, 8, 2.0, 0.0), Job("second", 1, 8, 2.0, 0.5)]
    strict = simulate(jobs, 8)
    assert strict.evictions == 0 and strict.job("second").start == 2.0 and not strict.livelock
    bad = simulate(jobs, 8, allow_equal=True, eviction_cap=50)
    assert bad.livelock and bad.evictions == 50
    assert all(t == 0.5 for t, _, _ in bad.log)                         # all at one instant


def test_a_victim_keeps_its_checkpointed_work_and_its_submit_time():
    jobs = [Job("low", 0, 8, 3.0, 0.0, 1.0), Job("high", 1, 8, 1.0, 1.5)]
    o = simulate(jobs, 8)
    low = o.job("low")
    assert low.evictions == 1 and low.submit == 0.0
    assert o.lost_gpu_hours == pytest.approx(8 * 0.5)                  # evicted 0.5 h after its checkpoint
    assert low.finish == pytest.approx(2.5 + 2.0)                      # resumes at 2.5 with 1 h saved
    assert jobs[0].evictions == 0 and jobs[0].finish is None           # the inputs are not changed


def test_every_job_finishes_and_work_is_conserved():
    jobs = workload(120, 16, 1.0, 3)
    for rule in ("checkpoint", "newest", "largest"):
        o = simulate(jobs, 16, rule=rule, aging=0.1)
        assert all(j.finish is not None and j.done == j.work for j in o.jobs)
        assert all(j.finish - j.start >= j.work - 1e-9 for j in o.jobs)


def test_starvation_without_aging_and_none_with_it():
    jobs = starvation_workload(8, 1.25, 48.0, 0)
    low0 = simulate(jobs, 8, aging=0.0).job("low")
    low1 = simulate(jobs, 8, aging=0.1).job("low")
    assert low0.finish > 48.0                  # only once the higher-priority stream has stopped
    assert low1.finish < 1.0 + 10.0 + 4.0      # about the aging horizon (1/0.1 h) plus its work
    faster = simulate(jobs, 8, aging=0.5).job("low")
    assert faster.finish < low1.finish


def test_bad_inputs_raise():
    with pytest.raises(ValueError, match="rule must be"):
        select_victims([], 1, 0.0, "oldest")
    with pytest.raises(ValueError, match="needs 1 to 8 GPUs"):
        simulate([Job("x", 0, 16, 1.0, 0.0)], 8)


@pytest.mark.parametrize("load", [1.1, 1.4])
def test_at_the_same_decisions_the_exact_cover_never_loses_more(load):
    o = simulate(workload(150, 32, load, 5), 32, aging=0.1, shadow=("checkpoint", "newest", "largest"))
    assert o.preemptions > 0
    assert o.shadow["checkpoint"] == pytest.approx(o.lost_gpu_hours)
    assert o.shadow["checkpoint"] <= min(o.shadow["newest"], o.shadow["largest"]) + 1e-9


def test_requeue_after_eviction_keeps_the_checkpoint_and_the_submit_time():
    from utils.components.preemptive_queue import requeue_after_eviction
    job = Job("v", 0, 4, 10.0, 2.0, checkpoint_every=1.0, done=1.5)
    run = Running(job, since=5.0)
    lost = requeue_after_eviction(run, 7.25)          # checkpoints at 6 and 7: 2 h saved, 0.25 h lost
    assert lost == pytest.approx(4 * 0.25)
    assert job.done == pytest.approx(3.5) and job.evictions == 1 and job.submit == 2.0
