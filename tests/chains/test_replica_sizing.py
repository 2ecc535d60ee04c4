"""replica-sizing's chain: the method's users are feasible and tight, both constraints bind somewhere, the fleet."""
import math

import pytest

from utils import catalog, chains, models
from utils.chains import replica_sizing as rs
from utils.params import ParameterError
from utils.verdicts import UNCHECKABLE

SLUG = "replica-sizing"


def test_claim_names_no_inputs_so_cannot_be_checked():
    (c,) = rs.claims()
    assert c.verdict == UNCHECKABLE and not c.reading
    k = rs.checks()
    assert k["tight"] and k["both_needed"] and k["covers"] and k["ov_search"] and k["h200_search"]


def test_memory_constraint_is_vllms_budget_by_hand():
    m = catalog.model("llama-3-70b")
    kv = 8 * (79.10 * 2**30 * 0.9 - models.param_count(m)["total"].m * 2 / 8)
    per_user = 2 * 80 * 8 * 128 * 2 * 4096
    d = chains.derive(SLUG)
    assert d["users_per_replica_memory"].m == math.floor(kv / per_user) == 350
    assert d["users_per_replica"].m == min(d["users_per_replica_memory"].m, d["users_per_replica_throughput"].m)
    assert d["replicas"].m == math.ceil(1000 * 1.2 / d["users_per_replica"].m)
    assert d["nodes"].m == math.ceil(d["replicas"].m * 8 / 8)


def test_second_route_matches_the_closed_forms():
    cc = rs.claim_chain()
    assert rs.largest_batch(cc, rs.achieved_chip(cc)) == int(cc["U"].m)


def test_throughput_runs_at_the_achieved_shares_not_the_peak():
    """No rate at 100% of a datasheet peak: at the catalog's shares throughput allows fewer users than at the
    roof, in proportion to the bandwidth share on the bandwidth side, and the reader can set the shares."""
    base, roof = chains.derive(SLUG), chains.derive(SLUG, compute_fraction=1.0, bandwidth_fraction=1.0)
    assert base["users_per_replica_throughput"].m < roof["users_per_replica_throughput"].m
    slow = chains.derive(SLUG, compute_fraction=0.4)
    assert slow["users_per_replica_throughput"].m < base["users_per_replica_throughput"].m
    assert base["users_per_replica_memory"] == slow["users_per_replica_memory"]
    cc = rs.claim_chain()
    assert cc["W_e"] / cc["W"] == pytest.approx(0.866) and cc["P_e"] / cc["P"] == pytest.approx(0.75)


@pytest.mark.parametrize("bad, match", [
    (dict(gpus_per_replica=1), "per GPU but the engine manages"),
    (dict(gpus_per_replica=3), "one divides the other"),
    (dict(prompt_tokens_per_request=4096), "must fit in the context"),
    (dict(tokens_per_second_per_user=500.0), "tokens_per_second_per_user"),
    (dict(headroom=-0.1), "headroom"),
    (dict(users=0), "users"),
    (dict(n_layers=80, model="llama-3-8b"), "not both"),
])
def test_bad_inputs_are_refused(bad, match):
    with pytest.raises(ParameterError, match=match):
        chains.derive(SLUG, **bad)


def test_properties_more_users_more_nodes_faster_rate_fewer_users_per_replica():
    base = chains.derive(SLUG)
    assert chains.derive(SLUG, users=4000)["nodes"].m > base["nodes"].m
    fast = chains.derive(SLUG, tokens_per_second_per_user=40.0)
    assert fast["users_per_replica_throughput"].m < base["users_per_replica_throughput"].m
    assert fast["users_per_replica_memory"].m == base["users_per_replica_memory"].m
    assert chains.derive(SLUG, headroom=0.0)["replicas"].m <= base["replicas"].m
