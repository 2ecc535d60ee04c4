"""continuous-batching's chain: the caps at achieved shares of the peaks, the claim (nothing of the source's to
check), the simulation on several seeds, bad inputs, properties."""
import pytest

from utils import catalog, chains, serving
from utils.chains import continuous_batching as cb
from utils.params import ParameterError
from utils.roofline import FRACTIONS
from utils.verdicts import UNCHECKABLE


def test_claim_cannot_be_checked_and_every_link_holds_on_every_seed():
    (c,) = cb.claims()
    assert c.verdict == UNCHECKABLE and not c.reading
    ck = cb.checks()
    assert len(ck["sims"]) == cb.SEEDS >= 3 and len({s["ratio"] for s in ck["sims"]}) == cb.SEEDS
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
    assert r["batch_for_tpot"].m == 760
    assert r["tpot_p95"].to("ms").m == pytest.approx(20.8, abs=0.05)
    assert r["continuous_over_static"].m == pytest.approx(6.12, abs=0.01)


def test_the_step_runs_at_the_achieved_shares_not_the_datasheet_roof():
    spec = chains.spec("continuous-batching")
    assert tuple(spec.defaults()[k] for k in ("compute_fraction", "bandwidth_fraction")) == FRACTIONS
    roof = chains.derive("continuous-batching", compute_fraction=1.0, bandwidth_fraction=1.0)
    base = chains.derive("continuous-batching")
    # memory-bound step: at the roof the step is shorter by the bandwidth share, and the TPOT batch larger
    assert base["tpot_p95"].m > roof["tpot_p95"].m and base["batch_for_tpot"].m < roof["batch_for_tpot"].m
    ch = spec.compute(spec.check())
    rows = {r.name: r for r in ch.rows}
    assert rows["eta_W"].kind == "measured-by-others" and rows["eta_W"].source   # the catalog's sourced share


@pytest.mark.parametrize("bad", [dict(gpus_per_replica=0), dict(tpot_target_s=-1.0), dict(chunk_tokens=1.5),
                                 dict(gpu="h999"), dict(model="no-such-model"), dict(mean_output_tokens=1),
                                 dict(context_tokens=10 ** 7), dict(tpot_target_s=1e-4),
                                 dict(gpus_per_replica=1)])
def test_bad_inputs_are_refused(bad):
    with pytest.raises(ParameterError):
        chains.derive("continuous-batching", **bad)


@pytest.mark.parametrize("name", ["n_params", "n_layers", "kv_bytes_per_token"])
def test_a_loose_architecture_override_is_refused(name):
    with pytest.raises(ParameterError, match="not both"):
        chains.derive("continuous-batching", model="llama-3-8b", **{name: 1.0})


def test_bigger_chunks_lift_the_prefill_cap_and_longer_context_lowers_the_kv_cap():
    base = chains.derive("continuous-batching")
    big = chains.derive("continuous-batching", chunk_tokens=768)
    assert big["batch_prefill_cap"].m == 3 * base["batch_prefill_cap"].m / 2 and big["batch"].m == base["batch_kv_cap"].m
    # a chunk is work in the step it rides in: chunks of 2,048 leave the TPOT target room for a small batch only
    huge = chains.derive("continuous-batching", chunk_tokens=2048)
    assert huge["batch"].m == huge["batch_for_tpot"].m < base["batch"].m
    long = chains.derive("continuous-batching", context_tokens=8192)
    assert long["batch_kv_cap"].m < base["batch_kv_cap"].m
    assert chains.derive("continuous-batching", gpu="h200")["batch_kv_cap"].m > base["batch_kv_cap"].m


def test_host_work_on_the_engine_loop_only_slows_it():
    base = chains.derive("continuous-batching")
    slow = chains.derive("continuous-batching", host_us_per_token=50.0)
    assert slow["tpot_p95_blocking"].m > base["tpot_p95_blocking"].m > base["tpot_p95"].m
    assert slow["tokens_per_second"].m == base["tokens_per_second"].m
