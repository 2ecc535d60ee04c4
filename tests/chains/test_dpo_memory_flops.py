"""dpo-memory-flops's chain: the claim, the memory and FLOPs identities, bad inputs refused, properties."""
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


def test_precompute_saves_the_extra_epochs_reference_passes():
    r = chains.derive(SLUG, epochs=3)
    assert r["flops_saved"].m == pytest.approx(2 * r["precompute_flops"].m)


def test_without_zero_the_reference_is_a_whole_copy_per_gpu():
    r = chains.derive(SLUG, zero_stage=0)
    assert r["reference_per_gpu"].m == pytest.approx(2 * param_count(catalog.model("llama-3-70b"))["total"].m / 1e9)


def test_more_gpus_less_memory_per_gpu():
    assert chains.derive(SLUG, n_gpus=128)["memory_per_gpu"].m < chains.derive(SLUG)["memory_per_gpu"].m


@pytest.mark.parametrize("kw,name", [(dict(n_params=7e9), "n_params"), (dict(zero_stage=4), "zero_stage"),
                                     (dict(mfu=1.5), "mfu"), (dict(n_gpus=0), "n_gpus")])
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
