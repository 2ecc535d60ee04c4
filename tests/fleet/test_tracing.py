"""utils.fleet.tracing: spans end to end, what a naive trace misses, series products, and attribution that
conserves GPU time."""
import numpy as np
import pytest

from utils.fleet import tracing
from utils.serving import batching

E = batching.Engine(wbytes=140e9, kvs=1e8, W=8 * 3.35e12, P=8 * 989e12, f=1.4e11, kNa=1.4e11, att=1e6, akv=3.3e5)
D = {"gateway": 0.002, "auth": 0.001, "queue": 0.025, "router": 0.0005, "prefill": 0.018, "decode": 9.0,
     "stream flush": 0.005}


def test_spans_are_end_to_end():
    s = tracing.spans(D)
    assert [x.name for x in s] == list(tracing.SPAN_NAMES)
    assert all(a.end == pytest.approx(b.start) for a, b in zip(s, s[1:]))
    assert s[-1].end == pytest.approx(sum(D.values()))
    with pytest.raises(ValueError):
        tracing.spans({**D, "auth": -1.0})
    with pytest.raises(ValueError):
        tracing.spans({k: v for k, v in D.items() if k != "queue"})


def test_naive_trace_misses_the_queue_and_the_flush():
    h = tracing.hidden(D, 0.04)
    assert h["client"] - h["naive"] == pytest.approx(0.025 + 0.04)
    assert h["ttft_client"] - h["ttft_naive"] == pytest.approx(0.025)


def test_series_is_the_product_and_refuses_nonsense():
    assert tracing.series([20, 256, 4, 12]) == 245760
    with pytest.raises(ValueError):
        tracing.series([10, 0])


def test_attribution_conserves_gpu_time_and_naive_overcounts():
    prompts, outputs = batching.trace(40, 500, 100, 4096, 0)
    a = tracing.attribute(E, prompts, outputs, 8, 512, gpus=8)
    assert a["charge"].sum() == pytest.approx(a["total"], rel=1e-12)
    assert a["naive"].sum() > 4 * a["total"]           # time in the batch counts each step up to B times
    assert np.all(a["charge"] > 0)


def test_attribution_alone_equals_the_requests_own_steps():
    a = tracing.attribute(E, [100], [10], 4, 512)
    assert a["charge"][0] == pytest.approx(a["total"]) and a["steps"] == 10    # one chunk pass, nine decodes


def test_counters_read_full_util_but_different_tensor_activity():
    c1, c64 = tracing.counters(E, 1), tracing.counters(E, 64)
    assert c1["gpu_util"] == c64["gpu_util"] == 1.0
    assert c64["tensor"] > 10 * c1["tensor"]
