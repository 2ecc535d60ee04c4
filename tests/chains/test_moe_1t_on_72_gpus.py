"""moe-1t-on-72-gpus: the claim on its own inputs, the published floor, refusals and properties."""
import pytest

from utils import catalog, chains, models
from utils.chains import moe_1t_on_72_gpus as rack
from utils.params import ParameterError
from utils.verdicts import HOLDS, READING, UNCHECKABLE

SLUG = "moe-1t-on-72-gpus"


def test_claims_on_their_own_inputs():
    weights, compute, a2a, total = rack.claims()
    ck = rack.checks()
    # the weights overflow one compute tray (7 GB200s needed, 4 a tray) but fill a fraction of the rack: they need
    # the rack's NVLink domain, not all of it; an H200 board is short, a B200 board is not
    assert weights.verdict == READING and ck["w_rack"][1.0] == 7 > rack.TRAY_GPUS
    assert '"the weights need a rack"' in weights.reading and "fails" in weights.reading
    assert models.weight_bytes(catalog.model("kimi-k2"), 1.0) > rack.TRAY_GPUS * catalog.accelerator(
        "gb200").q("hbm_capacity")
    assert ck["board_short"][1.0].to("GB").m > 0 > -ck["b200_spare"].to("GB").m
    assert compute.verdict == READING and '"32 billion active per token"' in compute.reading
    assert ck["active_share"] < 0.05
    # the all-to-all is the largest term at one sequence, not with the rack filled: the load decides
    assert a2a.verdict == UNCHECKABLE
    pts = ck["points"]
    assert pts[0]["batch"] == 1 and pts[0]["largest"] == "all-to-all"
    assert pts[-1]["batch"] == ck["full_summary"]["max_batch"] and pts[-1]["largest"] == "KV cache"
    assert pts[-1]["share"]["all-to-all"] < 0.15 < 0.7 < pts[-1]["share"]["KV cache"]
    assert total.verdict == HOLDS
    assert ck["summary"]["fits"] and ck["summary"]["max_batch"] >= 72
    assert all(not c.problems() for c in (weights, compute, a2a, total))


def test_counts_and_the_published_floor():
    r = chains.derive(SLUG)
    assert r["weights_per_gpu"].to("GB").m == pytest.approx(27.58, abs=0.01)
    assert r["kv_bytes_per_token"].to("B/token").m == pytest.approx(61 * (512 + 64) * 2)
    assert r["decode_step_floor"].to("ms").m == pytest.approx(17.63, abs=0.01)   # at the achieved shares
    assert r["decode_step_at_roof"].to("ms").m == pytest.approx(15.70, abs=0.01)
    assert r["alltoall_per_step"].to("ms").m == pytest.approx(3.18, abs=0.01)
    assert r["max_batch"].m == 4320


def test_weights_add_back_up_to_the_model():
    assert rack.checks()["identity"] < 1e-6


@pytest.mark.parametrize("bad", [dict(n_gpus=1), dict(n_gpus=80), dict(model="llama-3-70b"),
                                 dict(batch=0), dict(weight_bytes_per_param=-1.0), dict(gpu="no-such-gpu")])
def test_bad_inputs_are_refused_with_the_name(bad):
    (name,) = bad
    with pytest.raises(ParameterError, match=name):
        chains.derive(SLUG, **bad)


@pytest.mark.parametrize("name", ("kv_bytes_per_token", "n_experts", "n_layers", "n_params"))
def test_loose_architecture_overrides_are_refused(name):
    with pytest.raises(ParameterError, match="not both"):
        chains.derive(SLUG, model="llama-3-8b", **{name: 1.0})


def test_properties():
    base = chains.derive(SLUG)
    longer = chains.derive(SLUG, context_tokens=65536, batch=2160)   # the largest batch that fits there
    assert longer["memory_per_gpu_used"] > base["memory_per_gpu_used"]
    assert longer["max_batch"] < base["max_batch"]
    fp8 = chains.derive(SLUG, kv_bytes_per_element=1.0)
    assert fp8["kv_bytes_per_token"].m == pytest.approx(base["kv_bytes_per_token"].m / 2)
    assert fp8["decode_step_floor"] < base["decode_step_floor"]
    bigger = chains.derive(SLUG, batch=4320)
    assert bigger["tokens_per_second"] > base["tokens_per_second"]


def test_another_mla_model_derives():
    r = chains.derive(SLUG, model="deepseek-v3")
    assert r["weights_per_gpu"].to("GB").m < models.weight_bytes(catalog.model("deepseek-v3"), 1.0).to("GB").m


def test_a_group_across_nodes_prices_the_fabric_share():
    """DeepSeek-V3 on two H200 nodes: half of each token's expert copies cross InfiniBand, and the
    bandwidth term is that share over the NIC's 50 GB/s (it is slower than NVLink's share)."""
    from utils import chains
    from utils.chains import moe_1t_on_72_gpus as mod
    p = chains.check("moe-1t-on-72-gpus", model="deepseek-v3", gpu="h200", n_gpus=16, batch=256)
    ch = mod.compute(p)
    assert ch["f_net"].m == pytest.approx(0.5) and ch["f_nv"].m == pytest.approx(7 / 16)
    per_layer = 16 * 8 * 7168 * (ch["b_d"] + ch["b_c"]).to("B").m * 0.5 / 50e9
    assert ch["t_bw"].to("s").m == pytest.approx(int(ch["L_m"].m) * per_layer, rel=1e-9)
    one_node = mod.compute(chains.check("moe-1t-on-72-gpus", model="deepseek-v3", gpu="h200", n_gpus=8, batch=96))
    assert one_node["f_net"].m == 0
    with pytest.raises(chains.ParameterError, match="not a whole number"):
        chains.check("moe-1t-on-72-gpus", model="deepseek-v3", gpu="h200", n_gpus=12)


def test_moonshot_minimum_comes_from_the_catalog():
    v = catalog.entry("software", "kimi-k2-deployment")["min_h200"]
    assert rack.MOONSHOT_MIN_H200 == v.q.m == 16 and "16 GPUs" in v.note


def test_the_decode_step_runs_at_the_achieved_shares_and_the_roof_is_only_a_bound():
    from utils.roofline import FRACTIONS
    spec = chains.spec("moe-1t-on-72-gpus")
    assert tuple(spec.defaults()[k] for k in ("compute_fraction", "bandwidth_fraction")) == FRACTIONS
    d = chains.derive("moe-1t-on-72-gpus")
    roof = chains.derive("moe-1t-on-72-gpus", compute_fraction=1.0, bandwidth_fraction=1.0)
    assert d["decode_step_floor"].m > d["decode_step_at_roof"].m
    assert roof["decode_step_floor"].m == pytest.approx(roof["decode_step_at_roof"].m)
    assert d["tokens_per_second"].m < roof["tokens_per_second"].m


def test_a_plan_that_does_not_fit_is_refused_with_its_shortfall_and_the_batch_that_fits():
    from utils.params import ParameterError
    fits = chains.derive("moe-1t-on-72-gpus")["max_batch"].m
    with pytest.raises(ParameterError, match=f"short by .*largest batch that fits .* is {int(fits):,}"):
        chains.derive("moe-1t-on-72-gpus", batch=20000)
    with pytest.raises(ParameterError, match="short by .*no batch fits"):
        chains.derive("moe-1t-on-72-gpus", gpu="h200", n_gpus=8, batch=8)


def test_weights_priced_by_part():
    """Experts' matrices in int4 and the rest in bf16: each GPU holds its copied part (shared expert apart) at two
    bytes and its expert slots and the shared expert at half a byte; both parts at one width is that width."""
    mixed = [{"part": "experts", "bytes_per_param": 0.5}, {"part": "rest", "bytes_per_param": 2}]
    ch = rack.compute(chains.check("moe-1t-on-72-gpus", part_bytes=mixed))
    expert = ch["L_m"] * ch["P_e"]
    assert ch["W"].to("B").m == pytest.approx(((ch["N_rep"] - ch["S_c"] * expert) * 2
                                               + (ch["S_c"] + ch["s"]) * expert * 0.5).m)
    assert ch["S_c"].m == 1 and ch["N_x"].m == pytest.approx(((ch["E_r"] + ch["S_c"]) * expert).m)
    kimi, gb200 = catalog.model("kimi-k2"), catalog.accelerator("gb200")
    both = rack.plan(kimi, gb200, 72, 2.0, 2.0, 32768, 576, expert_bytes=2.0)
    one = rack.plan(kimi, gb200, 72, 2.0, 2.0, 32768, 576)
    assert [both[k].m for k in ("W", "n_w", "R_w", "t_step")] == [one[k].m for k in ("W", "n_w", "R_w", "t_step")]
    with pytest.raises(ParameterError, match="part_bytes names a part twice"):
        chains.check("moe-1t-on-72-gpus", part_bytes=mixed[:1] * 2)
