"""bill-of-materials-10k's chain: the claims and verdicts, the published bill, bad inputs, properties."""
import pytest

from utils import chains
from utils.chains import bill_of_materials_10k as bom
from utils.params import ParameterError
from utils.verdicts import HOLDS, READING, UNCHECKABLE, WRONG


def test_claims_and_their_verdicts():
    judged = {c.name: c for c in bom.claims()}
    assert {n: c.verdict for n, c in judged.items()} == {"nodes": HOLDS, "switches": WRONG, "checkpoint": UNCHECKABLE,
                                                         "power": READING}
    assert all(not c.problems() for c in judged.values())
    ck = bom.checks()
    # 800 switches at full bisection (5N/k), not "about 700"; the claim needs a core taper near 1.45:1.
    assert bom.count(ck["full"], "N_fb") == 800
    assert ck["s_700"] == pytest.approx(1.455, abs=0.005)
    # 14 MW is the IT load at nameplate (within 5%); the feed at PUE 1.2 is about 17 MW.
    assert ck["tapered"]["P_IT"].to("MW").m == pytest.approx(14, rel=0.05)
    assert ck["tapered"]["P_fac"].to("MW").m == pytest.approx(17.1, abs=0.1)


def test_published_bill():
    out = chains.derive("bill-of-materials-10k")
    assert (out["nodes"], out["pods"], out["switches"], out["switches_full_bisection"]) == (1280, 10, 697, 800)
    assert out["checkpoint_write_bandwidth"].to("GB/s").m == pytest.approx(5e12 / 60 / 1e9)
    assert out["spare_nodes"] == 19


def test_twice_the_gpus_twice_the_pods():
    out = chains.derive("bill-of-materials-10k", n_gpus=20000)
    assert out["nodes"] == 2560 and out["pods"] == 20


def test_more_gpus_fewer_days_and_longer_repairs_more_spares():
    base = chains.derive("bill-of-materials-10k")
    more = chains.derive("bill-of-materials-10k", n_gpus=12000)
    assert more["train_days"].m == pytest.approx(base["train_days"].m * 10000 / 12000)
    assert chains.derive("bill-of-materials-10k", repair_days=7.0)["spare_nodes"] > base["spare_nodes"]


@pytest.mark.parametrize("name, value", [("n_gpus", 0), ("switch_radix", 63), ("pue", 0.9), ("mfu", 1.5),
                                         ("spare_confidence", 1.0), ("core_oversubscription", 0.5),
                                         ("nodes_per_pod", 1024), ("gpu", "h1000"), ("repair_days", 3e6)])
def test_bad_inputs_are_refused_by_name(name, value):
    with pytest.raises(ParameterError, match=name):
        chains.derive("bill-of-materials-10k", **{name: value})


def test_the_model_is_one_parameter():
    with pytest.raises(ParameterError, match="not both"):
        chains.derive("bill-of-materials-10k", model="llama-3-8b", n_params=70e9)
    small = chains.derive("bill-of-materials-10k", model="llama-3-70b")
    assert small["train_days"].m < chains.derive("bill-of-materials-10k")["train_days"].m / 5


def test_published_power_figures_come_from_the_catalog():
    """The DGX H100 datasheet's 10.2 kW maximum and 6.5 to 8.5 kW typical draw, and NVIDIA's 17 W twin-port module."""
    assert bom.dgx_h100_w() == {"max": pytest.approx(10_200), "typical": (pytest.approx(6_500), pytest.approx(8_500))}
    ch = bom.compute(bom.SPEC.check())
    assert ch["p_tw"].to("W").m == pytest.approx(17)
    assert "ib-ndr.twin_port_module_power" in next(r.source for r in ch.rows if r.name == "p_tw")


def test_defaults_taken_from_the_catalog_equal_it_and_cite_it_until_changed():
    from utils.units import q
    d, book = bom.SPEC.defaults(), bom.book_inputs()
    assert d["server_w_per_gpu"] == book["server_w_per_gpu"] and d["n_tokens"] == book["n_tokens"]
    assert d["switch_radix"] == bom.radix()
    rows = {r.name: r for r in bom.compute(bom.SPEC.check()).rows}
    assert rows["p_srv"].source.startswith("catalog: h100-server.power_per_gpu") and rows["D"].kind == "spec"
    changed = {r.name: r for r in bom.compute(bom.SPEC.check(pue=1.3, n_tokens=1e13)).rows}
    assert changed["PUE"].source == changed["D"].source == "parameters cell" and changed["D"].kind == "assumption"
    assert changed["p_srv"].value == q(d["server_w_per_gpu"], "W/GPU")


def test_the_superpod_table_is_the_catalogs_with_its_source():
    from utils import catalog
    assert sorted(bom.SUPERPOD) == [2, 4, 8, 16, 32, 64] and bom.SUPERPOD[64][:4] == (2048, 512, 512, 256)
    row = catalog.entry("superpod", "su-16")
    assert row["core_switches"].kind == "spec" and row["core_switches"].source.url.startswith("https://docs.nvidia.com")
