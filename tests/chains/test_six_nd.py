"""six-nd's chain: the claim, the paper route, the model as one parameter, and properties."""
import pytest

from utils import catalog, chains
from utils.chains import six_nd
from utils.params import ParameterError
from utils.training import attention_flops_per_token, flops_per_parameter_token
from utils.verdicts import HOLDS


def test_the_six_is_derived():
    assert flops_per_parameter_token() == {"forward": 2, "backward": 4, "train": 6, "recompute": 8}
    assert attention_flops_per_token() == {"causal": 6, "full": 12}


def test_claim_holds_at_its_own_inputs():
    (c,) = six_nd.claims()
    assert c.verdict == HOLDS
    assert six_nd.claim_chain()["C"].to("FLOP").m == pytest.approx(6.3e24, rel=1e-12)


def test_llama3_paper_count_is_reproduced():
    route = six_nd.paper_route()                      # Llama 3 paper, sec. 1: 3.8e25 FLOP
    assert route["ratio"] == pytest.approx(1, abs=0.05 / 3.8)


def test_model_sets_the_attention_share_of_its_own_architecture():
    # Llama-3.1-405B: 126 layers x 8,192 tokens x 16,384 width over its own 404B multiplied parameters.
    share = chains.derive("six-nd", model="llama-3-405b")["attention_share"].m
    m = catalog.model("llama-3-405b")
    expected = 126 * 8192 * 16384 / six_nd.architecture(m)["n_params"]
    assert share == pytest.approx(expected, rel=1e-12) and share == pytest.approx(0.0419, abs=5e-4)
    assert chains.derive("six-nd")["attention_share"].m == pytest.approx(0.0772, abs=5e-4)


@pytest.mark.parametrize("name", ["n_params", "n_layers", "d_attn"])
def test_a_loose_architecture_override_is_refused(name):
    with pytest.raises(ParameterError, match="not both"):
        chains.derive("six-nd", model="llama-3-8b", **{name: 405e9})


def test_more_tokens_more_compute_and_longer_context_larger_share():
    base = chains.derive("six-nd")
    more = chains.derive("six-nd", n_tokens=30e12)
    assert more["train_flops"].m == pytest.approx(2 * base["train_flops"].m)
    longer = chains.derive("six-nd", context_tokens=16384)
    assert longer["attention_share"].m == pytest.approx(2 * base["attention_share"].m)


def test_mixture_of_experts_counts_active_parameters():
    ds = chains.derive("six-nd", model="deepseek-v3")
    n_active = six_nd.architecture(catalog.model("deepseek-v3"))["n_params"]
    assert n_active < 40e9
    assert ds["flops_per_token"].m == pytest.approx(6 * n_active)


def test_flop_counter_route_is_exact():
    pytest.importorskip("torch")
    from utils.training.tiny_gpt import count_training_step
    assert six_nd.flop_count_check(count_training_step())["ratio"] == pytest.approx(1, abs=1e-12)


def test_claim_holds_by_its_two_figures_on_every_reading_of_n():
    from utils.verdicts import rounds_to
    k = flops_per_parameter_token()["train"]
    readings = six_nd.n_readings()
    assert set(readings) == {"nominal", "counted, multiplied per token", "counted, all parameters"}
    for n in readings.values():                       # 6.30e24, 6.26e24, 6.35e24 (6.3498e24): each 6.3e24
        assert rounds_to(k * n * 15e12, 6.3e24, 2)
    assert not rounds_to(k * 71e9 * 15e12, 6.3e24, 2)  # 6.39e24 is 6.4e24 at two figures: the check can fail
    assert all(w in open_spec_words() for w in six_nd.INPUT_WORDS)


def open_spec_words() -> str:
    """The cost paragraph the claim's N and D come from, as the chapter quotes it (the same source)."""
    from utils.chains import cost_per_training_token
    return cost_per_training_token.QUOTES["token"]


def test_inputs_show_their_parameters_sources_until_a_reader_changes_them():
    rows = {r.name: r.source for r in six_nd.compute(chains.check("six-nd")).rows}
    spec = {p.name: p.source for p in six_nd.PARAMETERS}
    assert rows["D"] == spec["n_tokens"] and rows["T"] == spec["context_tokens"]
    rows = {r.name: r.source for r in six_nd.compute(chains.check("six-nd", n_tokens=1e12, context_tokens=4096)).rows}
    assert rows["D"] == rows["T"] == "parameters cell"
