"""streaming-connections' chain: the claim judged by running the server, the published slot time, bad
inputs refused, and properties (more slots, a costlier stall; a grace never costs more than keeping)."""
import pytest

from utils import chains
from utils.chains import streaming_connections as chapter
from utils.params import ParameterError
from utils.verdicts import UNCHECKABLE


def test_claim_holds_under_its_reading_on_loopback():
    (c,) = chapter.claims()
    assert c.verdict == UNCHECKABLE and not c.problems()
    ck = chapter.checks()
    assert chapter.frozen(ck["bad"]) == 6 and chapter.frozen(ck["good"]) == 0
    rows = chapter.scenario_rows(ck)
    assert [r[3] for r in rows] == ["yes", "yes", "-", "yes", "yes", "yes"]
    assert [r[4] for r in rows] == ["1", "1", "1", "1", "1", "2"]
    assert all(r[2:] == ["0", "0", "0", "0"] for r in chapter.leak_rows(ck))


def test_published_slot_time_at_the_defaults():
    r = chains.derive("streaming-connections")
    assert r["slot_seconds_per_answer"].to("sequence*s").m == pytest.approx(500 * 0.030)
    assert r["stall_waste_blocking"].to("sequence*s").m == pytest.approx(64 * 10)
    assert r["drop_waste_kept"].to("sequence*s").m == pytest.approx(7.5)
    assert r["drop_waste_grace"].to("sequence*s").m == pytest.approx(5.0)
    per_request = 0.01 * 640 + 0.02 * (7.5 + 7.5) + 0.01 * 15
    assert r["daily_waste_undefended"].to("sequence*s").m == pytest.approx(1e6 * per_request)
    assert r["waste_share_undefended"].m == pytest.approx(per_request / 15)
    assert r["replicas_saved"].m == pytest.approx(1e6 * (per_request - 0.02 * 5) / (64 * 86400))


@pytest.mark.parametrize("name, value", [("step_ms", 0.0), ("answer_tokens", 2.5), ("slots", 0),
                                         ("drop_at", 1.5), ("stall_rate", 1.0), ("grace_s", -1.0),
                                         ("drop_rate", 0.6)])
def test_bad_input_is_refused_with_its_name(name, value):
    kw = {name: value}
    if name == "drop_rate":
        kw["stall_rate"] = 0.5
    with pytest.raises(ParameterError, match=name):
        chains.derive("streaming-connections", **kw)


def test_more_slots_cost_more_per_stall_and_the_grace_never_costs_more_than_keeping():
    base = chains.derive("streaming-connections")
    big = chains.derive("streaming-connections", slots=128)
    assert big["stall_waste_blocking"].m == pytest.approx(2 * base["stall_waste_blocking"].m)
    for grace in (0.5, 5.0, 50.0):
        r = chains.derive("streaming-connections", grace_s=grace)
        assert r["drop_waste_grace"] <= r["drop_waste_kept"]
        assert r["daily_waste_defended"] <= r["daily_waste_undefended"]


def test_inputs_cite_their_parameters_at_the_defaults():
    """A parameter's row shows the parameter's own source while it holds its default, "parameters cell" once changed."""
    def sources(**changes):
        return {r.name: r.source for r in chapter.compute(chapter.SPEC.check(**changes)).rows}
    own = {p.name: p.source for p in chapter.PARAMETERS}
    at_default = sources()
    assert (at_default["t_s"], at_default["f"], at_default["G"]) == (own["step_ms"], own["drop_at"], own["grace_s"])
    changed = sources(step_ms=20.0, grace_s=2.0)
    assert changed["t_s"] == changed["G"] == "parameters cell" and changed["f"] == own["drop_at"]
