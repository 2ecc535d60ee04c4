"""multi-region-failover: the claim, bad input, and properties of the chain."""
import copy

import pytest

from utils import chains
from utils.chains import multi_region_failover as mr
from utils.params import ParameterError
from utils.verdicts import UNCHECKABLE


def test_claim_cannot_be_checked_a_region_lost_is_not_a_spike():
    (c,) = mr.claims()
    assert c.verdict == UNCHECKABLE and not c.problems()


def test_the_claim_is_not_refuted_even_where_the_books_queue_stops_losing(monkeypatch):
    """The region lost is the book's input, not the source's: a case where the queue loses nothing leaves the
    claim uncheckable, never wrong."""
    real = mr.claim_chain()
    fake = copy.copy(real)
    fake.data = {**real.data, "seeds": [{**rs, "naive": (rs["naive"][0], {**rs["naive"][1], "worst_wait": 0.0,
                                                                          "goodput": 1.0})}
                                        for rs in real.data["seeds"]]}
    monkeypatch.setattr(mr, "claim_chain", lambda **changes: fake)
    (c,) = mr.claims()
    assert c.verdict == UNCHECKABLE and not c.nearest_true and "not a loss on every seed" in c.reason


def test_two_at_sixty_is_one_hundred_and_twenty():
    r = chains.derive("multi-region-failover")
    assert r["survivor_utilisation"].m == pytest.approx(1.2)
    assert r["n_minus_one_ceiling"].m == pytest.approx(0.5)
    assert r["queue_wait_after_window"].to("s").m == pytest.approx(0.2 * 30)
    assert r["goodput_naive"].m < r["goodput_jitter"].m <= r["goodput_admission"].m + 0.01


def test_at_the_ceiling_nothing_queues_and_the_spare_is_free():
    r = chains.derive("multi-region-failover", utilisation=0.5)
    assert r["queue_wait_after_window"].m == 0 and r["spare_cost_per_year"].m == 0


def test_more_regions_lower_the_survivor_load():
    u = [chains.derive("multi-region-failover", regions=n)["survivor_utilisation"].m for n in (2, 3, 4)]
    assert u[0] > u[1] > u[2]


@pytest.mark.parametrize("changes, name", [
    (dict(regions=1), "regions"), (dict(utilisation=1.5), "utilisation"), (dict(retry_cap_s=0.5), "retry_cap_s"),
    (dict(window_s=600.0), "window_s"), (dict(replica_rps=-1.0), "replica_rps"), (dict(model="nope"), "model"),
    (dict(in_flight_s=1e17), "in_flight_s"), (dict(replica_rps=0.01), "replica_rps")])
def test_bad_input_is_refused_naming_the_parameter(changes, name):
    with pytest.raises(ParameterError, match=name):
        chains.derive("multi-region-failover", **changes)


def test_the_goodputs_are_a_median_and_a_range_over_the_seeds_and_the_case_holds_on_each():
    ch = mr.claim_chain()
    assert len(ch.data["seeds"]) == mr.SEEDS >= 5
    for name, policy in (("g_naive", "naive"), ("g_jit", "jitter"), ("g_ac", "admission")):
        got = sorted(rs[policy][1]["goodput"] for rs in ch.data["seeds"])
        assert (ch[name + "_lo"].m, ch[name].m, ch[name + "_hi"].m) == (got[0], got[len(got) // 2], got[-1])
    for rs in ch.data["seeds"]:       # what the claim's reason says, on every seed
        n, ac = rs["naive"][1], rs["admission"][1]
        assert n["goodput"] < ac["goodput"] and n["worst_wait"] > mr.CLAIM["client_timeout_s"]
        assert ac["worst_wait"] <= mr.CLAIM["admission_s"] + 1e-9
    assert ch["g_naive_hi"].m < ch["g_ac_lo"].m       # the ranges do not overlap


def test_inputs_cite_their_parameters_at_the_defaults():
    """A parameter's row shows the parameter's own source while it holds its default, "parameters cell" once changed."""
    def sources(**changes):
        return {r.name: r.source for r in mr.compute(mr.SPEC.check(**changes)).rows}
    own = {p.name: p.source for p in mr.PARAMETERS}
    at_default = sources()
    assert (at_default["u"], at_default["p_h"], at_default["t_s"]) == (
        own["utilisation"], own["gpu_hour_usd"], own["start_s"])
    changed = sources(utilisation=0.5, gpu_hour_usd=3.0)
    assert changed["u"] == changed["p_h"] == "parameters cell" and changed["t_s"] == own["start_s"]


def test_the_replica_rate_is_the_tail_latency_chapters_healthy_replica():
    from utils.chains import tail_latency
    from utils.verdicts import rounds_to
    healthy = tail_latency.claim_chain()["lambda_h"].to("request/s").m
    assert rounds_to(healthy, mr.SPEC.defaults()["replica_rps"], 2)
