"""rag-10k-qps's chains: the claim's ratio, the published fleet sizes, bad inputs, properties."""
import pytest

from utils import chains
from utils.chains import rag_10k_qps as rq
from utils.params import ParameterError
from utils.verdicts import READING


def test_claim_holds_under_its_reading():
    (c,) = rq.claims()
    assert c.verdict == READING and c.reading
    ck = rq.checks()
    assert rq.check_holds(ck)
    assert ck["h_ratio"] == pytest.approx(0.7, abs=1e-12)              # 1 - 60/200
    assert ck["at_published"] == pytest.approx(200 * (1 - 0.688))       # the top published hit rate


def test_published_figures_are_re_derived():
    r = chains.derive("rag-10k-qps")
    assert r["llm_nodes_no_cache"].m == 193 and r["llm_nodes_with_cache"].m == 58
    assert r["reranker_gpus_no_cache"].m == 251 and r["embedder_gpus"].m == 1
    assert r["index_bytes"].m == pytest.approx(1e9 * (1024 * 2 + 32 * 10))


def test_second_route_finds_the_same_batch():
    ck = rq.checks()
    assert ck["B"] == int(ck["chain"]["B"].m) and ck["nodes2"] == pytest.approx(ck["base"], rel=1e-9)


@pytest.mark.parametrize("bad", [dict(cache_hit_rate=1.0), dict(passages=200), dict(passage_tokens=600),
                                 dict(gpu="h999"), dict(mfu_prefill=1.5), dict(qps=-1.0), dict(tpot_s=1e-4),
                                 dict(gpus_per_node=1)])
def test_bad_inputs_are_refused(bad):
    with pytest.raises(ParameterError):
        chains.derive("rag-10k-qps", **bad)


@pytest.mark.parametrize("name", ["n_params", "n_layers", "kv_bytes_per_token"])
def test_a_loose_architecture_override_is_refused(name):
    with pytest.raises(ParameterError, match=f"{name} cannot be set.*model"):
        chains.derive("rag-10k-qps", **{name: 1.0})


def test_more_passages_more_nodes_and_the_cache_scales_the_tier():
    base = chains.derive("rag-10k-qps")
    five = chains.derive("rag-10k-qps", passages=5)
    assert five["llm_nodes_no_cache"].m > base["llm_nodes_no_cache"].m
    none = chains.derive("rag-10k-qps", cache_hit_rate=0.0)
    assert none["llm_nodes_with_cache"].m == none["llm_nodes_no_cache"].m
    assert none["reranker_gpus"].m == none["reranker_gpus_no_cache"].m
    assert chains.derive("rag-10k-qps", qps=20000.0)["llm_nodes_no_cache"].m >= 2 * base["llm_nodes_no_cache"].m - 1
