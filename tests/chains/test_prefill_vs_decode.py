"""prefill-vs-decode's chain: the two claims refuted as stated, the knee by two routes at the achieved shares of
the peaks, the datasheet roof only a bound, properties."""
import pytest

from utils import catalog, chains
from utils.catalog import entry
from utils.chains import prefill_vs_decode as pd
from utils.params import ParameterError
from utils.verdicts import WRONG

SLUG = "prefill-vs-decode"


def test_claims_are_wrong_as_stated_and_their_checks_hold():
    v = {c.name: c for c in pd.claims()}
    # "One forward pass reads every weight": a one-token pass of DeepSeek-V3 reads a few percent of it.
    assert v["reads-every-weight"].verdict == WRONG and "mixture of experts" in v["reads-every-weight"].nearest_true
    # "the answer is different for the two halves": only for a prompt past the knee, which the words do not say.
    assert v["two-halves"].verdict == WRONG and "knee" in v["two-halves"].nearest_true
    assert all(not c.reading for c in v.values())
    assert all(pd.checks()["asserts"].values())


def test_a_prompt_below_the_knee_is_memory_bound_at_the_roof_too():
    """The refutation needs no efficiency the source does not name: at the datasheet's roof it stands."""
    roof = pd.roof_chain(prompt_tokens=pd.CLAIM["short_prompt"])
    assert pd.bound(roof, "t_pF", "t_pM") == pd.bound(roof, "t_dF", "t_dM") == "memory-bound"


def test_knee_is_the_achieved_ridge_times_bytes_over_two_plus_the_other_bytes():
    d = chains.derive(SLUG)
    ridge = 989.4e12 / 3.35e12
    shares = entry("software", "achieved-fraction")
    eta_p, eta_w = shares.q("bf16_dense").m, shares.q("hbm_bandwidth").m
    achieved = ridge * eta_p / eta_w
    defaults = {x.name: x.default for x in pd.PARAMETERS}
    assert (defaults["compute_fraction"], defaults["bandwidth_fraction"]) == (eta_p, eta_w)   # the catalog's
    assert d["ridge_intensity"].m == pytest.approx(ridge)
    assert d["achieved_ridge_intensity"].m == pytest.approx(achieved)
    assert 1 <= d["knee_tokens"].m / achieved < 1.15                # bf16: n_0 = I_a b_w / 2 = I_a
    assert d["knee_tokens"].m == pytest.approx(pd.knee_by_bisection(pd.claim_spec()), rel=0.01)
    assert d["decode_token_cost_ratio"].m == pytest.approx(achieved, rel=0.05)


def test_no_time_at_the_datasheet_peak_unless_the_reader_asks():
    """Both rates run at the achieved shares; the datasheet roof (shares of one) is only a floor on time."""
    d, roof = chains.derive(SLUG), chains.derive(SLUG, compute_fraction=1.0, bandwidth_fraction=1.0)
    assert d["prefill_time"].m == pytest.approx(roof["prefill_time"].m / 0.75)           # compute-bound
    assert d["decode_step_time"].m == pytest.approx(roof["decode_step_time"].m / 0.866)  # memory-bound
    assert chains.derive(SLUG, compute_fraction=0.5)["knee_tokens"].m < d["knee_tokens"].m < roof["knee_tokens"].m


def test_a_short_prompt_is_memory_bound_like_decode():
    short = pd.claim_chain(prompt_tokens=pd.CLAIM["short_prompt"])
    assert pd.bound(short, "t_pF", "t_pM") == "memory-bound"


def test_moe_reads_few_experts_at_one_token():
    r = pd.expert_reads()
    assert r["one"] < 0.1 < 0.99 < r["prompt"] and r["dense"] > 0.98


@pytest.mark.parametrize("bad, match", [
    (dict(model="llama-3-405b", gpus_per_replica=1), "more than 1 x"),
    (dict(prompt_tokens=0), "prompt_tokens"),
    (dict(gpu="x100"), "gpu"),
    (dict(n_params=1e9, model="llama-3-8b"), "not both"),
    (dict(compute_fraction=1.5), "compute_fraction"),
    (dict(bandwidth_fraction=0.0), "bandwidth_fraction"),
])
def test_bad_inputs_are_refused(bad, match):
    with pytest.raises(ParameterError, match=match):
        chains.derive(SLUG, **bad)


def test_properties():
    base = chains.derive(SLUG)
    assert chains.derive(SLUG, weight_bytes_per_param=1.0)["knee_tokens"].m < base["knee_tokens"].m
    assert chains.derive(SLUG, gpu="h200")["knee_tokens"].m < base["knee_tokens"].m        # lower ridge
    assert chains.derive(SLUG, prompt_tokens=4096)["prefill_time"].m > 2 * base["prefill_time"].m
    assert chains.derive(SLUG, gpu="b200")["decode_step_time"].m < base["decode_step_time"].m


def test_inputs_cite_their_parameters_at_the_defaults():
    """A parameter's row shows the parameter's own source while it holds its default, "parameters cell" once changed."""
    def sources(**changes):
        return {r.name: r.source for r in pd.compute(pd.SPEC.check(**changes)).rows}
    own = {p.name: p.source for p in pd.PARAMETERS}
    at_default = sources()
    assert [at_default[s] for s in ("g", "b_w", "P", "T", "B")] == [
        own[n] for n in ("gpus_per_replica", "weight_bytes_per_param", "prompt_tokens", "context_tokens", "decode_batch")]
    changed = sources(prompt_tokens=1024, decode_batch=4)
    assert changed["P"] == changed["B"] == "parameters cell" and changed["T"] == own["context_tokens"]


def test_expert_share_of_a_count_needs_no_array():
    """The chain's own rows read touched() of a count as a float (no numpy); a sweep's array gives an array."""
    s = pd.spec_for(catalog.model("deepseek-v3"), catalog.accelerator("h200"), 8, 1.0, 1.0)
    assert type(s.touched(2048)) is float and s.touched(1) == pytest.approx(s.k_e / s.E)
    assert list(s.touched([1, 2048])) == pytest.approx([s.touched(1), s.touched(2048)])
