"""utils.training.collectives: the ring's per-rank bytes, nccl-tests' bus bandwidth, the simulated ring."""
import pytest

from utils.training import collectives as c
from utils.units import q


@pytest.mark.parametrize("n, factor", [(1, 0.0), (2, 1.0), (8, 1.75), (64, 2 * 63 / 64)])
def test_ring_factor(n, factor):
    assert c.ring_allreduce_factor(n) == pytest.approx(factor)
    assert c.all_gather_bytes(1.0, n) + c.reduce_scatter_bytes(1.0, n) == pytest.approx(factor)


def test_factor_tends_to_two_and_never_reaches_it():
    fs = [c.ring_allreduce_factor(n) for n in (2, 4, 16, 256, 65536)]
    assert fs == sorted(fs) and all(f < 2 for f in fs) and fs[-1] > 1.9999


def test_bytes_keep_their_units():
    v = c.allreduce_bytes(q(16, "GB"), 8)
    assert v.to("GB").m == pytest.approx(28)
    assert c.bus_bandwidth(q(16, "GB"), q(1, "s"), 8).to("GB/s").m == pytest.approx(28)


def test_bus_bandwidth_factors():
    assert c.bus_bandwidth(1.0, 1.0, 4, "all_gather") == pytest.approx(0.75)
    assert c.bus_bandwidth(1.0, 1.0, 4, "broadcast") == 1.0
    with pytest.raises(ValueError, match="unknown collective"):
        c.bus_factor(4, "gossip")
    with pytest.raises(ValueError, match="whole number of ranks"):
        c.bus_factor(0)


@pytest.mark.parametrize("n", [2, 3, 8, 64])
def test_simulated_ring_sums_and_moves_the_counted_bytes(n):
    sim = c.simulate_ring(n)
    assert sim["correct"]
    assert (sim["sent"] == sim["sent"][0]).all() and (sim["received"] == sim["sent"]).all()
    assert sim["sent"][0] / sim["buffer_bytes"] == pytest.approx(c.ring_allreduce_factor(n), rel=1e-12)


def test_schedule_sends_every_chunk_once_per_phase():
    n = 5
    sched = list(c.ring_schedule(n))
    assert len(sched) == 2 * (n - 1) * n
    for phase in ("reduce-scatter", "all-gather"):
        for s in range(n - 1):
            sent = sorted(x[3] for x in sched if x[0] == phase and x[1] == s)
            assert sent == list(range(n))


def test_axes():
    assert c.fsdp_bytes(2.0, 4) == pytest.approx(3 * 0.75 * 2)
    assert c.data_parallel_bytes(2.0, 2) == pytest.approx(2.0)
    assert c.tensor_parallel_bytes(1.0, 8, allreduces=6) == pytest.approx(6 * 1.75)
    assert c.pipeline_bytes(3.0) == 6.0
    assert c.ring_time(1.0, 2, 1.0, step_latency=0.5) == pytest.approx(2.0)


def test_megatron_bucket_has_a_floor_then_grows_with_the_ring():
    """max(40M, 1M x dp) parameters: the floor up to 40 ranks, then a million more per rank; arrays element-wise."""
    assert c.megatron_bucket_params(8) == c.megatron_bucket_params(40) == 40e6
    assert c.megatron_bucket_params(128) == 128e6
    assert list(c.megatron_bucket_params([8, 64, 128])) == [40e6, 64e6, 128e6]
    assert "max(40000000, 1000000 x dp_size)" in c.megatron_bucket_rule()


def test_published_ring_defaults_come_from_the_catalog_with_their_source():
    lat = c.nccl_ring_latencies_us()
    assert (lat["nvlink"], lat["network"]) == (3.4, 14.0) and lat["network"] > lat["nvlink"]
    assert "3.4 µs per NVLink step, 14 µs per network step" in c.nccl_latency_source()
    assert c.ddp_bucket_mib() == 25.0 and "bucket_cap_mb defaults to 25 (" in c.ddp_bucket_source()


def test_link_fractions_are_the_catalogs_measured_shares():
    from utils import catalog
    nv = catalog.interconnect("hgx-h100-nvswitch")
    ring = next(a for a in nv["allreduce_busbw_measured"].alternatives if "NVLS_ENABLE=0" in a.note)
    hdr = catalog.interconnect("ib-hdr")
    assert c.LINK_FRACTIONS == (round(ring.q.m / nv.q("bandwidth_unidirectional").to("GB/s").m, 3),
                                round(catalog.entry("software", "nccl").q("allreduce_busbw_hdr_port").to("GB/s").m
                                      / hdr.q("bandwidth_unidirectional").to("GB/s").m, 3)) == (0.812, 0.96)
    params = {p.name: p.default for p in c.link_fraction_params()}
    assert (params["nvlink_fraction"], params["fabric_fraction"]) == c.LINK_FRACTIONS
    assert all(p.check == "fraction" for p in c.link_fraction_params())
