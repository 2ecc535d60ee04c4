"""prefill-vs-decode's chain: the two claims under their readings, the knee by two routes, properties."""
import pytest

from utils import chains
from utils.chains import prefill_vs_decode as pd
from utils.params import ParameterError
from utils.verdicts import READING

SLUG = "prefill-vs-decode"


def test_claims_and_their_checks():
    v = {c.name: c for c in pd.claims()}
    assert v["reads-every-weight"].verdict == READING and v["two-halves"].verdict == READING
    assert all(pd.checks()["asserts"].values())


def test_knee_is_ridge_times_bytes_over_two_plus_the_other_bytes():
    d = chains.derive(SLUG)
    ridge = 989.4e12 / 3.35e12
    assert d["ridge_intensity"].m == pytest.approx(ridge)
    assert 1 <= d["knee_tokens"].m / ridge < 1.15                    # bf16: n_0 = I* b_w / 2 = I*
    assert d["knee_tokens"].m == pytest.approx(pd.knee_by_bisection(pd.claim_spec()), rel=0.01)
    assert d["decode_token_cost_ratio"].m == pytest.approx(ridge, rel=0.05)


def test_a_short_prompt_is_memory_bound_like_decode():
    short = pd.claim_chain(prompt_tokens=128)
    assert pd.bound(short, "t_pF", "t_pM") == "memory-bound"


def test_moe_reads_few_experts_at_one_token():
    r = pd.expert_reads()
    assert r["one"] < 0.1 < 0.99 < r["prompt"] and r["dense"] > 0.98


@pytest.mark.parametrize("bad, match", [
    (dict(model="llama-3-405b", gpus_per_replica=1), "more than 1 x"),
    (dict(prompt_tokens=0), "prompt_tokens"),
    (dict(gpu="x100"), "gpu"),
    (dict(n_params=1e9), "cannot be set"),
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
