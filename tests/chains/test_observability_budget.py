"""observability-budget's chain: the claim, the series arithmetic, attribution, refusals, properties."""
import pytest

from utils import chains
from utils.chains import observability_budget as chapter
from utils.params import ParameterError
from utils.verdicts import READING


def test_claim_holds_under_its_reading():
    (c,) = chapter.claims()
    assert c.verdict == READING and "tells you nothing" in c.reading
    r = chains.derive("observability-budget")
    assert r["span_over_token"].m > 1 and r["throughput_ratio"].m > 10


def test_no_rate_at_the_datasheet_peak():
    # the engine runs at the catalog's achieved shares; at the roof (1, 1) a token is cheaper by about 1/eta_W
    at, roof = chains.derive("observability-budget"), chains.derive("observability-budget", compute_fraction=1.0,
                                                                     bandwidth_fraction=1.0)
    assert chapter.SPEC.defaults()["bandwidth_fraction"] < 1 and chapter.SPEC.defaults()["compute_fraction"] < 1
    assert at["usd_per_token"].m > roof["usd_per_token"].m and at["decode_s"].m > roof["decode_s"].m
    assert at["span_over_token"].m > 1          # the claim's half survives the slower engine


def test_series_arithmetic():
    r = chains.derive("observability-budget")
    # Prometheus docs (metric types, histogram): one _bucket series per bucket, +Inf included, plus _sum and
    # _count, for each label set: a histogram of 12 buckets is 14 series
    per_histogram = 12 + 2
    assert r["series"].m == 20 * 256 * 4 * per_histogram
    assert r["series_with_tenant"].m == r["series"].m * 100
    assert r["series_with_request_id"].m == pytest.approx(20 * per_histogram * 100 * 7200)
    assert r["series_with_request_id"].m > r["series_budget"].m > r["series"].m


def test_attribution_conserves_and_differs_from_per_request():
    ch = chapter.compute(chains.check("observability-budget"))
    assert chapter.conservation(ch) < 1e-9
    r = chains.derive("observability-budget")
    assert r["rag_share_by_requests"].m == pytest.approx(0.5)
    assert r["rag_share_by_tokens"].m < 0.4


@pytest.mark.parametrize("name,value", [("queue_ms", -1.0), ("bytes_per_series", 0.0), ("replicas", 2.5),
                                        ("attribution_requests", 1000), ("model", "no-such-model")])
def test_bad_inputs_are_refused_by_name(name, value):
    with pytest.raises(ParameterError, match=name):
        chains.derive("observability-budget", **{name: value})


def test_n_params_is_refused():
    with pytest.raises(ParameterError, match="not both"):
        chains.derive("observability-budget", model="llama-3-8b", n_params=1e9)


def test_properties():
    base = chains.derive("observability-budget")
    busy = chains.derive("observability-budget", queue_ms=250.0)
    assert busy["ttft_hidden_share"].m > base["ttft_hidden_share"].m
    more = chains.derive("observability-budget", tenants=200)
    assert more["series_with_tenant"].m == pytest.approx(2 * base["series_with_tenant"].m)


def test_the_attribution_holds_on_every_seed():
    from utils.chains import observability_budget as chapter
    assert chapter.SEEDS >= 3
    sp = chapter.spread(chapter.SPEC.check())
    assert sp["residue"][1] < 1e-9                  # token-share charges add up to the GPU time on every trace
    assert sp["over"][0] > 1 and sp["rag"][1] < 0.4  # a per-request price overcharges RAG on every trace
