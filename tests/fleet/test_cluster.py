"""utils.fleet.cluster: the spare pool's Poisson quantile, the fat tree against NVIDIA's SuperPOD table, Young."""
import math

import pytest

from utils.chains.bill_of_materials_10k import SUPERPOD
from utils.fleet import cluster


def test_poisson_quantile():
    assert cluster.poisson_quantile(0.0, 0.99) == 0
    assert cluster.poisson_quantile(1.0, 0.5) == 1          # P(X<=0) = 0.368, P(X<=1) = 0.736
    k = cluster.poisson_quantile(10.0, 0.99)
    cdf = lambda n: sum(math.exp(-10) * 10 ** i / math.factorial(i) for i in range(n + 1))
    assert cdf(k) >= 0.99 > cdf(k - 1)
    with pytest.raises(ValueError, match="p must be"):
        cluster.poisson_quantile(1.0, 1.0)


@pytest.mark.parametrize("su", sorted(SUPERPOD))
def test_fat_tree_reproduces_the_superpod_table(su):
    nodes, leaf, spine, core, c1, c2, c3 = SUPERPOD[su]
    pod = nodes if nodes * 8 <= 64 ** 2 // 2 else cluster.pod_limit(64) // 8
    got = cluster.fat_tree(nodes // pod, pod, 8, 64, 1.0)
    assert (got["leaf"], got["spine"], got["core"], got["cables"]) == (leaf, spine, core, (c1, c2, c3))


def test_taper_closed_form_and_its_inverse():
    assert cluster.switches_closed_form(10240, 64, 1.0) == pytest.approx(5 * 10240 / 64)
    s = cluster.taper_for(700, 10240, 64)
    assert cluster.switches_closed_form(10240, 64, s) == pytest.approx(700)
    # more taper, fewer switches
    assert cluster.fat_tree(10, 128, 8, 64, 2.0)["total"] < cluster.fat_tree(10, 128, 8, 64, 1.0)["total"]


def test_young_interval():
    y = cluster.young_interval(60.0, 3600.0)
    assert y["tau"] == pytest.approx(math.sqrt(2 * 60 * 3600))
    assert y["overhead"] == pytest.approx(math.sqrt(2 * 60 / 3600))
