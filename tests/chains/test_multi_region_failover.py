"""multi-region-failover: the claim, bad input, and properties of the chain."""
import pytest

from utils import chains
from utils.chains import multi_region_failover as mr
from utils.params import ParameterError
from utils.verdicts import WRONG


def test_claim_is_wrong_as_stated():
    (c,) = mr.claims()
    assert c.verdict == WRONG and c.nearest_true


def test_two_at_sixty_is_one_hundred_and_twenty():
    r = chains.derive("multi-region-failover")
    assert r["survivor_utilisation"].m == pytest.approx(1.2)
    assert r["n_minus_one_ceiling"].m == pytest.approx(0.5)
    assert r["queue_wait_after_window"].to("s").m == pytest.approx(0.2 * 30)
    assert r["goodput_naive"].m < r["goodput_jitter"].m <= r["goodput_admission"].m + 0.01


def test_at_the_ceiling_nothing_queues_and_the_spare_is_free():
    r = chains.derive("multi-region-failover", utilisation=0.5)
    assert r["queue_wait_after_window"].m == 0 and r["spare_cost_per_year"].m == 0


def test_more_regions_lower_the_survivor_load():
    u = [chains.derive("multi-region-failover", regions=n)["survivor_utilisation"].m for n in (2, 3, 4)]
    assert u[0] > u[1] > u[2]


@pytest.mark.parametrize("changes, name", [
    (dict(regions=1), "regions"), (dict(utilisation=1.5), "utilisation"), (dict(retry_cap_s=0.5), "retry_cap_s"),
    (dict(window_s=600.0), "window_s"), (dict(replica_rps=-1.0), "replica_rps"), (dict(model="nope"), "model")])
def test_bad_input_is_refused_naming_the_parameter(changes, name):
    with pytest.raises(ParameterError, match=name):
        chains.derive("multi-region-failover", **changes)
