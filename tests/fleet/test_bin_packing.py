"""utils.fleet.bin_packing: LPT within Graham's bound of the optimum, sharding conserves work."""
import itertools

import numpy as np
import pytest

from utils.fleet.bin_packing import lower_bound, lpt, makespan, round_robin, shard, shard_counts, utilisation


def brute_force(sizes, bins):
    best = float("inf")
    for assign in itertools.product(range(bins), repeat=len(sizes)):
        loads = np.zeros(bins)
        np.add.at(loads, list(assign), sizes)
        best = min(best, loads.max())
    return best


@pytest.mark.parametrize("seed", range(6))
def test_lpt_within_grahams_bound(seed):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 50, size=7).astype(float)
    m = 3
    opt = brute_force(sizes, m)
    got = makespan(lpt(sizes, m))
    assert opt <= got <= (4 / 3 - 1 / (3 * m)) * opt + 1e-9
    assert got >= lower_bound(sizes, m)


def test_grahams_tight_case_and_round_robin():
    sizes = [3, 3, 2, 2, 2]                             # Graham's tight instance on two machines: OPT 6, LPT 7
    assert makespan(lpt(sizes, 2)) == 7 and brute_force(np.array(sizes, float), 2) == 6
    assert list(round_robin([10, 1, 1, 1], 2)) == [11, 2]
    assert makespan(lpt([10, 1, 1, 1], 2)) == 10


def test_shard_conserves_and_bounds():
    sizes = [1, 7, 10, 0, 23]
    out = shard(sizes, 5)
    assert sum(out) == sum(sizes) and max(out) <= 5
    assert shard([10], 5) == [5, 5] and shard([11], 5) == [4, 4, 3]


def test_sharding_the_tail_fills_the_gpus():
    sizes = [1000] + [10] * 99
    assert utilisation(lpt(sizes, 10)) < 0.2
    assert utilisation(lpt(shard(sizes, 50), 10)) > 0.95
    with pytest.raises(ValueError, match="max_shard"):
        shard(sizes, 0)
    with pytest.raises(ValueError, match="bins"):
        lpt(sizes, 0)


@pytest.mark.parametrize("seed", range(2))
def test_shards_as_counts_pack_exactly_as_one_by_one(seed):
    rng = np.random.default_rng(seed)
    sizes = np.maximum(1, rng.lognormal(3, 1.5, 100).round()).astype(int)
    for max_shard, bins in ((7, 5), (50, 8), (1, 3)):
        values, counts = shard_counts(sizes, max_shard)
        assert sorted(np.repeat(values, counts).tolist()) == sorted(shard(sizes, max_shard))
        assert (lpt(values, bins, counts) == lpt(shard(sizes, max_shard), bins)).all()


def test_a_billion_shards_pack_without_listing_them():
    values, counts = shard_counts([10**9, 3 * 10**8 + 7], 1)
    assert counts.sum() == 13 * 10**8 + 7
    loads = lpt(values, 8, counts)
    assert loads.sum() == 13 * 10**8 + 7 and makespan(loads) - loads.min() <= 1
