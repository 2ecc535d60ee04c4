"""deterministic-sampling's chain: the claim judged by running the reduction, the published cost reproduced
(and LMSYS's restatement of it), bad inputs refused by name, and properties."""
import pytest

from utils import chains
from utils.chains import deterministic_sampling as chapter
from utils.params import ParameterError
from utils.verdicts import HOLDS

SLUG = "deterministic-sampling"


def test_claim_holds_as_written():
    (c,) = chapter.claims()
    assert c.verdict == HOLDS and not c.reading
    ck = chapter.checks()
    assert len(ck["greedy"]) == 1 < len(ck["warm"])
    assert ck["pick"]["variant", "one"] != ck["pick"]["variant", "many"]
    assert ck["pick"]["invariant", "one"] == ck["pick"]["invariant", "many"]
    assert ck["r"]["invariant_same"] and 0 < ck["r"]["changed"] and ck["bits"] < 8


def test_every_step_reproduces_on_every_seed():
    assert chapter.SEEDS >= 3
    runs = [chapter.seed_check(s) for s in range(chapter.SEEDS)]
    assert all(r["holds"] for r in runs) and chapter.checks()["every_seed"]
    sp = chapter.spread(chapter.SPEC.check())
    assert 0.5 < sp["logits_changed"][0] and sp["top_shift_ulps"][1] < 256
    assert sp["flip_per_token_fp32"][1] < 1e-5           # one float32 reduction rarely flips, on every seed


def test_published_cost_and_its_restatement():
    r = chains.derive(SLUG)
    assert r["slowdown_deterministic"].m == pytest.approx(42 / 26 - 1)
    assert r["slowdown_deterministic"].m == pytest.approx(chapter.LMSYS_SLOWDOWN, abs=5e-4)   # LMSYS: "61.5%"
    assert r["slowdown_unoptimized"].m == pytest.approx(55 / 26 - 1)


def test_published_figures_of_the_demonstration():
    r = chains.derive(SLUG)
    assert (r["splits_small_batch"].m, r["splits_large_batch"].m) == (16, 1)
    assert 0.5 < r["logits_changed"].m <= 1 and 1 <= r["top_shift_ulps"].m < 256
    assert r["flip_per_token_observed"].m == pytest.approx(1 - 0.078 ** (1 / 1000), rel=1e-12)
    assert r["gap_noise_fp32"].m < 1e-4


def test_the_uniform_flip_model_contradicts_the_run_it_is_fitted_to():
    """The audit's point: a uniform per-token rate that gives the modal share forks about a quarter of the
    completions inside the 102 tokens on which the published run had them all agree."""
    r = chains.derive(SLUG)
    survive = (1 - r["flip_per_token_observed"].m) ** 102
    assert survive == pytest.approx(0.77, abs=0.005)
    assert r["early_divergences_uniform"].m == pytest.approx(1000 * (1 - survive), rel=1e-12)
    assert r["early_divergences_uniform"].m > 200


@pytest.mark.parametrize("name,value", [("gpu", "nope"), ("reduction_len", 0), ("columns", 2.5), ("batch_large", 1),
                                        ("fixed_chunk", 99999), ("gap_scale", 0.0), ("modal_share", 0.0),
                                        ("modal_share", 1.5), ("t_default_s", -1.0), ("seed", -1),
                                        ("reduction_len", 100000)])
def test_bad_inputs_are_refused_with_their_name(name, value):
    with pytest.raises(ParameterError, match=name):
        chains.derive(SLUG, **{name: value})


def test_wider_gaps_flip_less_and_more_sms_split_more():
    base = chains.derive(SLUG)
    wide = chains.derive(SLUG, gap_scale=8.0)
    assert wide["flip_per_token_fp32"] < base["flip_per_token_fp32"]
    a100 = chains.derive(SLUG, gpu="a100-sxm-80gb")                  # 108 SMs against 132
    assert a100["splits_small_batch"].m == 8 < base["splits_small_batch"].m


def test_a_gpu_without_an_sm_count_is_refused():
    with pytest.raises(ParameterError, match="gpu 'b200' has no sm_count"):
        chains.derive(SLUG, gpu="b200")
