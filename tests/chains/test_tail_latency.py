"""tail-latency: the fault hooks of utils.serving.batching.simulate_faulty, the claim, bad input, properties."""
import dataclasses

import numpy as np
import pytest

from utils import chains
from utils.chains import tail_latency as tl
from utils.params import ParameterError
from utils.serving import batching
from utils.verdicts import READING

# A small engine in plain floats: a pass of b bytes and f FLOPs takes max(b / W, f / P).
E = batching.QueueEngine(wbytes=1e9, akv=1e5, W=1e12, P=1e14, kNa=2e9, att=1e4, cap=10**6, bmax=64, budget=8192)


def wl(n=400, seed=3, prompt=200, output=100):
    return batching.workload(n, prompt, output, 4096, seed)


def test_no_fault_breaks_nothing():
    # simulate_queue is simulate_faulty with no faults (one loop); the published figures of
    # latency-slos-goodput (tests/chains/test_latency_slos_goodput.py, its notebook) hold that loop still.
    w = wl()
    for rate in (5.0, 40.0):
        b = batching.simulate_faulty(rate, w, E)
        assert b["preemptions"] == 0 and b["stall_idle"] == 0
        assert np.all(b["finish"] >= b["first"]) and np.all(b["first"] > b["arrival"])


def test_host_stalls_add_their_length_and_count_idle_only_with_work():
    w = wl()
    a = batching.simulate_faulty(20.0, w, E)
    b = batching.simulate_faulty(20.0, w, E, batching.Faults(stall_every=1.0, stall_s=0.25))
    span = float(b["finish"].max())
    assert 0 < b["stall_idle"] <= 0.25 * np.floor(span / 1.0) + 1e-9
    assert b["stall_idle"] == pytest.approx(0.25 * round(b["stall_idle"] / 0.25))   # whole stalls only
    assert np.all(b["finish"] >= b["first"]) and np.max(b["itl"][0]) >= 0.25
    assert np.median(b["first"] - b["arrival"]) < 2 * np.median(a["first"] - a["arrival"]) + 0.25


def test_optimistic_admission_with_ample_kv_never_preempts():
    r = batching.simulate_faulty(20.0, wl(), E, batching.Faults(optimistic=True))
    assert r["preemptions"] == 0 and np.all(r["finish"] > 0)


def test_tight_kv_preempts_and_every_request_still_finishes_once():
    w = wl(n=300)
    tight = dataclasses.replace(E, cap=6000)
    r = batching.simulate_faulty(300.0, w, tight, batching.Faults(optimistic=True))
    assert r["preemptions"] > 0 and r["peak_kv"] <= tight.cap      # preemption keeps the cache in budget
    # every request ends once, after its first token, and no earlier than its reply's decode steps allow
    assert np.all(r["first"] > r["arrival"]) and np.all(r["finish"] > r["first"])
    step = E.wbytes / E.W
    assert np.all(r["finish"] - r["first"] >= (w[2] - 1) * step * (1 - 1e-9))
    # the reservation scheduler at the same budget never preempts (it holds the whole reply's KV)
    assert batching.simulate_faulty(300.0, w, tight)["preemptions"] == 0


def test_a_long_prompt_sets_the_longest_pass():
    unit, prompt, output = wl(n=200)
    prompt = prompt.copy()
    prompt[50] = 4000
    r = batching.simulate_faulty(5.0, (unit, prompt, output), E)
    alone = max((E.kNa * 4000 + E.att * 4000 * 4001 / 2) / E.P, (E.wbytes + E.akv * 4000) / E.W)
    assert r["longest_pass"] >= alone


def test_weighted_quantile_is_the_quantile_of_the_repeated_sample():
    rng = np.random.default_rng(0)
    x, w = rng.random(50), rng.integers(1, 5, 50)
    rep = np.repeat(x, w)
    for f in (0.1, 0.5, 0.99):
        assert batching.weighted_quantile(x, w, f) == batching.quantile(rep, f)


def test_claim_holds_under_its_reading():
    (c,) = tl.claims()
    assert c.verdict == READING and c.reading


def test_each_suspect_keeps_the_median_and_breaks_the_tail_and_moves_its_own_metric():
    ck = tl.checks()
    assert ck["same"] and abs(ck["little"] - 1) < 1e-9
    h, slo = ck["runs"]["healthy"], tl.CLAIM["slo_ttft_s"]
    for s in tl.SUSPECTS:
        m = ck["runs"][s]
        assert m["ttft_50"] < slo < m["ttft_p"] and h["ttft_p"] < slo, s
        assert ck["own"][s] > ck["base"][s], s
    assert ck["runs"]["one bad replica"]["ttft_50"] < 1.1 * h["ttft_50"]


def test_a_larger_fleet_hides_the_bad_replica_from_the_fleet_tail():
    small, large = tl.claim_chain(), tl.claim_chain(replicas=200)
    assert large.data["runs"]["one bad replica"]["ttft_p"] < small.data["runs"]["one bad replica"]["ttft_p"]
    assert large.data["runs"]["one bad replica"]["ttft_p"] < tl.CLAIM["slo_ttft_s"]


@pytest.mark.parametrize("changes, name", [
    (dict(load=1.5), "load"), (dict(saturated_load=0.5), "saturated_load"), (dict(stall_s=5.0), "stall_s"),
    (dict(replicas=1), "replicas"), (dict(long_prompt_tokens=200000), "long_prompt_tokens"),
    (dict(kv_budget_tokens=10**8), "kv_budget_tokens"), (dict(bad_replica_speed=0), "bad_replica_speed")])
def test_bad_input_is_refused_naming_the_parameter(changes, name):
    with pytest.raises(ParameterError, match=name):
        chains.derive("tail-latency", **changes)


def test_a_loose_architecture_override_is_refused():
    with pytest.raises(ParameterError, match="n_params cannot be set"):
        chains.derive("tail-latency", n_params=7e10)
