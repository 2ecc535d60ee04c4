"""activation-recompute: the claim and its readings, Korthikanti's formula and the Llama layer, bad inputs,
properties."""
import pytest

from utils import catalog, chains
from utils.chains import activation_recompute as ar
from utils.params import ParameterError
from utils.verdicts import HOLDS


def test_the_table_is_korthikantis_formula():
    t = ar.TERMS
    assert (t["c_w2"], t["c_s2"]) == (34, 5)
    assert (t["n_width"], t["n_mask_w"], t["n_score"], t["n_mask_s"]) == (16, 2, 2, 1)


def test_claim_holds_with_the_llama_figure_beside_the_papers():
    (c,) = ar.claims()
    assert c.verdict == HOLDS
    ck = ar.checks()
    r = dict(ck["readings"])
    ch = ck["chain"]
    assert ch["o_f"].m == pytest.approx(1 / 3, rel=1e-12)
    assert ch["r"].m == pytest.approx(177)                   # 34 + 5 a s / h over 2, a s / h = 64
    assert ch["r_ll"].m == pytest.approx((40.5 + 2 * 64) / 2)  # about 84: no dropout, GQA, SwiGLU
    assert all(x >= 10 for x in r.values())
    assert ck["o_sel"] < 0.05 and ck["o_sel_causal"] < ck["o_sel"]
    assert ck["gpt_o"] == pytest.approx(ck["gpt_chain_o"], rel=1e-12)


def test_llama_coefficient():
    cw, cs = ar.llama_coefficients(catalog.model("llama-3-70b"))
    assert cw == pytest.approx(12 + 4 / 8 + 8 * 3.5) and cs == 2


def test_published_defaults():
    d = chains.derive("activation-recompute")
    assert d["memory_ratio"].m == pytest.approx(177)
    assert d["memory_ratio_llama"].m == pytest.approx(84.25)
    assert d["activations_per_gpu_selective"].to("GB").m < d["hbm_left_per_gpu"].to("GB").m < \
        d["activations_per_gpu"].to("GB").m


@pytest.mark.parametrize("bad, name", [(dict(tensor_parallel=7), "tensor_parallel"),
                                       (dict(pipeline_parallel=1000), "pipeline_parallel"),
                                       (dict(model="deepseek-v3"), "model"),
                                       (dict(pipeline_parallel=1, tensor_parallel=1), "pipeline_parallel"),
                                       (dict(hbm_usable=2.0), "hbm_usable"), (dict(seq_len=0), "seq_len")])
def test_bad_inputs_refused(bad, name):
    with pytest.raises(ParameterError, match=name):
        chains.derive("activation-recompute", **bad)


@pytest.mark.parametrize("name", ["n_params", "d_model", "n_heads", "n_layers"])
def test_loose_architecture_refused(name):
    with pytest.raises(ParameterError, match=f"{name} cannot be set.*model"):
        chains.derive("activation-recompute", **{name: 8192})


def test_longer_sequences_more_memory_more_tp_less():
    base = chains.derive("activation-recompute")
    longer = chains.derive("activation-recompute", seq_len=16384)
    assert longer["activations_per_gpu"].m > 2 * base["activations_per_gpu"].m     # the score term is quadratic
    assert longer["compute_overhead_selective"].m > base["compute_overhead_selective"].m
    assert chains.derive("activation-recompute", micro_batch=2)["activations_per_gpu_selective"].m == \
        pytest.approx(2 * base["activations_per_gpu_selective"].m)


def test_the_counted_block_matches_the_formula():
    pytest.importorskip("torch")
    from utils.training.saved_activations import count_stack
    counts = count_stack(**ar.TINY)
    pred = ar.tiny_prediction(counts["ln_stat_bytes"])
    assert counts[False]["forward"] == pred["stored"] and counts[True]["forward"] == pred["kept"]
    assert counts[True]["flops"] * 3 == counts[False]["flops"] * 4


def test_the_coefficients_are_the_symbolic_sum_s():
    """TERMS reads each term's coefficients off the table at unit sizes; the expanded symbolic sum agrees and
    is Korthikanti's sbh(34 + 5as/h) at two bytes an element."""
    import sympy as sp
    p, s, b, h, a = sp.symbols("p s b h a", positive=True)
    layer = sp.expand(ar.layer_bytes(p, s, b, h, a))
    t = ar.TERMS
    assert sp.simplify(layer - (s * b * h * (t["n_width"] * p + t["n_mask_w"])
                                + a * s**2 * b * (t["n_score"] * p + t["n_mask_s"]))) == 0
    assert sp.simplify(layer.subs(p, 2) - s * b * h * (34 + 5 * a * s / h)) == 0
    assert ar.layer_bytes(2, 512, 1, 64, 8) == int(layer.subs({p: 2, s: 512, b: 1, h: 64, a: 8}))
