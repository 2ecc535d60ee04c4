"""A token-billing pipeline over SQLite (standard library only): usage events in, exactly once; a
watermark for late events; the month close; and the reconciliation that proves the invoices against
the engines' own counters.

    pipe = Pipeline(path, price_per_mtok="2.50", clock=fake_clock)   # one Pipeline per thread
    pipe.ingest(Event("engine", "req-1", 1, "eng-a", "acme", 812, t))   # -> "new" | "duplicate"
    pipe.ingest(Event("gateway", "req-1", 1, "eng-a", "acme", 812, t))
    pipe.close("2026-11")                      # refused until the watermark passes the month's end
    pipe.reconcile("2026-11", {"eng-a": 812})  # -> Reconciliation: what is missing, late, wasted, over

Who counts what. The engine counts the tokens (it ran them): one engine event per attempt it ran. The
gateway counts requests: one gateway event per request it answered, naming the attempt it delivered to
the client. The bill is engine tokens of the delivered attempt (an inner join on request and attempt):
one source of tokens, so the gateway's copy of the usage is never added to the engine's, and an attempt
the gateway retried elsewhere is the platform's cost, not the tenant's.

The rules (tests/fleet/test_billing.py injects a fault for each):
- An event's key is source:request:attempt, the PRIMARY KEY of `events`; ingest is an INSERT ... ON
  CONFLICT(key) DO NOTHING inside BEGIN IMMEDIATE (SQLite's WAL, one writer at a time), so a redelivered or
  resent event is counted once, however many writers (threads or processes) race. "duplicate" means the
  same event is stored: a key that arrives with other usage (another tenant, engine, token count or
  time) is refused with ValueError and counted nowhere, as Stripe refuses a key reused with another
  request. The conflict clause names the key alone, so a NOT NULL or CHECK violation is never swallowed
  as a duplicate: ingest validates every field first (names: non-empty UTF-8 strings of at most MAX_NAME
  characters; tokens, attempt, event_time: whole numbers, not bools, not NaN) and an invalid event raises
  ValueError with nothing stored. A write that did not happen is never answered as one that did.
- An event's month is the UTC month of its producer's timestamp, unless that timestamp is more than
  max_skew_s ahead of the ingest clock (a fast clock: nothing arrives before it happens): then the
  ingest clock's month, and the event is flagged. A slow clock is indistinguishable from a delayed
  delivery; the watermark bounds it.
- A month closes only when the ingest clock has passed its end plus lateness_s (the watermark). An
  event for a closed month, or for any month the watermark has passed (an epoch timestamp from a broken
  clock: a month that will never close), is never added to that month's invoice: it is booked in the month
  it arrived, as a late line, and the reconciliation of its own month names it. An engine attempt is billed in the
  later of its own booking and its gateway event's: the pair is complete only when both have arrived.
- Money is Decimal: tokens are summed as integers and each invoice line is priced once, tokens x price
  per million, rounded half up to the cent (utils.components.gpu_hours' money rules; a float price is refused).

Chapters: billing-pipeline.
"""
from __future__ import annotations

import sqlite3
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from decimal import ROUND_HALF_UP, Decimal

from utils.components.gpu_hours import CENT, price_of

SOURCES = ("gateway", "engine")
MAX_NAME = 256                                # characters of a request, engine or tenant name
MAX_INT = 2 ** 63 - 1                         # SQLite's INTEGER
POLICIES = ("delivered", "all-attempts", "both-sources")   # the first is the bill; the others are the bugs

SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    key TEXT PRIMARY KEY,                     -- source:request:attempt, the idempotency key
    source TEXT NOT NULL CHECK (source IN ('gateway', 'engine')),
    request TEXT NOT NULL,
    attempt INTEGER NOT NULL CHECK (attempt >= 1),
    engine TEXT NOT NULL,
    tenant TEXT NOT NULL,
    tokens INTEGER NOT NULL CHECK (tokens >= 0),
    event_time INTEGER NOT NULL,              -- the producer's clock
    received INTEGER NOT NULL,                -- the ingest clock
    month TEXT NOT NULL,                      -- the month the usage belongs to
    booked TEXT NOT NULL,                     -- the month whose invoice carries it
    skewed INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS events_by_request ON events(request, attempt, source);
CREATE INDEX IF NOT EXISTS events_by_booked ON events(booked, source);
CREATE TABLE IF NOT EXISTS deliveries (key TEXT PRIMARY KEY, n INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS closed (month TEXT PRIMARY KEY, closed_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS invoices (
    month TEXT NOT NULL, tenant TEXT NOT NULL, tokens INTEGER NOT NULL, amount TEXT NOT NULL,
    PRIMARY KEY (month, tenant)
);
"""


@dataclass(frozen=True)
class Event:
    source: str          # gateway | engine
    request: str         # the gateway's request id, the same for every attempt
    attempt: int         # engine: the attempt it ran; gateway: the attempt it delivered
    engine: str
    tenant: str
    tokens: int
    event_time: int      # epoch seconds, by the producer's clock

    @property
    def key(self) -> str:
        return f"{self.source}:{self.request}:{self.attempt}"


@dataclass
class Reconciliation:
    month: str
    counters: dict                                   # engine -> tokens its own counter says it ran
    received: dict = field(default_factory=dict)     # engine -> tokens of its events for the month
    billed: int = 0                                  # tokens on the month's invoice
    waste: int = 0                                   # engine tokens of attempts not delivered (retries)
    late: int = 0                                    # the month's tokens booked in a later month
    late_in: int = 0                                 # earlier months' tokens booked on this invoice
    skewed: int = 0                                  # events whose month came from the ingest clock
    duplicates: int = 0                              # deliveries ignored because the key was seen
    orphans: int = 0                                 # engine attempts with no gateway event: unbilled

    @property
    def missing(self) -> dict:
        """Per engine, counter minus events received: > 0 is dropped (or moved) usage."""
        return {e: c - self.received.get(e, 0) for e, c in sorted(self.counters.items())}

    @property
    def over(self) -> int:
        """Tokens billed beyond what the engines ran and delivered: double counting."""
        return (self.billed - self.late_in + self.late + self.waste + self.orphans
                - sum(self.received.values()))

    @property
    def clean(self) -> bool:
        return not any(self.missing.values()) and self.over == 0 and self.late == 0


def _validate(ev: Event) -> None:
    """ValueError naming the first field a store could not keep as given (checked before any write)."""
    if ev.source not in SOURCES:
        raise ValueError(f"source must be one of {SOURCES}, got {ev.source!r}")
    for name in ("request", "engine", "tenant"):
        v = getattr(ev, name)
        if not isinstance(v, str) or not 1 <= len(v) <= MAX_NAME:
            raise ValueError(f"{name} must be a string of 1 to {MAX_NAME} characters, got {v!r:.80}")
        try:
            v.encode()
        except UnicodeEncodeError:
            raise ValueError(f"{name} is not valid UTF-8 (a lone surrogate): {v!r:.80}") from None
    for name, low in (("tokens", 0), ("attempt", 1), ("event_time", 0)):
        v = getattr(ev, name)
        if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= MAX_INT:
            raise ValueError(f"{name} must be a whole number >= {low}, got {v!r}")


def month_of(ts: int) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m")


def month_end(month: str) -> int:
    y, m = map(int, month.split("-"))
    y, m = (y + 1, 1) if m == 12 else (y, m + 1)
    return int(datetime(y, m, 1, tzinfo=timezone.utc).timestamp())


def money(tokens: int, price_per_mtok: Decimal) -> Decimal:
    """Tokens at a price per million, priced once, rounded half up to the cent."""
    return (Decimal(tokens) * price_per_mtok / 1_000_000).quantize(CENT, ROUND_HALF_UP)


class Pipeline:
    def __init__(self, path, *, price_per_mtok="2.50", clock=time.time, lateness_s: int = 86400,
                 max_skew_s: float = 300, dedupe: bool = True, policy: str = "delivered",
                 late: str = "book", busy_timeout_s: float = 10.0):
        if policy not in POLICIES:
            raise ValueError(f"policy must be one of {', '.join(POLICIES)}, got {policy!r}")
        self.price, self.clock, self.lateness_s = price_of(price_per_mtok), clock, int(lateness_s)
        if late not in ("book", "drop"):
            raise ValueError(f"late must be 'book' or 'drop', got {late!r}")
        self.max_skew_s, self.dedupe, self.policy, self.late = max_skew_s, dedupe, policy, late
        self.db = sqlite3.connect(str(path), timeout=busy_timeout_s, isolation_level=None)
        self.db.execute(f"PRAGMA busy_timeout={int(busy_timeout_s * 1000)}")
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        for stmt in SCHEMA.split(";"):
            if stmt.strip():
                self.db.execute(stmt)

    def close_db(self):
        self.db.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close_db()

    # --- ingest: exactly once per key ------------------------------------------------------------------
    def ingest(self, ev: Event) -> str:
        _validate(ev)
        now = int(self.clock())
        # A timestamp from the future is a fast clock: nothing arrives before it happens. A slow clock looks
        # like a delayed delivery, which is legitimate; the watermark and the late line bound that side.
        skewed = ev.event_time - now > self.max_skew_s
        month = month_of(now if skewed else ev.event_time)
        # the naive pipeline: a fresh id per delivery, so the store cannot tell a resend from new usage
        key = ev.key if self.dedupe else f"{ev.key}:{uuid.uuid4().hex}"
        self.db.execute("BEGIN IMMEDIATE")
        try:
            open_ = not self._is_closed(month) and self.watermark() < month_end(month)
            booked = month if open_ else month_of(now)
            if booked != month and self.late == "drop":      # the bug: "that month is closed", discarded
                self.db.execute("COMMIT")
                return "dropped"
            cur = self.db.execute("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                                  "ON CONFLICT(key) DO NOTHING",
                                  (key, ev.source, ev.request, ev.attempt, ev.engine, ev.tenant, ev.tokens,
                                   ev.event_time, now, month, booked, int(skewed)))
            if cur.rowcount != 1:
                stored = self.db.execute("SELECT source, request, attempt, engine, tenant, tokens, event_time "
                                         "FROM events WHERE key = ?", (key,)).fetchone()
                if stored != (ev.source, ev.request, ev.attempt, ev.engine, ev.tenant, ev.tokens, ev.event_time):
                    raise ValueError(f"key {key!r} is already stored for another event: refused, nothing counted")
            self.db.execute("INSERT INTO deliveries VALUES (?, 1) ON CONFLICT(key) DO UPDATE SET n = n + 1", (key,))
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        return "new" if cur.rowcount == 1 else "duplicate"

    def _is_closed(self, month: str) -> bool:
        return self.db.execute("SELECT 1 FROM closed WHERE month = ?", (month,)).fetchone() is not None

    # --- the month close --------------------------------------------------------------------------------
    def watermark(self) -> int:
        """Usage before this instant is complete: the ingest clock minus the allowed lateness."""
        return int(self.clock()) - self.lateness_s

    # Each engine attempt with the month its bill falls in: the later of its own booking and its gateway
    # event's (whichever arrived last completes the pair), NULL when no gateway event names it.
    PAIRED = ("SELECT e.*, (SELECT MAX(e.booked, g.booked) FROM events g WHERE g.source = 'gateway' "
              "AND g.request = e.request AND g.attempt = e.attempt) AS bill_month, "
              "EXISTS (SELECT 1 FROM events g WHERE g.source = 'gateway' AND g.request = e.request) AS answered "
              "FROM events e WHERE e.source = 'engine'")

    def _billable_sql(self) -> str:
        if self.policy == "delivered":          # engine tokens of the attempt the gateway delivered
            return f"SELECT tenant, tokens FROM ({self.PAIRED}) WHERE bill_month = ?"
        if self.policy == "all-attempts":       # every attempt an engine ran, retried ones too
            return "SELECT tenant, tokens FROM events WHERE source = 'engine' AND booked = ?"
        return "SELECT tenant, tokens FROM events WHERE booked = ?"     # gateway's copy added to the engine's

    def close(self, month: str) -> dict:
        """Close a month once the watermark has passed its end: {tenant: (tokens, Decimal amount)}.
        A second close of the same month returns the stored invoice, unchanged."""
        if self.watermark() < month_end(month):
            raise ValueError(f"month {month} cannot close before its end plus the lateness "
                             f"({self.lateness_s} s): the watermark has not passed it")
        self.db.execute("BEGIN IMMEDIATE")
        try:
            if not self._is_closed(month):
                rows = self.db.execute(f"SELECT tenant, SUM(tokens) FROM ({self._billable_sql()}) "
                                       "GROUP BY tenant ORDER BY tenant", (month,)).fetchall()
                self.db.executemany("INSERT INTO invoices VALUES (?, ?, ?, ?)",
                                    [(month, t, n, str(money(n, self.price))) for t, n in rows])
                self.db.execute("INSERT INTO closed VALUES (?, ?)", (month, int(self.clock())))
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        return self.invoice(month)

    def invoice(self, month: str) -> dict:
        return {t: (n, Decimal(a)) for t, n, a in
                self.db.execute("SELECT tenant, tokens, amount FROM invoices WHERE month = ? ORDER BY tenant", (month,))}

    # --- the reconciliation -------------------------------------------------------------------------------
    def reconcile(self, month: str, counters: dict) -> Reconciliation:
        """The month's invoice against the engines' own counters (tokens each ran in the month)."""
        one = lambda sql, *a: self.db.execute(sql, a).fetchone()[0] or 0    # noqa: E731
        r = Reconciliation(month, dict(counters))
        r.received = dict(self.db.execute("SELECT engine, SUM(tokens) FROM events WHERE source = 'engine' "
                                          "AND month = ? GROUP BY engine", (month,)))
        r.billed = one("SELECT SUM(tokens) FROM invoices WHERE month = ?", month)
        paired = f"SELECT SUM(tokens) FROM ({self.PAIRED})"
        r.waste = one(f"{paired} WHERE month = ? AND bill_month IS NULL AND answered", month)
        r.orphans = one(f"{paired} WHERE month = ? AND NOT answered", month)
        r.late = one(f"{paired} WHERE month = ? AND bill_month != month", month)
        r.late_in = one(f"{paired} WHERE bill_month = ? AND month != bill_month", month)
        r.skewed = one("SELECT COUNT(*) FROM events WHERE month = ? AND skewed = 1", month)
        r.duplicates = one("SELECT SUM(d.n - 1) FROM deliveries d JOIN events e ON e.key = d.key WHERE e.month = ?",
                           month)
        return r


# --- a month of traffic with one injected fault (the tests and the page run these) --------------------------
FAULTS = ("none", "duplicates", "drops", "late", "clock-skew", "retries", "double-count")
MONTH = "2026-11"
T0 = 1_793_491_200                                    # 2026-11-01 00:00 UTC
DELAY_S = 2                                           # producer to ingest, on a healthy day


def traffic(n_requests: int = 300, seed: int = 0, retry_share: float = 0.1) -> list[dict]:
    """Seeded requests over November: tenant, true time, tokens, and the attempts the gateway made (a
    retried request ran on both engines; the second attempt was delivered). Requests cluster near the
    month's end on purpose, so that clocks and lateness have something to move."""
    import random
    rng = random.Random(seed)
    out = []
    for i in range(n_requests):
        t = (T0 + rng.randrange(month_end(MONTH) - T0 - 3 * 3600) if i % 5 else
             month_end(MONTH) - 1 - rng.randrange(3 * 3600))
        engines = ["eng-a", "eng-b"] if i % 2 else ["eng-b", "eng-a"]
        attempts = 2 if rng.random() < retry_share else 1
        out.append(dict(request=f"req-{i:05d}", tenant=f"tenant-{i % 3}", t=t, tokens=rng.randint(50, 4000),
                        engines=engines[:attempts]))
    return out


def deliveries(reqs, fault: str, seed: int = 0) -> list[tuple[int, Event, bool]]:
    """(received time, event, is an extra copy) for every delivery the pipeline sees under `fault`."""
    import random
    rng = random.Random(seed + 1)
    out = []
    for r in reqs:
        n = len(r["engines"])
        for a, eng in enumerate(r["engines"], start=1):
            skew = 2 * 3600 if fault == "clock-skew" and eng == "eng-b" else 0
            t_run = r["t"] - (n - a) * 30                       # an earlier attempt ran before the retry
            out.append((t_run + DELAY_S, Event("engine", r["request"], a, eng, r["tenant"], r["tokens"],
                                               t_run + skew), False))
        out.append((r["t"] + DELAY_S, Event("gateway", r["request"], n, r["engines"][-1], r["tenant"],
                                            r["tokens"], r["t"]), False))
    if fault == "duplicates":          # an at-least-once queue redelivers a tenth of events
        out += [(t + 60, e, True) for t, e, _ in out if rng.random() < 0.1]
    if fault == "drops":               # the engine's sends are lost for a twentieth of its events
        kept = [x for x in out if x[1].source != "engine" or rng.random() >= 0.05]
        out = kept + [(t + 3600, e, True) for t, e, _ in out if x_dropped(kept, e)]
    if fault == "late":                # eng-a was partitioned for its last three hours of November
        out = [(month_end(MONTH) + 36 * 3600 if e.source == "engine" and e.engine == "eng-a"
                and e.event_time >= month_end(MONTH) - 3 * 3600 else t, e, extra) for t, e, extra in out]
    return sorted(out, key=lambda x: (x[0], x[1].key))


def x_dropped(kept, e) -> bool:
    return not any(k[1] is e for k in kept)


def counters(reqs) -> dict:
    """Each engine's own counter for November, by its true time: every attempt it ran."""
    out = {"eng-a": 0, "eng-b": 0}
    for r in reqs:
        for a, eng in enumerate(r["engines"], start=1):
            if month_of(r["t"] - (len(r["engines"]) - a) * 30) == MONTH:
                out[eng] += r["tokens"]
    return out


def owed(reqs) -> int:
    """The true bill in tokens: each November request's delivered attempt, once."""
    return sum(r["tokens"] for r in reqs if month_of(r["t"]) == MONTH)


def trial(path, fault: str = "none", *, defended: bool = True, n_requests: int = 300, seed: int = 0,
          price_per_mtok: str = "2.50") -> dict:
    """Run November through a fresh pipeline at `path` with one fault; close it; reconcile it.
    defended=False turns off the one defence the fault needs: the key (duplicates), the replay of the
    engine's outbox (drops), booking in the month of arrival (late: the bug discards them), the skew
    bound (clock-skew), the delivered-attempt join (retries, double-count)."""
    if fault not in FAULTS:
        raise ValueError(f"fault must be one of {', '.join(FAULTS)}, got {fault!r}")
    reqs = traffic(n_requests, seed)
    plan = deliveries(reqs, fault, seed)
    if fault == "drops" and not defended:
        plan = [x for x in plan if not x[2]]                    # nobody replays what was lost
    now = [T0]
    policy = {"retries": "all-attempts", "double-count": "both-sources"}.get(fault, "delivered")
    pipe = Pipeline(path, price_per_mtok=price_per_mtok, clock=lambda: now[0],
                    dedupe=defended or fault != "duplicates",
                    max_skew_s=float("inf") if fault == "clock-skew" and not defended else 300,
                    policy="delivered" if defended else policy,
                    late="drop" if fault == "late" and not defended else "book")
    with pipe:
        close_at = month_end(MONTH) + pipe.lateness_s
        closed = None
        for t, ev, _ in plan:
            if closed is None and t >= close_at:
                now[0] = close_at
                closed = pipe.close(MONTH)
            now[0] = t
            pipe.ingest(ev)
        if closed is None:
            now[0] = close_at
            closed = pipe.close(MONTH)
        rec = pipe.reconcile(MONTH, counters(reqs))
        return dict(path=str(path), recon=rec, invoice=closed, owed=owed(reqs), billed=rec.billed,
                    amount=sum((a for _, a in closed.values()), Decimal("0.00")),
                    owed_amount=sum((money(sum(r["tokens"] for r in reqs if r["tenant"] == t and month_of(r["t"]) == MONTH),
                                           price_of(price_per_mtok)) for t in sorted({r["tenant"] for r in reqs})),
                                    Decimal("0.00")))


# --- the contract, small and in-process (the chapter's check; the tests run the full set) ------------------
def contract_scenarios(path) -> dict:
    """Invalid events, a key reused with other usage, an epoch timestamp, on a fresh file at `path`:
    {scenarios, held}. The full set (writer processes killed mid-ingest) is the adversarial test file's."""
    from dataclasses import replace
    now = [T0 + 1000]
    good = Event("engine", "req-1", 1, "eng-a", "acme", 800, T0 + 100)
    bad = [dict(tenant=None), dict(tenant=""), dict(engine=None), dict(request="\ud800"), dict(tokens=float("nan")),
           dict(tokens=True), dict(tokens=-1), dict(attempt=0), dict(event_time=None), dict(event_time=1.5)]
    held = 0
    with Pipeline(path, clock=lambda: now[0]) as p:
        count = lambda: p.db.execute("SELECT COUNT(*) FROM events").fetchone()[0]     # noqa: E731
        for b in bad:                                  # refused, nothing stored: never a "duplicate"
            try:
                p.ingest(replace(good, **b))
            except ValueError:
                held += count() == 0
        held += p.ingest(good) == "new" and p.ingest(good) == "duplicate"
        try:                                           # the same key with other usage: refused
            p.ingest(replace(good, tokens=900))
        except ValueError:
            held += p.db.execute("SELECT tokens FROM events").fetchall() == [(800,)]
        for source in SOURCES:                         # a broken clock at the epoch: billed where it arrived
            p.ingest(Event(source, "r-0", 1, "eng-a", "beta", 500, 0))
        now[0] = month_end(MONTH) + p.lateness_s
        held += p.close(MONTH).get("beta", (0,))[0] == 500
    return dict(scenarios=len(bad) + 3, held=held)
