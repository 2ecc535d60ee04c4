"""utils.fleet.slo: budgets, burn rates, and the multiwindow evaluator on series whose answer is known."""
import numpy as np
import pytest

from utils.fleet import slo

MONTH = 30 * 86400.0


def test_budgets_in_minutes_per_thirty_days():
    assert slo.error_budget(0.999, MONTH) / 60 == pytest.approx(43.2)
    assert slo.error_budget(0.9995, MONTH) / 60 == pytest.approx(21.6)
    assert slo.error_budget(0.9999, MONTH) / 60 == pytest.approx(4.32)
    with pytest.raises(ValueError):
        slo.error_budget(1.0, MONTH)


def test_workbook_burn_rates_follow_from_the_budget_shares():
    rules = slo.workbook_rules(MONTH)
    assert [r.burn for r in rules] == pytest.approx([14.4, 6.0, 1.0])
    assert [r.short_s * 12 for r in rules] == [r.long_s for r in rules]      # short = long / 12
    assert slo.exhaustion_time(14.4, MONTH) / 3600 == pytest.approx(50.0)


def test_budget_spent_when_the_rule_fires_does_not_depend_on_the_failure():
    for e in (0.0144, 0.1, 1.0):
        t = slo.detection_time(e, 0.999, 14.4, 3600.0)
        assert e * t / slo.error_budget(0.999, MONTH) == pytest.approx(0.02)
    assert slo.detection_time(0.01, 0.999, 14.4, 3600.0) == float("inf")       # below 14.4x: never


def _step(minutes, start, share, per_minute=1000, end=None):
    total = np.full(minutes, per_minute)
    bad = np.zeros(minutes)
    bad[start:end] = share * per_minute
    return total, bad


def test_evaluator_fires_when_the_closed_form_says():
    total, bad = _step(600, 300, 0.1)
    (fast,) = [f for name, f in slo.evaluate(total, bad, 60.0, 0.999, slo.workbook_rules(MONTH)[:1]).items()]
    t = slo.detection_time(0.1, 0.999, 14.4, 3600.0) / 60             # 8.64 min
    assert fast.first() - 300 + 1 == int(np.ceil(t))                   # the sample that closes minute ceil(t)


def test_ratio_of_sums_not_mean_of_ratios():
    # a quiet minute (10 requests, 5 bad) and a busy one (10,000, none bad): 5 of 10,010, not 25%
    b = slo.window_burn([10, 10000], [5, 0], 2, 0.999)
    assert b[-1] == pytest.approx(5 / 10010 / 0.001)


def test_both_windows_must_agree_so_the_alert_resets_in_the_short_window():
    total, bad = _step(400, 200, 1.0, end=210)                          # a ten-minute full outage
    f = slo.evaluate(total, bad, 60.0, 0.999, slo.workbook_rules(MONTH)[:1])["1 h / 5 min"]
    assert f.first() is not None and f.first() < 201
    assert f.long_burn[250] >= 14.4                                     # the hour still remembers it...
    assert not f.firing[250]                                            # ...but the page has stopped
    assert f.last() - 209 <= 5                                          # within the 5-minute short window


def test_a_blip_below_the_budget_share_does_not_page():
    total, bad = _step(400, 200, 0.5, end=201)                          # one minute at 50%: 0.83% of an hour
    f = slo.evaluate(total, bad, 60.0, 0.999, slo.workbook_rules(MONTH)[:1])["1 h / 5 min"]
    assert f.first() is None


def test_bad_input_is_refused():
    with pytest.raises(ValueError):
        slo.evaluate([1, 2], [2, 0], 60.0, 0.999, slo.workbook_rules(MONTH))
    with pytest.raises(ValueError):
        slo.evaluate([1], [0], 7.0, 0.999, slo.workbook_rules(MONTH))     # 5 min is not whole 7 s samples


def test_seeded_series_is_reproducible():
    a = slo.incident_series(100, 50, 60, 0.1, per_minute=500.0, baseline=0.001, seed=3)
    b = slo.incident_series(100, 50, 60, 0.1, per_minute=500.0, baseline=0.001, seed=3)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
