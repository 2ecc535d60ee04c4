"""moe-1t-on-72-gpus: the claim on its own inputs, the published floor, refusals and properties."""
import pytest

from utils import catalog, chains, models
from utils.chains import moe_1t_on_72_gpus as rack
from utils.params import ParameterError
from utils.verdicts import HOLDS, READING

SLUG = "moe-1t-on-72-gpus"


def test_claims_on_their_own_inputs():
    c_rack, c_total = rack.claims()
    assert c_rack.verdict == READING and "board" in c_rack.reading
    assert c_total.verdict == HOLDS
    ck = rack.checks()
    assert ck["summary"]["fits"] and ck["summary"]["max_batch"] >= 72
    assert ck["tiny_summary"]["a2a_share"] > 0.5 > ck["full_summary"]["a2a_share"]
    assert ck["full_summary"]["kv_share"] > 0.5
    assert ck["board_short"][1.0].to("GB").m > 0          # fp8 on an H200 board leaves no room to serve


def test_counts_and_the_published_floor():
    r = chains.derive(SLUG)
    assert r["weights_per_gpu"].to("GB").m == pytest.approx(27.58, abs=0.01)
    assert r["kv_bytes_per_token"].to("B/token").m == pytest.approx(61 * (512 + 64) * 2)
    assert r["decode_step_floor"].to("ms").m == pytest.approx(15.70, abs=0.01)
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


@pytest.mark.parametrize("name", sorted(rack.REFUSED))
def test_loose_architecture_overrides_are_refused(name):
    with pytest.raises(ParameterError, match=f"{name} cannot be set"):
        chains.derive(SLUG, **{name: 1.0})


def test_properties():
    base = chains.derive(SLUG)
    longer = chains.derive(SLUG, context_tokens=65536)
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
    one_node = mod.compute(chains.check("moe-1t-on-72-gpus", model="deepseek-v3", gpu="h200", n_gpus=8, batch=128))
    assert one_node["f_net"].m == 0
    with pytest.raises(chains.ParameterError, match="not a whole number"):
        chains.check("moe-1t-on-72-gpus", model="deepseek-v3", gpu="h200", n_gpus=12)


def test_moonshot_minimum_comes_from_the_catalog():
    v = catalog.entry("software", "kimi-k2-deployment")["min_h200"]
    assert rack.MOONSHOT_MIN_H200 == v.q.m == 16 and "16 GPUs" in v.note
