"""cost-per-training-token's chain: the claims judged on their own inputs, the model as one parameter,
bad inputs refused, and properties."""
import pytest

from utils import catalog, chains
from utils.chains import cost_per_training_token as cost
from utils.models import kv_bytes_per_token, param_count
from utils.params import ParameterError
from utils.verdicts import UNCHECKABLE


def test_training_token_claim_at_the_contract_rate():
    judged = {c.name: c for c in cost.claims()}
    c = judged["training-token"]
    # the source names no GPU price: the claim implies one, and the book's figure at the contract rate is its own
    assert c.verdict == UNCHECKABLE and "names no price" in c.reason and "contract rate" in c.reason
    assert cost.checks()["r_star"].to("USD/hour").m == pytest.approx(0.75e-6 * 0.4 * 989.4e12 * 3600 / (6 * 70e9))
    cc = cost.claim_chain()
    # 6 x 70e9 FLOP / (0.4 x 989.4e12 FLOP/s) x 2.35 USD / 3600 s
    assert cc["c_t"].to("USD/token").m == pytest.approx(6 * 70e9 / (0.4 * 989.4e12) * 2.35 / 3600, rel=1e-12)
    assert abs(cc["c_t"].to("USD/token").m / 0.75e-6 - 1) < cost.tolerance() == pytest.approx(1 / 6)
    assert "per token per token" not in c.claimed and "USD/token per token" not in c.claimed


def test_on_demand_prices_fall_outside_the_claim():
    per = cost.checks()["per_rate"]
    assert abs(per["contract_1y"] - 1) < cost.tolerance() and abs(per["runpod_community"] - 1) < cost.tolerance()
    assert per["lambda_on_demand"] > 1.5 and per["aws_p5_on_demand"] > 2.5


def test_cheaper_holds_only_for_generated_tokens_at_small_batch_or_long_context():
    ck = cost.checks()
    assert ck["cc"]["rho"].m > 1 and ck["wonly"]["rho"].m < 1
    assert (ck["cc"]["c_p"] / ck["cc"]["c_t"]).m == pytest.approx(1 / 3)
    assert {c.name: c for c in cost.claims()}["cheaper"].verdict == UNCHECKABLE   # no batch or context given


def test_at_the_books_context_the_training_token_is_cheaper_at_every_batch_that_fits():
    """The weights-alone break-even (batch 45) is the zero-context case. At 8,192 tokens of Llama-3-70B's cache
    (2.68 GB a sequence) one 8-GPU node holds (8 x 80 x 0.9 - 140) / 2.68 = 162 sequences, and a generated
    token would cost a training token only at 140 GB / (0.866 x 3.35 TB/s x 1.06 ms - 2.68 GB) = 355."""
    ck = cost.checks()
    fit, cc = ck["fit"], ck["cc"]
    seq = 8192 * cost.claim_chain()["kappa"].to("byte/token").m / 1e9
    assert fit["seq_gb"] == pytest.approx(seq) and fit["fit"] == int((8 * 80 * 0.9 - 140) // seq)
    budget = 0.866 * 3.35e12 * 6 * 70e9 / (0.4 * 989.4e12) / 1e9
    assert fit["even"] == pytest.approx(140 / (budget - seq), rel=1e-6)
    assert cc["B_x"].m < fit["fit"] < fit["even"] and fit["cheaper_everywhere"]
    reason = {c.name: c for c in cost.claims()}["cheaper"].reason
    assert f"holds {fit['fit']:,} sequences" in reason and "at every batch that fits" in reason
    # at a batch that fits the chain agrees: the generated token costs more than the training token
    assert cost.claim_chain(decode_batch=fit["fit"])["rho"].m > 1


def test_llama3_model_card_route():
    ck = cost.checks()   # 6.4M GPU-hours for 70B on 15T tokens: about 28% MFU over the whole run
    assert ck["card_mfu"] == pytest.approx(6 * 70e9 * 15e12 / (6.4e6 * 3600 * 989.4e12), rel=1e-9)


def test_the_kv_bytes_follow_the_model():
    """The mixing trap: a different model brings its own cache, never Llama-3-70B's."""
    for key in ("llama-3-8b", "deepseek-v3"):
        ch = cost.compute(chains.check("cost-per-training-token", model=key))
        m = catalog.model(key)
        assert ch["kappa"].m == pytest.approx(kv_bytes_per_token(m, 2.0).to("byte/token").m)
        assert ch["N"].m == pytest.approx(param_count(m)["active"].m)
        assert ch["N_w"].m == pytest.approx(param_count(m)["total"].m)
    fp8 = cost.compute(chains.check("cost-per-training-token", kv_bytes_per_element=1.0))
    assert fp8["kappa"].m == pytest.approx(cost.compute(chains.check("cost-per-training-token"))["kappa"].m / 2)


@pytest.mark.parametrize("values, message", [
    ({"n_params": 70e9, "model": "llama-3-8b"}, "not both"),
    ({"kv_bytes_per_token": 327680.0, "model": "llama-3-8b"}, "not both"),
    ({"mfu": 0.0}, "mfu must be a fraction"),
    ({"rent_usd_per_gpu_hour": -1.0}, "rent_usd_per_gpu_hour must be > 0"),
    ({"decode_batch": 0}, "decode_batch must be a whole number"),
    ({"decode_context": -1}, "decode_context must be >= 0"),
    ({"gpu": "h1000"}, "unknown accelerator"),
])
def test_bad_inputs_are_refused(values, message):
    with pytest.raises(ParameterError, match=message):
        chains.derive("cost-per-training-token", **values)


def test_properties():
    base = chains.derive("cost-per-training-token")
    dear = chains.derive("cost-per-training-token", rent_usd_per_gpu_hour=4.70)
    assert dear["usd_per_training_token"].m == pytest.approx(2 * base["usd_per_training_token"].m)
    better = chains.derive("cost-per-training-token", mfu=0.8)
    assert better["run_cost"].m == pytest.approx(base["run_cost"].m / 2)
    bigger = chains.derive("cost-per-training-token", decode_batch=128)
    assert bigger["usd_per_inference_token"] < base["usd_per_inference_token"]
    assert base["usd_per_prompt_token"].m == pytest.approx(base["usd_per_training_token"].m / 3)


def test_decode_reads_hbm_at_the_shared_achieved_share():
    """No decode rate at the datasheet bandwidth: the default is the catalog's measured share, shown with its
    kind, and 1 (the roofline floor) is a definition, not a default."""
    from utils.roofline import ACHIEVED
    default = next(p for p in cost.PARAMETERS if p.name == "decode_bandwidth_efficiency").default
    assert default == float(ACHIEVED.q("hbm_bandwidth").m) < 1
    row = {r.name: r for r in cost.compute(chains.check("cost-per-training-token")).rows}["e_W"]
    assert row.kind == "measured-by-others"
    base = chains.derive("cost-per-training-token")
    floor = chains.derive("cost-per-training-token", decode_bandwidth_efficiency=1.0)
    assert base["usd_per_inference_token"] > floor["usd_per_inference_token"]


def test_inputs_show_their_parameters_sources_until_changed():
    rows = {r.name: r for r in cost.compute(chains.check("cost-per-training-token")).rows}
    sources = {p.name: p.source for p in cost.PARAMETERS}
    assert rows["D"].source == sources["n_tokens"] and rows["B"].source == sources["decode_batch"]
    assert rows["u"].source == sources["mfu"] and "Table 4" in rows["u"].source
    changed = {r.name: r for r in cost.compute(chains.check("cost-per-training-token", decode_batch=32, mfu=0.3)).rows}
    assert changed["B"].source == changed["u"].source == "parameters cell"
    assert changed["D"].source == sources["n_tokens"]
