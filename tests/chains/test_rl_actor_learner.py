"""rl-actor-learner: the broadcast figure matched, the published figures, the achieved shares, a plan that does
not fit, refusals and properties."""
import pytest

from utils import catalog, chains
from utils.chains import rl_actor_learner as rl
from utils.params import ParameterError
from utils.roofline import FRACTIONS
from utils.training.collectives import LINK_FRACTIONS
from utils.verdicts import UNCHECKABLE

SLUG = "rl-actor-learner"


def test_claim_is_matched_not_checked():
    (c,) = rl.claims()
    assert c.verdict == UNCHECKABLE
    assert rl.matching_readings() == [("chinchilla-70b", 2.0), ("llama-3-70b", 2.0)]   # the sentence names neither
    ck = rl.checks()
    assert round(ck["chain"]["W_b"].to("GB").m) == 141
    assert ck["by_hand"] == int(ck["chain"]["N_s"].m)
    assert [hit for *_, hit in ck["readings"]] == [True, False, False, False, False]


def test_published_figures():
    r = chains.derive(SLUG)
    # bytes over one NDR port at NCCL's measured share of it
    assert r["broadcast_time"].to("s").m == pytest.approx(141.107e9 / (LINK_FRACTIONS[1] * 50e9), rel=1e-4)
    assert r["broadcast_time_sharded"].m == pytest.approx(r["broadcast_time"].m / 8)
    assert r["balanced_actor_learner_ratio"].m == pytest.approx(
        r["train_tokens_per_gpu"].m / r["decode_tokens_per_gpu"].m)
    assert r["balanced_actor_learner_ratio"].m == pytest.approx(0.3423, abs=1e-4)
    assert r["learner_idle_fraction"].m + r["actor_idle_fraction"].m > 1     # they overlap in the broadcast


def test_no_rate_at_a_datasheet_peak():
    d = rl.SPEC.defaults()
    assert (d["compute_fraction"], d["bandwidth_fraction"]) == FRACTIONS
    assert (d["nvlink_fraction"], d["fabric_fraction"]) == LINK_FRACTIONS
    base = chains.derive(SLUG)
    roof = chains.derive(SLUG, compute_fraction=1.0, bandwidth_fraction=1.0, fabric_fraction=1.0)
    # decode is bandwidth-bound here, so its rate scales with the HBM share; the broadcast with the fabric's
    assert base["decode_tokens_per_gpu"].m == pytest.approx(FRACTIONS[1] * roof["decode_tokens_per_gpu"].m)
    assert base["broadcast_time"].m == pytest.approx(roof["broadcast_time"].m / LINK_FRACTIONS[1])
    assert base["train_tokens_per_gpu"] == roof["train_tokens_per_gpu"]          # the learner's MFU is its own


def test_a_plan_that_does_not_fit_names_the_largest_batch_that_does():
    with pytest.raises(ParameterError, match=r"more than .* the largest batch that fits is 864") as e:
        chains.derive(SLUG, decode_batch=2048)
    fits = chains.derive(SLUG, decode_batch=864)
    assert fits["decode_tokens_per_gpu"].m > 0 and "decode_batch" in str(e.value)
    with pytest.raises(ParameterError):
        chains.derive(SLUG, decode_batch=865)


def test_sync_optimum_is_the_square_root():
    ck = rl.checks()
    assert ck["best_split"] == pytest.approx(ck["chain"]["rho_s"].m, rel=1e-3)
    assert ck["chain"]["rho_s"].m == pytest.approx(ck["chain"]["rho"].m ** 0.5)


@pytest.mark.parametrize("bad", [dict(n_actor_gpus=60), dict(decode_batch=4096), dict(n_learner_gpus=1),
                                 dict(mfu=0.0), dict(link="no-such-link"), dict(gpu="h100")])
def test_bad_inputs_are_refused_with_the_name(bad):
    (name,) = bad
    with pytest.raises(ParameterError, match=name):
        chains.derive(SLUG, **bad)


@pytest.mark.parametrize("name", ("kv_bytes_per_token", "n_layers", "n_params"))
def test_loose_architecture_overrides_are_refused(name):
    with pytest.raises(ParameterError, match="not both"):
        chains.derive(SLUG, model="llama-3-8b", **{name: 1.0})


def test_properties():
    base = chains.derive(SLUG)
    more = chains.derive(SLUG, n_actor_gpus=128)
    assert more["step_time_sync"] < base["step_time_sync"]                  # more actors, shorter generation
    assert more["balanced_actor_learner_ratio"] == base["balanced_actor_learner_ratio"]
    longer = chains.derive(SLUG, mean_context_tokens=3072.0)
    assert longer["balanced_actor_learner_ratio"] > base["balanced_actor_learner_ratio"]
    assert base["step_time_async"] < base["step_time_sync"]
    fp8 = chains.derive(SLUG, weight_bytes_per_param=1.0)
    assert fp8["broadcast_bytes"].m == pytest.approx(base["broadcast_bytes"].m / 2)


def test_h200_actors_change_only_the_actor_side():
    p = chains.check(SLUG)
    h200 = rl.balanced(p, "h200", p.mean_context_tokens)
    assert h200["r_a"] > rl.compute(p)["r_a"] and h200["r_l"] == rl.compute(p)["r_l"]
    assert catalog.accelerator("h200").q("bf16_dense") == catalog.accelerator("h100-sxm").q("bf16_dense")
