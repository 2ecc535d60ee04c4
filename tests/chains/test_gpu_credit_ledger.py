"""The gpu-credit-ledger chapter's chain (utils/chains/gpu_credit_ledger.py): both claims with their
verdicts, the four questions answered by the ledger, bad input refused, and the allocation's properties."""
import pytest

from utils import chains
from utils.chains import gpu_credit_ledger as chapter
from utils.params import ParameterError


def test_the_ledger_cannot_be_checked_and_the_fleet_holds_on_every_seed():
    ledger, fleet = chapter.claims()
    assert ledger.verdict == "cannot be checked" and fleet.verdict == "holds under a stated reading"
    assert len(chapter.claim_days()) >= 5       # the property is judged on several seeded days, all of them
    assert all(d["U_b"].m == pytest.approx((d["D"] / d["C"]).m) and d["S_b"].m == 0 for d in chapter.claim_days())
    assert all(chapter.ledger_ok(chapter.checks()).values())


def test_the_race_double_spends_only_without_the_transaction():
    ck = chapter.checks()
    assert ck["racy"] == {"statuses": ["posted", "posted"], "balance": -3600}
    assert ck["atomic"] == {"statuses": ["insufficient", "posted"], "balance": 0}


def test_the_crowd_counts_are_exact_whatever_thread_wins():
    c = chapter.checks()["crowd"]
    per_team = chapter.GRANT_H * 3600 // chapter.DEBIT_S          # debits a team's grant covers
    keys_per_team = chapter.KEYS // 3
    assert c["posted"] == c["keys"] == 3 * min(per_team, keys_per_team)
    assert c["replayed"] == (chapter.COPIES - 1) * c["posted"]
    assert c["refused"] == chapter.COPIES * (chapter.KEYS - c["posted"])
    assert c["used"] == c["granted"] == c["posted_amount"] and c["total"] == 0


def test_the_published_day():
    r = chains.derive("gpu-credit-ledger")
    assert r["util_borrowing"].m == pytest.approx(r["demand_gpu_hours"].m / r["fleet_gpu_hours"].m)
    assert r["util_static"] < r["util_capped"] < r["util_borrowing"]
    assert r["starved_team_hours"].m == 0 and r["cap_factor_needed"].m > 1
    assert r["job_hold"].to("GPU*hour").m == pytest.approx(512 * 10 / 60)


@pytest.mark.parametrize("name, value", [("gpus", 2), ("gpus", 100.5), ("hours", 0), ("hours", 1000),
                                         ("load", -1.0), ("cap_factor", 0.0), ("grace_minutes", -5.0),
                                         ("job_gpus", 0), ("seed", -1)])
def test_bad_input_is_refused_with_its_name(name, value):
    with pytest.raises(ParameterError, match=name):
        chains.derive("gpu-credit-ledger", **{name: value})


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_borrowing_never_loses_to_quotas_and_higher_caps_never_idle_more(seed):
    r = [chains.derive("gpu-credit-ledger", seed=seed, cap_factor=f) for f in (0.8, 1.0, 1.5)]
    assert all(x["util_static"] <= x["util_borrowing"] for x in r)
    assert r[0]["util_capped"] <= r[1]["util_capped"] <= r[2]["util_capped"] <= r[2]["util_borrowing"]


def test_a_lighter_load_leaves_quotas_further_behind():
    lo, hi = (chains.derive("gpu-credit-ledger", load=x) for x in (0.8, 1.5))
    assert lo["util_borrowing"] - lo["util_static"] > 0 and hi["util_borrowing"] > lo["util_borrowing"]


def test_the_chain_carries_its_day_and_the_exercise_reads_the_fleet():
    p = chapter.SPEC.check(gpus=1024, hours=48)
    ch = chapter.compute(p)
    assert len(ch.data["day"]) == len(ch.data["run"]["borrow"]) == 48
    assert chapter.exercises(p, ch)["ex3-day"].m == 1024 * 24
