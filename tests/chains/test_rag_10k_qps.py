"""rag-10k-qps's chains: the claim's ratio, the published fleet sizes, bad inputs, properties."""
import pytest

from utils import chains
from utils.chains import rag_10k_qps as rq
from utils.params import ParameterError
from utils.roofline import FRACTIONS
from utils.verdicts import UNCHECKABLE


def test_the_claim_cannot_be_checked_and_the_books_figures_hold_together():
    """The source gives no prompt, answer, GPU or hit rate: the 70% that takes 200 to 60 is the claim's own
    arithmetic, so the verdict is 'cannot be checked'; the check holds the book's own figures together."""
    (c,) = rq.claims()
    assert c.verdict == UNCHECKABLE and not c.reading
    ck = rq.checks()
    assert rq.check_holds(ck)
    assert ck["h_ratio"] == pytest.approx(0.7, abs=1e-12)              # 1 - 60/200
    assert ck["at_published"] == pytest.approx(200 * (1 - 0.688))       # shown, not judged


def test_the_answer_model_runs_at_the_shared_achieved_shares():
    """No throughput at 100% of a datasheet peak: both shares default to the catalog's, and the tier grows as
    they fall."""
    assert (rq.CLAIM["compute_fraction"], rq.CLAIM["bandwidth_fraction"]) == FRACTIONS
    base = chains.derive("rag-10k-qps")
    slow = chains.derive("rag-10k-qps", compute_fraction=FRACTIONS[0] / 2, bandwidth_fraction=FRACTIONS[1] / 2)
    assert slow["llm_nodes_no_cache"].m >= 2 * base["llm_nodes_no_cache"].m - 1
    assert slow["llm_decode_tokens_per_node"].m < base["llm_decode_tokens_per_node"].m


def test_published_figures_are_re_derived():
    r = chains.derive("rag-10k-qps")
    assert r["llm_nodes_no_cache"].m == 129 and r["llm_nodes_with_cache"].m == 39
    assert r["reranker_gpus_no_cache"].m == 251 and r["embedder_gpus"].m == 1
    assert r["index_bytes"].m == pytest.approx(1e9 * (1024 * 2 + 32 * 10))


def test_second_route_finds_the_same_batch():
    ck = rq.checks()
    assert ck["B"] == int(ck["chain"]["B"].m) and ck["nodes2"] == pytest.approx(ck["base"], rel=1e-9)


@pytest.mark.parametrize("bad", [dict(cache_hit_rate=1.0), dict(passages=200), dict(passage_tokens=600),
                                 dict(gpu="h999"), dict(compute_fraction=1.5), dict(qps=-1.0), dict(tpot_s=1e-4),
                                 dict(gpus_per_node=1)])
def test_bad_inputs_are_refused(bad):
    with pytest.raises(ParameterError):
        chains.derive("rag-10k-qps", **bad)


@pytest.mark.parametrize("name", ["n_params", "n_layers", "kv_bytes_per_token"])
def test_a_loose_architecture_override_is_refused(name):
    with pytest.raises(ParameterError, match="not both"):
        chains.derive("rag-10k-qps", model="llama-3-8b", **{name: 1.0})


def test_more_passages_more_nodes_and_the_cache_scales_the_tier():
    base = chains.derive("rag-10k-qps")
    five = chains.derive("rag-10k-qps", passages=5)
    assert five["llm_nodes_no_cache"].m > base["llm_nodes_no_cache"].m
    none = chains.derive("rag-10k-qps", cache_hit_rate=0.0)
    assert none["llm_nodes_with_cache"].m == none["llm_nodes_no_cache"].m
    assert none["reranker_gpus"].m == none["reranker_gpus_no_cache"].m
    assert chains.derive("rag-10k-qps", qps=20000.0)["llm_nodes_no_cache"].m >= 2 * base["llm_nodes_no_cache"].m - 1


def test_the_time_per_output_token_default_is_the_catalogs_mlperf_figure():
    assert rq.CLAIM["tpot_s"] == rq.MLPERF_INTERACTIVE["tpot_s"]
    assert rq.BUDGET_S["answer model: time to first token"] == rq.MLPERF_INTERACTIVE["ttft_s"]
