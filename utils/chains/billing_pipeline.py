"""billing-pipeline: what each way a token-billing pipeline goes wrong costs a month at a platform's scale
(closed-form arithmetic over the rates), and each one injected into a month of traffic on the real SQLite
pipeline of utils.fleet.billing, where the reconciliation against the engines' counters shows it.
"""
from __future__ import annotations

import os
import tempfile
from decimal import Decimal

from utils.chain import Chain, memoised
from utils.fleet import billing as bl
from utils.params import Param, ParameterError, Result, Spec
from utils.units import fmt, pct, q
from utils.verdicts import READING, WRONG, Claim

PARAMETERS = (
    Param("requests_per_day", 50e6, "requests the gateway answers a day", unit="request/day", check="positive",
          source="this book's assumption: a mid-sized inference platform"),
    Param("tokens_per_request", 1000.0, "billable tokens per request, prompt and completion", unit="token/request",
          check="positive", source="this book's assumption"),
    Param("price_per_mtok", 2.5, "price per million tokens (read as the decimal it is typed as)", unit="USD/Mtoken",
          check="positive", source="this book's assumption: a blended list price"),
    Param("days", 30.0, "the billing month", unit="day", check="positive", source="this book's assumption"),
    Param("duplicate_rate", 0.001, "share of events an at-least-once queue redelivers", check="share",
          source="this book's assumption"),
    Param("drop_rate", 0.0005, "share of engine events lost on the way (a crash before the send)", check="share",
          source="this book's assumption"),
    Param("retry_share", 0.02, "share of requests the gateway retried on a second engine", check="share",
          source="this book's assumption"),
    Param("late_share", 0.002, "share of a month's tokens that arrive after the month closed", check="share",
          source="this book's assumption: a partition near the month's end"),
)

RESULTS = (
    Result("monthly_tokens", "token", "Tokens billed in the month", of="T"),
    Result("monthly_revenue", "USD", "The month's invoices", of="B"),
    Result("duplicate_overcharge", "USD", "Overcharge from redelivered events, counted without a key", of="L_dup"),
    Result("drop_loss", "USD", "Revenue lost to dropped events, no outbox replay", of="L_drop"),
    Result("retry_overcharge", "USD", "Overcharge from billing every attempt of a retried request", of="L_retry"),
    Result("double_count_overcharge", "USD", "Overcharge from adding the gateway's tokens to the engine's", of="L_double"),
    Result("late_moved", "USD", "Revenue a late event moves into the next month's invoice", of="L_late"),
)


def validate(p):
    if Decimal(repr(float(p.price_per_mtok))) != Decimal(repr(float(p.price_per_mtok))).quantize(Decimal("0.000001")):
        raise ParameterError(f"price_per_mtok must have at most six decimals, got {p.price_per_mtok!r}")
    if p.requests_per_day * p.tokens_per_request * p.days > 1e18:
        raise ParameterError("requests_per_day x tokens_per_request x days must be at most 1e18 tokens")


def compute(p) -> Chain:
    ch = Chain("A month of token billing, and what each fault costs")
    ch.given("R", q(p.requests_per_day, "request/day"), "requests a day", kind="assumption",
             source=SPEC.source(p, "requests_per_day"))
    ch.given("n", q(p.tokens_per_request, "token/request"), "billable tokens per request", kind="assumption",
             source=SPEC.source(p, "tokens_per_request"))
    ch.given("t", q(p.days, "day"), "billing month", kind="assumption", source=SPEC.source(p, "days"))
    ch.given("p", q(p.price_per_mtok, "USD/Mtoken"), "price per million tokens", kind="assumption",
             source=SPEC.source(p, "price_per_mtok"))
    ch.step("T", "R*n*t", "token", "tokens in the month")
    ch.step("B", "p*T", "USD", "the month's invoices")
    ch.given("d", p.duplicate_rate, "redelivered share", kind="assumption", source=SPEC.source(p, "duplicate_rate"))
    ch.given("r_drop", p.drop_rate, "dropped share", kind="assumption", source=SPEC.source(p, "drop_rate"))
    ch.given("r_retry", p.retry_share, "retried share", kind="assumption", source=SPEC.source(p, "retry_share"))
    ch.given("r_late", p.late_share, "late share", kind="assumption", source=SPEC.source(p, "late_share"))
    ch.step("L_dup", "d*B", "USD", "duplicates billed twice without the key")
    ch.step("L_drop", "r_drop*B", "USD", "drops never billed without the replay")
    ch.step("L_retry", "r_retry*B", "USD", "retried attempts billed too (each ran in full)")
    ch.step("L_double", "B", "USD", "the gateway's copy added: the whole bill again")
    ch.step("L_late", "r_late*B", "USD", "late usage billed a month later (lost if discarded)")
    return ch


# --- the pipeline, run: one fault at a time ---------------------------------------------------------------
N_REQUESTS, SEED, PRICE = 100, 0, "2.50"
WHAT = {"duplicates": "an at-least-once queue redelivers a tenth of the events",
        "drops": "a twentieth of the engine's events are lost",
        "late": "one engine is partitioned for its last three hours of the month",
        "clock-skew": "one engine's clock runs two hours fast",
        "retries": "the gateway retries a tenth of requests on the other engine",
        "double-count": "the gateway's usage and the engine's are both summed"}
DEFENCE = {"duplicates": "the event key as PRIMARY KEY, INSERT OR IGNORE",
           "drops": "the engine's outbox, replayed until acknowledged (safe because of the key)",
           "late": "a watermark before the close; a late line in the month it arrives",
           "clock-skew": "a timestamp ahead of the ingest clock takes the ingest clock's month, flagged",
           "retries": "bill the attempt the gateway delivered; the rest is platform cost",
           "double-count": "one source of tokens: engine tokens joined to the gateway's delivered attempt"}


@memoised
def checks() -> dict:
    """Every fault on a fresh SQLite file, with and without its defence."""
    with tempfile.TemporaryDirectory() as d:
        return {(f, ok): bl.trial(os.path.join(d, f"{f}-{ok}.db"), f, defended=ok, n_requests=N_REQUESTS,
                                  seed=SEED, price_per_mtok=PRICE)
                for f in bl.FAULTS for ok in (True, False) if f != "none" or ok}


def shows(r: dict) -> str:
    """What the reconciliation of the month shows, in words."""
    rec, out = r["recon"], []
    for e, m in rec.missing.items():
        if m > 0:
            out.append(f"{e}: counter exceeds events by {m:,} tokens")
        elif m < 0:
            out.append(f"{e}: events exceed counter by {-m:,} tokens")
    if rec.over > 0:
        out.append(f"billed beyond the delivered usage by {rec.over:,} tokens")
    if rec.late:
        out.append(f"{rec.late:,} tokens named late, booked next month")
    if rec.skewed:
        out.append(f"{rec.skewed:,} events flagged for a fast clock")
    if rec.duplicates:
        out.append(f"{rec.duplicates:,} redeliveries ignored")
    return "; ".join(out) or "clean"


def fault_rows(ck: dict) -> list[list[str]]:
    rows = []
    for f in bl.FAULTS[1:]:
        bad, good = ck[f, False], ck[f, True]
        rows.append([f, WHAT[f], shows(bad), f"{(bad['billed'] - bad['owed']) / bad['owed']:+.1%}",
                     DEFENCE[f], shows(good)])
    return rows


QUOTE = ("Billing is the one pipeline where a dropped event is money and a duplicated one is a support ticket.")


def claims() -> list[Claim]:
    ck = checks()
    drop, dup, base = ck["drops", False], ck["duplicates", False], ck["none", True]
    drop_silent = drop["billed"] < drop["owed"] and sum(drop["recon"].missing.values()) > 0
    dup_visible = dup["billed"] > dup["owed"]
    defended = all(ck[f, True]["billed"] + ck[f, True]["recon"].late == ck[f, True]["owed"] for f in bl.FAULTS)
    ok = drop_silent and dup_visible and defended and base["recon"].clean
    return [Claim(
        "drop-is-money", quote=QUOTE, source="spec/001 (the billing paragraph)",
        claimed="a dropped event is lost money; a duplicated one is an overcharge the customer disputes",
        derived=f"drops: billed {pct(drop['billed'] / drop['owed'])} of the usage; duplicates: "
                f"{pct(dup['billed'] / dup['owed'])}",
        verdict=READING if ok else WRONG,
        reading=("'a dropped event is money' read as revenue that no invoice ever carries and no customer reports, "
                 "visible only to the reconciliation against the engines' counters; 'a duplicated one is a support "
                 "ticket' as a charge above the usage, which the customer's own logs show and dispute. The "
                 "superlative, 'the one pipeline', is emphasis and is not checked") if ok else "",
        nearest_true="" if ok else "one of the injected faults did not show as the claim says: see the check",
        reason=(f"on a month of {N_REQUESTS:,} requests on the SQLite pipeline, dropping a twentieth of engine "
                f"events billed {pct(drop['billed'] / drop['owed'])} of the usage, "
                f"{drop['owed'] - drop['billed']:,} tokens short, and only the counters show it; "
                f"redelivering a tenth without the key billed "
                f"{pct(dup['billed'] / dup['owed'])}, {dup['billed'] - dup['owed']:,} tokens over, on the customer's invoice; "
                f"with the defences every fault bills what was owed."))]


def check_text(ck: dict) -> dict:
    base, drop, dup = ck["none", True], ck["drops", False], ck["duplicates", False]
    late = ck["late", True]["recon"]
    return {"ck-n": f"{N_REQUESTS:,}", "ck-price": f"${PRICE}", "ck-owed": f"{base['owed']:,}",
            "ck-amount": f"${base['amount']}", "ck-waste": f"{base['recon'].waste:,}",
            "ck-drop-share": pct(drop["billed"] / drop["owed"]), "ck-dup-share": pct(dup["billed"] / dup["owed"]),
            "ck-late": f"{late.late:,}", "ck-skewed": f"{ck['clock-skew', True]['recon'].skewed:,}",
            "ck-double": pct(ck["double-count", False]["billed"] / ck["double-count", False]["owed"])}


def cost_bars(ch: Chain) -> dict:
    names = {"L_dup": "duplicates", "L_drop": "drops", "L_retry": "retries", "L_double": "double count",
             "L_late": "late (moved)"}
    return {label: float(ch[k].m) for k, label in names.items()}


def what_changes(p, ch: Chain) -> dict:
    B = float(ch["B"].m)
    bump = compute(p.replace(retry_share=0.05))
    return {"wc-bill": fmt(B, "USD"), "wc-retry": pct(0.05), "wc-retry-usd": fmt(float(bump["L_retry"].m), "USD"),
            "wc-drop-usd": fmt(float(ch["L_drop"].m), "USD"), "wc-dup-usd": fmt(float(ch["L_dup"].m), "USD"),
            "wc-double-usd": fmt(float(ch["L_double"].m), "USD")}


def exercises(p, ch: Chain) -> dict:
    tok = 2_000_001
    price = Decimal("2.50")
    one = bl.money(tok, price)
    per_event = [bl.money(1000, price)] * 2000 + [bl.money(1, price)]
    return {"ex1-tok": f"{tok:,}", "ex1-price": f"${price}", "ex1-amount": f"${one}",
            "ex1-events": "2,001", "ex1-sum": f"${sum(per_event, Decimal('0.00'))}",
            "ex2-rate": pct(0.0005), "ex2-usd": fmt(0.0005 * float(ch["B"].to("USD").m) * 12, "USD"),
            "ex3-skew": "2 h", "ex3-bound": "5 min"}


@memoised   # deterministic counts: the page and the tests share them
def contract_checks() -> dict:
    """The mechanism's contract, run small and in-process: {scenarios, held}. The scenarios:
    invalid events, a key reused with other usage, an event stamped at the epoch.
    The full set, with processes killed mid-operation, is tests/fleet/test_billing_adversarial.py."""
    with tempfile.TemporaryDirectory() as d:
        return bl.contract_scenarios(os.path.join(d, "contract.db"))


def contract_text() -> dict:
    ck = contract_checks()
    return {"contract-scenarios": f"{ck['scenarios']:,}", "contract-held": f"{ck['held']:,}"}


SPEC = Spec("billing-pipeline", PARAMETERS, RESULTS, compute, validate=validate, closed_form=True)
