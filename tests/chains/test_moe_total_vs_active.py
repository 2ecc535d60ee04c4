"""moe-total-vs-active: storage follows the total, compute the active; refusals and properties."""
import pytest

from utils import chains
from utils.chains import moe_total_vs_active as tva
from utils.params import ParameterError
from utils.serving import moe
from utils.verdicts import HOLDS

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
    with pytest.raises(ParameterError, match=f"{name} cannot be set"):
        chains.derive(SLUG, **{name: 1.0})


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
