"""token-rate-limits' chain: the claim with its verdict, the fleet's capacity from continuous-batching,
reserve-then-settle against its prediction, bad inputs refused, and properties."""
import pytest

from utils import chains
from utils.chains import continuous_batching as cb
from utils.chains import token_rate_limits as trl
from utils.params import ParameterError
from utils.verdicts import READING


def test_claim_holds_under_its_reading():
    (c,) = trl.claims()
    assert c.verdict == READING and c.reading and not c.problems()
    ch = trl.claim_chain()
    assert ch["f_under"].m == pytest.approx(50 / 50_000)
    assert ch["f_over"].m == pytest.approx(50_000 / (1024 + 512))
    # a request limit does bound tokens, at the dearest request per request admitted: the claim is its looseness
    assert "does bound tokens" in c.reading and "bounds tokens only at r times the dearest request" in c.reason
    assert (ch["r_req"] * ch["n_L"]).to("token/s").m == pytest.approx(ch["f_over"].m * ch["r_tok"].to("token/s").m)


def test_the_fleet_capacity_is_the_continuous_batching_replica_rate():
    r = chains.derive("token-rate-limits")
    x = cb.batching_chain(chains.check("continuous-batching"))["X"]
    assert r["replica_tokens_per_s"].m == pytest.approx(x.to("token/s").m)
    assert r["fleet_tokens_per_s"].m == pytest.approx(100 * 0.8 * x.to("token/s").m * (1024 + 512) / 512)
    assert r["scripts_per_s_needed"].m == pytest.approx(2 * r["fleet_requests_per_s"].m)


def test_reserve_then_settle_matches_its_prediction():
    run = trl.settle_run()
    assert abs(run["without"] - run["pred_without"]) <= 1
    assert abs(run["with_settle"] - run["pred_with"]) <= 2
    assert run["with_settle"] > 2 * run["without"]


@pytest.mark.parametrize("name,value", [("replicas", 0), ("tenant_share", 1.5), ("sellable_share", 0.0),
                                        ("max_tokens", -1), ("redis_scripts_per_s_server", -5.0),
                                        ("model", "no-such-model")])
def test_bad_inputs_are_refused_naming_the_parameter(name, value):
    with pytest.raises(ParameterError, match=name):
        chains.derive("token-rate-limits", **{name: value})


def test_more_replicas_more_scripts_and_less_headroom():
    base = chains.derive("token-rate-limits")
    big = chains.derive("token-rate-limits", replicas=1000)
    assert big["scripts_per_s_needed"].m == pytest.approx(10 * base["scripts_per_s_needed"].m)
    assert big["redis_headroom"].m == pytest.approx(base["redis_headroom"].m / 10)
    assert big["connections_needed"].m > base["connections_needed"].m


def test_larger_max_tokens_less_usable_without_settle():
    a = chains.derive("token-rate-limits", max_tokens=1024)["usable_without_settle"].m
    b = chains.derive("token-rate-limits", max_tokens=8192)["usable_without_settle"].m
    assert a == pytest.approx(1536 / 2048) and b < a


def test_the_case_table_runs_the_reference():
    rows = trl.case_rows()
    assert rows[1][2] == "3,700 refunded" and rows[2][2] == "settled again: False"
    assert rows[3][2] == "0 tokens charged" and rows[4][2] == "retry-after: never"


def test_inputs_cite_their_parameters_at_the_defaults():
    """A parameter's row shows the parameter's own source while it holds its default, "parameters cell" once changed."""
    def sources(**changes):
        return {r.name: r.source for r in trl.compute(trl.SPEC.check(**changes)).rows}
    own = {p.name: p.source for p in trl.PARAMETERS}
    at_default = sources()
    assert (at_default["s"], at_default["M"], at_default["R_s"]) == (
        own["tenant_share"], own["max_tokens"], own["redis_scripts_per_s_server"])
    changed = sources(tenant_share=0.1, max_tokens=8192)
    assert changed["s"] == changed["M"] == "parameters cell" and changed["R_s"] == own["redis_scripts_per_s_server"]
