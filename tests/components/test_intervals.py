"""utils/components/intervals.py: union, at_least, intersection and overlaps against a brute force over a one-unit
time grid on seeded random intervals, the hand cases, and the double count the per-GPU union prevents."""
import numpy as np
import pytest

from utils.components import intervals as iv

GRID = 200


def random_intervals(rng, n, grid=GRID):
    """Integer endpoints, so covering [t, t+1) is decided by the midpoint t + 1/2: overlapping, nested,
    touching and empty intervals all occur."""
    s = rng.integers(0, grid, n)
    return [(int(a), int(a + rng.integers(0, 40))) for a in s]


def counts(ivs, grid=GRID + 40):
    t = np.arange(grid) + 0.5
    c = np.zeros(grid, dtype=int)
    for s, e in ivs:
        c += (t >= s) & (t < e)
    return c


def cells(out, grid=GRID + 40):
    return counts(out, grid) > 0


@pytest.mark.parametrize("seed", range(40))
def test_union_and_at_least_equal_the_brute_force(seed):
    rng = np.random.default_rng(seed)
    ivs = random_intervals(rng, int(rng.integers(1, 30)))
    c = counts(ivs)
    u = iv.union(ivs)
    assert (cells(u) == (c >= 1)).all() and iv.covered(ivs) == int((c >= 1).sum())
    assert all(a[1] < b[0] for a, b in zip(u, u[1:]))                     # disjoint, not even touching
    for k in (1, 2, 3, 5):
        out = iv.at_least(ivs, k)
        assert (cells(out) == (c >= k)).all() and counts(out).max(initial=0) <= 1
    assert iv.length(ivs) == int(c.sum())                                  # lengths summed: the double count


@pytest.mark.parametrize("seed", range(20))
def test_intersection_and_per_gpu_busy_equal_the_brute_force(seed):
    rng = np.random.default_rng(100 + seed)
    a, b = random_intervals(rng, 8), random_intervals(rng, 8)
    both = (counts(a) > 0) & (counts(b) > 0)
    assert (cells(iv.intersection(a, b)) == both).all()
    by = {f"g{i}": random_intervals(rng, 5) for i in range(4)}             # each GPU's records may overlap
    busy = sum((counts(v) > 0).astype(int) for v in by.values())
    for k in (1, 2, 4):
        assert (cells(iv.busy_at_least(by, k)) == (busy >= k)).all()


@pytest.mark.parametrize("seed", range(20))
def test_overlaps_equal_all_pairs_checked_directly(seed):
    rng = np.random.default_rng(200 + seed)
    ivs = random_intervals(rng, 25)
    brute = sorted((i, j) for i in range(len(ivs)) for j in range(i + 1, len(ivs))
                   if max(ivs[i][0], ivs[j][0]) < min(ivs[i][1], ivs[j][1]))
    assert iv.overlaps(ivs) == brute


def test_hand_cases():
    assert iv.union([(0, 3), (3, 5)]) == [(0, 5)]                          # touching merges
    assert iv.overlaps([(0, 3), (3, 5)]) == []                            # but does not overlap
    assert iv.union([(0, 10), (2, 4)]) == [(0, 10)] and iv.at_least([(0, 10), (2, 4)], 2) == [(2, 4)]
    assert iv.union([(2, 2), (0, 1)]) == [(0, 1)] and iv.overlaps([(2, 2), (1, 3)]) == []
    assert iv.at_least([(0, 2), (2, 4), (1, 3)], 2) == [(1, 3)]            # ends before starts at t = 2
    assert iv.union([]) == [] and iv.at_least([], 1) == []
    with pytest.raises(ValueError, match="ends before"):
        iv.union([(5, 1)])
    with pytest.raises(ValueError, match="k must"):
        iv.at_least([(0, 1)], 0)


def test_the_double_count_is_caught_and_the_union_is_not_fooled():
    by = {"g0": [(0, 10), (3, 6)], "g1": [(4, 8)]}                         # g0 re-reports [3, 6)
    assert iv.busy_at_least(by, 2) == [(4, 8)]
    assert iv.busy_at_least_naive(by, 2) == [(3, 8)]                       # g0 counted twice in [3, 4)
    assert iv.overlaps_by_gpu(by) == {"g0": [(0, 1)]}
    clean = {"g0": [(0, 10)], "g1": [(4, 8)]}
    assert iv.busy_at_least_naive(clean, 2) == iv.busy_at_least(clean, 2)


def test_property_at_least_is_nested_in_k_and_shift_invariant():
    rng = np.random.default_rng(7)
    ivs = random_intervals(rng, 30)
    lengths = [iv.length(iv.at_least(ivs, k)) for k in range(1, 8)]
    assert lengths == sorted(lengths, reverse=True)
    shifted = [(s + 1000, e + 1000) for s, e in ivs]
    assert [(s + 1000, e + 1000) for s, e in iv.at_least(ivs, 2)] == iv.at_least(shifted, 2)
