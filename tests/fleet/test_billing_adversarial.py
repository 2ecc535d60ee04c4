"""utils/fleet/billing.py against hostile producers: an event the store did not keep is never answered as a
duplicate, a key reused with other usage is refused, an epoch timestamp still lands on an invoice, and four
writer processes on one SQLite file, one killed mid-ingest (SIGKILL), leave every acknowledged event stored
exactly once."""
import sqlite3
from dataclasses import replace

import pytest
from writers import writers_one_killed

from utils.fleet.billing import MONTH, T0, Event, Pipeline, month_end

END = month_end(MONTH)
GOOD = Event("engine", "req-1", 1, "eng-a", "acme", 800, T0 + 100)


@pytest.fixture
def pipe(tmp_path):
    now = [T0 + 1000]
    with Pipeline(tmp_path / "b.db", clock=lambda: now[0]) as p:
        p.now = now
        yield p


@pytest.mark.parametrize("field, value", [
    ("tenant", None), ("tenant", ""), ("request", None), ("engine", None), ("engine", ""), ("tenant", 7),
    ("tenant", "\ud800"), ("request", "r" * 10_000), ("tokens", None), ("tokens", float("nan")),
    ("tokens", 2.0), ("tokens", True), ("tokens", -1), ("attempt", True), ("attempt", 0),
    ("event_time", None), ("event_time", float("nan")), ("event_time", 1.5), ("event_time", -1),
    ("source", "billing")])
def test_an_invalid_event_is_refused_and_nothing_is_stored(pipe, field, value):
    with pytest.raises(ValueError):
        pipe.ingest(replace(GOOD, **{field: value}))
    assert pipe.db.execute("SELECT COUNT(*) FROM events").fetchone()[0] == 0
    assert pipe.db.execute("SELECT COUNT(*) FROM deliveries").fetchone()[0] == 0
    assert pipe.ingest(GOOD) == "new"                     # the key is still free for the fixed event


def test_a_key_reused_with_other_usage_is_refused_not_called_a_duplicate(pipe):
    assert pipe.ingest(GOOD) == "new" and pipe.ingest(GOOD) == "duplicate"
    for other in (replace(GOOD, tokens=900), replace(GOOD, tenant="beta"), replace(GOOD, engine="eng-b")):
        with pytest.raises(ValueError, match="another event"):
            pipe.ingest(other)
    assert pipe.db.execute("SELECT tokens, tenant FROM events").fetchall() == [(800, "acme")]
    assert pipe.db.execute("SELECT n FROM deliveries").fetchall() == [(2,)]


def test_an_event_stamped_at_the_epoch_lands_on_the_invoice_of_the_month_it_arrived(pipe):
    pair = [Event("engine", "r-0", 1, "eng-a", "acme", 500, 0), Event("gateway", "r-0", 1, "eng-a", "acme", 500, 0)]
    assert [pipe.ingest(e) for e in pair] == ["new", "new"]
    pipe.now[0] = END + pipe.lateness_s
    assert pipe.close(MONTH) == {"acme": (500, pipe.invoice(MONTH)["acme"][1])}
    rec = pipe.reconcile("1970-01", {"eng-a": 500})
    assert rec.late == 500 and rec.missing == {"eng-a": 0}      # named as late in its own month


WRITER = r"""
import sys
from utils.fleet.billing import Event, Pipeline, T0
path, me, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with Pipeline(path, clock=lambda: T0 + 5000) as p:
    for i in range(n):
        for rid in (f"own-{me}-{i}", f"shared-{i}"):         # its own events, and one every writer sends
            ev = Event("engine", rid, 1, "eng-a", f"t{i % 3}", 10 + i, T0 + i)
            print(ev.key, p.ingest(ev), flush=True)
"""


def test_four_writer_processes_one_killed_mid_ingest_every_acknowledged_event_stored_once(tmp_path):
    path = tmp_path / "shared.db"
    Pipeline(path).close_db()                           # the schema, once, before the writers race
    # the victim is killed mid-ingest; the lines it wrote before dying are acknowledged events too
    acked = writers_one_killed(WRITER, path, victim_lines=60, survivor_ops=150, keep_buffered=True)
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    stored = dict(db.execute("SELECT key, tokens FROM events"))
    keys = {k for k, _ in acked}
    assert keys <= set(stored)                            # nothing acknowledged is missing
    news = [k for k, s in acked if s == "new"]
    assert len(news) == len(set(news))                    # no key answered "new" twice
    assert len(keys) - len(news) <= 1                     # but the one the victim committed, unprinted
    shared = [k for k in keys if k.startswith("engine:shared-")]
    assert len(shared) == 150
    orphan = db.execute("SELECT COUNT(*) FROM deliveries d LEFT JOIN events e ON e.key = d.key "
                        "WHERE e.key IS NULL").fetchone()[0]
    counted = db.execute("SELECT COUNT(*) FROM events e JOIN deliveries d ON d.key = e.key").fetchone()[0]
    assert orphan == 0 and counted == len(stored)         # each stored event has its delivery count
    db.close()
