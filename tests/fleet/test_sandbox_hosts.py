"""utils.fleet.sandbox_hosts: the closed form, and a packer that never overfills a host on either axis."""
import numpy as np
import pytest

from utils.fleet.sandbox_hosts import density, hosts_for, lower_bound, place


def test_closed_form_picks_the_binding_axis():
    d = density(700.0, 192.0, 2.0, 0.25, overhead_mem=0.25)
    assert (d["by_mem"], d["by_cpu"], d["per_host"], d["binds"]) == (311, 768, 311, "memory")
    assert density(700.0, 16.0, 2.0, 0.25)["binds"] == "CPU"
    assert density(10.0, 10.0, 1.0, 1.0, oversubscription=2.0)["by_cpu"] == 20
    assert hosts_for(50000, 311) == 161 and hosts_for(622, 311) == 2


def test_identical_sessions_match_the_closed_form():
    for overhead in (0.0, 0.004, 0.25):
        d = density(64.0, 32.0, 2.0, 0.5, overhead_mem=overhead)
        n = 1000
        loads = place([2.0] * n, [0.5] * n, 64.0, 32.0, overhead_mem=overhead)
        assert len(loads) == hosts_for(n, d["per_host"])


@pytest.mark.parametrize("seed", range(4))
def test_a_mix_never_overfills_and_stays_near_the_bound(seed):
    rng = np.random.default_rng(seed)
    mem, cpu = rng.uniform(0.25, 8.0, 400), rng.uniform(0.1, 2.0, 400)
    loads = place(mem, cpu, 64.0, 32.0, overhead_mem=0.1)
    assert np.all(loads[:, 0] <= 64.0 + 1e-9) and np.all(loads[:, 1] <= 32.0 + 1e-9)
    assert loads[:, 0].sum() == pytest.approx(mem.sum() + 0.1 * 400)
    lb = lower_bound(mem, cpu, 64.0, 32.0, overhead_mem=0.1)
    assert lb <= len(loads) <= 1.25 * lb + 1


def test_refusals():
    with pytest.raises(ValueError, match="larger than a host"):
        place([100.0], [1.0], 64.0, 32.0)
    with pytest.raises(ValueError, match="not one session"):
        hosts_for(10, 0)
    with pytest.raises(ValueError, match="some memory"):
        density(64.0, 32.0, 0.0, 1.0)
