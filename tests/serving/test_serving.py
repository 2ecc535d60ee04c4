"""utils.serving: the serving memory budget (weights, KV per sequence, users) and vLLM's KV budget."""
import math

import pytest

from utils import catalog, models, serving
from utils.chain import Chain
from utils.params import ParameterError
from utils.units import q

H100, H200 = catalog.accelerator("h100-sxm"), catalog.accelerator("h200")
L70 = catalog.model("llama-3-70b")


def test_vllm_multiplies_the_driver_total_not_the_label():
    # vLLM's log on an H100: total_gpu_memory (79.10GiB) x gpu_memory_utilization (0.90) = 71.19GiB
    b = serving.vllm_kv_budget(H100, q(0, "GB"))
    assert b["memory"].used == "driver"
    assert b["managed"].to("GiB").m == pytest.approx(71.19, abs=0.005)
    assert serving.vllm_utilization() == 0.9
    label = serving.vllm_kv_budget(H100, q(0, "GB"), reading="datasheet")["managed"]
    assert label.to("GB").m == pytest.approx(72)
    assert b["managed"] > label          # the driver's total is larger than the 80 GB label


def test_budget_by_hand_llama_3_70b_on_eight_h100():
    b = serving.budget(L70, H100, 8, 2.0, 2.0, 8192)
    total = models.param_count(L70)["total"].m
    w_gpu = total * 2 / 8
    kv_gpu = 79.10 * 2**30 * 0.9 - w_gpu
    per_seq = 2 * 80 * 8 * 128 * 2 * 8192          # K and V, 80 layers, 8 KV heads, head dim 128, bf16
    assert b.weights_per_gpu.to("B").m == pytest.approx(w_gpu)
    assert b.kv_budget_per_gpu.to("B").m == pytest.approx(kv_gpu)
    assert b.kv_per_sequence.to("B").m == pytest.approx(per_seq)
    assert b.users == math.floor(8 * kv_gpu / per_seq) and b.users_per_gpu == b.users / 8


def test_readings_order_and_fallback():
    mems = [serving.gpu_memory(H100, r).total for r in ("datasheet", "driver", "nvidia-smi")]
    assert mems[0] < mems[1] < mems[2]
    fallback = serving.gpu_memory(H200, "driver")            # no driver figure: nvidia-smi's, and it says so
    assert fallback.used == "nvidia-smi" and "not in the catalog" in fallback.label
    with pytest.raises(ParameterError, match="reading"):
        serving.gpu_memory(H100, "label")


def test_weights_that_do_not_fit_are_refused_with_both_sizes():
    with pytest.raises(ParameterError, match="per GPU but the engine manages"):
        serving.budget(L70, H100, 1, 2.0, 2.0, 8192)
    with pytest.raises(ParameterError, match="not one sequence"):
        serving.budget(L70, H100, 2, 2.0, 2.0, 10_000_000)
    with pytest.raises(ParameterError, match="gpu_memory_utilization"):
        serving.vllm_kv_budget(H100, q(1, "GB"), utilization=1.5)


def test_properties_more_memory_more_users_longer_context_fewer():
    base = serving.budget(L70, H100, 8, 2.0, 2.0, 8192)
    assert serving.budget(L70, H200, 8, 2.0, 2.0, 8192).users > base.users
    assert serving.budget(L70, H100, 8, 2.0, 2.0, 16384).users <= base.users // 2 + 1
    assert serving.budget(L70, H100, 8, 2.0, 1.0, 8192).users >= 2 * base.users
    act = serving.budget(L70, H100, 8, 2.0, 2.0, 8192, activation_peak_per_gpu=q(5, "GB"))
    assert act.users < base.users


def test_mla_latent_is_copied_on_every_gpu():
    ds = catalog.model("deepseek-v3")
    b = serving.budget(ds, H200, 8, 1.0, 2.0, 8192)
    assert b.copies == 8
    assert b.kv_per_sequence.to("B").m == pytest.approx(8 * models.kv_bytes_per_token(ds, 2).m * 8192)


def test_chain_rows_reproduce_the_budget():
    b = serving.budget(L70, H100, 8, 2.0, 2.0, 8192)
    ch = serving.add_budget_steps(Chain(), b, utilization_value=serving.vllm_utilization_value())
    assert ch["U"].to("sequence").m == b.users
    assert ch["M_kv"].to("B").m == pytest.approx(b.kv_budget.to("B").m)
