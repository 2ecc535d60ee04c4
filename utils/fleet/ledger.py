"""A GPU credit ledger over SQLite (standard library only): double entry, one transaction per debit,
idempotency keys under a UNIQUE constraint, a spend-rate cap per team, and a scheduler's three calls.

    led = Ledger(path, clock=fake_clock)       # one Ledger (one connection) per thread
    led.open_team("vision", daily_cap_gpu_hours=2000)
    led.grant("vision", gpu_hours(500), key="grant-2026-12")
    led.debit("vision", 8 * 3600, key="job-7:tick-1")        # -> Posted(status, txn, balance)
    led.start_job("job-7", "vision", gpus=8, grace_s=600, key="start-job-7")
    led.meter("job-7", seconds=300, key="job-7:tick-2")      # charges the team, else the job's hold
    led.finish_job("job-7", key="finish-job-7")              # the unused hold goes back

The rules, stated once (tests/fleet/test_ledger.py holds each of them):
- Credits are whole GPU-seconds (int): sums are exact and SQLite's SUM over INTEGER stays an integer.
- Double entry. Every transaction writes entries that sum to zero: a grant moves credits from the
  issuer `mint` (the only account allowed below zero) to a team, a debit from the team to `usage`. So the
  sum over all accounts is zero after every commit, and mint's deficit equals everything ever granted.
- The debit path is one transaction: BEGIN IMMEDIATE takes SQLite's write lock before the balance is
  read, so the check (balance, the day's spend against the cap) and the insert of the pair of entries
  are one atomic step. Two writers cannot both read the same balance and both spend it.
- Every transaction carries an idempotency key, UNIQUE in `txns`, stored with the fingerprint of its
  request (the call, the team or job, the amount: Stripe's rule, and the API chapter's request hash). A
  retried call with the same request finds its key and returns the first answer (`replayed`), nothing
  posted; the same key with another request (another amount, team, job or call) is refused (`conflict`,
  nothing posted; `meter` raises ValueError): a key never means two things. A refused debit stores
  nothing, so a retry after a top-up can post. The constraint also fails a racing duplicate on a store
  without a write lock.
- Validation before the transaction: amounts are whole GPU-seconds from 1 to MAX_AMOUNT (not bools, not
  floats, not NaN), keys and names UTF-8 strings of 1 to MAX_NAME characters; anything else raises
  ValueError (an unknown team KeyError) with nothing posted. Processes may share one file: SQLite's WAL
  and BEGIN IMMEDIATE make each call one transaction, so a process killed mid-call posts all of it or none
  (tests/fleet/test_ledger_adversarial.py kills one).
- Spend rate: a team's debits in one UTC day may not exceed its cap in GPU-hours a day.
- The empty account: a job cannot start unless the team can fund a hold of gpus x grace_s (moved into
  an escrow account for the job). A running job is metered; when the team's balance (or its cap) cannot
  pay a tick, the tick is paid from the hold and the job is told to checkpoint and stop (`draining`);
  when the hold is spent it is `stopped`. No balance ever goes below zero, and the job is never killed
  without the checkpoint window it paid for up front.

Chapters: gpu-credit-ledger.
"""
from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass

from utils.components.idempotent_api import checked_name

MAX_AMOUNT = 2 ** 53          # GPU-seconds in one call: far beyond any fleet, and SUM stays exact
MAX_NAME = 255               # characters of a key, team or job name
SECONDS_PER_HOUR = 3600
SECONDS_PER_DAY = 86400
MINT, USAGE = "mint", "usage"

SCHEMA = """
CREATE TABLE IF NOT EXISTS accounts (
    name TEXT PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('issuer', 'team', 'sink', 'escrow')),
    daily_cap INTEGER                                  -- GPU-seconds a day, NULL = no cap
);
CREATE TABLE IF NOT EXISTS txns (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL UNIQUE,                          -- the idempotency key
    request TEXT NOT NULL,                             -- the fingerprint of the request the key was used for
    kind TEXT NOT NULL,
    team TEXT,
    day INTEGER NOT NULL,                              -- UTC day number, for the spend-rate rule
    amount INTEGER NOT NULL CHECK (amount > 0)
);
CREATE TABLE IF NOT EXISTS entries (
    txn INTEGER NOT NULL REFERENCES txns(id),
    account TEXT NOT NULL REFERENCES accounts(name),
    amount INTEGER NOT NULL                            -- + credit, - debit, and a txn's entries sum to zero
);
CREATE INDEX IF NOT EXISTS entries_by_account ON entries(account);
CREATE INDEX IF NOT EXISTS txns_by_team_day ON txns(team, day, kind);
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY,
    team TEXT NOT NULL,
    gpus INTEGER NOT NULL CHECK (gpus >= 1),
    state TEXT NOT NULL CHECK (state IN ('running', 'draining', 'stopped', 'finished'))
);
"""


def gpu_hours(h) -> int:
    """GPU-hours as whole GPU-seconds (the ledger's unit)."""
    s = h * SECONDS_PER_HOUR
    if s != int(s):
        raise ValueError(f"{h!r} GPU-hours is not a whole number of GPU-seconds")
    return int(s)


@dataclass(frozen=True)
class Posted:
    status: str            # posted | replayed | conflict | insufficient | over_cap
    txn: int | None        # the transaction id (the first one, for a replay)
    balance: int           # the team's balance after, GPU-seconds


class Ledger:
    def __init__(self, path, *, clock=time.time, busy_timeout_s: float = 10.0):
        self.path, self.clock = str(path), clock
        # isolation_level=None: no implicit transactions; every write below opens its own BEGIN IMMEDIATE.
        self.db = sqlite3.connect(self.path, timeout=busy_timeout_s, isolation_level=None)
        self.db.execute(f"PRAGMA busy_timeout={int(busy_timeout_s * 1000)}")   # wait for the lock, do not fail
        self.db.execute("PRAGMA journal_mode=WAL")        # readers never block the one writer
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("PRAGMA foreign_keys=ON")
        for stmt in SCHEMA.split(";"):
            if stmt.strip():
                self.db.execute(stmt)
        self.db.execute("INSERT OR IGNORE INTO accounts VALUES (?, 'issuer', NULL), (?, 'sink', NULL)",
                        (MINT, USAGE))

    def close(self):
        self.db.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # --- plumbing -------------------------------------------------------------------------------
    def _tx(self):
        return _Immediate(self.db)

    def _day(self) -> int:
        return int(self.clock() // SECONDS_PER_DAY)

    def balance(self, account: str) -> int:
        return self.db.execute("SELECT COALESCE(SUM(amount), 0) FROM entries WHERE account = ?",
                               (account,)).fetchone()[0]

    def balances(self) -> dict:
        return dict(self.db.execute("SELECT a.name, COALESCE(SUM(e.amount), 0) FROM accounts a "
                                    "LEFT JOIN entries e ON e.account = a.name GROUP BY a.name"))

    def spent_today(self, team: str) -> int:
        return self.db.execute("SELECT COALESCE(SUM(amount), 0) FROM txns WHERE team = ? AND day = ? "
                               "AND kind IN ('debit', 'meter')", (team, self._day())).fetchone()[0]

    def _replay(self, key: str, team: str | None, request: str):
        """None for a new key; `replayed` for the same request again; `conflict` for another request."""
        row = self.db.execute("SELECT id, request FROM txns WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        bal = self.balance(team) if team else 0
        return Posted("replayed", row[0], bal) if row[1] == request else Posted("conflict", None, bal)

    def _post(self, key, kind, team, moves, request: str) -> int:
        """Insert one transaction and its entries: moves = [(account, amount)], summing to zero."""
        assert sum(a for _, a in moves) == 0, "a transaction's entries must sum to zero"
        amount = sum(a for _, a in moves if a > 0)
        cur = self.db.execute("INSERT INTO txns (key, request, kind, team, day, amount) VALUES (?, ?, ?, ?, ?, ?)",
                              (key, request, kind, team, self._day(), amount))
        self.db.executemany("INSERT INTO entries VALUES (?, ?, ?)", [(cur.lastrowid, a, m) for a, m in moves])
        return cur.lastrowid

    # --- accounts and grants ----------------------------------------------------------------------
    def open_team(self, team: str, daily_cap_gpu_hours=None):
        cap = None if daily_cap_gpu_hours is None else gpu_hours(daily_cap_gpu_hours)
        with self._tx():
            self.db.execute("INSERT OR IGNORE INTO accounts VALUES (?, 'team', ?)", (team, cap))

    def grant(self, team: str, amount: int, *, key: str) -> Posted:
        _check_amount(amount)
        req = _request("grant", key=key, team=team, amount=amount)
        with self._tx():
            if (r := self._replay(key, team, req)) is not None:
                return r
            self._cap(team)                                # an unknown team: KeyError, nothing posted
            txn = self._post(key, "grant", team, [(MINT, -amount), (team, amount)], req)
            return Posted("posted", txn, self.balance(team))

    # --- the debit path: one transaction ------------------------------------------------------------
    def debit(self, team: str, amount: int, *, key: str) -> Posted:
        """Spend `amount` GPU-seconds of `team`'s credit, once per key, never below zero or over the cap."""
        _check_amount(amount)
        req = _request("debit", key=key, team=team, amount=amount)
        with self._tx():                                   # BEGIN IMMEDIATE: the write lock, before the read
            if (r := self._replay(key, team, req)) is not None:
                return r
            cap = self._cap(team)
            bal = self.balance(team)
            if bal < amount:
                return Posted("insufficient", None, bal)
            if cap is not None and self.spent_today(team) + amount > cap:
                return Posted("over_cap", None, bal)
            txn = self._post(key, "debit", team, [(team, -amount), (USAGE, amount)], req)
            return Posted("posted", txn, bal - amount)

    def debit_racy(self, team: str, amount: int, *, key: str, between=lambda: None) -> Posted:
        """The bug this module exists to avoid, for the tests and the page: the balance is read in one
        autocommit statement and the entries written in a later transaction, so two writers can both
        pass the check. `between` runs in the gap (a test puts a barrier there)."""
        bal = self.balance(team)
        if bal < amount:
            return Posted("insufficient", None, bal)
        between()
        with self._tx():
            txn = self._post(key, "debit", team, [(team, -amount), (USAGE, amount)],
                             _request("debit", key=key, team=team, amount=amount))
        return Posted("posted", txn, bal - amount)

    def _cap(self, team: str):
        row = self.db.execute("SELECT daily_cap FROM accounts WHERE name = ? AND kind = 'team'", (team,)).fetchone()
        if row is None:
            raise KeyError(f"no team account {team!r}")
        return row[0]

    def _over_cap(self, team: str, amount: int) -> bool:
        cap = self._cap(team)
        return cap is not None and self.spent_today(team) + amount > cap

    # --- the scheduler's calls ---------------------------------------------------------------------------
    def start_job(self, job: str, team: str, *, gpus: int, grace_s: int, key: str) -> Posted:
        """Admit a job only if the team can fund its checkpoint window: gpus x grace_s into escrow."""
        _check_amount(gpus)
        _check_amount(grace_s)
        hold = gpus * grace_s
        _check_amount(hold)
        req = _request("start", key=key, job=job, team=team, gpus=gpus, grace_s=grace_s)
        with self._tx():
            if (r := self._replay(key, team, req)) is not None:
                return r
            bal = self.balance(team)
            if bal < hold:
                return Posted("insufficient", None, bal)
            escrow = f"hold:{job}"
            self.db.execute("INSERT INTO accounts VALUES (?, 'escrow', NULL)", (escrow,))
            self.db.execute("INSERT INTO jobs VALUES (?, ?, ?, 'running')", (job, team, gpus))
            txn = self._post(key, "hold", team, [(team, -hold), (escrow, hold)], req)
            return Posted("posted", txn, bal - hold)

    def meter(self, job: str, seconds: int, *, key: str) -> str:
        """Charge `seconds` of the job's GPUs. Returns the job's state: running while the team pays;
        draining once the hold pays (checkpoint now); stopped when the hold is spent."""
        _check_amount(seconds)
        req = _request("meter", key=key, job=job, seconds=seconds)
        with self._tx():
            team, gpus, state = self._job(job)
            r = self._replay(key, None, req)
            if r is not None and r.status == "conflict":
                raise ValueError(f"key {key!r} was already used for another request: nothing metered")
            if r is not None or state in ("stopped", "finished"):
                return state
            amount, escrow = gpus * seconds, f"hold:{job}"
            if state == "running" and self.balance(team) >= amount and not self._over_cap(team, amount):
                self._post(key, "meter", team, [(team, -amount), (USAGE, amount)], req)
                return "running"
            paid = min(amount, self.balance(escrow))
            if paid:
                self._post(key, "meter_hold", team, [(escrow, -paid), (USAGE, paid)], req)
            state = "draining" if self.balance(escrow) > 0 else "stopped"
            self.db.execute("UPDATE jobs SET state = ? WHERE id = ?", (state, job))
            return state

    def finish_job(self, job: str, *, key: str) -> Posted:
        """The job ended (or stopped): what is left of its hold goes back to the team."""
        req = _request("finish", key=key, job=job)
        with self._tx():
            team, _, _ = self._job(job)
            if (r := self._replay(key, team, req)) is not None:
                return r
            escrow = f"hold:{job}"
            left = self.balance(escrow)
            self.db.execute("UPDATE jobs SET state = 'finished' WHERE id = ? AND state != 'stopped'", (job,))
            txn = self._post(key, "release", team, [(escrow, -left), (team, left)], req) if left else None
            return Posted("posted", txn, self.balance(team))

    def _job(self, job: str) -> tuple:
        row = self.db.execute("SELECT team, gpus, state FROM jobs WHERE id = ?", (job,)).fetchone()
        if row is None:
            raise KeyError(f"no job {job!r}")
        return row

    def job_state(self, job: str) -> str:
        return self.db.execute("SELECT state FROM jobs WHERE id = ?", (job,)).fetchone()[0]

    # --- the invariants a test (or an auditor) checks ---------------------------------------------------
    def audit(self) -> dict:
        """Every transaction sums to zero; so does the whole book; no account but the issuer is negative."""
        bad_txns = self.db.execute("SELECT COUNT(*) FROM (SELECT txn FROM entries GROUP BY txn "
                                   "HAVING SUM(amount) != 0)").fetchone()[0]
        bal = self.balances()
        negative = sorted(a for a, b in bal.items() if b < 0 and a != MINT)
        return dict(unbalanced_txns=bad_txns, total=sum(bal.values()), negative=negative,
                    granted=-bal.get(MINT, 0), used=bal.get(USAGE, 0),
                    txns=self.db.execute("SELECT COUNT(*) FROM txns").fetchone()[0])


class _Immediate:
    """BEGIN IMMEDIATE ... COMMIT (ROLLBACK on an exception): the one write transaction of a call."""

    def __init__(self, db):
        self.db = db

    def __enter__(self):
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type, *rest):
        self.db.execute("ROLLBACK" if exc_type else "COMMIT")


def _check_amount(x):
    if not isinstance(x, int) or isinstance(x, bool) or not 0 < x <= MAX_AMOUNT:
        raise ValueError(f"an amount must be a whole number of GPU-seconds from 1 to {MAX_AMOUNT}, got {x!r}")


def _name(what: str, v) -> str:
    return checked_name(what, v, MAX_NAME)


def _request(call: str, *, key, **fields) -> str:
    """The fingerprint a key is bound to: the call and its arguments, canonical (names checked here)."""
    _name("key", key)
    for what in ("team", "job"):
        if what in fields:
            _name(what, fields[what])
    return call + "".join(f"|{k}={v}" for k, v in sorted(fields.items()))


# --- the capacity arithmetic: allocation by share, with borrowing ----------------------------------------
def allocate(capacity: int, shares: dict, demands: dict) -> dict:
    """Weighted max-min fair allocation of `capacity` GPUs (water-filling): every team gets its demand or
    its weighted share of what is left, whichever is smaller; what a team does not use is lent to the
    teams that still want more, in proportion to their shares. Whole GPUs: the remainder goes by largest
    fractional part (ties by name), so the result is deterministic and sums to min(capacity, demand)."""
    want = {t: int(demands.get(t, 0)) for t in shares}
    if capacity < 0 or any(v < 0 for v in want.values()) or any(s <= 0 for s in shares.values()):
        raise ValueError("capacity and demands must be >= 0 and shares > 0")
    give = {t: 0.0 for t in shares}
    active, left = {t for t in shares if want[t] > 0}, float(capacity)
    while active and left > 1e-9:
        w = sum(shares[t] for t in active)
        full = {t for t in active if want[t] - give[t] <= left * shares[t] / w}
        if not full:
            for t in active:
                give[t] += left * shares[t] / w
            break
        for t in full:
            left -= want[t] - give[t]
            give[t] = float(want[t])
        active -= full
    whole = {t: int(give[t] + 1e-9) for t in shares}
    spare = min(capacity, sum(want.values())) - sum(whole.values())
    for t in sorted(shares, key=lambda t: (-(give[t] - whole[t]), t))[:spare]:
        whole[t] += 1
    return whole


def static_quota(capacity: int, shares: dict, demands: dict) -> dict:
    """Static quotas, for contrast: a team gets at most its share of the fleet, and idle quota idles."""
    w = sum(shares.values())
    return {t: min(int(demands.get(t, 0)), int(capacity * s / w)) for t, s in shares.items()}


# --- the contract, small and in-process (the chapter's check; the tests run the full set) ------------------
def contract_scenarios(path) -> dict:
    """A key reused with another amount, team or call, hostile names and amounts, on a fresh file at
    `path`: {scenarios, held}. The full set (processes killed mid-debit) is the adversarial test file's."""
    with Ledger(path, clock=lambda: 86400 * 20_000) as led:
        for team in ("vision", "speech"):
            led.open_team(team)
            led.grant(team, gpu_hours(10), key=f"g-{team}")
        held = led.debit("vision", 900, key="tick-1").status == "posted"
        held += led.debit("vision", 900, key="tick-1").status == "replayed"
        before = led.audit()
        reused = [led.debit("vision", 4500, key="tick-1"), led.debit("speech", 900, key="tick-1"),
                  led.grant("vision", 900, key="tick-1")]
        held += sum(r.status == "conflict" for r in reused) == len(reused) and led.audit() == before
        hostile = [(None, 10, "k"), ("", 10, "k"), ("\ud800", 10, "k"), ("vision", 10, None), ("vision", 10.0, "k"),
                   ("vision", float("nan"), "k"), ("vision", True, "k"), ("vision", -5, "k"), ("nobody", 10, "k")]
        for team, amount, key in hostile:
            try:
                led.debit(team, amount, key=key)
            except (ValueError, KeyError):
                held += led.audit() == before
    return dict(scenarios=3 + len(hostile), held=held)
