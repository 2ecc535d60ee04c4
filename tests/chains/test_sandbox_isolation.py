"""sandbox-isolation's chain: the claim on its published figures, the host counts, bad inputs refused,
and properties."""
import math

import pytest

from utils import chains
from utils.chains import sandbox_isolation as chapter
from utils.params import ParameterError
from utils.verdicts import WRONG


def test_claim_and_its_verdict():
    (c,) = chapter.claims()
    assert c.verdict == WRONG and "full VM" in c.nearest_true


def test_published_figures():
    p = chains.check("sandbox-isolation")
    assert p.firecracker_overhead_mib == 5.0 and p.firecracker_start_s == 0.125
    assert p.container_overhead_mib == pytest.approx(4092149.76 / 2 ** 20, abs=0.01)
    assert p.gvisor_overhead_mib == pytest.approx(23695032.32 / 2 ** 20, abs=0.01)


def test_defaults():
    r = chains.derive("sandbox-isolation")
    usable = 768 * 0.92
    assert r["per_host_vm"].m == math.floor(usable / (2 + 0.25))
    assert r["hosts_vm"].m == math.ceil(50000 / r["per_host_vm"].m)
    assert r["hosts_container"].m <= r["hosts_gvisor"].m <= r["hosts_vm"].m
    assert r["monthly_cost_vm"].m == pytest.approx(r["hosts_vm"].m * 8 * 730)


@pytest.mark.parametrize("name,value", [("sessions", 0.5), ("session_mem_gib", 800.0), ("host_reserved", 1.0),
                                        ("session_vcpu", 500.0), ("vm_start_s", -1.0),
                                        ("container_overhead_mib", 1e6), ("gvisor_overhead_mib", 1e9)])
def test_bad_inputs_are_refused_by_name(name, value):
    with pytest.raises(ParameterError, match=name):
        chains.derive("sandbox-isolation", **{name: value})


def test_properties():
    base = chains.derive("sandbox-isolation")
    double = chains.derive("sandbox-isolation", sessions=100000)
    assert double["hosts_firecracker"].m >= 2 * base["hosts_firecracker"].m - 1
    # small, idle sessions: memory binds and the full VM's guest OS doubles the fleet
    small = chains.derive("sandbox-isolation", session_mem_gib=0.25, session_vcpu=0.05)
    assert small["hosts_vm"].m > 1.8 * small["hosts_firecracker"].m
    # CPU-bound sessions: the isolation's memory costs no hosts at all
    cpu = chains.derive("sandbox-isolation", session_mem_gib=0.25)
    assert cpu["hosts_vm"].m == cpu["hosts_container"].m


def test_a_seeded_mix_packs_near_its_bound():
    ck = chapter.mixed_check()
    assert ck["bound"] <= ck["hosts"] <= ck["bound"] + 1
