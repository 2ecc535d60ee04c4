"""fleet-size's chain: the claims judged by the rule, the flagship re-derivation, bad inputs, properties."""
import pytest

from utils import catalog, chains
from utils.chains import fleet_size
from utils.models import param_count
from utils.params import ParameterError
from utils.verdicts import HOLDS, UNCHECKABLE


def test_the_count_cannot_be_checked_without_a_run_length():
    judged = {c.name: c for c in fleet_size.claims()}
    assert judged["fleet-size"].verdict == UNCHECKABLE          # a back-solved run length is not a reading
    ck = fleet_size.checks()
    assert ck["run_length"]["T"].to("day").m == pytest.approx(6.3e24 / (6200 * 989.4e12 * 0.4) / 86400)
    assert ck["month"]["N_gpu"].m == pytest.approx(6141.5, abs=0.5)
    assert "6,200" in judged["fleet-size"].reason               # computed, not typed


def test_headroom_then_power_of_two_holds():
    judged = {c.name: c for c in fleet_size.claims()}
    assert judged["headroom"].verdict == HOLDS
    ck = fleet_size.checks()
    assert ck["claimed_planned"].m == 8192 and ck["month"]["N_2"].m == 8192
    assert ck["reliability"]["overhead"] == pytest.approx(1 / 0.9 - 1) and ck["reliability"]["overhead"] < 0.15


def test_flagship_b200_two_months():
    out = chains.derive("fleet-size", gpu="b200", mfu=0.35, run_days=60)
    assert out["gpus_planned"].m == 2048
    assert fleet_size.exercises()["ex1-planned"] == "2,048 GPUs"


def test_defaults_use_the_models_own_count():
    out = chains.derive("fleet-size")
    n = param_count(catalog.model("llama-3-70b"))["active"].m
    assert out["train_flops"].m == pytest.approx(6 * n * 15e12, rel=1e-12)
    assert out["gpus_planned"].m == 8192 and out["nodes_planned"].m == 1024
    assert out["gpus_whole_nodes"].m % 8 == 0


def test_the_cliffs_sit_on_the_staircase():
    out = chains.derive("fleet-size")
    below = chains.derive("fleet-size", mfu=out["mfu_cliff"].m * 0.999)
    above = chains.derive("fleet-size", mfu=out["mfu_cliff"].m * 1.001)
    assert below["gpus_planned"].m == 2 * above["gpus_planned"].m
    shorter = chains.derive("fleet-size", run_days=out["run_days_cliff"].m * 0.999)
    assert shorter["gpus_planned"].m == 2 * out["gpus_planned"].m


def test_more_days_fewer_gpus_and_sparse_halves():
    a, b = chains.derive("fleet-size", run_days=30.0), chains.derive("fleet-size", run_days=60.0)
    assert b["gpus_exact"].m == pytest.approx(a["gpus_exact"].m / 2)
    p = chains.check("fleet-size")
    assert (fleet_size.compute(p)["N_gpu"] / fleet_size.sparse_reading(p)["N_gpu"]).m == pytest.approx(2, rel=0.01)


@pytest.mark.parametrize("values, message", [
    ({"n_params": 70e9}, "n_params cannot be set"),
    ({"gpu": "h1000"}, "valid: a100-sxm-80gb"),
    ({"mfu": 1.2}, "mfu must be a fraction"),
    ({"run_days": 0.0}, "run_days must be > 0"),
    ({"headroom": -0.1}, "headroom must be >= 0"),
    ({"gpus_per_node": 0}, "gpus_per_node must be a whole number"),
    ({"model": "llama3"}, "did you mean"),
])
def test_bad_inputs_are_refused(values, message):
    with pytest.raises(ParameterError, match=message):
        chains.derive("fleet-size", **values)


def test_moe_uses_active_parameters():
    ds = chains.derive("fleet-size", model="deepseek-v3")
    assert ds["train_flops"].m == pytest.approx(6 * param_count(catalog.model("deepseek-v3"))["active"].m * 15e12)
