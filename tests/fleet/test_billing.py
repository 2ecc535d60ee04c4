"""utils/fleet/billing.py on real SQLite files: exactly-once ingest under concurrent writers, the watermark, the
month close, Decimal money, and the six faults, each injected into a month of traffic and caught by the
reconciliation against the engines' counters."""
import threading
from decimal import Decimal

import pytest

from utils.fleet.billing import FAULTS, MONTH, T0, Event, Pipeline, counters, money, month_end, month_of, owed, traffic, trial

END = month_end(MONTH)


@pytest.fixture
def db(tmp_path):
    return tmp_path / "billing.db"


@pytest.fixture(scope="module")
def trials(tmp_path_factory):
    """Every fault, defended and not, each on its own fresh SQLite file, run once for the module."""
    d = tmp_path_factory.mktemp("trials")
    return {(f, ok): trial(d / f"{f}-{ok}.db", f, defended=ok, n_requests=100, seed=0)
            for f in FAULTS for ok in (True, False) if f != "none" or ok}


def test_month_helpers():
    assert month_of(T0) == MONTH and month_of(END - 1) == MONTH and month_of(END) == "2026-12"
    assert month_end("2026-12") == month_end("2026-11") + 31 * 86400


def test_money_is_decimal_priced_once_and_a_float_price_is_refused(db):
    assert money(1_000_000, Decimal("2.50")) == Decimal("2.50")
    assert money(1, Decimal("2.50")) == Decimal("0.00") and money(2000, Decimal("2.50")) == Decimal("0.01")
    with pytest.raises(TypeError, match="float"):
        Pipeline(db, price_per_mtok=2.5)


def test_a_healthy_month_reconciles_to_zero_and_bills_what_is_owed(trials):
    r = trials["none", True]
    rec = r["recon"]
    assert rec.clean and rec.billed == r["owed"] and r["amount"] == r["owed_amount"]
    assert sum(rec.counters.values()) == rec.billed + rec.waste        # the retried attempts: platform cost


# --- the six faults: each injected, each seen by the reconciliation, each defended ---------------------------
def test_duplicates_are_ignored_by_the_key_and_counted_without_it(trials):
    good, bad = trials["duplicates", True], trials["duplicates", False]
    assert good["recon"].clean and good["billed"] == good["owed"] and good["recon"].duplicates > 0
    assert bad["billed"] > bad["owed"] and all(m < 0 for m in bad["recon"].missing.values())   # received > ran


def test_drops_show_as_missing_until_the_outbox_is_replayed(trials):
    good, bad = trials["drops", True], trials["drops", False]
    assert good["recon"].clean and good["billed"] == good["owed"]
    missing = sum(bad["recon"].missing.values())
    assert missing > 0 and bad["billed"] < bad["owed"]


def test_late_events_are_booked_next_month_and_named_in_their_own(trials):
    good, bad = trials["late", True], trials["late", False]
    rec = good["recon"]
    assert rec.late > 0 and rec.billed == good["owed"] - rec.late and not any(rec.missing.values())
    assert rec.over == 0
    with Pipeline(good["path"], clock=lambda: month_end("2026-12") + 86400) as pipe:
        december = pipe.close("2026-12")
        assert sum(n for n, _ in december.values()) == rec.late            # billed once, a month later
        assert pipe.reconcile("2026-12", {}).late_in == rec.late
        assert pipe.close(MONTH) == good["invoice"]                         # the closed month is unchanged
    assert sum(bad["recon"].missing.values()) > 0 and bad["recon"].late == 0   # discarded: money lost


def test_a_fast_clock_moves_usage_into_next_month_unless_bounded(trials):
    good, bad = trials["clock-skew", True], trials["clock-skew", False]
    assert good["recon"].clean and good["recon"].skewed > 0 and good["billed"] == good["owed"]
    m = bad["recon"].missing
    assert m["eng-a"] == 0 and m["eng-b"] > 0 and bad["billed"] < bad["owed"]


def test_retried_attempts_are_platform_cost_not_the_tenants(trials):
    good, bad = trials["retries", True], trials["retries", False]
    assert good["recon"].clean and good["recon"].waste > 0 and good["billed"] == good["owed"]
    assert bad["recon"].over == good["recon"].waste == bad["billed"] - bad["owed"]


def test_gateway_and_engine_tokens_are_never_added(trials):
    good, bad = trials["double-count", True], trials["double-count", False]
    assert good["recon"].clean and good["billed"] == good["owed"]
    waste = good["recon"].waste
    assert bad["billed"] == 2 * bad["owed"] + waste and bad["recon"].over == bad["owed"] + waste


@pytest.mark.parametrize("fault", FAULTS[1:])
def test_every_fault_costs_money_undefended_and_none_defended(trials, fault):
    good, bad = trials[fault, True], trials[fault, False]
    assert bad["amount"] != bad["owed_amount"]
    assert good["billed"] + good["recon"].late == good["owed"]


# --- ingest, the watermark and the close ----------------------------------------------------------------
def ev(i, source="engine", tokens=100, t=T0 + 3600, attempt=1):
    return Event(source, f"req-{i}", attempt, "eng-a", "acme", tokens, t)


def test_ingest_is_exactly_once_per_key(db):
    with Pipeline(db, clock=lambda: T0 + 3602) as pipe:
        assert pipe.ingest(ev(1)) == "new" and pipe.ingest(ev(1)) == "duplicate"
        assert pipe.ingest(ev(1, source="gateway")) == "new"          # another source, another key


def test_the_month_cannot_close_before_the_watermark(db):
    now = [END + 3600]
    with Pipeline(db, clock=lambda: now[0], lateness_s=86400) as pipe:
        with pytest.raises(ValueError, match="watermark"):
            pipe.close(MONTH)
        now[0] = END + 86400
        assert pipe.close(MONTH) == {}


def test_bad_events_and_options_are_refused(db):
    with Pipeline(db, clock=lambda: T0) as pipe:
        for bad, match in ((ev(1, tokens=-1), "tokens"), (ev(1, attempt=0), "attempt"),
                           (ev(1, source="queue"), "source"), (ev(1, tokens=1.5), "tokens")):
            with pytest.raises(ValueError, match=match):
                pipe.ingest(bad)
    with pytest.raises(ValueError, match="policy"):
        Pipeline(db, policy="sum-everything")


def test_concurrent_writers_store_each_key_once(db):
    """Eight threads, each its own connection, deliver overlapping slices of the same events."""
    events = [e for i in range(150) for e in (ev(i), ev(i, source="gateway"))]
    barrier = threading.Barrier(8, timeout=10)
    answers = [[] for _ in range(8)]
    Pipeline(db, clock=lambda: T0 + 3602).close_db()

    def work(w):
        with Pipeline(db, clock=lambda: T0 + 3602) as pipe:
            barrier.wait()
            for e in events[w * 30: w * 30 + 120]:          # each event reaches up to four writers
                answers[w].append((e.key, pipe.ingest(e)))

    threads = [threading.Thread(target=work, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not any(t.is_alive() for t in threads)
    new = [k for a in answers for k, s in a if s == "new"]
    assert sorted(new) == sorted({k for a in answers for k, _ in a})       # every key stored exactly once
    with Pipeline(db, clock=lambda: END + 86400) as pipe:
        n = pipe.db.execute("SELECT COUNT(*), SUM(tokens) FROM events WHERE source = 'engine'").fetchone()
        delivered = pipe.db.execute("SELECT SUM(n) FROM deliveries").fetchone()[0]
        assert n == (150, 150 * 100) and delivered == sum(len(a) for a in answers)
        assert sum(t for t, _ in pipe.close(MONTH).values()) == 150 * 100


def test_counters_and_owed_follow_the_traffic():
    reqs = traffic(50, seed=3)
    assert sum(counters(reqs).values()) >= owed(reqs) > 0
