"""utils/fleet/ledger.py against hostile callers: a key binds its request (a reuse with another amount, team
or job is refused, not replayed), hostile names and amounts are refused with nothing posted, and four
processes debiting one SQLite file, one killed mid-debit (SIGKILL), leave the book balanced, no team below
zero and every acknowledged debit posted once."""

import pytest
from writers import writers_one_killed

from utils.fleet.ledger import Ledger, gpu_hours

T = 86400 * 20_000


@pytest.fixture
def led(tmp_path):
    with Ledger(tmp_path / "l.db", clock=lambda: T) as l:
        l.open_team("vision")
        l.open_team("speech")
        l.grant("vision", gpu_hours(10), key="g-v")
        l.grant("speech", gpu_hours(10), key="g-s")
        yield l


def test_a_key_reused_with_another_amount_or_team_is_refused_not_replayed(led):
    first = led.debit("vision", 900, key="job-7:tick-1")
    assert first.status == "posted"
    assert led.debit("vision", 900, key="job-7:tick-1").status == "replayed"
    for team, amount in (("vision", 4500), ("speech", 900)):
        r = led.debit(team, amount, key="job-7:tick-1")
        assert r.status == "conflict" and r.txn is None
    assert led.grant("vision", 900, key="job-7:tick-1").status == "conflict"      # another kind of request
    assert led.balance("vision") == gpu_hours(10) - 900 and led.balance("speech") == gpu_hours(10)
    assert led.audit()["unbalanced_txns"] == 0


def test_a_job_key_reused_for_another_job_or_size_is_refused(led):
    assert led.start_job("j1", "vision", gpus=2, grace_s=60, key="start").status == "posted"
    assert led.start_job("j1", "vision", gpus=2, grace_s=60, key="start").status == "replayed"
    assert led.start_job("j2", "vision", gpus=4, grace_s=60, key="start").status == "conflict"
    assert led.meter("j1", 10, key="m1") == "running"
    with pytest.raises(ValueError, match="another request"):
        led.meter("j1", 20, key="m1")
    assert led.balance("vision") == gpu_hours(10) - 120 - 20


@pytest.mark.parametrize("team, amount, key", [
    (None, 10, "k"), ("", 10, "k"), ("\ud800", 10, "k"), ("vision", 10, None), ("vision", 10, ""),
    ("vision", 10, "\udc00"), ("vision", float("nan"), "k"), ("vision", 10.0, "k"), ("vision", True, "k"),
    ("vision", 0, "k"), ("vision", -5, "k"), ("vision", 2 ** 70, "k"), ("nobody", 10, "k")])
def test_hostile_debits_are_refused_and_nothing_is_posted(led, team, amount, key):
    before = led.audit()
    with pytest.raises((ValueError, KeyError)):
        led.debit(team, amount, key=key)
    assert led.audit() == before


WRITER = r"""
import sys
from utils.fleet.ledger import Ledger
path, me, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with Ledger(path, clock=lambda: 86400 * 20000) as led:
    for i in range(n):
        key = f"d-{i % 200}"                      # every writer retries the same 200 debits
        r = led.debit("vision", 7 + i % 200, key=key)
        print(key, r.status, r.txn, flush=True)
"""


def test_four_processes_one_killed_mid_debit_the_book_balances(tmp_path):
    path = tmp_path / "shared.db"
    with Ledger(path, clock=lambda: T) as l:
        l.open_team("vision")
        l.grant("vision", 30_000, key="g")
    acked = writers_one_killed(WRITER, path, victim_lines=40, survivor_ops=200)
    with Ledger(path, clock=lambda: T) as l:
        audit = l.audit()
        assert l.db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        txn_of = dict(l.db.execute("SELECT key, id FROM txns WHERE kind = 'debit'"))
        spent = l.balance("usage")
    assert audit["unbalanced_txns"] == 0 and audit["total"] == 0 and audit["negative"] == []
    assert all(status in ("posted", "replayed") and int(txn) == txn_of[key] for key, status, txn in acked)
    assert len(txn_of) == 200 and spent == sum(7 + i for i in range(200))       # each debit once
