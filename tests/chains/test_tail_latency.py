"""tail-latency: the fault hooks of utils.serving.batching.simulate_faulty, the claim, bad input, properties."""
import dataclasses

import numpy as np
import pytest

from utils import chains
from utils.chains import tail_latency as tl
from utils.params import ParameterError
from utils.serving import batching
from utils.verdicts import UNCHECKABLE

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


@pytest.mark.parametrize("weight", [1, 3])
def test_equal_weights_take_the_sorts_own_rank_without_a_sort(weight):
    x = np.random.default_rng(1).random(1000)
    w = np.full(1000, weight)
    for f in (0.001, 0.1, 0.5, 0.99, 0.999, 1.0):       # f * 1000 whole: the rank at the edge of its tolerance
        order = np.argsort(x, kind="stable")
        c = np.cumsum(w[order].astype(float))
        assert batching.weighted_quantile(x, w, f) == x[order][np.searchsorted(c, f * c[-1] - 1e-9 * c[-1])]


def test_claim_cannot_be_checked_the_source_gives_no_number():
    (c,) = tl.claims()
    assert c.verdict == UNCHECKABLE and "book" in c.reason


def test_on_every_seed_each_suspect_breaks_the_tail_and_moves_its_own_metric():
    ck = tl.checks()
    assert ck["same"] and abs(ck["little"] - 1) < 1e-9
    assert len(tl.SEEDS) >= 5 and ck["healthy_ok"] and ck["others_still"] and ck["names_it"]
    for s in tl.SUSPECTS:
        assert ck["tail_breaks"][s] and ck["own_moves"][s], s
    # the median holds on every seed only where the fault is not a cliff
    assert all(ck["flat"][s] == len(tl.SEEDS) for s in ("long prompts", "host stalls", "one bad replica"))
    assert ck["flat"]["queueing"] < len(tl.SEEDS) and ck["flat"]["KV preemption"] < len(tl.SEEDS)


def test_a_bad_replica_past_its_saturation_is_unstable_and_reports_no_tail():
    ch = tl.claim_chain()
    assert ch["rho_b"].m > 1 and not ch.data["runs"]["one bad replica"]["stable"]
    assert "unstable" in tl.suspects_table(ch, tl.SPEC.check(**tl.CLAIM))
    assert tl.claim_chain(bad_replica_speed=0.7).data["runs"]["one bad replica"]["stable"]


def test_a_kv_budget_below_the_longest_request_reports_the_shortfall_and_no_latency():
    with pytest.raises(ParameterError, match="short; .* no latency"):
        chains.derive("tail-latency", kv_budget_tokens=1)


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


def test_one_sequence_at_a_time_is_answered_and_never_preempts():
    """max_batch=1: each request decodes alone (runs of quiet steps, the optimistic scheduler's too). A KV budget
    that holds the longest request never overflows with one sequence in it, so optimistic admission is the
    reservation scheduler: the preemption run is the healthy run, request for request."""
    r = chains.derive("tail-latency", max_batch=1, n_requests=1000)
    assert r["preemptions_per_1k"].m == 0
    assert r["ttft_p99_preemption"] == r["ttft_p99_healthy"] < r["ttft_p99_queueing"]


def test_runs_past_the_work_budget_are_refused_in_one_line(monkeypatch):
    monkeypatch.setattr(tl, "WORK_BUDGET", 50_000)      # a third of the defaults' work
    with pytest.raises(ParameterError, match="steps of queue simulation"):
        tl.compute(tl.SPEC.check(seed=7))
    with pytest.raises(ParameterError, match="n_requests must be at most"):
        chains.derive("tail-latency", n_requests=tl.MAX_REQUESTS + 1)


def test_a_loose_architecture_override_is_refused():
    with pytest.raises(ParameterError, match="not both"):
        chains.derive("tail-latency", model="llama-3-8b", n_params=7e10)


def test_exercise_one_reports_the_fleet_of_a_hundred_as_unstable():
    """The half-speed replica at 55% load is offered 110% of what it serves in any fleet: its queue grows without
    bound, so the fleet-of-a-hundred answer names no p99 as if it were one."""
    a = tl.claim_chain(replicas=100)
    assert not a.data["runs"]["one bad replica"]["stable"]
    ex = tl.exercises(tl.SPEC.check(), tl.claim_chain())
    assert ex["ex1-p"].startswith("Unstable") and "110%" in ex["ex1-p"]


def test_the_replica_runs_at_the_shared_achieved_fractions():
    """No pass at 100% of a peak: the defaults are the catalog's measured shares (utils.roofline), the chain carries
    them, and at the datasheet roofs the replica saturates at a higher rate."""
    from utils import roofline
    d = tl.SPEC.defaults()
    assert (d["compute_fraction"], d["bandwidth_fraction"]) == roofline.FRACTIONS and "engine_efficiency" not in d
    ch = tl.claim_chain()
    assert (ch["eta_P"].m, ch["eta_W"].m) == roofline.FRACTIONS
    roof = tl.claim_chain(compute_fraction=1.0, bandwidth_fraction=1.0)
    assert roof["lambda_max"].m > ch["lambda_max"].m
