"""Links, prices and rates measured by others: each figure against the arithmetic its source
implies, the datasheet peak beside every measured rate, and the new kind `measured-by-others`."""
import pytest

from utils import catalog
from utils.catalog.tables import markdown_table
from utils.units import Q_

LINKS = ("hgx-h100-nvswitch", "nvl72-switch-tray", "pcie4-x16", "pcie6-x16", "ib-hdr", "nvlink-c2c", "tpu-v4-ici")
PRICES = ("h200-rental", "b200-rental", "h200-server", "b200-server")


def gb_s(e, field):
    return e.q(field).to("GB/s").m


def test_the_new_entries_exist_with_dated_sources():
    assert set(LINKS) <= set(catalog.keys("interconnect"))
    assert set(PRICES) <= set(catalog.keys("price"))
    for kind, keys in (("interconnect", LINKS), ("price", PRICES)):
        for key in keys:
            for name, v in catalog.entry(kind, key).values.items():
                for x in (v, *v.alternatives):
                    assert x.source.url.startswith("https://") and x.source.read == "2026-12-01", f"{key}.{name}"
                    assert x.kind == "spec" or x.note, f"{key}.{name}: a non-spec value needs its note"


@pytest.mark.parametrize("key, gts, encoding", [("pcie4-x16", 16, 128 / 130), ("pcie5-x16", 32, 128 / 130),
                                                ("pcie6-x16", 64, 242 / 256)])
def test_pcie_keeps_the_transfer_rate_convention(key, gts, encoding):
    """lane_rate is GT/s (pint's GHz); the data rate is it times the encoding; x16 over 8 bits is the GB/s."""
    e = catalog.interconnect(key)
    assert e.q("lane_rate").to("GHz").m == gts
    assert e.q("lane_data_rate").to("Gbit/s").m == pytest.approx(gts * encoding, rel=1e-4)
    assert (e.q("lanes").m * e.q("lane_data_rate")).to("GB/s").m == pytest.approx(gb_s(e, "bandwidth_unidirectional"),
                                                                                 rel=2e-3)


def test_infiniband_generations_double():
    hdr, ndr, xdr = (catalog.interconnect(k) for k in ("ib-hdr", "ib-ndr", "ib-xdr"))
    assert (hdr.q("lanes").m * hdr.q("lane_data_rate")).to("Gbit/s").m == hdr.q("bandwidth_unidirectional").to("Gbit/s").m == 200
    assert [e.q("bandwidth_unidirectional").to("Gbit/s").m for e in (hdr, ndr, xdr)] == [200, 400, 800]


def test_hgx_h100_switch_gives_each_gpu_its_nvlink4():
    sw, nv4 = catalog.interconnect("hgx-h100-nvswitch"), catalog.interconnect("nvlink4")
    assert gb_s(sw, "bandwidth_bidirectional") == gb_s(nv4, "bandwidth_bidirectional") == 900
    assert gb_s(sw, "bandwidth_unidirectional") == 450
    # 3.6 TB/s bisection: the 4 GPUs on one side of a cut sending their 900 GB/s (both directions counted)
    assert sw.q("bisection_bandwidth").to("GB/s").m == pytest.approx(sw.q("domain_gpus").m / 2 * 900)


def test_nvl72_switch_trays_carry_every_gpus_links():
    tray, nv5 = catalog.interconnect("nvl72-switch-tray"), catalog.interconnect("nvlink5")
    chips = tray.q("trays_per_rack").m * tray.q("switch_chips").m
    gpus, links = nv5.q("nvl72_domain_gpus").m, nv5.q("links_per_gpu").m
    assert chips * tray.q("ports_per_chip").m == gpus * links == 1296
    per_port = nv5.q("link_bandwidth_bidirectional")
    chip = tray.q("chip_bandwidth_bidirectional").to("TB/s").m
    assert (tray.q("ports_per_chip").m * per_port).to("TB/s").m == pytest.approx(chip)
    rack = (tray.q("trays_per_rack").m * tray.q("bandwidth_bidirectional")).to("TB/s").m
    assert rack == pytest.approx(nv5.q("nvl72_aggregate_bandwidth").to("TB/s").m, rel=0.01)   # 129.6 against 130


def test_tpu_v4_ici_is_six_links():
    ici = catalog.interconnect("tpu-v4-ici")
    assert ici.q("links_per_gpu").m == 6
    assert gb_s(ici, "bandwidth_unidirectional") == 6 * gb_s(ici, "link_bandwidth_unidirectional") == 270
    assert ici.q("pod_chips").m == catalog.accelerator("tpu-v4").q("pod_chips").m == 4096


def test_measured_by_others_is_a_kind_and_sits_beside_its_peak():
    assert "measured-by-others" in catalog.KINDS and "measured" in catalog.KINDS
    h100 = catalog.accelerator("h100-sxm")
    hbm = h100["hbm_bandwidth_measured"]
    assert hbm.kind == "measured-by-others" and hbm.source.id == "azure-nd-h100-v5"
    assert 0.85 < (hbm.q / h100.q("hbm_bandwidth")).to("").m < 0.9                 # Triad 2.97 of 3.35 TB/s
    sw = catalog.interconnect("hgx-h100-nvswitch")
    nvls, (ring, h100_bench) = sw["allreduce_busbw_measured"], sw["allreduce_busbw_measured"].alternatives
    wire = gb_s(sw, "bandwidth_unidirectional")
    assert ring.q.to("GB/s").m < wire < nvls.q.to("GB/s").m                          # the ring stays under the wire
    assert h100_bench.q.to("GB/s").m > wire                                           # NVLS reduces in the switch
    assert sw["p2p_copy_measured_unidirectional"].q.to("GB/s").m < wire
    pcie = catalog.interconnect("pcie5-x16")["host_to_device_measured"]
    assert all(x.q.to("GB/s").m < gb_s(catalog.interconnect("pcie5-x16"), "bandwidth_unidirectional")
               for x in (pcie, *pcie.alternatives))
    c2c = catalog.interconnect("nvlink-c2c")["host_to_device_measured"]
    assert 0.75 < (c2c.q / catalog.interconnect("nvlink-c2c").q("bandwidth_unidirectional")).to("").m < 0.85


def test_the_catalog_tables_mark_what_others_measured():
    text = markdown_table("interconnect", ["allreduce_busbw_measured", "host_to_device_measured"], notes=False)
    assert "478.9 GB/s (measured-by-others)" in text and "55.43 GB/s (measured-by-others)" in text


@pytest.mark.parametrize("key", ["h200-rental", "b200-rental"])
def test_contract_is_below_on_demand_and_the_disagreement_is_kept(key):
    r = catalog.price(key)
    usd = lambda v: v.q.to("USD/GPU/hour").m  # noqa: E731
    assert usd(r["contract"]) < usd(r["on_demand"])
    # the book's on-demand and contract figures come from one rate card, read the same day
    assert r["on_demand"].source.id == r["contract"].source.id == "hyperstack-pricing"
    alts = [usd(a) for a in r["on_demand"].alternatives]
    assert len(alts) >= 4 and min(alts) < usd(r["on_demand"]) < max(alts)          # sources disagree both ways
    assert max(alts) / min(alts) > 2


def test_instance_prices_divide_into_gpu_hours():
    cw = {"h200-rental": 50.44, "b200-rental": 68.80}                                 # CoreWeave, per 8-GPU hour
    for key, instance in cw.items():
        coreweave = [a for a in catalog.price(key)["on_demand"].alternatives if a.source.id == "coreweave-pricing"]
        assert coreweave[0].q.to("USD/GPU/hour").m == pytest.approx(instance / 8, abs=1e-3)
    lease = catalog.price("b200-rental").q("bare_metal_lease")
    assert lease.to("USD/GPU/hour").m == pytest.approx(297_840 / 8 / 8760, abs=0.005)
    b200 = catalog.price("b200-server")
    assert (b200.q("capex_per_gpu") * Q_(8, "GPU")).to("USD").m == b200.q("capex_per_server").to("USD").m
