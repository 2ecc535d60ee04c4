"""decode-roofline's chain: the three claims, the ridge re-derived, the KV ceiling on vLLM's budget, properties."""
import math

import pytest

from utils import catalog, chains, models
from utils.chains import decode_roofline as dr
from utils.params import ParameterError
from utils.verdicts import HOLDS, READING, WRONG

SLUG = "decode-roofline"


def test_verdicts():
    v = {c.name: c for c in dr.claims()}
    assert v["intensity"].verdict == WRONG and v["intensity"].nearest_true   # two halves, two weight widths
    assert v["ridge"].verdict == HOLDS
    assert v["kv-ceiling"].verdict == READING and v["kv-ceiling"].reading


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
    (dict(kv_bytes_per_token=1000.0), "cannot be set"),
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
