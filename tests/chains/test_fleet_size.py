"""fleet-size's chain: the claims judged by the rule, the flagship re-derivation, bad inputs, properties."""
import pytest

from utils import catalog, chains
from utils.chains import fleet_size
from utils.models import param_count
from utils.params import ParameterError
from utils.verdicts import UNCHECKABLE


def test_the_count_cannot_be_checked_without_a_run_length():
    judged = {c.name: c for c in fleet_size.claims()}
    assert judged["fleet-size"].verdict == UNCHECKABLE          # a back-solved run length is not a reading
    ck = fleet_size.checks()
    assert ck["run_length"]["T"].to("day").m == pytest.approx(6.3e24 / (6200 * 989.4e12 * 0.4) / 86400)
    assert ck["month"]["N_gpu"].m == pytest.approx(6141.5, abs=0.5)
    assert "6,200" in judged["fleet-size"].reason               # computed, not typed


def test_headroom_cannot_be_checked_the_source_names_no_reason():
    judged = {c.name: c for c in fleet_size.claims()}
    c = judged["headroom"]
    assert c.verdict == UNCHECKABLE and not c.reading        # Llama 3's overhead is a number the source never gave
    assert fleet_size.REASON_WORDS in c.reason and fleet_size.REASON_WORDS in fleet_size.QUOTE
    assert fleet_size.RUN_WORDS in fleet_size.QUOTE and fleet_size.HEADROOM_WORDS in fleet_size.QUOTE
    ck = fleet_size.checks()
    assert ck["claimed_planned"].m == 8192 and ck["month"]["N_2"].m == 8192
    assert ck["reliability"]["overhead"] == pytest.approx(1 / 0.9 - 1) and ck["reliability"]["overhead"] < 0.15
    assert "11.1%" in c.reason and "7,130 GPUs" in c.reason and "8,192 GPUs" in c.reason   # the book's figures, computed


def test_flagship_b200_two_months():
    out = chains.derive("fleet-size", gpu="b200", mfu=0.35, run_days=60)
    assert out["gpus_planned"].m == 2048
    p = fleet_size.SPEC.check()
    assert fleet_size.exercises(p, fleet_size.compute(p))["ex1-planned"] == "2,048 GPUs"


def test_defaults_use_the_models_own_count():
    out = chains.derive("fleet-size")
    n = param_count(catalog.model("llama-3-70b"))["active"].m
    assert out["train_flops"].m == pytest.approx(6 * n * 15e12, rel=1e-12)
    assert out["gpus_planned"].m == 8192 and out["nodes_planned"].m == 1024
    assert out["gpus_whole_nodes"].m % 8 == 0


def test_the_cliffs_sit_on_the_staircase():
    out = chains.derive("fleet-size")
    below = chains.derive("fleet-size", mfu=out["mfu_cliff"].m * 0.999)
    above = chains.derive("fleet-size", mfu=out["mfu_cliff"].m * 1.001)
    assert below["gpus_planned"].m == 2 * above["gpus_planned"].m
    shorter = chains.derive("fleet-size", run_days=out["run_days_cliff"].m * 0.999)
    assert shorter["gpus_planned"].m == 2 * out["gpus_planned"].m


def test_more_days_fewer_gpus_and_sparse_halves():
    a, b = chains.derive("fleet-size", run_days=30.0), chains.derive("fleet-size", run_days=60.0)
    assert b["gpus_exact"].m == pytest.approx(a["gpus_exact"].m / 2)
    p = chains.check("fleet-size")
    assert (fleet_size.compute(p)["N_gpu"] / fleet_size.sparse_reading(p)["N_gpu"]).m == pytest.approx(2, rel=0.01)


@pytest.mark.parametrize("values, message", [
    ({"n_params": 70e9, "model": "llama-3-8b"}, "not both"),
    ({"gpu": "h1000"}, "valid: a100-sxm-80gb"),
    ({"mfu": 1.2}, "mfu must be a fraction"),
    ({"run_days": 0.0}, "run_days must be > 0"),
    ({"headroom": -0.1}, "headroom must be >= 0"),
    ({"gpus_per_node": 0}, "gpus_per_node must be a whole number"),
    ({"model": "llama3"}, "did you mean"),
])
def test_bad_inputs_are_refused(values, message):
    with pytest.raises(ParameterError, match=message):
        chains.derive("fleet-size", **values)


def test_moe_uses_active_parameters():
    ds = chains.derive("fleet-size", model="deepseek-v3")
    assert ds["train_flops"].m == pytest.approx(6 * param_count(catalog.model("deepseek-v3"))["active"].m * 15e12)


# --- which MFU: the published figures restated on 6N -------------------------------------------------
def test_palm_fleet_reproduces_6144_tpu_v4_chips():
    """PaLM (arXiv:2204.02311), Table 3: 46.2% MFU counting 6N + 12LHQT (Appendix B), 238.3K tokens/s, 780B
    tokens on 6,144 TPU v4 chips. At the compute time its throughput implies the fleet equation gives the
    6,144 chips within the rounding of the printed 46.2% (0.11%) and 238.3K (0.02%)."""
    pf = fleet_size.palm_figures()
    assert pf["chips"].m == 6144
    assert pf["exact"].to("GPU").m == pytest.approx(6144, rel=0.0015)
    assert pf["days"].to("day").m == pytest.approx(780e9 / 238.3e3 / 86400, rel=1e-9)
    assert pf["mfu6"] == pytest.approx(0.4570, abs=5e-4)
    # typed as if it counted 6N, the MFU is over-read by the attention share and the fleet comes out short
    assert pf["typed_as_6n"].to("GPU").m < pf["exact"].to("GPU").m
    # 1,200 h on 6,144 chips + 336 h on 3,072 (model card), of which the compute at the reported rate is 2/3
    assert pf["chip_hours"].to("GPU*hour").m == 1200 * 6144 + 336 * 3072
    assert 0.6 < pf["compute_share"] < 0.7


def test_palm_through_rederive_parameters():
    d = chains.derive("fleet-size", gpu="tpu-v4", model="palm-540b", n_tokens=780e9, mfu=0.462,
                      mfu_basis="6N+attention", seq_len=2048, run_days=780e9 / 238.3e3 / 86400, headroom=0.0)
    assert d["gpus_exact"].to("GPU").m == pytest.approx(6144, rel=0.0015)


def test_deepseek_two_counts_of_one_run_agree_on_6n():
    """Insights into DeepSeek-V3 (arXiv:2505.09343), Table 4: MFU 38.94% causal, 43.73% non-causal (4K
    sequences). Restated on 6N they must agree (to the 0.01% rounding plus the MTP module the book does not
    count), and agree with the MFU DeepSeek-V3's 2,664K H800 GPU-hours on 14.8T tokens imply (report Table 1)."""
    ds = fleet_size.deepseek_conversion()
    assert ds["causal"] == pytest.approx(ds["noncausal"], rel=0.005)
    assert ds["causal"] == pytest.approx(0.342, abs=0.001)
    assert ds["from_hours"] == pytest.approx(ds["causal"], rel=0.01)
    assert 0.11 < ds["typed_error"] < 0.13           # the causal figure typed as 6N plans a fleet ~12% short


def test_megatron_rates_restated_on_6n():
    """Narayanan et al. 2021 (arXiv:2104.04473): eq. 3 counts recomputation; Table 1's 1T model at 163 TFLOP/s
    per A100 (52% of peak as printed) and sec. 5.1's GPT-3 at 140 TFLOP/s."""
    lo, hi = fleet_size.megatron_conversion()
    assert hi["printed"] == pytest.approx(0.52, abs=0.005)           # Table 1 prints 52%
    assert hi["n"] == pytest.approx(1008.0e9, rel=0.001)              # Table 1's 1008.0 billion parameters
    assert lo["n"] == pytest.approx(174.6e9, rel=0.001)               # Table 2's 174.6 billion
    assert hi["mfu6"] == pytest.approx(0.3868, abs=5e-4)
    assert lo["mfu6"] == pytest.approx(0.3278, abs=5e-4)
    assert hi["via_8n"] == pytest.approx(hi["printed"] * 6 / 8)       # the hardware basis' shortcut
    assert 4 / 3 < hi["ratio"] < 1.4                                  # eq. 3 over 6N: 8/6 plus attention


def test_default_basis_is_the_identity_and_others_shrink_the_mfu():
    base = chains.derive("fleet-size")
    same = chains.derive("fleet-size", mfu_basis="6N", seq_len=131072)
    assert base["gpus_exact"] == same["gpus_exact"]
    for b in ("6N+causal-attention", "6N+attention", "hardware"):
        assert chains.derive("fleet-size", mfu_basis=b)["gpus_exact"] > base["gpus_exact"], b
    hw = chains.derive("fleet-size", mfu_basis="hardware")
    assert (hw["gpus_exact"] / base["gpus_exact"]).m == pytest.approx(8 / 6)


def test_bad_mfu_basis_refused():
    with pytest.raises(ParameterError, match="mfu_basis"):
        chains.derive("fleet-size", mfu_basis="model")


def test_inputs_show_their_parameters_sources_until_a_reader_changes_them():
    def sources(**changes):
        ch = fleet_size.compute(chains.check("fleet-size", **changes))
        return {r.name: r.source for r in ch.rows}
    spec = {p.name: p.source for p in fleet_size.PARAMETERS}
    at_default = sources()
    assert at_default["D"] == spec["n_tokens"] and at_default["u"] == spec["mfu"]
    assert at_default["T"] == spec["run_days"] and at_default["h"] == spec["headroom"]
    assert at_default["n_g"] == spec["gpus_per_node"]
    changed = sources(mfu=0.35, run_days=60.0, headroom=0.1, n_tokens=10e12, gpus_per_node=4)
    assert {changed[k] for k in ("D", "u", "T", "h", "n_g")} == {"parameters cell"}


def test_palms_published_mfu_is_shown_as_measured_by_others():
    """PaLM's 46.2% is what its authors measured: the chain shows it with the catalog's kind, never as an assumption."""
    row = {r.name: r for r in fleet_size.palm_fleet().rows}["u_b"]
    assert row.kind == "measured-by-others" == catalog.run(fleet_size.PALM_RUN)["mfu"].kind
