"""grpo-rollout-cost's chain: the claim under its reading, bad inputs refused, and properties."""
import pytest

from utils import chains
from utils.chains import grpo_rollout_cost as grpo
from utils.params import ParameterError
from utils.roofline import FRACTIONS
from utils.units import fmt, pct
from utils.verdicts import UNCHECKABLE

SLUG = "grpo-rollout-cost"


def test_claim_cannot_be_checked_the_cost_is_the_books():
    (c,) = grpo.claims()
    assert c.verdict == UNCHECKABLE and not c.reading          # the source names no measure of cost, no lengths
    assert grpo.COST_WORDS in grpo.QUOTE and grpo.COST_WORDS in c.reason
    ch = grpo.compute(chains.check(SLUG))
    assert ch["s_h"].m > 0.5 > ch["s_g"].m          # the measures disagree: held time for rollouts, work against
    assert ch["F_u"].m > ch["F_g"].m                # in FLOPs the learner does more
    for x in (ch["s_h"], ch["s_g"]):
        assert pct(x) in c.reason                   # the book's figures, computed
    assert fmt(ch["F_u"] / ch["F_g"], digits=2) in c.reason


def test_token_arithmetic():
    r = chains.derive(SLUG)
    assert r["samples_per_step"].m == 64 * 16
    assert r["generated_tokens"].m == pytest.approx(1024 * r["mean_response"].m)
    assert r["mean_response"].m < r["expected_longest_of_group"].m < r["expected_longest_of_step"].m <= 16384
    assert r["simulated_longest_of_group"].m == pytest.approx(r["expected_longest_of_group"].m, rel=0.02)


def test_async_recovers_idle():
    r = chains.derive(SLUG)
    assert r["step_time_async"].m < r["step_time_sync"].m
    assert r["idle_fraction_async"].m < r["idle_fraction_sync"].m


def test_a_slower_verifier_only_hurts_the_synchronous_step():
    a, b = chains.derive(SLUG), chains.derive(SLUG, verifier_seconds=40.0)
    assert b["step_time_sync"].m == pytest.approx(a["step_time_sync"].m + 20.0)
    assert b["step_time_async"].m == pytest.approx(a["step_time_async"].m)


@pytest.mark.parametrize("kw,name", [(dict(median_response_tokens=20000.0), "median_response_tokens"),
                                     (dict(n_actor_gpus=12), "n_actor_gpus"), (dict(sigma=-1.0), "sigma"),
                                     (dict(samples_per_prompt=0), "samples_per_prompt"),
                                     (dict(sim_steps=grpo.MAX_SIM_STEPS + 1), "sim_steps"),
                                     (dict(n_params=7e9, model="llama-3-8b"), "n_params")])
def test_bad_inputs_are_refused(kw, name):
    with pytest.raises(ParameterError, match=name):
        chains.derive(SLUG, **kw)


def test_seeded_and_within_its_error_on_every_seed():
    assert chains.derive(SLUG)["simulated_longest_of_group"] == chains.derive(SLUG)["simulated_longest_of_group"]
    spread = grpo.seed_spread(chains.check(SLUG))
    assert len(spread["runs"]) == grpo.SEEDS and spread["every_seed"]
    assert spread["lo"] < spread["exact"] < spread["hi"]


def test_simulation_memory_does_not_grow_with_the_prompts():
    # a million prompts of sixteen samples draws what sixty-four do: a group's longest at a time
    big = chains.derive(SLUG, n_prompts=1000000)
    assert big["simulated_longest_of_group"] == chains.derive(SLUG)["simulated_longest_of_group"]
    assert big["expected_longest_of_step"].m == pytest.approx(16384, rel=1e-6)


def test_decode_runs_at_the_achieved_share():
    d = grpo.SPEC.defaults()
    assert (d["compute_fraction"], d["bandwidth_fraction"]) == FRACTIONS
    base, roof = chains.derive(SLUG), chains.derive(SLUG, bandwidth_fraction=1.0, compute_fraction=1.0)
    assert base["rollout_held_share"] > roof["rollout_held_share"]       # slower decode: more GPU-time held


def test_balancing_the_split_never_raises_async_idle():
    p = chains.check(SLUG)
    ch = grpo.compute(p)
    bal = grpo.balanced_split(p, ch)
    assert bal["f_x"] <= ch["f_x"].m + 1e-12
    assert bal["n_a"] % p.actor_gpus_per_replica == 0 and bal["n_a"] + bal["n_l"] == 128
    # the shortcut agrees with the chain re-derived at that split
    r = chains.derive(SLUG, n_actor_gpus=bal["n_a"], n_learner_gpus=bal["n_l"])
    assert r["idle_fraction_async"].m == pytest.approx(bal["f_x"], rel=1e-9)
