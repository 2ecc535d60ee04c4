"""prefix-caching's chain: the claim's arithmetic and simulation, published figures, bad inputs, properties."""
import pytest

from utils import catalog, chains
from utils.chain import as_float
from utils.chains import prefix_caching as pc
from utils.models import param_count
from utils.params import ParameterError
from utils.roofline import FRACTIONS
from utils.serving.prefix_cache import ExactPromptCache
from utils.verdicts import READING


def test_claim_holds_under_its_reading():
    (c,) = pc.claims()
    assert c.verdict == READING and c.reading
    ck = pc.checks()
    assert pc.check_holds(ck)
    assert ck["counts"]["radix"] == (2000, 999) and ck["churned"] == 2000 * 1000


def test_published_figures_are_re_derived():
    r = chains.derive("prefix-caching")
    assert r["prefix_kv_bytes"].m == pytest.approx(2000 * 80 * 8 * 128 * 2 * 2)     # Llama-3-70B, bf16 K and V
    assert r["gpu_seconds_saved_per_hour"].m == pytest.approx(381.3, abs=0.1)     # at the shared 75% of peak
    assert r["trace_hit_rate"].m == pytest.approx(0.9564, abs=1e-4)                 # lowest of the seeds
    assert r["trace_hit_rate_high"].m == pytest.approx(0.9584, abs=1e-4)


def test_prefill_runs_at_the_shared_achieved_share_not_the_peak():
    """No throughput at 100% of the datasheet peak: the default is the catalog's achieved share, and the GPU
    time saved scales inversely with it."""
    assert pc.CLAIM["compute_fraction"] == FRACTIONS[0] < 1
    base = chains.derive("prefix-caching")
    half = chains.derive("prefix-caching", compute_fraction=FRACTIONS[0] / 2)
    assert half["gpu_seconds_saved_per_hour"].m == pytest.approx(2 * base["gpu_seconds_saved_per_hour"].m)
    assert half["prefill_flops_saved_per_hour"].m == pytest.approx(base["prefill_flops_saved_per_hour"].m)


def test_prefix_matching_shares_on_every_seed():
    ck = pc.checks()
    assert len(ck["sims"]) == len(pc.SEEDS) > 1
    assert pc.ordered_on_every_seed(ck["sims"], ck["block_key"])
    assert len(set(ck["rates"]["radix tree"])) > 1          # the seeds draw different traces


def test_multi_turn_closed_form_matches_the_simulator():
    ck = pc.checks()
    assert ck["fixed_sim"]["prompt_tokens"] == ck["fixed_prompt"]
    assert ck["fixed_sim"]["prefilled_tokens"] == ck["fixed_prefilled"]


def test_a_flat_table_hits_only_on_an_exact_repeat():
    t = ExactPromptCache()
    assert t.serve((1, 2, 3), (4,)) == (0, 3)
    assert t.serve((1, 2, 3, 4)) == (4, 0)          # the finished sequence is a key too
    assert t.serve((1, 2, 3, 4, 5)) == (0, 5)


@pytest.mark.parametrize("bad", [dict(prefix_tokens=10 ** 6), dict(compute_fraction=1.5), dict(requests_per_hour=0.5),
                                 dict(cache_capacity_tokens=8), dict(gpu="h999"), dict(block_tokens=0)])
def test_bad_inputs_are_refused(bad):
    with pytest.raises(ParameterError):
        chains.derive("prefix-caching", **bad)


@pytest.mark.parametrize("name", ["n_params", "n_layers", "kv_bytes_per_token"])
def test_a_loose_architecture_override_is_refused(name):
    with pytest.raises(ParameterError, match="not both"):
        chains.derive("prefix-caching", model="llama-3-8b", **{name: 1.0})


def test_more_requests_save_more_and_fp8_halves_the_kv():
    base = chains.derive("prefix-caching")
    more = chains.derive("prefix-caching", requests_per_hour=2000.0)
    assert more["prefill_flops_saved_per_hour"].m == pytest.approx(base["prefill_flops_saved_per_hour"].m * 1999 / 999)
    fp8 = chains.derive("prefix-caching", kv_bytes_per_element=1)
    assert fp8["prefix_kv_bytes"].m == pytest.approx(base["prefix_kv_bytes"].m / 2)
    small = chains.derive("prefix-caching", cache_capacity_tokens=4096)
    assert small["trace_hit_rate"].m < base["trace_hit_rate"].m


def test_a_config_json_model_derives_and_the_published_count_stays_the_catalogs():
    """A reader's config.json publishes no parameter count: the chain counts it, and the check's second route
    reads the published count from the claim's catalog model only."""
    p = pc.SPEC.check(model="tests/data/configs/llama-3.1-8b.json")
    assert catalog.looks_like_path(p.model.key)
    ch = pc.compute(p)
    assert as_float(ch["N"], "parameter") == pytest.approx(as_float(param_count(p.model)["active"], "parameter"))
    claim_model = catalog.model(pc.CLAIM["model"])
    assert pc.checks()["route2"] == pytest.approx(2 * as_float(claim_model.q("params_total"), "parameter")
                                                  * pc.CLAIM["prefix_tokens"])
