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


@pytest.mark.parametrize("name", ("d_model", "n_active", "n_experts", "n_params"))
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


def test_gpt_oss_priced_by_part_is_its_checkpoint(capsys):
    """gpt-oss-120b's experts in MXFP4 (4.25 bits with their scales) and the rest in bf16: the weights come to what
    utils.models.weight_bytes_by_part gives from the model's own quantization_config, the 65.2 GB (60.8 GiB)
    checkpoint; given on the command line as JSON rows."""
    import json

    from utils import catalog, models, rederive
    parts = json.dumps(tva.gpt_oss_parts())
    out = rederive.payload("moe-total-vs-active", {"model": "gpt-oss-120b", "part_bytes": parts})["results"]
    checkpoint = models.weight_bytes_by_part(catalog.model("gpt-oss-120b"), 2)["total"]
    assert out["weights_bytes"]["value"] == pytest.approx(checkpoint.to("TB").m, rel=1e-12)
    assert checkpoint.to("GiB").m == pytest.approx(60.8, abs=0.05)
    flat = chains.derive("moe-total-vs-active", model="gpt-oss-120b", weight_bytes_per_param=2.0)
    assert flat["weights_bytes"].m > 3 * out["weights_bytes"]["value"]


def test_the_default_prices_every_part_alike_and_a_part_not_named_keeps_the_width():
    ch = tva.compute(chains.check("moe-total-vs-active"))
    assert ch["W"].m == (ch["N_tot"] * ch["b_w"]).to("TB").m and ch["b_e"].m == ch["b_w"].m
    experts_only = tva.compute(chains.check("moe-total-vs-active", part_bytes=[{"part": "experts", "bytes_per_param": 0.5}]))
    assert experts_only["b_w"].m == 1.0 and experts_only["b_e"].m == 0.5
    assert experts_only["W"].to("B").m == pytest.approx((ch["N_tot"].m - ch["N_x"].m) + 0.5 * ch["N_x"].m)
    same = chains.derive("moe-total-vs-active", part_bytes=[{"part": "experts", "bytes_per_param": 2},
                                                            {"part": "rest", "bytes_per_param": 2}])
    assert same == chains.derive("moe-total-vs-active", weight_bytes_per_param=2.0)


@pytest.mark.parametrize("rows, match", [
    ([{"part": "attention", "bytes_per_param": 2}], r"part_bytes\[0\].part must be one of experts, rest"),
    ([{"part": "rest", "bytes_per_param": 2}] * 2, "part_bytes names a part twice"),
    ([{"part": "experts", "bytes_per_param": 0}], r"part_bytes\[0\].bytes_per_param must be > 0"),
    ([{"part": "experts"}], r"part_bytes\[0\] lacks column 'bytes_per_param'"),
])
def test_bad_part_tables_are_refused_in_one_line(rows, match):
    with pytest.raises(ParameterError, match=match) as e:
        chains.check("moe-total-vs-active", part_bytes=rows)
    assert "\n" not in str(e.value)
