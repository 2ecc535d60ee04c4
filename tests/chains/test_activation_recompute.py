"""activation-recompute: the claim and its readings, Korthikanti's formula and the Llama layer, bad inputs,
properties."""
import pytest

from utils import catalog, chains
from utils.chains import activation_recompute as ar
from utils.params import ParameterError
from utils.units import q
from utils.verdicts import READING


def test_the_table_is_korthikantis_formula():
    t = ar.TERMS
    assert (t["c_w2"], t["c_s2"]) == (34, 5)
    assert (t["n_width"], t["n_mask_w"], t["n_score"], t["n_mask_s"]) == (16, 2, 2, 1)


def test_claim_holds_under_the_fused_attention_reading_with_the_llama_figure_beside_the_papers():
    (c,) = ar.claims()
    assert c.verdict == READING
    pieces = c.reading.split('"')[1::2]
    assert pieces == [ar.MEMORY_WORDS, ar.CHEAP_WORDS] and all(w in ar.CLAIM_QUOTE for w in pieces)
    r = dict(ar.checks()["readings"])
    assert sorted({ar.orders(x) for x in r.values()}) == [1, 2]       # the scores stored: two orders, not one
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
    with pytest.raises(ParameterError, match="not both"):
        chains.derive("activation-recompute", model="llama-3-8b", **{name: 8192})


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


def test_inputs_show_their_parameters_sources_until_a_reader_changes_them():
    spec = {p.name: p.source for p in ar.PARAMETERS}
    rows = {r.name: r.source for r in ar.compute(chains.check("activation-recompute")).rows}
    assert rows["s"] == spec["seq_len"] and rows["t"] == spec["tensor_parallel"] and rows["P"] == spec["pipeline_parallel"]
    rows = {r.name: r.source for r in ar.compute(chains.check("activation-recompute", seq_len=4096)).rows}
    assert rows["s"] == "parameters cell"


def test_a_state_that_does_not_fit_gives_its_shortfall_and_the_largest_model_that_fits():
    """Too few GPUs for the state: refused (no activation budget, micro-batch or sequence for it), naming the
    shortfall, the largest model the layout holds and the fewest stages that hold this one, which fit."""
    with pytest.raises(ParameterError, match=r"does not fit: it takes .* more than the usable .* the largest model "
                                             r"whose state fits 8 x 1 GPUs is .* needs pipeline_parallel >= 2"):
        chains.derive("activation-recompute", pipeline_parallel=1)
    acc = catalog.accelerator("h100-sxm")
    usable = 0.9 * acc.q("hbm_capacity").to("byte").m
    assert ar.state_shortfall(q(0.999 * usable * 8 / 16, "parameter"), 16.0, 8, 1, acc, 0.9) == ""
    assert ar.state_shortfall(q(1.001 * usable * 8 / 16, "parameter"), 16.0, 8, 1, acc, 0.9)
    assert chains.derive("activation-recompute", pipeline_parallel=2)["hbm_left_per_gpu"].m > 0


def test_when_nothing_fits_the_page_gives_the_shortfall_and_the_longest_sequence_that_does():
    p = chains.check("activation-recompute", seq_len=4 * 131072)
    ch = ar.compute(p)
    assert ar.strategy(ch) == "nothing fits"
    short, s_f = ar.full_recompute_limit(ch)
    assert short.m > 0 and f"{s_f:,} tokens" in ar.prose(ch, p)["p-verdict"]
    fits = ar.compute(chains.check("activation-recompute", seq_len=s_f))
    assert ar.strategy(fits) != "nothing fits"
    assert ar.strategy(ar.compute(chains.check("activation-recompute", seq_len=s_f + 1))) == "nothing fits"


def test_the_tie_point_uses_the_achieved_ridge():
    """No rate at the datasheet's peaks: the ridge is eta_P R / (eta_W B), the shares the reader can change."""
    from utils.roofline import FRACTIONS
    ch = ar.compute(chains.check("activation-recompute"))
    ridge = (ch["R"] / ch["B"]).to("FLOP/byte").m
    assert ch["I_r"].to("FLOP/byte").m == pytest.approx(FRACTIONS[0] / FRACTIONS[1] * ridge)
    rows = {r.name: r for r in ch.rows}
    assert (rows["eta_P"].kind, rows["eta_W"].kind) == ("assumption", "measured-by-others")
    roof = ar.compute(chains.check("activation-recompute", compute_fraction=1.0, bandwidth_fraction=1.0))
    assert roof["I_r"].to("FLOP/byte").m == pytest.approx(ridge)
    slower = chains.derive("activation-recompute", bandwidth_fraction=0.5)
    assert slower["min_micro_batch_tokens"] > chains.derive("activation-recompute")["min_micro_batch_tokens"]
