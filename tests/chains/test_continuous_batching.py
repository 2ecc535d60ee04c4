"""continuous-batching's chain: the caps, the claim's reading, the simulation, bad inputs, properties."""
import pytest

from utils import catalog, chains, serving
from utils.chains import continuous_batching as cb
from utils.params import ParameterError
from utils.verdicts import READING


def test_claim_holds_under_its_reading_and_every_link_is_checked():
    (c,) = cb.claims()
    assert c.verdict == READING and c.reading
    ck = cb.checks()
    assert cb.check_holds(ck)
    cc = ck["chain"]
    assert cb.binds(cc) == "the prefill chunk" and cc["B_pf"] < cc["U"] < cc["B_L"]
    assert cb.binds(ck["kv_chain"]) == "the KV budget"


def test_kv_cap_is_a_share_of_the_driver_reported_memory():
    r = chains.derive("continuous-batching")
    m, gpu = catalog.model("llama-3-70b"), catalog.accelerator("h100-sxm")
    b = serving.vllm_kv_budget(gpu, serving.weights_per_gpu(m, 8, 2.0))
    per_seq = serving.kv_per_sequence(m, 2.0, 4096, gpus=8)
    assert r["batch_kv_cap"].m == int((8 * b["kv"] / per_seq).to("").m)
    assert b["memory"].used == "driver"


def test_published_figures_are_re_derived():
    r = chains.derive("continuous-batching")
    assert r["batch"].m == r["batch_prefill_cap"].m == 512 * 512 // 1024
    assert r["batch_for_tpot"].m == 894
    assert r["tpot_p95"].to("ms").m == pytest.approx(18.0, abs=0.05)
    assert r["continuous_over_static"].m == pytest.approx(6.13, abs=0.01)


@pytest.mark.parametrize("bad", [dict(gpus_per_replica=0), dict(tpot_target_s=-1.0), dict(chunk_tokens=1.5),
                                 dict(gpu="h999"), dict(model="no-such-model"), dict(mean_output_tokens=1),
                                 dict(context_tokens=10 ** 7), dict(tpot_target_s=1e-4),
                                 dict(gpus_per_replica=1)])
def test_bad_inputs_are_refused(bad):
    with pytest.raises(ParameterError):
        chains.derive("continuous-batching", **bad)


@pytest.mark.parametrize("name", ["n_params", "n_layers", "kv_bytes_per_token"])
def test_a_loose_architecture_override_is_refused(name):
    with pytest.raises(ParameterError, match=f"{name} cannot be set.*model"):
        chains.derive("continuous-batching", **{name: 1.0})


def test_bigger_chunks_lift_the_prefill_cap_and_longer_context_lowers_the_kv_cap():
    base = chains.derive("continuous-batching")
    big = chains.derive("continuous-batching", chunk_tokens=2048)
    assert big["batch_prefill_cap"].m == 4 * base["batch_prefill_cap"].m and big["batch"].m == base["batch_kv_cap"].m
    long = chains.derive("continuous-batching", context_tokens=8192)
    assert long["batch_kv_cap"].m < base["batch_kv_cap"].m
    assert chains.derive("continuous-batching", gpu="h200")["batch_kv_cap"].m > base["batch_kv_cap"].m


def test_host_work_on_the_engine_loop_only_slows_it():
    base = chains.derive("continuous-batching")
    slow = chains.derive("continuous-batching", host_us_per_token=50.0)
    assert slow["tpot_p95_blocking"].m > base["tpot_p95_blocking"].m > base["tpot_p95"].m
    assert slow["tokens_per_second"].m == base["tokens_per_second"].m
