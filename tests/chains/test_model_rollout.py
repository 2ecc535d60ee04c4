"""model-rollout's chain: the claim with its verdict, the chain's sample size against utils.serving.canary, the
simulation checking the closed form, bad inputs refused, and properties."""
import pytest

from utils import chains
from utils.chains import model_rollout as mr
from utils.params import ParameterError
from utils.serving.canary import canary_sample_size
from utils.verdicts import UNCHECKABLE


def test_claim_cannot_be_checked_and_the_power_holds_on_every_seed():
    (c,) = mr.claims()
    assert c.verdict == UNCHECKABLE and not c.problems()
    ck = mr.checks()
    assert ck["chain"]["t_d"].to("s").m < 3600 < ck["t_rel"]      # caught in the hour; the relative reading: not
    assert len(mr.SEEDS) >= 5 and all(abs(x - 0.8) < 0.05 for x in ck["powers"])


def test_chain_sample_size_is_the_building_blocks():
    r = chains.derive("model-rollout")
    assert r["canary_requests"].m == canary_sample_size(0.0005, 0.0105, ratio=0.95 / 0.05)
    assert r["simulated_power"].m == pytest.approx(0.8, abs=0.05)
    assert r["burn_rate"].m == pytest.approx(10.5) and r["budget_minutes"].m == pytest.approx(43.2)
    assert r["budget_burned_per_hour"].m == pytest.approx(0.0105 * 60)


def test_capacity_for_both_versions():
    r = chains.derive("model-rollout")
    assert r["replicas_new"].m + r["replicas_old"].m >= r["replicas_one_version"].m
    assert r["replicas_at_cutover"].m == r["replicas_one_version"].m + r["replicas_old"].m
    small = chains.derive("model-rollout", requests_per_s=50.0)     # the floor of warm replicas binds
    assert small["replicas_new"].m == 2 and small["extra_replicas"].m >= 1


@pytest.mark.parametrize("name,value", [("canary_share", 1.0), ("canary_share", 0.0), ("slo", 1.5),
                                        ("baseline_failure", 0.0), ("requests_per_s", -1.0), ("min_replicas", 0),
                                        ("regression", 0.9999), ("alpha", 1.0), ("power", 1.0),
                                        ("power", 1e-6), ("power", 0.05), ("power", 0.1)])
def test_bad_inputs_are_refused_naming_the_parameter(name, value):
    with pytest.raises(ParameterError, match=name):
        chains.derive("model-rollout", **{name: value})


def test_smaller_regression_larger_sample_and_larger_share_faster():
    base = chains.derive("model-rollout")
    finer = chains.derive("model-rollout", regression=0.001)
    assert finer["canary_requests"].m > 10 * base["canary_requests"].m
    wide = chains.derive("model-rollout", canary_share=0.2)
    assert wide["time_to_detect"].m < base["time_to_detect"].m


def test_the_router_run_is_sticky():
    run = mr.router_run()
    assert run["switched"] == 0 and run["moved_back"] == 0 and run["after"] == 0
    assert abs(run["measured"] - run["share"]) < 0.01


def test_inputs_cite_their_parameters_at_the_defaults():
    """A parameter's row shows the parameter's own source while it holds its default, "parameters cell" once changed."""
    def sources(**changes):
        return {r.name: r.source for r in mr.compute(mr.SPEC.check(**changes)).rows}
    own = {p.name: p.source for p in mr.PARAMETERS}
    at_default = sources()
    assert (at_default["s"], at_default["tau"], at_default["SLO"]) == (
        own["canary_share"], own["session_minutes"], own["slo"])
    changed = sources(canary_share=0.1, slo=0.99)
    assert changed["s"] == changed["SLO"] == "parameters cell" and changed["tau"] == own["session_minutes"]
