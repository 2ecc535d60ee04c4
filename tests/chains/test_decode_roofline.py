"""decode-roofline's chain: the three claims, the ridge re-derived, the KV ceiling on vLLM's budget, properties."""
import math

import pytest

from utils import catalog, chains, models, serving
from utils.chains import decode_roofline as dr
from utils.params import ParameterError
from utils.verdicts import HOLDS, WRONG

SLUG = "decode-roofline"


def test_verdicts():
    v = {c.name: c for c in dr.claims()}
    assert v["intensity"].verdict == WRONG and v["intensity"].nearest_true   # two halves, two weight widths
    assert v["ridge"].verdict == HOLDS
    assert v["kv-ceiling"].verdict == HOLDS        # the words assert a ceiling; no context is supplied to make it bind


def test_throughput_runs_at_the_catalogs_achieved_shares():
    """No rate at 100% of a datasheet peak: the defaults are the catalog's shares (HBM: a published measurement
    of the same streaming reads; the dense rate: an assumption borrowed from FlashAttention-3's best kernel, an
    upper bound for a prefill pass), and the step time scales as one over the bandwidth share while memory-bound."""
    shares = catalog.entry("software", "achieved-fraction")
    h100 = catalog.accelerator("h100-sxm")
    assert (shares["hbm_bandwidth"].kind, shares["bf16_dense"].kind) == ("measured-by-others", "assumption")
    assert shares.q("hbm_bandwidth").m == pytest.approx(h100["hbm_bandwidth_measured"].alternatives[0].q.m
                                                       / h100.q("hbm_bandwidth").m, abs=5e-4)   # STREAM Copy
    assert shares.q("bf16_dense").m == pytest.approx(740e12 / h100.q("bf16_dense").m, abs=5e-3)  # FA3's 740 TFLOP/s
    defaults = {p.name: p.default for p in dr.PARAMETERS}
    assert (defaults["compute_fraction"], defaults["bandwidth_fraction"]) == dr.FRACTIONS
    assert dr.FRACTIONS == (shares.q("bf16_dense").m, shares.q("hbm_bandwidth").m)
    base, roof = chains.derive(SLUG), chains.derive(SLUG, compute_fraction=1.0, bandwidth_fraction=1.0)
    assert base["decode_step_time"].m == pytest.approx(roof["decode_step_time"].m / dr.FRACTIONS[1])
    assert base["decode_throughput"].m < roof["decode_throughput"].m
    assert base["ridge_intensity"].m == roof["ridge_intensity"].m      # the claim's ridge is the datasheet's
    with pytest.raises(ParameterError, match="bandwidth_fraction"):
        chains.derive(SLUG, bandwidth_fraction=1.5)


def test_ridge_is_the_datasheet_ratio():
    h100 = catalog.accelerator("h100-sxm")
    ridge = chains.derive(SLUG)["ridge_intensity"].m
    assert ridge == pytest.approx(989.4e12 / 3.35e12)
    assert ridge == pytest.approx((h100.q("bf16_dense") / h100.q("hbm_bandwidth")).to("FLOP/B").m)
    assert abs(ridge / 295 - 1) < 0.5 / 295                # "about 295" to its three figures
    assert chains.derive(SLUG)["ridge_batch"].m == pytest.approx(ridge)   # bf16 dense: intensity = batch


def test_kv_ceiling_by_hand_on_the_driver_total():
    m = catalog.model("llama-3-70b")
    kv_node = 8 * (79.10 * 2**30 * 0.9 - models.param_count(m)["total"].m * 2 / 8)
    per_seq = 2 * 80 * 8 * 128 * 2 * 8192
    d = chains.derive(SLUG)
    assert d["kv_batch_ceiling"].m == math.floor(kv_node / per_seq)
    assert d["crossover_context"].m == pytest.approx(kv_node / (2 * 80 * 8 * 128 * 2 * d["ridge_batch"].m))
    assert d["kv_batch_ceiling"].m < d["ridge_batch"].m


@pytest.mark.parametrize("bad, match", [
    (dict(gpus_per_replica=1), "per GPU but the engine manages"),
    (dict(context_tokens=-5), "context_tokens"),
    (dict(gpu="nope"), "gpu"),
    (dict(gpu_memory_utilization=0.0), "gpu_memory_utilization"),
    (dict(kv_bytes_per_token=1000.0, model="llama-3-8b"), "not both"),
])
def test_bad_inputs_are_refused(bad, match):
    with pytest.raises(ParameterError, match=match):
        chains.derive(SLUG, **bad)


def test_properties():
    base = chains.derive(SLUG)
    fp8 = chains.derive(SLUG, weight_bytes_per_param=1.0)
    assert fp8["ridge_batch"].m == pytest.approx(base["ridge_batch"].m / 2)
    assert fp8["kv_batch_ceiling"].m > base["kv_batch_ceiling"].m
    assert chains.derive(SLUG, context_tokens=16384)["kv_batch_ceiling"].m <= base["kv_batch_ceiling"].m / 2 + 1
    h200 = chains.derive(SLUG, gpu="h200")
    assert h200["ridge_intensity"].m < base["ridge_intensity"].m and h200["kv_batch_ceiling"].m > h200["ridge_batch"].m


def test_inputs_cite_their_parameters_at_the_defaults():
    """A parameter's row shows the parameter's own source while it holds its default, "parameters cell" once changed."""
    def sources(**changes):
        return {r.name: r.source for r in dr.compute(dr.SPEC.check(**changes)).rows}
    own = {p.name: p.source for p in dr.PARAMETERS}
    at_default = sources()
    assert (at_default["g"], at_default["b_w"], at_default["T"]) == (
        own["gpus_per_replica"], own["weight_bytes_per_param"], own["context_tokens"])
    changed = sources(gpus_per_replica=4, context_tokens=4096)
    assert changed["g"] == changed["T"] == "parameters cell" and changed["b_w"] == own["weight_bytes_per_param"]


def test_defaults_that_quote_the_catalog_equal_it():
    d = dr.SPEC.defaults()
    assert d["context_tokens"] == catalog.model(d["model"]).q("max_context").m
    assert d["gpu_memory_utilization"] == serving.vllm_utilization()
