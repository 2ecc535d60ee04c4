"""dpo-memory-flops's chain: the claim, the memory and FLOPs identities, bad inputs refused, properties."""
import math
from pathlib import Path

import pytest

from utils import catalog, chains
from utils.catalog.hf_config import model_entry
from utils.chains import dpo_memory_flops as dpo
from utils.models import param_count
from utils.params import ParameterError
from utils.verdicts import HOLDS

SLUG = "dpo-memory-flops"


def test_claim_holds():
    (c,) = dpo.claims()
    assert c.verdict == HOLDS


def test_memory_and_flops_identities():
    r = chains.derive(SLUG)
    n = param_count(catalog.model("llama-3-70b"))
    assert r["policy_state_per_gpu"].m == pytest.approx(16 * n["total"].m / 64 / 1e9)
    assert r["reference_per_gpu"].m == pytest.approx(2 * n["total"].m / 64 / 1e9)
    assert r["reference_memory_share"].m == pytest.approx(1 / 9)
    assert r["flops_per_token"].m == pytest.approx(8 * n["active"].m / 1e9)
    assert r["flops_per_token_precomputed"].m == pytest.approx(6 * n["active"].m / 1e9)
    assert r["flops_saved"].m == pytest.approx(0, abs=1e6)          # one epoch: the work moves, not vanishes


def test_activations_fit_only_with_recompute_and_a_plan_that_does_not_fit_has_no_run_time():
    r = chains.derive(SLUG)
    n = param_count(catalog.model("llama-3-70b"))["total"].m
    assert r["activations_per_pair"].m == pytest.approx(2 * 1024 * 2 * 8192 * 80 / 1e9)   # full recompute: inputs
    left = 80 - r["memory_per_gpu"].m
    assert r["pairs_that_fit"].m == int(left // r["activations_per_pair"].m) >= r["pairs_to_hide_comm"].m
    none = chains.derive(SLUG, recompute="none")
    assert none["activations_per_pair"].m > 40 and none["pairs_that_fit"].m == 1
    # one pair cannot hide the collectives: the run stretches by the traffic over one pair's compute
    assert none["run_gpu_hours"].m == pytest.approx(r["run_gpu_hours"].m * r["zero_comm_time"].m / (
        r["flops_per_pair"].m * 1e12 / (0.4 * 989.4e12)), rel=1e-3)
    z0 = chains.derive(SLUG, zero_stage=0)                   # 16 B/param of 70B on one 80 GB GPU
    assert z0["pairs_that_fit"].m == 0
    assert all(math.isnan(z0[k].m) for k in ("run_gpu_hours", "zero_comm_time", "pairs_to_hide_comm"))
    assert n > 7e10


def test_zero3_moves_four_times_the_models_bytes_and_the_precompute_removes_a_quarter():
    r = chains.derive(SLUG)
    w = 2 * param_count(catalog.model("llama-3-70b"))["total"].m * 63 / 64
    assert r["zero_traffic_per_gpu"].m == pytest.approx(4 * w / 1e9)
    assert r["reference_traffic_share"].m == pytest.approx(0.25)
    assert r["zero_comm_time"].m == pytest.approx(4 * w / (0.81 * 50e9))
    assert chains.derive(SLUG, zero_stage=2)["reference_traffic_share"].m == 0      # replicated: no gather


def test_precompute_saves_the_extra_epochs_reference_passes():
    r = chains.derive(SLUG, epochs=3)
    assert r["flops_saved"].m == pytest.approx(2 * r["precompute_flops"].m)


def test_without_zero_the_reference_is_a_whole_copy_per_gpu():
    r = chains.derive(SLUG, zero_stage=0)
    assert r["reference_per_gpu"].m == pytest.approx(2 * param_count(catalog.model("llama-3-70b"))["total"].m / 1e9)


def test_more_gpus_less_memory_per_gpu():
    assert chains.derive(SLUG, n_gpus=128)["memory_per_gpu"].m < chains.derive(SLUG)["memory_per_gpu"].m


@pytest.mark.parametrize("kw,name", [(dict(n_params=-7e9), "n_params"), (dict(zero_stage=4), "zero_stage"),
                                     (dict(mfu=1.5), "mfu"), (dict(n_gpus=0), "n_gpus"),
                                     (dict(recompute="some"), "recompute"), (dict(link_efficiency=0), "link_efficiency")])
def test_bad_inputs_are_refused(kw, name):
    with pytest.raises(ParameterError, match=name):
        chains.derive(SLUG, **kw)


def test_a_readers_config_json_is_one_parameter():
    r = chains.derive(SLUG, model="tests/data/configs/mixtral-8x7b.json")
    n = param_count(model_entry(Path("tests/data/configs/mixtral-8x7b.json")))
    assert r["flops_per_token"].m == pytest.approx(8 * n["active"].m / 1e9)
    assert r["memory_per_gpu"].m == pytest.approx(18 * n["total"].m / 64 / 1e9)


def test_a_model_too_big_for_one_node_generates_on_a_larger_replica():
    r = chains.derive(SLUG, model="llama-3-405b")
    assert r["rl_generation_gpu_hours"].m > chains.derive(SLUG)["rl_generation_gpu_hours"].m > 0
