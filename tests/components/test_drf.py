"""utils/components/drf.py: the paper's example, the four properties on seeded random instances, and the bug."""
import random
from fractions import Fraction

import pytest

from utils.components.drf import allocate, check, dominant_resource, dominant_share, partition_tasks, progressive_filling

PAPER_CAP, PAPER_DEM = (9, 18), [(1, 4), (3, 1)]      # 9 CPUs, 18 GB; A <1 CPU, 4 GB>, B <3 CPUs, 1 GB>


def instances(n_instances=60, seed=0):
    """Seeded random clusters: 1 to 3 resources, 2 to 4 users, small integer demands (some zeros)."""
    rng = random.Random(seed)
    for _ in range(n_instances):
        m, n = rng.randint(1, 3), rng.randint(2, 4)
        cap = tuple(rng.randint(10, 60) for _ in range(m))
        dem = [tuple(rng.randint(0, 6) for _ in range(m)) for _ in range(n)]
        yield cap, [d if any(d) else (1,) + d[1:] for d in dem]


def test_the_papers_example_three_tasks_and_two_at_two_thirds():
    a = allocate(PAPER_CAP, PAPER_DEM)
    assert a.tasks == (3, 2)
    assert a.shares == (Fraction(2, 3), Fraction(2, 3))
    assert a.used == ((3, 12), (6, 2)) and a.free == (0, 4)         # <3 CPUs, 12 GB> and <6 CPUs, 2 GB>
    assert [dominant_resource(d, PAPER_CAP) for d in PAPER_DEM] == [1, 0]   # A: memory, B: CPU
    # either tie-break, either stop rule: the same allocation on this instance
    for kw in (dict(tie="reverse"), dict(stop="paper"), dict(tie="reverse", stop="paper")):
        assert allocate(PAPER_CAP, PAPER_DEM, **kw).tasks == (3, 2)
    assert progressive_filling(PAPER_CAP, PAPER_DEM) == (3, 2)     # the divisible version agrees exactly


def test_each_round_goes_to_the_lowest_dominant_share():
    a = allocate(PAPER_CAP, PAPER_DEM)
    tasks = [0, 0]
    for i in a.order:
        shares = [dominant_share([t * x for x in d], PAPER_CAP) for t, d in zip(tasks, PAPER_DEM)]
        assert shares[i] == min(shares)
        tasks[i] += 1


def test_the_tie_break_bug_gives_the_first_user_everything():
    # shares floored to integers are all 0, every round ties, the first user wins every tie
    bug = allocate(PAPER_CAP, PAPER_DEM, key="floor", stop="paper")
    assert bug.tasks == (4, 0) and set(bug.order) == {0}
    assert allocate(PAPER_CAP, PAPER_DEM[::-1], key="floor", stop="paper").tasks == (9 // 3, 0)   # whoever is first
    # raw usage of one resource: the user who needs none of it always looks poorest
    gpu_cluster = (128, 1792, 32000), [(8, 32, 512), (0, 16, 64), (1, 4, 512)]
    raw = allocate(*gpu_cluster, key="raw")
    assert raw.tasks[1] == 110 and raw.tasks[2] == 0 and raw.utilisation(gpu_cluster[0])[0] < Fraction(1, 10)
    fair = allocate(*gpu_cluster)
    assert min(fair.tasks) > 0 and fair.utilisation(gpu_cluster[0])[0] == 1


def test_with_exact_shares_the_tie_break_is_harmless_on_ties_of_the_first_round():
    # two identical users: the tie-break decides who gets the odd task, never more than one
    for k in range(1, 12):
        a = allocate((k,), [(1,), (1,)])
        b = allocate((k,), [(1,), (1,)], tie="reverse")
        assert abs(a.tasks[0] - a.tasks[1]) <= 1 and sorted(a.tasks) == sorted(b.tasks)


def test_one_resource_is_max_min_fairness():
    a = allocate((12,), [(1,), (1,), (1,)])
    assert a.tasks == (4, 4, 4)
    assert progressive_filling((10,), [(1,), (2,)]) == (5, Fraction(5, 2))    # equal shares, not equal tasks


@pytest.mark.parametrize("cap, dem", list(instances()))
def test_divisible_drf_properties(cap, dem):
    x = progressive_filling(cap, dem)
    n = len(dem)
    used = [sum(x[i] * dem[i][r] for i in range(n)) for r in range(len(cap))]
    assert all(u <= c for u, c in zip(used, cap))
    # sharing incentive: at least what a 1/n slice of every resource runs
    assert all(xi >= p for xi, p in zip(x, partition_tasks(cap, dem, whole=False)))
    # Pareto efficiency: every user needs some exhausted resource, so no one can grow alone
    full = {r for r in range(len(cap)) if used[r] == cap[r]}
    assert all(any(d[r] > 0 for r in full) for d in dem)
    # envy-freeness: no user could run more of its tasks with another's bundle
    for i in range(n):
        for j in range(n):
            runs = min(x[j] * dem[j][r] / dem[i][r] for r in range(len(cap)) if dem[i][r] > 0)
            assert runs <= x[i]
    # the task loop is Pareto efficient in tasks: when it stops, no user's next task fits
    a = allocate(cap, dem)
    assert not any(all(d <= f for d, f in zip(dd, a.free)) for dd in dem)


def test_strategy_proofness_spot_check():
    """A user that inflates its demand (a resource it does not need, or all of them) runs no more of its
    real tasks under divisible DRF, on every seeded instance."""
    rng = random.Random(1)
    for cap, dem in instances(30, seed=2):
        x = progressive_filling(cap, dem)
        i = rng.randrange(len(dem))
        for r in range(len(cap)):
            lie = list(dem)
            lie[i] = tuple(v + (1 if s == r else 0) for s, v in enumerate(dem[i]))
            xl = progressive_filling(cap, lie)
            real = min(xl[i] * lie[i][s] / dem[i][s] for s in range(len(cap)) if dem[i][s] > 0)
            assert real <= x[i]


def test_task_granularity_can_cost_a_user_one_task_of_its_slice():
    # indivisible tasks: two big-task users overshoot 1/4 each, and the small user ends one task short
    cap, dem = (41,), [(6,), (6,), (2,), (1,)]
    a = allocate(cap, dem)
    assert a.tasks == (2, 2, 4, 9) and partition_tasks(cap, dem) == (1, 1, 5, 10)
    short = [p - k for cap_, dem_ in instances() for k, p in
             zip(allocate(cap_, dem_).tasks, partition_tasks(cap_, dem_))]
    assert max(short) >= 1


@pytest.mark.parametrize("cap, dem, msg", [
    ((0, 1), [(1, 1)], "capacity"), ((), [(1,)], "capacity"), ((1, float("nan")), [(1, 1)], "capacity"),
    ((1, 1), [(1,)], r"demands\[0\] has"), ((1, 1), [(0, 0)], r"demands\[0\] must"),
    ((1, 1), [(1, -1)], r"demands\[0\] must"), ((1,), [], "at least one user"), ((1,), [("a",)], r"demands\[0\]"),
])
def test_bad_input_is_refused_in_one_line(cap, dem, msg):
    with pytest.raises(ValueError, match=msg) as e:
        check(cap, dem)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("kw", [dict(key="min"), dict(tie="random"), dict(stop="never")])
def test_bad_options_are_refused(kw):
    with pytest.raises(ValueError, match=next(iter(kw))):
        allocate(PAPER_CAP, PAPER_DEM, **kw)
