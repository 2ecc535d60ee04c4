"""slo-error-budgets' chain: the claims reproduced, the closed forms against the simulated alert,
bad inputs refused, and properties."""
import pytest

from utils import chains
from utils.chains import slo_error_budgets as chapter
from utils.params import ParameterError
from utils.verdicts import HOLDS, UNCHECKABLE


def test_claims_and_their_verdicts():
    burn, roll, avail = chapter.claims()
    assert (burn.verdict, roll.verdict, avail.verdict) == (UNCHECKABLE, HOLDS, HOLDS)
    ck = chapter.burn_checks()
    assert ck["hour"].burn == pytest.approx(14.4) and ck["day"].burn == pytest.approx(3.0)
    assert ck["fast_min"] <= 60 and ck["slow_min"] <= 24 * 60                # the latest page over the seeds
    assert len(ck["fast_mins"]) == len(ck["slow_mins"]) == chapter.SEEDS >= 3
    assert None not in ck["fast_mins"] + ck["slow_mins"]                     # every seed pages
    assert ck["wb_closed"][1.0] == pytest.approx(72.0)          # the workbook's 3-day ticket at 1x


def test_budget_and_detection_at_the_defaults():
    r = chains.derive("slo-error-budgets")
    assert r["budget_minutes"].m == pytest.approx(43.2)
    assert r["fast_burn_threshold"].m == pytest.approx(14.4)
    assert r["budget_share_at_page"].m == pytest.approx(0.02)
    assert r["detection_minutes"].m == pytest.approx(60 * (0.0144 - 0.0002) / (0.1 - 0.0002))
    # the simulated page lands on the sample that closes the closed form's minute (give or take noise), on every seed
    sp = chapter.spread(chapter.SPEC.check())
    assert all(abs(t - r["detection_minutes"].m) <= 1.5 for t in sp["detect"])
    assert sp["detect"][0] <= r["detection_minutes_simulated"].m <= sp["detect"][1]
    # rolling back first saves exactly e x the minutes of logs
    saved = r["burned_logs_first"].m - r["burned_rollback_first"].m
    assert saved == pytest.approx(0.1 * 30)


def test_a_full_outage_of_logs_is_most_of_the_month():
    r = chains.derive("slo-error-budgets", incident_bad_share=1.0)
    assert r["burned_logs_first"].m - r["burned_rollback_first"].m == pytest.approx(30.0)
    assert r["detection_minutes"].m < 1


@pytest.mark.parametrize("name,value", [("objective", 1.0), ("objective", -0.1), ("incident_bad_share", 0.0001),
                                        ("baseline_bad_share", 0.02), ("period_days", 0.0),
                                        ("rollback_minutes", 0.0), ("ttft_percentile", 1.0)])
def test_bad_inputs_are_refused_by_name(name, value):
    with pytest.raises(ParameterError, match=name):
        chains.derive("slo-error-budgets", **{name: value})


def test_a_rollback_slower_than_the_budget_spends_more_than_all_of_it():
    """Past 100% is an answer (the objective is missed), within the range the result declares."""
    from utils.rederive import payload, result_range
    out = payload("slo-error-budgets", {"rollback_minutes": "1000"})["results"]
    assert out["share_rollback_first"]["value"] > 1
    share = next(r for r in chains.spec("slo-error-budgets").results if r.name == "share_rollback_first")
    assert result_range(share) == (0.0, float("inf"))


def test_a_slow_person_or_rollback_leaves_the_simulated_page_where_it_was():
    base = chains.derive("slo-error-budgets")["detection_minutes_simulated"].m
    for name in ("ack_minutes", "rollback_minutes"):
        assert chains.derive("slo-error-budgets", **{name: 1e9})["detection_minutes_simulated"].m == base


def test_properties():
    base = chains.derive("slo-error-budgets")
    tight = chains.derive("slo-error-budgets", objective=0.9999)
    assert tight["budget_minutes"].m == pytest.approx(base["budget_minutes"].m / 10)
    assert tight["share_logs_first"].m > base["share_logs_first"].m
    bigger = chains.derive("slo-error-budgets", incident_bad_share=0.5)
    assert bigger["detection_minutes"].m < base["detection_minutes"].m      # a larger failure pages sooner
    assert bigger["budget_share_at_page"].m == pytest.approx(base["budget_share_at_page"].m)
    slower = chains.derive("slo-error-budgets", ack_minutes=15.0)
    assert slower["detection_gap"].m == pytest.approx(base["detection_gap"].m + 10)


# The SRE workbook, ch. 5 "Alerting on SLOs", Table 5-4 "Burn rates and time to complete budget exhaustion"
# (https://sre.google/workbook/alerting-on-slos/, read 2026-12-01): a 99.9% objective over 30 days.
WORKBOOK_5_4 = [(0.001, 1, 30 * 24), (0.002, 2, 15 * 24), (0.01, 10, 3 * 24), (1.0, 1000, 43 / 60)]


@pytest.mark.parametrize("error_rate, burn, hours", WORKBOOK_5_4)
def test_the_workbooks_burn_rate_table_and_the_alert_that_fires(error_rate, burn, hours):
    """Every error rate of the table is answered, the ones the one-hour page misses too; the alert that fires first is
    the hour's page at 14.4x, the six hours' at 6x or the three days' ticket at 1x."""
    r = chains.derive("slo-error-budgets", incident_bad_share=error_rate, baseline_bad_share=0.0)
    assert r["incident_burn_rate"].m == pytest.approx(burn)
    assert r["exhaustion_time"].to("hour").m == pytest.approx(hours, rel=0.005)   # 43.2 min, printed 43
    expected = 14.4 if burn >= 14.4 else 6 if burn >= 6 else 1
    assert r["fast_burn_threshold"].m == pytest.approx(expected)
    window_min = {14.4: 60, 6: 360, 1: 4320}[expected]
    assert r["detection_minutes"].m == pytest.approx(window_min * expected * 0.001 / error_rate)
    rows = chapter.alert_rows()
    assert [row[0] for row in rows] == ["0.1%", "0.2%", "1%", "100%"] and rows[0][3].startswith("ticket")


@pytest.mark.parametrize("changes, holds", [(dict(incident_bad_share=0.0005, baseline_bad_share=0.0), True),
                                            (dict(incident_bad_share=0.005, period_days=366.0), False)])
def test_an_incident_no_rule_pages_is_answered_and_what_needs_an_alert_left_out(changes, holds):
    """Half the sustainable rate (the objective holds), and five times it over a year, where the ticket needs 12.2x:
    burn rate and exhaustion come out, the results counted from an alert are left out saying that none fires."""
    from utils.rederive import payload
    out = payload("slo-error-budgets", {k: repr(v) for k, v in changes.items()})
    spec = chains.spec("slo-error-budgets")
    b = changes["incident_bad_share"] / 0.001
    assert out["results"]["incident_burn_rate"]["value"] == pytest.approx(b)
    assert out["results"]["exhaustion_time"]["value"] == pytest.approx(changes.get("period_days", 30.0) * 24 / b)
    assert set(out["left_out"]) == set(chapter.AFTER_THE_ALERT) == {r.name for r in spec.results} - set(out["results"])
    why = out["left_out"]["detection_minutes"]
    assert "none of the workbook's rules fires" in why and ("the objective holds" in why) == holds
