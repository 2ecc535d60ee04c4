"""kv-cache-per-sequence: the claims on their own inputs, the published figures, refusals, properties."""
import pytest

from utils import catalog, chains
from utils.chains import kv_cache_per_sequence as kv
from utils.models import kv_bytes_per_token, param_count
from utils.params import ParameterError
from utils.verdicts import HOLDS, UNCHECKABLE

SLUG = "kv-cache-per-sequence"


def test_claims_on_their_own_inputs():
    third, mistake = kv.claims()
    assert third.verdict == UNCHECKABLE and not third.reading     # the context is the book's, not the source's
    assert mistake.verdict == HOLDS
    ck = kv.checks()
    assert ck["ratio"] == pytest.approx(0.3044, abs=5e-4)          # "a third", within a tenth
    assert ck["short"]["rho"].m < 0.05                              # at Llama 3's own window it fails
    assert ck["claim"]["x"].m == 8 == 64 // 8


def test_published_figures():
    r = chains.derive(SLUG)
    assert r["kv_bytes_per_token"].to("B/token").m == 2 * 80 * 8 * 128 * 2      # 2 L H_kv d_h b
    assert r["kv_bytes_per_sequence"].to("GB").m == pytest.approx(327680 * 131072 / 1e9)


def test_every_model_agrees_with_utils_models():
    assert all(kv.checks()["route"].values())
    for key in catalog.keys("model"):
        got = chains.derive(SLUG, model=key)["kv_bytes_per_token"]
        assert got.to("B/token").m == kv_bytes_per_token(catalog.model(key), 2).to("B/token").m


@pytest.mark.parametrize("bad", [dict(model="llama-4"), dict(context_tokens=0), dict(context_tokens=2.5),
                                 dict(kv_bytes_per_element=-1)])
def test_bad_inputs_are_refused_with_the_name(bad):
    (name,) = bad
    with pytest.raises(ParameterError, match=name):
        chains.derive(SLUG, **bad)


@pytest.mark.parametrize("name", ("head_dim", "kv_bytes_per_token", "n_heads", "n_kv_heads", "n_layers", "n_params"))
def test_loose_architecture_overrides_are_refused(name):
    with pytest.raises(ParameterError, match="not both"):
        chains.derive(SLUG, model="llama-3-8b", **{name: 8})


def test_properties():
    base = chains.derive(SLUG)
    half = chains.derive(SLUG, context_tokens=65536)
    assert half["kv_bytes_per_sequence"].m == pytest.approx(base["kv_bytes_per_sequence"].m / 2)
    fp8 = chains.derive(SLUG, kv_bytes_per_element=1)
    assert fp8["kv_over_weights"].m == pytest.approx(base["kv_over_weights"].m / 2)
    mla = chains.derive(SLUG, model="deepseek-v3")
    assert mla["kv_bytes_per_token"] < base["kv_bytes_per_token"]     # latent attention compresses it


def test_a_real_allocation_matches_the_formula():
    pytest.importorskip("torch")
    from utils.serving.kv_alloc import allocation_check
    alloc = allocation_check(batch=1, tokens=17)
    assert alloc["exact"] and len(alloc["rows"]) == 9


def test_a_config_json_model_is_counted_and_never_set_against_a_published_count():
    p = kv.SPEC.check(model="tests/data/configs/llama-3.1-8b.json")
    assert catalog.looks_like_path(p.model.key)
    ch = kv.compute(p)
    assert ch["P"] == param_count(p.model)["total"] and ch["P"].m > 7e9          # counted from the config
    assert "published" not in " ".join(kv.page_glue(p, ch))                     # the reader's page compares nothing
    assert not catalog.looks_like_path(kv.checks()["llama70"].key)             # the published count: a catalog model


def test_inputs_cite_their_parameters_at_the_defaults():
    """A parameter's row shows the parameter's own source while it holds its default, "parameters cell" once changed."""
    def sources(**changes):
        return {r.name: r.source for r in kv.compute(kv.SPEC.check(**changes)).rows}
    own = {p.name: p.source for p in kv.PARAMETERS}
    assert (sources()["T"], sources()["b"]) == (own["context_tokens"], own["kv_bytes_per_element"])
    changed = sources(context_tokens=8192)
    assert changed["T"] == "parameters cell" and changed["b"] == own["kv_bytes_per_element"]


def test_the_default_context_is_the_catalogs_llama_3_1_window():
    assert kv.SPEC.defaults()["context_tokens"] == catalog.model("llama-3-405b").q("max_context").m
