"""A small resource API for a GPU platform over SQLite (standard library only): four resources, one
state machine, and the three semantics that keep it correct under retries.

    api = ResourceAPI(path_to_sqlite_file)            # clock= a callable returning seconds (tests fake it)
    r = api.handle("POST", "/jobs", {"name": "pretrain", "gpus": 64, "image": "trainer:1"},
                   headers={"Idempotency-Key": "k-1"})                  # 201, r.body["id"]
    api.handle("POST", f"/jobs/{r.body['id']}/cancel")                   # 202 while running: cancelling
    api.handle("GET", "/jobs", query={"limit": 50, "cursor": page.body["next_cursor"]})
    api.advance("jobs", id, "running")                                   # the scheduler's side

The rules, stated once (tests/components/test_idempotent_api.py holds each of them):
- Four resources, `jobs`, `reservations`, `checkpoints`, `endpoints`, share one lifecycle, TRANSITIONS,
  kept as data. A move goes through `advance`, a compare-and-set (`UPDATE ... WHERE state = ?`), so two
  racing writers cannot both move the same row, and an illegal move is refused with 409.
- A create may carry an Idempotency-Key. The key is stored under a UNIQUE constraint in the same
  transaction as the resource, with a SHA-256 hash of the method, path and canonical JSON body, and with
  the response. Same key, same request: the first response again (same status, same id), header
  `Idempotent-Replayed: true`, nothing created. Same key, another request: 422, nothing created. A
  request that fails validation (400) stores nothing, so the client can fix it and retry with the key.
- Keys are kept KEY_RETENTION_S (24 h, Stripe's documented window); after that a key is forgotten and a
  retry creates a second resource: the key protects retries, not replays a day later.
- Cancel answers 200 only when the state it reports is final: a pending resource has nothing running,
  so it goes straight to `cancelled`. A running one must be stopped by its worker, asynchronously, so
  the answer is 202 Accepted with state `cancelling`; the worker's `advance(..., "cancelled")` finishes
  it (or the job ends first: cancelling -> succeeded / failed). A cancel on a cancelling resource is 202
  again, a cancel on a finished one 409: a retried cancel is safe without a key.
- Lists are newest first, keyset-paginated: the cursor is the last id returned, and the next page is
  `WHERE id < cursor ORDER BY id DESC`. Ids only grow (AUTOINCREMENT) and SQLite commits one writer at a
  time, so rows inserted during a scan sort before the cursor and never shift the rows after it: every
  row that matches the filter for the whole scan is returned exactly once. `list_offset` is the
  LIMIT/OFFSET version, kept to show that inserts make it repeat rows and rows leaving the filter make
  it skip them.

The contract for every input `handle` admits (tests/components/test_idempotent_api_adversarial.py feeds each,
and races processes on one file, killing one mid-create):
- Validation at the boundary, before anything is stored: a body is a JSON object of at most MAX_BODY bytes
  whose strings UTF-8 can encode (a lone surrogate cannot), whose numbers are finite and whose integers fit
  SQLite's INTEGER; `id`, `kind` and `state` are the API's (RESERVED): a body that names one is a 400, so
  no answer (201, GET, list, cancel) can report a state other than the stored one. An Idempotency-Key is a
  UTF-8 string of 1 to MAX_KEY characters (Stripe's 255), else 400. An id beyond SQLite's INTEGER is 404;
  a bad limit, cursor or state filter is 400. No input is a 500.
- The key binds its request (Stripe's rule): stored with the request's SHA-256 in the resource's own
  transaction (SQLite WAL, BEGIN IMMEDIATE), so a killed process leaves the key and its resource both or
  neither, and a retry from any process gets the one resource.

Chapters: idempotent-resource-api.
"""
from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import sqlite3
import time
from dataclasses import dataclass, field

KINDS = ("jobs", "reservations", "checkpoints", "endpoints")

# The one state machine: state -> the states it may move to. Terminal states map to nothing.
TRANSITIONS = {
    "pending": frozenset({"running", "cancelled"}),
    "running": frozenset({"succeeded", "failed", "cancelling"}),
    "cancelling": frozenset({"cancelled", "succeeded", "failed"}),   # the job may finish before the stop lands
    "succeeded": frozenset(),
    "failed": frozenset(),
    "cancelled": frozenset(),
}
STATES = tuple(TRANSITIONS)
TERMINAL = frozenset(s for s, nxt in TRANSITIONS.items() if not nxt)

# Required fields of each resource's create body, with their types.
FIELDS = {
    "jobs": {"name": str, "gpus": int, "image": str},
    "reservations": {"gpus": int, "hours": (int, float)},
    "checkpoints": {"job_id": int, "path": str},
    "endpoints": {"model": str, "replicas": int},
}
# Stripe's documented window: keys may be removed once at least 24 hours old, and a key reused after that
# is a new request; results are saved only once the endpoint starts executing, so a request that fails
# validation saves nothing (docs.stripe.com/idempotency, read 2026-12-01). This API follows both rules.
KEY_RETENTION_S = 24 * 3600
MAX_LIMIT = 100
MAX_KEY = 255                   # characters of an Idempotency-Key (Stripe's limit)
MAX_BODY = 64 * 1024            # bytes of a create body as canonical JSON
MAX_INT = 2 ** 63 - 1           # SQLite's INTEGER
RESERVED = ("id", "kind", "state")

SCHEMA = """
CREATE TABLE IF NOT EXISTS resources (
    id INTEGER PRIMARY KEY AUTOINCREMENT,          -- AUTOINCREMENT: an id is never reused, ids only grow
    kind TEXT NOT NULL,
    state TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS resources_kind_id ON resources (kind, id);
CREATE TABLE IF NOT EXISTS idempotency_keys (
    key TEXT NOT NULL UNIQUE,                      -- the constraint that makes a racing duplicate fail
    request_hash TEXT NOT NULL,
    status INTEGER NOT NULL,
    response TEXT NOT NULL,
    created_at REAL NOT NULL
);
"""


@dataclass
class Response:
    status: int
    body: dict
    headers: dict = field(default_factory=dict)


class TransitionError(Exception):
    """A move the state machine does not allow (or a compare-and-set that lost a race)."""


def request_hash(method: str, path: str, body) -> str:
    """SHA-256 of the method, the path and the body as canonical JSON (sorted keys, no spaces), so the
    same request hashes the same whatever its key order."""
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(f"{method} {path}\n{canonical}".encode()).hexdigest()


def encode_cursor(last_id: int) -> str:
    """An opaque cursor: clients pass it back and never build it."""
    return base64.urlsafe_b64encode(json.dumps({"before": last_id}).encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> int:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        value = json.loads(raw)["before"]
    except (ValueError, KeyError, TypeError):
        raise ValueError(f"cursor is not one this API issued: {cursor!r:.80}") from None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_INT:
        raise ValueError(f"cursor is not one this API issued: {cursor!r}")
    return value


def _storable(v, depth: int = 0) -> bool:
    """Can this value be stored as JSON and read back as the same value? UTF-8 strings, finite numbers,
    integers SQLite can hold, nesting of at most 32 levels."""
    if depth > 32:
        return False
    if isinstance(v, str):
        return utf8_encodable(v)
    if isinstance(v, bool) or v is None:
        return True
    if isinstance(v, int):
        return -MAX_INT - 1 <= v <= MAX_INT
    if isinstance(v, float):
        return math.isfinite(v)
    if isinstance(v, list):
        return all(_storable(x, depth + 1) for x in v)
    if isinstance(v, dict):
        return all(isinstance(k, str) and utf8_encodable(k) and _storable(x, depth + 1) for k, x in v.items())
    return False


def utf8_encodable(s: str) -> bool:
    """False for a string UTF-8 cannot encode (a lone surrogate), which SQLite, JSON and a socket refuse."""
    try:
        s.encode()
        return True
    except UnicodeEncodeError:
        return False


def valid_key(key) -> bool:
    """An idempotency key: a UTF-8 string of 1 to MAX_KEY characters (the streaming server's keys too)."""
    return isinstance(key, str) and 1 <= len(key) <= MAX_KEY and utf8_encodable(key)


def checked_name(what: str, v, limit: int = MAX_KEY) -> str:
    """v when it is a UTF-8 string of 1 to `limit` characters, else a ValueError naming `what`: the one check of a
    key or name that the book's stores take (this API's keys, the credit ledger's, the token limiter's names)."""
    if not isinstance(v, str) or not 1 <= len(v) <= limit:
        raise ValueError(f"{what} must be a string of 1 to {limit} characters, got {v!r:.80}")
    if not utf8_encodable(v):
        raise ValueError(f"{what} is not valid UTF-8 (a lone surrogate): {v!r:.80}")
    return v


def validate_key(key) -> str | None:
    """The 400 message for a bad Idempotency-Key, or None (no key is fine)."""
    if key is not None and not valid_key(key):
        return f"Idempotency-Key must be a UTF-8 string of 1 to {MAX_KEY} characters"
    return None


def validate_body(kind: str, body) -> str | None:
    """The 400 message for a bad create body, or None."""
    if not isinstance(body, dict):
        return "body must be a JSON object"
    taken = [k for k in RESERVED if k in body]
    if taken:
        return f"{', '.join(taken)} are set by the API, not the body"
    if not _storable(body):
        return "body must hold UTF-8 strings, finite numbers and integers of at most 64 bits"
    if len(json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()) > MAX_BODY:
        return f"body must be at most {MAX_BODY} bytes"
    for name, typ in FIELDS[kind].items():
        v = body.get(name)
        if v is None:
            return f"{name} is required"
        if isinstance(v, bool) or not isinstance(v, typ):
            return f"{name} has the wrong type"
        if name in ("gpus", "replicas", "hours") and v <= 0:
            return f"{name} must be > 0"
    return None


_ROUTE = re.compile(r"^/(?P<kind>[a-z]+)(?:/(?P<id>\d+)(?P<cancel>/cancel)?)?$")


class ResourceAPI:
    def __init__(self, path, *, clock=time.time, busy_timeout_s: float = 5.0):
        self.path, self.clock, self.busy_timeout_s = str(path), clock, busy_timeout_s
        # A connection held open for the API's life: when the last connection to a WAL database closes,
        # SQLite checkpoints and removes the log, which would make every call pay a checkpoint.
        self._keeper = sqlite3.connect(self.path, timeout=busy_timeout_s, check_same_thread=False)
        self._keeper.execute("PRAGMA journal_mode=WAL")      # readers do not block the one writer
        self._keeper.executescript(SCHEMA)

    def close(self) -> None:
        self._keeper.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def _connect(self) -> sqlite3.Connection:
        # One connection per call: sqlite3 connections are not shared between threads, and each call
        # is one transaction. isolation_level=None: the transactions below are explicit.
        conn = sqlite3.connect(self.path, timeout=self.busy_timeout_s, isolation_level=None)
        conn.execute("PRAGMA synchronous=NORMAL")   # WAL + NORMAL: durable at checkpoints, no fsync per commit
        return _Closing(conn)

    # --- the HTTP surface -----------------------------------------------------------------------
    def handle(self, method: str, path: str, body=None, *, headers=None, query=None) -> Response:
        m = _ROUTE.match(path)
        if not m or m["kind"] not in KINDS:
            return Response(404, {"error": f"no such route: {method} {path}"})
        kind, rid, cancel = m["kind"], m["id"], m["cancel"]
        if rid is not None and int(rid) > MAX_INT:          # no such row can exist
            return Response(404, {"error": f"{kind} {rid[:32]}... not found"})
        headers = {k.lower(): v for k, v in (headers or {}).items()}
        if method == "POST" and rid is None:
            return self.create(kind, body, key=headers.get("idempotency-key"), path=path)
        if method == "POST" and cancel:
            return self.cancel(kind, int(rid))
        if method == "GET" and rid is not None and not cancel:
            return self.get(kind, int(rid))
        if method == "GET" and rid is None:
            return self.list(kind, **(query or {}))
        return Response(405, {"error": f"{method} is not allowed on {path}"})

    # --- create, with the idempotency key -------------------------------------------------------
    def create(self, kind: str, body, *, key: str | None = None, path: str | None = None) -> Response:
        path = path or f"/{kind}"
        problem = validate_body(kind, body) or validate_key(key)
        if problem:
            return Response(400, {"error": problem})      # nothing stored: a fixed retry may reuse the key
        digest = request_hash("POST", path, body)
        with self._connect() as db:
            now = self.clock()
            # BEGIN IMMEDIATE takes SQLite's write lock now, so the look-up and the insert below are one
            # atomic step; the UNIQUE constraint is the backstop that would fail a racing duplicate anyway.
            db.execute("BEGIN IMMEDIATE")
            try:
                db.execute("DELETE FROM idempotency_keys WHERE created_at < ?", (now - KEY_RETENTION_S,))
                if key is not None:
                    row = db.execute("SELECT request_hash, status, response FROM idempotency_keys WHERE key = ?",
                                     (key,)).fetchone()
                    if row is not None:
                        db.execute("COMMIT")
                        if row[0] != digest:
                            return Response(422, {"error": "Idempotency-Key was already used with another request"})
                        return Response(row[1], json.loads(row[2]), {"Idempotent-Replayed": "true"})
                if kind == "checkpoints" and db.execute(
                        "SELECT 1 FROM resources WHERE kind = 'jobs' AND id = ?", (body["job_id"],)).fetchone() is None:
                    db.execute("ROLLBACK")
                    return Response(422, {"error": f"job {body['job_id']} does not exist"})
                cur = db.execute("INSERT INTO resources (kind, state, body, created_at) VALUES (?, 'pending', ?, ?)",
                                 (kind, json.dumps(body, sort_keys=True), now))
                out = {"id": cur.lastrowid, "kind": kind, "state": "pending", **body}
                if key is not None:
                    db.execute("INSERT INTO idempotency_keys (key, request_hash, status, response, created_at) "
                               "VALUES (?, ?, 201, ?, ?)", (key, digest, json.dumps(out), now))
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
        return Response(201, out)

    # --- reads -----------------------------------------------------------------------------------
    def _row(self, db, kind: str, rid: int):
        return db.execute("SELECT id, state, body FROM resources WHERE kind = ? AND id = ?", (kind, rid)).fetchone()

    @staticmethod
    def _view(kind: str, row) -> dict:
        # The stored id, kind and state are the answer's: a body key of the same name never overrides them.
        return {"id": row[0], "kind": kind, "state": row[1],
                **{k: v for k, v in json.loads(row[2]).items() if k not in RESERVED}}

    def get(self, kind: str, rid: int) -> Response:
        with self._connect() as db:
            row = self._row(db, kind, rid)
        if row is None:
            return Response(404, {"error": f"{kind} {rid} not found"})
        return Response(200, self._view(kind, row))

    def list(self, kind: str, *, limit=20, cursor: str | None = None, state: str | None = None) -> Response:
        """Keyset pagination, newest first: the page after `cursor` is the rows with a smaller id."""
        try:
            if isinstance(limit, (bool, float)) or not isinstance(limit, (int, str)):
                raise ValueError(f"limit must be a whole number, got {limit!r:.40}")
            limit = int(limit)
            if cursor is not None and not isinstance(cursor, str):
                raise ValueError("cursor must be a string")
            before = decode_cursor(cursor) if cursor else None
        except ValueError as e:
            return Response(400, {"error": str(e)})
        if not 1 <= limit <= MAX_LIMIT:
            return Response(400, {"error": f"limit must be 1 to {MAX_LIMIT}"})
        if state is not None and (not isinstance(state, str) or state not in TRANSITIONS):
            return Response(400, {"error": f"unknown state {state!r:.40}"})
        sql, args = "SELECT id, state, body FROM resources WHERE kind = ?", [kind]
        if state is not None:
            sql, args = sql + " AND state = ?", args + [state]
        if before is not None:
            sql, args = sql + " AND id < ?", args + [before]
        with self._connect() as db:
            rows = db.execute(sql + " ORDER BY id DESC LIMIT ?", args + [limit + 1]).fetchall()
        page, more = rows[:limit], len(rows) > limit      # one extra row says whether a next page exists
        return Response(200, {"data": [self._view(kind, r) for r in page],
                              "next_cursor": encode_cursor(page[-1][0]) if more else None})

    def list_offset(self, kind: str, *, limit=20, offset=0, state: str | None = None) -> Response:
        """LIMIT/OFFSET pagination, newest first: the version that repeats and skips rows under writes.
        Not routed; kept to compare with `list`."""
        sql, args = "SELECT id, state, body FROM resources WHERE kind = ?", [kind]
        if state is not None:
            sql, args = sql + " AND state = ?", args + [state]
        with self._connect() as db:
            rows = db.execute(sql + " ORDER BY id DESC LIMIT ? OFFSET ?", args + [int(limit), int(offset)]).fetchall()
        return Response(200, {"data": [self._view(kind, r) for r in rows]})

    # --- the state machine ----------------------------------------------------------------------
    def advance(self, kind: str, rid: int, to: str, *, expect: str | None = None) -> str:
        """Move a resource to `to` (the scheduler's and the workers' side). A compare-and-set on the state
        read, so a racing writer makes this fail instead of both succeeding. Returns the state left."""
        if to not in TRANSITIONS:
            raise TransitionError(f"unknown state {to!r}")
        with self._connect() as db:
            row = self._row(db, kind, rid)
            if row is None:
                raise TransitionError(f"{kind} {rid} not found")
            state = row[1]
            if expect is not None and state != expect:
                raise TransitionError(f"{kind} {rid} is {state}, not {expect}")
            if to not in TRANSITIONS[state]:
                raise TransitionError(f"{kind} {rid}: {state} -> {to} is not a legal transition")
            cur = db.execute("UPDATE resources SET state = ? WHERE kind = ? AND id = ? AND state = ?",
                             (to, kind, rid, state))
            if cur.rowcount != 1:
                raise TransitionError(f"{kind} {rid} changed state while moving {state} -> {to}")
        return state

    def cancel(self, kind: str, rid: int) -> Response:
        """200 when the answer is final (pending -> cancelled), 202 when a worker must still stop it."""
        for _ in range(8):         # a lost compare-and-set (the scheduler moved it meanwhile): read again
            with self._connect() as db:
                row = self._row(db, kind, rid)
            if row is None:
                return Response(404, {"error": f"{kind} {rid} not found"})
            state = row[1]
            if state == "cancelling":
                return Response(202, self._view(kind, row))
            if state in TERMINAL:
                return Response(409, {"error": f"{kind} {rid} is already {state}", "state": state})
            to = "cancelled" if state == "pending" else "cancelling"
            try:
                self.advance(kind, rid, to, expect=state)
            except TransitionError:
                continue
            return self.get(kind, rid) if to == "cancelled" else Response(202, self.get(kind, rid).body)
        return Response(409, {"error": f"{kind} {rid} kept changing state"})

    def seed(self, kind: str, bodies: list[dict]) -> list[int]:
        """Insert many pending resources in one transaction, without keys (fixtures and trials only)."""
        now = self.clock()
        with self._connect() as db:
            db.execute("BEGIN IMMEDIATE")
            ids = [db.execute("INSERT INTO resources (kind, state, body, created_at) VALUES (?, 'pending', ?, ?)",
                              (kind, json.dumps(b, sort_keys=True), now)).lastrowid for b in bodies]
            db.execute("COMMIT")
        return ids

    def count(self, kind: str | None = None) -> int:
        with self._connect() as db:
            if kind is None:
                return db.execute("SELECT COUNT(*) FROM resources").fetchone()[0]
            return db.execute("SELECT COUNT(*) FROM resources WHERE kind = ?", (kind,)).fetchone()[0]


class _Closing:
    """`with self._connect() as db:` closes the connection on exit (sqlite3's own context manager only
    commits or rolls back)."""

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn

    def __enter__(self) -> sqlite3.Connection:
        return self.conn

    def __exit__(self, *exc):
        self.conn.close()
        return False


# --- pagination under concurrent writes: a seeded interleaving ----------------------------------------
def scan(api: ResourceAPI, kind: str, *, how: str, limit: int, between_pages, state: str | None = None) -> list[int]:
    """Page through `kind` to the end with `how` = "cursor" or "offset", calling `between_pages(ids)` with
    each page's ids before the next page is read (where concurrent writers act). Returns every id returned,
    in order."""
    seen, cursor, offset = [], None, 0
    while True:
        if how == "cursor":
            body = api.list(kind, limit=limit, cursor=cursor, state=state).body
            cursor = body["next_cursor"]
        else:
            body = api.list_offset(kind, limit=limit, offset=offset, state=state).body
            offset += limit
        ids = [r["id"] for r in body["data"]]
        seen += ids
        if (how == "cursor" and cursor is None) or (how == "offset" and len(ids) < limit):
            return seen
        between_pages(ids)


def pagination_trial(path, *, how: str, rows: int, limit: int, max_inserts: int, cancel_seen: bool = False,
                     seed: int = 0) -> dict:
    """Seed `rows` pending jobs and page through them newest first while, before each next page, a seeded
    number (0 to `max_inserts`) of new jobs is created. With `cancel_seen`, the scan lists only pending
    jobs and cancels each page's jobs before reading the next (a "cancel all my pending jobs" loop).
    Every seeded job is pending until the scan returns it, so a correct scan returns each exactly once:
    repeats count ids returned twice, skips the seeded jobs never returned."""
    import random
    rng = random.Random(seed)
    with ResourceAPI(path) as api:
        return _trial(api, how, rows, limit, max_inserts, cancel_seen, rng)


def _trial(api, how, rows, limit, max_inserts, cancel_seen, rng) -> dict:
    body = {"name": "j", "gpus": 8, "image": "trainer"}
    seeded = api.seed("jobs", [body] * rows)

    def writers(ids):
        for _ in range(rng.randint(0, max_inserts)):
            api.create("jobs", body)
        if cancel_seen:
            for i in ids:
                api.cancel("jobs", i)

    seen = scan(api, "jobs", how=how, limit=limit, between_pages=writers, state="pending" if cancel_seen else None)
    returned, seeded_set = set(seen), set(seeded)
    seeded_seen = [i for i in seen if i in seeded_set]
    return dict(returned=len(seen), repeats=len(seeded_seen) - len(set(seeded_seen)),
                skips=sum(1 for i in seeded if i not in returned), rows=rows)


# --- the contract, small and in-process (the chapter's check; the tests run the full set) ------------------
def contract_scenarios(path) -> dict:
    """Bodies naming id, state or kind, hostile bodies, ids and keys, a key reused with another request, on
    a fresh file at `path`: {scenarios, held}. The full set (processes killed mid-create) is the
    adversarial test file's."""
    job = {"name": "j", "gpus": 8, "image": "t"}
    cases = [("POST", "/jobs", {**job, "id": 999}, None, 400), ("POST", "/jobs", {**job, "state": "succeeded"}, None, 400),
             ("POST", "/jobs", {**job, "kind": "endpoints"}, None, 400), ("POST", "/jobs", {**job, "name": "\ud800"}, None, 400),
             ("POST", "/reservations", {"gpus": 1, "hours": float("nan")}, None, 400),
             ("POST", "/jobs", {**job, "gpus": 10 ** 30}, None, 400), ("POST", "/jobs", job, "\ud800", 400),
             ("GET", "/jobs/" + "9" * 30, None, None, 404), ("POST", "/jobs/" + "9" * 30 + "/cancel", None, None, 404)]
    with ResourceAPI(path) as api:
        held = sum(api.handle(m, p, b, headers={"Idempotency-Key": k} if k else None).status == want
                   and api.count() == 0 for m, p, b, k, want in cases)
        first = api.handle("POST", "/jobs", job, headers={"Idempotency-Key": "k"})
        held += api.handle("POST", "/jobs", {**job, "gpus": 9}, headers={"Idempotency-Key": "k"}).status == 422
        stored = api.handle("GET", f"/jobs/{first.body['id']}").body
        held += stored == first.body == api.handle("GET", "/jobs").body["data"][0] and stored["state"] == "pending"
    return dict(scenarios=len(cases) + 2, held=held)
