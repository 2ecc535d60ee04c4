"""moe-total-vs-active: storage follows the total, compute the active; refusals and properties."""
import pytest

from utils import chains
from utils.chain import as_float
from utils.chains import moe_total_vs_active as tva
from utils.params import ParameterError
from utils.serving import moe
from utils.verdicts import HOLDS, rounds_to

SLUG = "moe-total-vs-active"


def test_claim_holds_on_its_own_inputs():
    (c,) = tva.claims()
    assert c.verdict == HOLDS
    ck = tva.checks()
    assert ck["ka"]["W"].m == pytest.approx(ck["same_total"]["W"].m, rel=1e-12)      # same storage
    assert ck["wf_ratio"] == pytest.approx(ck["ratio"], rel=1e-12)                    # compute by the ratio
    assert ck["ratio"] == pytest.approx(32.4, abs=0.05)
    assert ck["ds_cnt"] == pytest.approx(ck["ds_pub"], rel=0.02)


def test_published_figures():
    r = chains.derive(SLUG)
    assert r["gpus_for_storage"].m == 8 and r["gpus_for_compute"].m == 81
    # 60 MoE layers x 8 experts x 7168 hidden elements x (1 + 2) bytes per element x 7/8 remote, per token.
    assert r["all_to_all_bytes_per_token"].to("B/token").m == pytest.approx(60 * 8 * 7168 * 3 * 7 / 8)


def test_alltoall_bytes_agree_with_utils_moe():
    ch = chains.derive(SLUG, n_gpus_ep=16)
    assert ch["all_to_all_bytes_per_token"].to("B/token").m == pytest.approx(
        moe.alltoall_bytes_per_token(60, 8, 7168, 16).to("B/token").m)


def test_routing_simulations_agree_with_the_formulas():
    for sim, formula, tol in tva.simulation_checks().values():
        assert abs(sim - formula) < tol
    ck = tva.checks()
    assert abs(ck["counted"] / ck["expected"] - 1) < ck["counted_tolerance"]


@pytest.mark.parametrize("bad", [dict(n_gpus_ep=1), dict(n_gpus_ep=1000), dict(model="llama-3-70b"),
                                 dict(mfu=1.5), dict(top_k_override=1000), dict(top_k_override=2.5),
                                 dict(tokens_per_second=0.0)])
def test_bad_inputs_are_refused_with_the_name(bad):
    (name,) = bad
    with pytest.raises(ParameterError, match=name):
        chains.derive(SLUG, **bad)


@pytest.mark.parametrize("name", sorted(tva.REFUSED))
def test_loose_architecture_overrides_are_refused(name):
    with pytest.raises(ParameterError, match="not both"):
        chains.derive(SLUG, model="llama-3-8b", **{name: 1.0})


def test_properties():
    base = chains.derive(SLUG)
    faster = chains.derive(SLUG, tokens_per_second=2e6)
    assert faster["gpus_for_compute"] > base["gpus_for_compute"]
    assert faster["gpus_for_storage"] == base["gpus_for_storage"]          # storage ignores the target
    bf16 = chains.derive(SLUG, weight_bytes_per_param=2.0)
    assert bf16["weights_bytes"].m == pytest.approx(2 * base["weights_bytes"].m)
    assert bf16["active_flops_per_token"] == base["active_flops_per_token"]
    fewer = chains.derive(SLUG, top_k_override=4)
    assert fewer["active_flops_per_token"] < base["active_flops_per_token"]
    assert fewer["all_to_all_bytes_per_token"].m == pytest.approx(base["all_to_all_bytes_per_token"].m / 2)


def test_h800_nvlink_comes_from_the_catalog():
    from utils import catalog
    v = catalog.interconnect("h800-nvlink")["bandwidth"]
    assert tva.H800_NVLINK == v.q and v.q.to("GB/s").m == 160 and "160 GB/s" in v.note


def test_the_all_to_all_runs_at_the_measured_share_of_each_link():
    """Every all-to-all time divides by the link's peak times the measured share of a pairwise copy (396.40 of
    450 GB/s on NVLink 4), not by the peak; the share is a parameter and the time scales inversely with it."""
    assert rounds_to(tva.LINK_FRACTION, tva.SPEC.defaults()["link_fraction"], 2)
    ch = tva.page_chain(tva.SPEC.check())
    assert as_float(ch["B_nv"] / ch["BW_nv"]) == pytest.approx(0.88) == as_float(ch["B_x"] / ch["BW_x"])
    at_peak = tva.page_chain(tva.SPEC.check(link_fraction=1.0))
    assert as_float(at_peak["t_a"] / ch["t_a"]) == pytest.approx(0.88, rel=1e-12)
    assert as_float(at_peak["t_ib"] / ch["t_ib"]) == pytest.approx(0.88, rel=1e-12)


def test_inputs_cite_their_parameters_at_the_defaults():
    """A parameter's row shows the parameter's own source while it holds its default, "parameters cell" once changed."""
    def sources(**changes):
        return {r.name: r.source for r in tva.compute(tva.SPEC.check(**changes)).rows}
    own = {p.name: p.source for p in tva.PARAMETERS}
    at_default = sources()
    assert (at_default["u"], at_default["n"], at_default["eta_l"]) == (own["mfu"], own["n_gpus_ep"], own["link_fraction"])
    changed = sources(mfu=0.3, link_fraction=0.5)
    assert changed["u"] == changed["eta_l"] == "parameters cell" and changed["n"] == own["n_gpus_ep"]


def test_compute_is_the_page_chain_up_to_the_step():
    """compute() (closed form: what a re-derivation needs) is the page's chain without the step's rows, row for row."""
    p = tva.SPEC.check()
    short, full = tva.compute(p), tva.page_chain(p)
    assert [r.name for r in full.rows[:len(short.rows)]] == [r.name for r in short.rows]
    assert all(full[r.name] == short[r.name] for r in short.rows) and "rho" in full.rows[len(short.rows)].name
