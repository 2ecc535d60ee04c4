"""eval-pipeline's chain: the claim on its own factors, the packing and the cache checked, bad inputs
refused, and properties."""
import math

import pytest

from utils import chains
from utils.chains import eval_pipeline as chapter
from utils.params import ParameterError
from utils.verdicts import UNCHECKABLE


def test_claim_and_its_verdict():
    (c,) = chapter.claims()
    assert c.verdict == UNCHECKABLE and "names none of the factors" in c.reason
    p = chapter.claim_inputs()
    assert chapter.expected_prompts(p) == pytest.approx(2000 * 500 * math.exp(1.125) * 1.9)


def test_defaults():
    r = chains.derive("eval-pipeline")
    assert r["prompts_per_run"].m == pytest.approx(
        2000 * r["prompts_per_eval"].m * r["samples_per_prompt_mean"].m)
    assert r["replica_prompts_per_second"].m == pytest.approx(r["replica_tokens_per_second"].m / 256)
    assert r["utilisation_lpt"].m > 0.99 > r["utilisation_round_robin"].m
    assert r["turnaround_lpt"].m <= r["turnaround_round_robin"].m
    assert r["gpus_for_four_hours"].m == pytest.approx(12 * r["gpus_for_two_days"].m)
    # with the baseline: (C - 1) baseline passes and the re-runs hit, over C (2 + rerun) passes
    assert r["cache_hit_rate"].m == pytest.approx((19 + 2) / (20 * 2.1))
    # a one-point change on a 500-prompt eval at 70% is inside the noise
    assert r["score_standard_error"].m == pytest.approx(math.sqrt(0.21 / 500))
    assert r["smallest_believable_change"].m > 0.01


def test_the_closed_form_hit_rate_matches_the_cache():
    for baseline in (True, False):
        ck = chapter.cache_check(baseline=baseline)
        assert ck["simulated"] == pytest.approx(ck["closed"])
    assert chapter.hit_rate(1.0, 1, False, 0.0) == 0.0       # one new checkpoint: nothing can hit


@pytest.mark.parametrize("name,value", [("gpus", 60), ("max_shard", 0), ("samples_per_prompt", 0),
                                        ("eval_accuracy", 1.5), ("rerun_share", 1.0), ("n_evals", 0),
                                        ("tokens_per_second", 1e4), ("size_spread", 1500.0),
                                        ("median_prompts", 1e15)])
def test_bad_inputs_are_refused_by_name(name, value):
    with pytest.raises(ParameterError, match=name):
        chains.derive("eval-pipeline", **{name: value})


def test_properties():
    base = chains.derive("eval-pipeline")
    more = chains.derive("eval-pipeline", gpus=128)
    assert more["turnaround_ideal"].m == pytest.approx(base["turnaround_ideal"].m / 2)
    big = chains.derive("eval-pipeline", gpus=512)
    unsharded = chains.derive("eval-pipeline", gpus=512, max_shard=10 ** 6)
    assert big["utilisation_lpt"].m > unsharded["utilisation_lpt"].m       # the tail needs shards at scale
    bigger = chains.derive("eval-pipeline", eval_prompts=2000)
    assert bigger["score_standard_error"].m == pytest.approx(base["score_standard_error"].m / 2)


def test_the_seeded_figures_hold_on_every_seed_and_are_shown_as_their_range():
    p = chapter.claim_inputs()
    sp = chapter.spread(p)
    assert chapter.SEEDS >= 3
    assert sp["utilisation_lpt"][0].m > 0.99 > sp["utilisation_round_robin"][1].m     # on every seed
    lo, hi = sp["prompts_per_run"]
    assert lo.m <= chains.derive("eval-pipeline")["prompts_per_run"].m <= hi.m
    assert lo.m < chapter.expected_prompts(p) < hi.m          # the verdict's expected size lies inside the draws
    assert f"over {chapter.SEEDS} seeds" in chapter.claims()[0].reason
