"""utils.models: parameter counts, KV-cache bytes and weight bytes from the catalog's configs."""
from __future__ import annotations

import pytest

from utils import catalog
from utils.models import kv_bytes_per_token, kv_bytes_per_token_mha, param_count, weight_bytes
from utils.units import Q_, DimensionalityError
from utils.verdicts import rounds_to

MODELS = catalog.keys("model")
MOE = [k for k in MODELS if "n_routed_experts" in catalog.model(k)]


# Published counts that are a model's name, rounded to its own figures (the catalog's note says so): the count
# must round to the name, as a claim's number must (utils.verdicts.rounds_to).
NAMED = {("falcon-40b", "total"): 1}


def counted_against_published(key: str, part: str) -> float:
    """The parameter count utils.models computes from the config (`part`: total or active), asserted
    within 2% of the figure the catalog records as published (or rounding to a name's figures); returns it."""
    m = catalog.model(key)
    counted = param_count(m)[part].to("parameter").magnitude
    published = m.q(f"params_{part}").to("parameter").magnitude
    if (key, part) in NAMED:
        assert rounds_to(counted, published, NAMED[key, part]), f"{key} {part}: {counted:.4g} vs {published:.4g}"
    else:
        assert counted == pytest.approx(published, rel=0.02), f"{key} {part}: {counted:.4g} vs {published:.4g}"
    return counted


@pytest.mark.parametrize("key", MODELS)
def test_total_matches_the_published_figure(key):
    counted_against_published(key, "total")


@pytest.mark.parametrize("key", MOE)
def test_active_matches_the_published_figure(key):
    m = catalog.model(key)
    counted = counted_against_published(key, "active")
    # a token touches a few percent of DeepSeek-V3's or Kimi K2's 256-384 experts; Mixtral's 2 of 8 a quarter
    share = 0.06 if key in ("deepseek-v3", "kimi-k2") else 0.3
    assert counted < share * param_count(m)["total"].magnitude, "an MoE token touches a fraction of it"


def test_moe_models_are_the_expected():
    assert sorted(MOE) == ["deepseek-v2", "deepseek-v3", "gpt-oss-120b", "kimi-k2", "mixtral-8x7b", "qwen3-235b-a22b"]


@pytest.mark.parametrize("key,exact", [
    # Hugging Face's safetensors counts for the released checkpoints.
    ("llama-3-8b", 8_030_261_248),
    ("llama-3-70b", 70_553_706_496),
    ("llama-3-405b", 405_853_388_800),
])
def test_dense_counts_are_exact(key, exact):
    assert param_count(catalog.model(key))["total"].magnitude == exact


@pytest.mark.parametrize("key", MODELS)
def test_breakdown_adds_up(key):
    p = param_count(catalog.model(key))
    parts = ("embedding", "positions", "lm_head", "attention", "mlp", "experts", "router", "norms")
    assert sum(p[k].magnitude for k in parts) == p["total"].magnitude
    assert all(p[k].check("[parameter]") for k in p)
    # equal for a tied model without a position table (PaLM): its one embedding matrix is also the head
    assert p["active"] <= p["active_with_embedding"] <= p["total"]


def test_dense_models_use_every_weight_but_the_lookup_table():
    p = param_count(catalog.model("llama-3-70b"))
    assert p["active_with_embedding"] == p["total"]
    assert (p["total"] - p["active"]) == p["embedding"]


def test_deepseek_excludes_the_mtp_module():
    m = catalog.model("deepseek-v3")
    total = param_count(m)["total"].magnitude
    assert total == pytest.approx(671e9, rel=0.001)
    assert total < 0.985 * 685e9, "the 685B checkpoint includes the 14B MTP module, which is not counted"


def test_llama_70b_kv_cache_per_token():
    m = catalog.model("llama-3-70b")
    kv = kv_bytes_per_token(m, 2)
    assert kv == Q_(2 * 80 * 8 * 128 * 2, "byte/token")
    assert kv.to("byte/token").magnitude == 327_680
    # The query-heads mistake: n_heads (64) instead of n_kv_heads (8) is exactly 8x too big.
    wrong = kv_bytes_per_token_mha(m, 2)
    assert wrong / kv == pytest.approx(8) and (wrong / kv).to("").magnitude == 8.0
    assert wrong.to("byte/token").magnitude == 2 * 80 * 64 * 128 * 2


def test_bytes_per_element_may_be_a_quantity():
    m = catalog.model("llama-3-8b")
    assert kv_bytes_per_token(m, Q_(2, "byte")) == kv_bytes_per_token(m, 2)
    assert kv_bytes_per_token(m, 1).to("byte/token").magnitude == 2 * 32 * 8 * 128


@pytest.mark.parametrize("b", [1, 2])
def test_deepseek_mla_cache(b):
    m = catalog.model("deepseek-v3")
    assert kv_bytes_per_token(m, b).to("byte/token").magnitude == (512 + 64) * 61 * b
    mha = kv_bytes_per_token_mha(m, b).to("byte/token").magnitude
    assert mha == 61 * 128 * (128 + 64 + 128) * b
    assert 60 < mha / ((512 + 64) * 61 * b) < 80  # MLA caches about 71x less than full multi-head K and V


def test_kimi_mla_cache_matches_deepseek_per_layer():
    k, d = catalog.model("kimi-k2"), catalog.model("deepseek-v3")
    assert kv_bytes_per_token(k, 2) == kv_bytes_per_token(d, 2)  # same latent, same 61 layers
    assert kv_bytes_per_token_mha(k, 2) * 2 == kv_bytes_per_token_mha(d, 2)  # 64 heads vs 128


def test_weight_bytes():
    m = catalog.model("llama-3-70b")
    w = weight_bytes(m, 2)
    assert w.check("[information]")
    assert w.to("byte").magnitude == 2 * 70_553_706_496
    assert w.to("GB").magnitude == pytest.approx(141.1, rel=1e-3)
    assert weight_bytes(m, Q_(1, "byte/parameter")) == weight_bytes(m, 1)
    # Storage follows the total: Kimi K2 at one byte per weight is about 1 TB, not 32 GB.
    assert weight_bytes(catalog.model("kimi-k2"), 1).to("TB").magnitude == pytest.approx(1.026, rel=0.01)


def test_results_keep_their_dimensions():
    m = catalog.model("llama-3-8b")
    with pytest.raises(DimensionalityError):
        kv_bytes_per_token(m, 2) + param_count(m)["total"]
    with pytest.raises(DimensionalityError):
        weight_bytes(m, 2) + param_count(m)["total"]


def test_kv_term_intensity_gqa_and_mla():
    from utils.models import kv_copies, kv_term_intensity
    llama = catalog.model("llama-3-70b")
    # 64 query heads x 128 x 4 FLOPs over 2 x 8 x 128 bf16 elements = 32768 / 4096 = 8 FLOP/byte
    assert kv_term_intensity(llama, 2).to("FLOP/byte").m == pytest.approx(8.0)
    ds = catalog.model("deepseek-v3")
    assert kv_term_intensity(ds, 2).to("FLOP/byte").m == pytest.approx(2 * 128 * (2 * 512 + 64) / ((512 + 64) * 2))
    assert kv_copies(llama, 8) == 1.0 and kv_copies(llama, 16) == 2.0 and kv_copies(ds, 8) == 8.0
