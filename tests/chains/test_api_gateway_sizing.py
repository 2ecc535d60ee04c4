"""api-gateway-sizing's chain: the claim and its verdict, the reuse of replica-sizing's chain, the
admission box and the batching step as second routes, bad input refused, and properties."""
import pytest

from utils import chains
from utils.chains import api_gateway_sizing as gw
from utils.params import ParameterError
from utils.verdicts import UNCHECKABLE


def test_claim_is_the_books_own_inventory_so_cannot_be_checked():
    (c,) = gw.claims()
    assert c.verdict == UNCHECKABLE and not c.reading
    k = gw.checks()
    assert k["n_boxes"] == 7 and k["distinct"] and k["covers"]
    assert k["admitted"] == int(k["chain"]["U_m"].m) and k["step_ratio"] == pytest.approx(1, abs=1e-12)


def test_same_numbers_as_replica_sizing_at_the_same_users():
    ours = chains.derive("api-gateway-sizing")
    theirs = chains.derive("replica-sizing", users=2000)
    for name in ("users_per_replica", "replicas", "gpus"):
        assert ours[name] == theirs[name]


def test_gateway_load_follows_the_users():
    out = chains.derive("api-gateway-sizing")
    # each user sends a request per reply: 20 token/s over 512 tokens
    assert out["request_rate"].to("request/s").m == pytest.approx(2000 * 20 / 512)
    assert out["token_rate"].to("token/s").m == pytest.approx(2000 * 20)


@pytest.mark.parametrize("name,value", [("users", 0), ("headroom", -0.1), ("gpu", "no-such-gpu"),
                                        ("n_layers", 0)])
def test_bad_input_is_refused_naming_it(name, value):
    with pytest.raises(ParameterError, match=name):
        chains.derive("api-gateway-sizing", **{name: value})


def test_more_users_more_replicas_and_the_boxes_table_has_seven_rows():
    small, big = chains.derive("api-gateway-sizing", users=1000), chains.derive("api-gateway-sizing", users=8000)
    assert small["replicas"] < big["replicas"]
    table = gw.boxes_table(gw.sizing(gw.claim_inputs()))
    assert table.count("\n") == 8


def test_at_a_prefill_mfu_of_forty_percent_throughput_binds_and_the_count_grows():
    """The audit's case: at multimodal-prefill's MFU the throughput side binds first and more replicas are needed."""
    base = chains.derive("api-gateway-sizing")
    slow = chains.derive("api-gateway-sizing", compute_fraction=gw.MM_MFU)
    assert base["users_per_replica"] == base["users_per_replica_memory"]
    assert slow["users_per_replica"] == slow["users_per_replica_throughput"] < base["users_per_replica"]
    assert slow["replicas"].m > base["replicas"].m
