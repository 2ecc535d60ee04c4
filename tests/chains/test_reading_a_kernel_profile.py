"""reading-a-kernel-profile's chain: the claim's verdict, the chain against the model, refusals, properties."""
import pytest

from utils import chains
from utils.chains import reading_a_kernel_profile as rk
from utils.params import ParameterError
from utils.verdicts import READING, UNCHECKABLE

SLUG = "reading-a-kernel-profile"


def test_the_order_holds_under_its_reading_and_the_pair_cannot_be_checked():
    order, gap = rk.claims()
    assert (order.name, order.verdict) == ("reading-order", READING) and order.reading
    assert (gap.name, gap.verdict) == ("profile-gap", UNCHECKABLE)
    n = rk.claim_numbers()
    assert n["hits"] == []                                   # no kernel the book models lands on 12% / 82%
    assert n["walk"]["lines"].dram == pytest.approx(0.1786, abs=5e-4)
    assert n["walk"]["sectors"].dram == pytest.approx(0.7144, abs=5e-4)
    assert n["needed"]["lines"] > 8 and n["needed"]["sectors"] > 8   # more reuse than the walk's own
    assert n["rule"].name == "High Throughput" and n["rule"].section.name == "Memory Workload Analysis"


def test_the_chain_is_the_model_for_every_reading():
    for wf in ("lines", "sectors"):
        for e in (2, 4, 8):
            p = chains.check(SLUG, wavefront=wf, bytes_per_element=e)
            assert rk.model_agrees(p, rk.compute(p))


def test_defaults_and_the_fix():
    r = chains.derive(SLUG)
    assert r["sectors_per_request"].m == 32
    assert r["l1_pct_walk"].m == pytest.approx(0.82) and r["dram_pct_fixed"].m == pytest.approx(0.82)
    assert r["speedup_fixed"].m == pytest.approx(32 / (128 / (4.8e12 / (132 * 1.98e9))))
    assert chains.derive(SLUG, wavefront="sectors")["speedup_fixed"].m == pytest.approx(8 / 6.9696, rel=1e-4)


@pytest.mark.parametrize("name, value, match", [("wavefront", "bytes", "wavefront"), ("busy", 1.5, "busy"),
                                                ("bytes_per_element", 3, "bytes_per_element"),
                                                ("sm_clock_ghz", -1.0, "sm_clock_ghz")])
def test_bad_inputs_are_refused_by_name(name, value, match):
    with pytest.raises(ParameterError, match=match):
        chains.derive(SLUG, **{name: value})


def test_wider_elements_reuse_less_and_reach_dram_more():
    d = [chains.derive(SLUG, bytes_per_element=e)["dram_pct_walk"].m for e in (2, 4, 8)]
    assert d[0] < d[1] < d[2]


def test_gather_predictions_for_the_measurement():
    g = rk.gather_predictions(chains.check(SLUG))
    assert g[1]["sectors_per_request"] == 16 and g[32]["sectors_per_request"] == 32
    assert g[1]["dram_pct"] == pytest.approx(82) and g[32]["dram_pct"] == pytest.approx(82)
    assert g[32]["l1_pct"] > g[1]["l1_pct"]
    assert g["slowdown"] == pytest.approx(36 / 8)            # bytes moved per element, stride 32 over stride 1


def test_clock_default_is_the_catalogs_boost_clock():
    """The parameters cell holds a literal; it must stay the catalog's H100 boost clock (bank_conflicts.SM_CLOCK)."""
    from utils import catalog
    default = next(p for p in rk.PARAMETERS if p.name == "sm_clock_ghz")
    assert default.default == catalog.accelerator("h100-sxm").q("sm_boost_clock").to("GHz").m == rk.SM_CLOCK_GHZ
    assert "h100-sxm" in default.source and "sm_boost_clock" in default.source


def test_inputs_cite_their_parameters_at_the_defaults():
    """A parameter's row shows the parameter's own source while it holds its default, "parameters cell" once changed."""
    def sources(**changes):
        return {r.name: r.source for r in rk.compute(rk.SPEC.check(**changes)).rows}
    own = {p.name: p.source for p in rk.PARAMETERS}
    assert [sources()[s] for s in ("e", "f", "B_L1", "c_L1", "u")] == [
        own["bytes_per_element"], own["sm_clock_ghz"], own["l1_bytes_per_clock"], own["wavefront"], own["busy"]]
    changed = sources(wavefront="sectors")
    assert changed["c_L1"] == "parameters cell" and changed["e"] == own["bytes_per_element"]
