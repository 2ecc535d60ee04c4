"""kv-cache-caps-users' chain: the claim under its reading, vLLM's budget on the driver total, properties."""
import math

import pytest

from utils import catalog, chains, models, serving
from utils.chains import kv_cache_caps_users as kv
from utils.params import ParameterError
from utils.verdicts import READING

SLUG = "kv-cache-caps-users"


def test_claim_holds_under_its_reading_at_any_rate():
    (c,) = kv.claims()
    assert c.verdict == READING and c.reading
    cc = kv.claim_chain()
    route = kv.roofline_route(cc)
    assert cc["U"] < cc["U_c"] and route["any_rate"] and route["simplified"]
    assert route["i_inf"] < route["chip"].ridge
    assert route["T_r"] < cc["T"]


def test_users_are_vllms_budget_on_the_driver_total_by_hand():
    # vLLM: 79.10 GiB (what the CUDA runtime reports on an H100) x 0.9, less the weights, over K+V per user.
    m = catalog.model("llama-3-70b")
    w_gpu = models.param_count(m)["total"].m * 2 / 8
    kv_node = 8 * (79.10 * 2**30 * 0.9 - w_gpu)
    per_user = 2 * 80 * 8 * 128 * 2 * 8192
    d = chains.derive(SLUG)
    assert d["memory_for_kv_per_node"].to("B").m == pytest.approx(kv_node)
    assert d["users_per_node"].m == math.floor(kv_node / per_user) == 175
    datasheet = chains.derive(SLUG, memory_reading="datasheet")["users_per_node"].m
    assert datasheet == math.floor(8 * (72e9 - w_gpu) / per_user) < 175


def test_memory_readings_all_keep_memory_first():
    cc = kv.claim_chain()
    rows = kv.memory_readings(cc)
    assert all(u < uc.m for *_, u, uc in rows)


@pytest.mark.parametrize("bad, match", [
    (dict(gpus_per_node=1), "per GPU but the engine manages"),
    (dict(context_tokens=0), "context_tokens"),
    (dict(gpu_memory_utilization=1.2), "gpu_memory_utilization"),
    (dict(gpu="h100"), "gpu"),
    (dict(memory_reading="label"), "memory_reading"),
    (dict(tokens_per_second_per_user=1000.0), "tokens_per_second_per_user"),
    (dict(n_params=70e9, model="llama-3-8b"), "not both"),
])
def test_bad_inputs_are_refused(bad, match):
    with pytest.raises(ParameterError, match=match):
        chains.derive(SLUG, **bad)


def test_properties():
    base = {k: v.m for k, v in chains.derive(SLUG).items()}
    longer = {k: v.m for k, v in chains.derive(SLUG, context_tokens=16384).items()}
    assert longer["users_per_node"] <= base["users_per_node"] / 2 + 1
    assert chains.derive(SLUG, gpu="h200")["users_per_node"].m > 1.9 * base["users_per_node"]
    assert chains.derive(SLUG, kv_bytes_per_element=1.0)["users_per_node"].m >= 2 * base["users_per_node"]
    faster = {k: v.m for k, v in chains.derive(SLUG, tokens_per_second_per_user=40.0).items()}
    assert faster["compute_users_per_node"] < base["compute_users_per_node"]
    assert faster["users_per_node"] == base["users_per_node"]


def test_compute_and_bandwidth_users_run_at_the_achieved_shares():
    """No rate at 100% of a peak: compute's users scale with the compute share, the per-user rate with a full
    node with the bandwidth share, and the users that fit do not move (capacity is not a rate)."""
    base, roof = chains.derive(SLUG), chains.derive(SLUG, compute_fraction=1.0, bandwidth_fraction=1.0)
    assert base["compute_users_per_node"].m == pytest.approx(roof["compute_users_per_node"].m * kv.FRACTIONS[0])
    assert base["rate_per_user_when_full"].m == pytest.approx(roof["rate_per_user_when_full"].m * kv.FRACTIONS[1])
    assert base["users_per_node"].m == roof["users_per_node"].m
    defaults = {p.name: p.default for p in kv.PARAMETERS}
    assert (defaults["compute_fraction"], defaults["bandwidth_fraction"]) == kv.FRACTIONS


def test_inputs_cite_their_parameters_at_the_defaults():
    """A parameter's row shows the parameter's own source while it holds its default, "parameters cell" once changed."""
    def sources(**changes):
        return {r.name: r.source for r in kv.compute(kv.SPEC.check(**changes)).rows}
    own = {p.name: p.source for p in kv.PARAMETERS}
    at_default = sources()
    assert (at_default["g"], at_default["T"], at_default["U_n"]) == (
        own["gpus_per_node"], own["context_tokens"], own["target_users_per_node"])
    assert at_default["s"] == kv.RATE_SOURCE                  # the fuller source, with MLPerf's limits
    changed = sources(target_users_per_node=50, tokens_per_second_per_user=10.0)
    assert changed["U_n"] == changed["s"] == "parameters cell" and changed["g"] == own["gpus_per_node"]


def test_defaults_that_quote_the_catalog_equal_it():
    d = kv.SPEC.defaults()
    assert d["context_tokens"] == catalog.model(d["model"]).q("max_context").m
    assert d["gpu_memory_utilization"] == serving.vllm_utilization()
    assert d["tokens_per_second_per_user"] == kv.CLAIM["rate"]
