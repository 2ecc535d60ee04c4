"""latency-slos-goodput's chain: the claim's reading, the published figures, bad inputs, properties."""
import numpy as np
import pytest

from utils import chains
from utils.chains import latency_slos_goodput as lsg
from utils.params import ParameterError
from utils.roofline import FRACTIONS
from utils.serving import batching
from utils.verdicts import UNCHECKABLE


def test_the_claim_cannot_be_checked_and_the_example_holds_on_every_seed():
    """The source names no objectives, percentile, model or traffic; the book's example shows the shape on
    every seed, and which objective fails first is left to the draw (it differs between seeds)."""
    (c,) = lsg.claims()
    assert c.verdict == UNCHECKABLE and not c.reading
    ck = lsg.checks()
    assert lsg.check_holds(ck)
    assert len(ck["seeds"]) == len(lsg.SEEDS) > 1 and all(sd["shape"] for sd in ck["seeds"])
    assert len({sd["lo"] for sd in ck["seeds"]}) > 1


def test_passes_run_at_the_shared_achieved_shares():
    assert (lsg.CLAIM["compute_fraction"], lsg.CLAIM["bandwidth_fraction"]) == FRACTIONS


def test_published_figures_are_re_derived():
    r = chains.derive("latency-slos-goodput")
    assert r["max_goodput_rate"].m == pytest.approx(20.7, abs=0.05)
    assert r["saturation_throughput"].m == pytest.approx(11567, rel=1e-3)
    assert r["slo_attainment"].m >= 0.99 and r["goodput"].m <= 20.0


def test_saturation_rate_closed_form():
    ch = chains.derive("latency-slos-goodput")
    rep = lsg.claim_replica()
    c = rep.chain
    B, o = c["B"].m, c["o"].to("token").m
    lam = 1 / (c["t_pf"].to("s").m + o * c["t_dec"].to("s").m / B)
    assert rep.lam == pytest.approx(lam, rel=1e-9)
    assert ch["saturation_throughput"].m == pytest.approx(lam * o, rel=1e-9)


def test_union_bound_and_little_law_in_the_queue():
    rep = lsg.claim_replica()
    for rate in (10.0, 30.0):
        m = rep.at(rate)
        assert m["attainment"] >= m["att_ttft"] + m["att_tpot"] - 1 - 1e-12
        r = rep.run(rate)
        assert r["batch_time"] == pytest.approx(float(np.sum(r["finish"] - r["first"])), rel=1e-9)


@pytest.mark.parametrize("bad", [dict(percentile=1.5), dict(n_requests=100), dict(arrival_rate=0.0),
                                 dict(gpu="h999"), dict(gpus_per_replica=1), dict(compute_fraction=0.0),
                                 dict(mean_prompt_tokens=10 ** 6), dict(n_requests=lsg.MAX_REQUESTS + 1),
                                 dict(gpus_per_replica=128)])
def test_bad_inputs_are_refused(bad):
    with pytest.raises(ParameterError):
        chains.derive("latency-slos-goodput", **bad)


def test_benchmarks_past_the_work_budget_are_refused_in_one_line(monkeypatch):
    """The budget's refusal, on a budget a tenth of the defaults' work (the real one admits every batch cap)."""
    monkeypatch.setattr(lsg, "WORK_BUDGET", 100_000)
    with pytest.raises(ParameterError, match="steps of queue simulation"):
        lsg.compute(lsg.SPEC.check(seed=7))


def test_no_rate_does_better_than_each_request_alone():
    """Rate 0 is the limit where each request is served alone: every rate's latencies are at least those, so an
    objective that fails there fails at every rate, and the search says so without a simulation."""
    rep = lsg.claim_replica()
    alone = rep.at(0.0)
    for f in (0.05, 0.5, 1.0, 2.0):
        m = rep.at(f * rep.lam)
        assert m["attainment"] <= alone["attainment"] and m["n"] == alone["n"]
        assert all(m[k] >= alone[k] for k in ("ttft_50", "ttft_p", "tpot_50", "tpot_p"))
    strict = lsg.claim_replica(slo_ttft_s=alone["ttft_50"] / 2)    # half the requests miss it even alone
    assert strict.max_rate(strict.joint) == (0.0, 0.5 * strict.lam) and not strict.tried


def test_one_sequence_at_a_time_meets_the_ttft_objective_only_at_about_one_percent_load():
    """max_batch=1 (a single-server queue: batching.one_at_a_time). No prefill joins a decode, so a TPOT is one
    read of the weights plus at most a whole context's cache.
    A request that arrives while another decodes waits out the rest of that reply (seconds, past the TTFT
    objective), and the share that arrive so is the utilization: at a sixty-fourth of saturation about one in 64,
    more than the 1% the 99th percentile allows; the highest good rate lies lower, near a 1% utilization."""
    ch = lsg.compute(lsg.SPEC.check(max_batch=1))
    t_w = ch["t_w"].to("s").m
    whole_context = (ch["rho"] * ch["kappa"] * ch["L_c"] / (ch["N_r"] * ch["b_w"])).to("").m
    assert t_w <= ch["tpot_50"].to("s").m <= ch["tpot_p"].to("s").m <= t_w * (1 + whole_context)
    rep, pc = ch.data["replica"], lsg.CLAIM["percentile"]
    at_64th = rep.at(rep.lam / 64)
    assert 1 - 2 / 64 < at_64th["att_ttft"] < pc and at_64th["att_tpot"] == 1.0
    good = ch["lambda_good"].m
    assert rep.lam / 128 < good < rep.lam / 64 and rep.at(good)["attainment"] >= pc
    assert ch["X_max"].m < chains.derive("latency-slos-goodput")["saturation_throughput"].m / 10


@pytest.mark.parametrize("name", ["n_params", "n_layers", "kv_bytes_per_token"])
def test_a_loose_architecture_override_is_refused(name):
    with pytest.raises(ParameterError, match="not both"):
        chains.derive("latency-slos-goodput", model="llama-3-8b", **{name: 1.0})


def test_a_slower_engine_serves_less_and_a_stricter_percentile_costs_capacity():
    base = chains.derive("latency-slos-goodput")
    slow = chains.derive("latency-slos-goodput", **lsg.HALF)
    assert slow["saturation_throughput"].m == pytest.approx(base["saturation_throughput"].m / 2, rel=1e-9)
    assert slow["max_goodput_rate"].m < base["max_goodput_rate"].m
    strict = chains.derive("latency-slos-goodput", percentile=0.999)
    assert strict["max_goodput_rate"].m < base["max_goodput_rate"].m


def test_workload_is_seeded():
    a = batching.workload(600, 1024, 512, 8192, 1)
    b = batching.workload(600, 1024, 512, 8192, 1)
    assert all((x == y).all() for x, y in zip(a, b))
