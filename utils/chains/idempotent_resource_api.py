"""idempotent-resource-api: what a duplicated create costs, and the three semantics that prevent it,
judged by running the API in utils/components/idempotent_api.py (SQLite, standard library).

A create whose response is lost after the server committed it (a client timeout, a dropped connection,
a gateway's 504) is retried by the client; without an idempotency key the retry creates a second
resource. If each attempt's response is lost with probability t and the client retries a lost one
with probability r, the extra attempts per create d satisfy d = t r (1 + d): each attempt, the first
or a retry, is itself lost and retried. So d = t r / (1 - t r), and N creates a day make N d duplicates
a day, each a G-GPU job running its H hours (or the share f of them before someone notices) at P per
GPU-hour.
"""
from __future__ import annotations

import contextlib
import os
import tempfile
import threading
from http import HTTPStatus

from utils import catalog
from utils.chain import Chain, as_float, memoised
from utils.components.idempotent_api import KEY_RETENTION_S, KINDS, TRANSITIONS, ResourceAPI, pagination_trial
from utils.components.idempotent_api import contract_scenarios as api_contract
from utils.params import Param, Result, Spec
from utils.units import duration, fmt, pct, q
from utils.verdicts import HOLDS, UNCHECKABLE, Claim

_CAT = "catalog (utils/catalog/prices.toml): "
PARAMETERS = (
    Param("gpus_per_job", 64, "GPUs of the training job that gets duplicated", unit="GPU", check="whole",
          source="this book's assumption: a mid-size training job (the chain-list row's example)"),
    Param("job_hours", 48.0, "hours the job runs", unit="hour",
          source="this book's assumption: a two-day training run"),
    Param("usd_per_gpu_hour", 3.99, "price of a GPU-hour", unit="USD/GPU/hour",
          source=_CAT + "h100-rental.lambda_on_demand (Lambda on-demand H100 SXM, read 2026-11-29)"),
    Param("duplicate_runtime_share", 1.0, "share of the job's hours a duplicate runs before it is noticed",
          check="fraction", source="this book's assumption: nobody notices (a duplicate looks like a job)"),
    Param("creates_per_day", 20.0, "create requests for such jobs a day, across the platform",
          source="this book's assumption: about two and a half thousand GPUs of such jobs"),
    Param("timeout_rate", 0.002, "share of attempts whose response is lost after the server committed",
          check="share", source="this book's assumption: one in five hundred (timeouts, resets, gateway 504s)"),
    Param("retry_rate", 1.0, "probability the client retries a create whose response it lost",
          check="fraction", source="this book's assumption: SDKs and workflow engines retry automatically"),
)

RESULTS = (
    Result("cost_per_duplicate", "USD", "Cost of one duplicated job", of="C_dup"),
    Result("gpu_hours_per_duplicate", "GPU*hour", "GPU-hours one duplicate burns", of="E_dup"),
    Result("extra_attempts_per_create", "", "Duplicates per create without a key, t r / (1 - t r)", of="d"),
    Result("duplicates_per_day", "", "Expected duplicates a day without a key", of="D"),
    Result("days_between_duplicates", "day", "Mean days between duplicates", of="T_gap"),
    Result("duplicate_cost_per_year", "USD", "Expected cost of duplicates a year without a key", of="C_yr"),
    Result("busy_gpus", "GPU", "GPUs these jobs keep busy (a size check on the inputs)", of="B"),
)


def duplicate_chain(G, H, P, f, N, t, r, *, source="parameters cell", price_source="parameters cell") -> Chain:
    def src(name: str) -> str:          # `source`: one string for every input, or a dict by parameter
        return source if isinstance(source, str) else source.get(name, "parameters cell")
    ch = Chain("What a duplicated create costs")
    ch.given("G", q(G, "GPU"), "GPUs of the job", kind="assumption", source=src("gpus_per_job"))
    ch.given("H", q(H, "hour"), "hours the job runs", kind="assumption", source=src("job_hours"))
    ch.given("P", q(P, "USD/GPU/hour"), "price of a GPU-hour", kind="market", source=price_source)
    ch.given("f", f, "share of the hours a duplicate runs", kind="assumption", source=src("duplicate_runtime_share"))
    ch.step("E_dup", "f*G*H", "GPU*hour", "GPU-hours one duplicate burns")
    ch.step("C_dup", "E_dup*P", "USD", "cost of one duplicate")
    ch.given("N", N, "creates a day", kind="assumption", source=src("creates_per_day"))
    ch.given("t", t, "share of attempts whose response is lost after commit", kind="assumption", source=src("timeout_rate"),
             digits=3)
    ch.given("r", r, "probability a lost create is retried", kind="assumption", source=src("retry_rate"))
    ch.solve("d", "d = t*r*(1 + d)", "", "extra attempts (duplicates) per create", digits=4)
    ch.step("D", "N*d", "", "expected duplicates a day")
    ch.given("tau", q(1, "day"), "the window the counts are per", kind="assumption", source="definition")
    ch.given("Y", 365, "days in a year", kind="assumption", source="definition")
    ch.step("T_gap", "tau/D", "day", "mean days between duplicates")
    ch.step("C_yr", "Y*D*C_dup", "USD", "expected cost of duplicates a year")
    ch.step("B", "N*G*H/tau", "GPU", "GPUs these jobs keep busy: their GPU-hours a day over a day")
    return ch


def compute(p) -> Chain:
    return duplicate_chain(p.gpus_per_job, p.job_hours, p.usd_per_gpu_hour, p.duplicate_runtime_share,
                           p.creates_per_day, p.timeout_rate, p.retry_rate,
                           source={prm.name: SPEC.source(p, prm.name) for prm in PARAMETERS},
                           price_source=SPEC.source(p, "usd_per_gpu_hour"))


# --- the claim, judged by running the API ---------------------------------------------------------
# The paragraph's two sentences need different verdicts, so each is its own claim: the inventory (the source names
# no resource or state) and the three semantics (each a general property, checked against a standard or by arithmetic).
INVENTORY_QUOTE = ("Four resources, one state machine and three semantics that separate a working API from one that "
                   "corrupts state under retries.")
SEMANTICS_QUOTE = ("The idempotency key that makes a duplicate POST safe, why cancel returns 202 rather than 200, and "
                   "the cursor that survives concurrent inserts.")
# What the standards say, verbatim: HTTP Semantics (RFC 9110, June 2022) on the two statuses, and the IETF's
# Idempotency-Key draft (draft-ietf-httpapi-idempotency-key-header-07, October 2025) on what a key is for.
RFC_202 = ("RFC 9110, section 15.3.3", "the request has been accepted for processing, but the processing has not "
                                       "been completed")
RFC_200 = ("RFC 9110, section 15.3.1", "the request has succeeded")
KEY_DRAFT = ("the IETF's Idempotency-Key draft", "can be used to make non-idempotent HTTP methods such as POST or "
                                                 "PATCH fault-tolerant")
JOB = {"name": "pretrain-70b", "gpus": 64, "image": "trainer:2026.11"}
ATTEMPTS = 8              # concurrent attempts of one create (a client and its retries, racing)
TRIAL = dict(rows=60, limit=10, seed=1)


class FakeClock:
    def __init__(self, t: float = 0.0):
        self.t = t

    def __call__(self) -> float:
        return self.t


def _race(api: ResourceAPI, attempts: int, key_of) -> list:
    """`attempts` threads POST the same job at once (a barrier lines them up); key_of(i) is attempt i's key."""
    barrier, out = threading.Barrier(attempts), [None] * attempts

    def go(i):
        barrier.wait(timeout=5)
        k = key_of(i)
        out[i] = api.handle("POST", "/jobs", JOB, headers={"Idempotency-Key": k} if k else None)

    threads = [threading.Thread(target=go, args=(i,)) for i in range(attempts)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=10)
    return out


@memoised
def checks() -> dict:
    """Every semantics of the claim, run against fresh SQLite files (deterministic, so memoised: the page
    and claims() share one run; do not mutate the result)."""
    with tempfile.TemporaryDirectory() as d, contextlib.ExitStack() as apis:
        def fresh(name, **kw):
            return apis.enter_context(ResourceAPI(os.path.join(d, name + ".db"), **kw))

        api = fresh("one-key")
        same = _race(api, ATTEMPTS, lambda i: "create-pretrain-1")
        one_key = dict(created=api.count("jobs"), ids=len({r.body["id"] for r in same}),
                       statuses=sorted({r.status for r in same}),
                       replayed=sum(r.headers.get("Idempotent-Replayed") == "true" for r in same))
        other = api.handle("POST", "/jobs", {**JOB, "gpus": 128}, headers={"Idempotency-Key": "create-pretrain-1"})
        api_none = fresh("no-key")
        _race(api_none, ATTEMPTS, lambda i: None)
        api_each = fresh("key-per-attempt")
        _race(api_each, ATTEMPTS, lambda i: f"attempt-{i}")
        clock = FakeClock()
        api_late = fresh("late", clock=clock)
        first = api_late.handle("POST", "/jobs", JOB, headers={"Idempotency-Key": "k"})
        clock.t = KEY_RETENTION_S - 1
        in_window = api_late.handle("POST", "/jobs", JOB, headers={"Idempotency-Key": "k"})
        clock.t = KEY_RETENTION_S + 1
        late = api_late.handle("POST", "/jobs", JOB, headers={"Idempotency-Key": "k"})

        job = api.get("jobs", same[0].body["id"]).body["id"]
        api.advance("jobs", job, "running")
        c_running = api.handle("POST", f"/jobs/{job}/cancel")
        c_again = api.handle("POST", f"/jobs/{job}/cancel")
        still = api.get("jobs", job).body["state"]
        api.advance("jobs", job, "cancelled")              # the worker has stopped it
        c_done = api.handle("POST", f"/jobs/{job}/cancel")
        pend = api.handle("POST", "/jobs", JOB).body["id"]
        c_pending = api.handle("POST", f"/jobs/{pend}/cancel")
        illegal = 0
        for a in TRANSITIONS:
            for b in TRANSITIONS:
                if b not in TRANSITIONS[a]:
                    illegal += 1
        counts = dict(no_key=api_none.count("jobs"), per_attempt=api_each.count("jobs"), late=api_late.count("jobs"))
        pages = {}
        for how in ("cursor", "offset"):
            pages[how, "inserts"] = pagination_trial(os.path.join(d, f"{how}-ins.db"), how=how, max_inserts=5, **TRIAL)
            pages[how, "cancel"] = pagination_trial(os.path.join(d, f"{how}-cancel.db"), how=how, max_inserts=0,
                                                    cancel_seen=True, **TRIAL)
    return dict(one_key=one_key, other_status=other.status, no_key=counts["no_key"], per_attempt=counts["per_attempt"],
                late=dict(first=first.body["id"], in_window=in_window.body["id"], late=late.body["id"],
                          created=counts["late"]),
                cancel_running=(c_running.status, c_running.body["state"]), cancel_again=(c_again.status, still),
                cancel_done=c_done.status, cancel_pending=(c_pending.status, c_pending.body["state"]),
                illegal=illegal, pages=pages)


def semantics_hold(ck: dict) -> dict:
    pg = ck["pages"]
    return dict(
        key=ck["one_key"]["created"] == 1 and ck["one_key"]["ids"] == 1 and ck["other_status"] == 422
        and ck["no_key"] == ATTEMPTS,
        cancel=ck["cancel_running"] == (202, "cancelling") and ck["cancel_pending"] == (200, "cancelled"),
        cursor=all(pg["cursor", s]["repeats"] == pg["cursor", s]["skips"] == 0 for s in ("inserts", "cancel"))
        and pg["offset", "inserts"]["repeats"] > 0 and pg["offset", "cancel"]["skips"] > 0)


def claims() -> list[Claim]:
    ck = checks()
    ok = semantics_hold(ck)
    pg, k = ck["pages"], ck["one_key"]
    rows = TRIAL["rows"]
    holds = all(ok.values())
    return [Claim(
        "three-semantics", quote=SEMANTICS_QUOTE, source="spec/001 (the resource-API paragraph)",
        claimed="a key makes a duplicate POST safe; cancel answers 202, not 200; a cursor survives concurrent inserts",
        derived=f"{k['created']} job from {ATTEMPTS} racing attempts with one key, {ck['no_key']} without; "
                f"cancel of a running job {ck['cancel_running'][0]} ({ck['cancel_running'][1]}); cursor repeats "
                f"{pg['cursor', 'inserts']['repeats']} of {rows} rows, offset {pg['offset', 'inserts']['repeats']}",
        # Each semantics is a general property: the key's purpose as the IETF's draft states it, 202 against 200 as
        # HTTP Semantics defines them, cursor against offset by the positions an insert shifts; the run shows each.
        # A run that failed would be this API's bug, not the source's, so it leaves the claim unchecked.
        verdict=HOLDS if holds else UNCHECKABLE,
        reason=(f"a key, which {KEY_DRAFT[0]} says \"{KEY_DRAFT[1]}\", turned {fmt(ATTEMPTS)} racing attempts into "
                f"{fmt(k['created'])} job (without one, {fmt(ck['no_key'])}); HTTP defines {int(HTTPStatus.ACCEPTED)} as "
                f"\"{RFC_202[1]}\" ({RFC_202[0]}) and {int(HTTPStatus.OK)} as \"{RFC_200[1]}\" ({RFC_200[0]}), and "
                f"cancelling a running job is accepted work its worker has still to do: answered "
                f"{ck['cancel_running'][0]}, the job stays {ck['cancel_running'][1]}, while a "
                f"pending one is {ck['cancel_pending'][1]} at once and answered {ck['cancel_pending'][0]}; an insert "
                f"ahead of an offset shifts every later row by one, so under concurrent inserts offset repeated "
                f"{fmt(pg['offset', 'inserts']['repeats'])} of {fmt(rows)} rows and a cancel-each-page loop skipped "
                f"{fmt(pg['offset', 'cancel']['skips'])}, where a cursor on the last id repeated "
                f"{fmt(pg['cursor', 'inserts']['repeats'])} and skipped {fmt(pg['cursor', 'cancel']['skips'])}."
                if holds else
                f"the book's API did not reproduce every semantics ({', '.join(n for n, v in ok.items() if not v)} "
                f"failed), which is a bug of this API, not a check of the source.")),
        Claim(
        "four-resources", quote=INVENTORY_QUOTE, source="spec/001 (the resource-API paragraph)",
        claimed="four resources and one state machine; three semantics separate a working API from a corrupting one",
        derived=f"not derived: the book's API has {fmt(len(KINDS))} resources and {fmt(len(TRANSITIONS))} states "
                f"because the book built it so",
        verdict=UNCHECKABLE,
        reason=f"the source names none of the resources or states, so counting the book's own API ({fmt(len(KINDS))} "
               f"resources, one lifecycle of {fmt(len(TRANSITIONS))} states) would check the book against itself, and "
               f"that these three semantics are the ones that separate a working API from a corrupting one is the "
               f"source's own list, with no inventory of failures to rank them against.")]


def case_rows(ck: dict) -> list[list[str]]:
    """The check's cases as a table: what was done, and what the API answered."""
    k, late, pg = ck["one_key"], ck["late"], ck["pages"]
    rows = TRIAL["rows"]
    return [
        [f"{ATTEMPTS} threads POST the same job, one key", f"{k['created']} job; every answer {k['statuses'][0]} "
         f"with the same id, {k['replayed']} marked replayed"],
        ["same key, another body (128 GPUs)", f"{ck['other_status']}, nothing created"],
        [f"{ATTEMPTS} threads POST the same job, no key", f"{ck['no_key']} jobs"],
        [f"{ATTEMPTS} threads POST the same job, a new key per attempt", f"{ck['per_attempt']} jobs"],
        [f"retry with the key a second before its {duration(KEY_RETENTION_S)} retention ends",
         "the first job again" if late["in_window"] == late["first"] else "a new job"],
        ["retry with the key a second after it ends",
         f"a second job ({late['created']} in all)" if late["late"] != late["first"] else "the first job"],
        ["cancel a running job", f"{ck['cancel_running'][0]}, {ck['cancel_running'][1]}"],
        ["cancel it again", f"{ck['cancel_again'][0]}, still {ck['cancel_again'][1]} until the worker stops it"],
        ["cancel it once the worker has stopped it", f"{ck['cancel_done']}"],
        ["cancel a pending job", f"{ck['cancel_pending'][0]}, {ck['cancel_pending'][1]}"],
        ["the illegal moves of the state machine (every pair not in TRANSITIONS)", f"{ck['illegal']} refused"],
        [f"page {rows} jobs by cursor, inserts between pages",
         f"{pg['cursor', 'inserts']['repeats']} repeated, {pg['cursor', 'inserts']['skips']} skipped"],
        [f"page {rows} jobs by offset, inserts between pages",
         f"{pg['offset', 'inserts']['repeats']} repeated, {pg['offset', 'inserts']['skips']} skipped"],
        ["cancel every pending job page by page, by cursor",
         f"{rows - pg['cursor', 'cancel']['skips']} of {rows} cancelled"],
        ["cancel every pending job page by page, by offset",
         f"{rows - pg['offset', 'cancel']['skips']} of {rows} cancelled"],
    ]


def check_text(ck: dict) -> dict:
    pg = ck["pages"]
    return {"ck-attempts": fmt(ATTEMPTS), "ck-no-key": fmt(ck["no_key"]),
            "ck-rows": fmt(TRIAL["rows"]), "ck-limit": fmt(TRIAL["limit"]),
            "ck-offset-repeats": fmt(pg["offset", "inserts"]["repeats"]),
            "ck-offset-skips": fmt(pg["offset", "cancel"]["skips"]),
            "ck-offset-cancelled": fmt(TRIAL["rows"] - pg["offset", "cancel"]["skips"]),
            "ck-retention": duration(KEY_RETENTION_S), "ck-202": str(ck["cancel_running"][0]),
            "ck-200": str(ck["cancel_pending"][0]), "ck-409": str(ck["cancel_done"]),
            "ck-422": str(ck["other_status"]), "ck-illegal": fmt(ck["illegal"]),
            "ck-rfc202-at": RFC_202[0], "ck-rfc202": RFC_202[1], "ck-rfc200-at": RFC_200[0], "ck-rfc200": RFC_200[1],
            "ck-key-draft": KEY_DRAFT[1]}


# --- figure, what changes, exercises --------------------------------------------------------------
def pagination_curves(max_inserts=(0, 2, 4, 6, 8)) -> dict:
    """Rows repeated (inserts between pages) and skipped (a cancel-each-page loop with inserts) per scan,
    offset against cursor, on the check's trial."""
    out = {k: [] for k in ("offset_repeats", "offset_skips", "cursor_repeats", "cursor_skips")}
    with tempfile.TemporaryDirectory() as d:
        for m in max_inserts:
            for how in ("offset", "cursor"):
                a = pagination_trial(os.path.join(d, f"{how}-{m}-a.db"), how=how, max_inserts=m, **TRIAL)
                b = pagination_trial(os.path.join(d, f"{how}-{m}-b.db"), how=how, max_inserts=m, cancel_seen=True,
                                     **TRIAL)
                out[f"{how}_repeats"].append(a["repeats"])
                out[f"{how}_skips"].append(b["skips"])
    return dict(max_inserts=list(max_inserts), **out)


def cost_curves(p, timeout_rates=None, retry_rates=(0.25, 0.5, 1.0)) -> dict:
    import numpy as np
    t = np.logspace(-4, -1, 31) if timeout_rates is None else np.asarray(timeout_rates, float)
    c_dup = p.duplicate_runtime_share * p.gpus_per_job * p.job_hours * p.usd_per_gpu_hour
    return dict(t=t, curves={r: 365 * p.creates_per_day * (t * r / (1 - t * r)) * c_dup for r in retry_rates})


def _cost_year(p) -> float:
    return as_float(compute(p)["C_yr"], "USD")


def what_changes(p, ch: Chain) -> dict:
    base = as_float(ch["C_yr"], "USD")
    t_hi, r_lo, h_hi = 0.01, 0.5, 168.0
    return {"wc-base": fmt(q(base, "USD")), "wc-t": fmt(t_hi),
            "wc-t-cost": fmt(q(_cost_year(p.replace(timeout_rate=t_hi)), "USD")),
            "wc-r": fmt(r_lo), "wc-r-cost": fmt(q(_cost_year(p.replace(retry_rate=r_lo)), "USD")),
            "wc-h": fmt(q(h_hi, "hour")), "wc-h-cost": fmt(q(_cost_year(p.replace(job_hours=h_hi)), "USD")),
            "wc-linear": "in proportion"}


def exercises(p, ch: Chain) -> dict:
    contract = catalog.price("h100-rental").q("contract_1y")          # a one-year contract's price
    big = duplicate_chain(256, 96.0, as_float(contract, "USD/GPU/hour"), 1.0, p.creates_per_day, p.timeout_rate,
                          p.retry_rate)
    # 2: the timeout rate at which duplicates come once a week: N t / (1 - t) = 1/7 with r = 1
    n, per_week = p.creates_per_day, 1 / 7
    t_week = per_week / (n + per_week)
    # 3: offset pagination, newest first: k inserts between two page reads push k rows of page one onto page two
    limit, k = 50, 10
    return {"ex1-g": fmt(q(256, "GPU")), "ex1-h": fmt(q(96, "hour")), "ex1-p": fmt(contract),
            "ex1-cost": fmt(big["C_dup"]), "ex1-year": fmt(big["C_yr"]),
            "ex2-n": fmt(n), "ex2-t": fmt(t_week, digits=3), "ex2-pct": pct(t_week, digits=3),
            "ex3-limit": fmt(limit), "ex3-k": fmt(k), "ex3-repeats": fmt(min(k, limit)), "ex3-cursor": fmt(0)}


@memoised   # deterministic counts: the page and the tests share them
def contract_checks() -> dict:
    """The mechanism's contract, run small and in-process: {scenarios, held}. The scenarios:
    bodies naming id, state or kind, hostile bodies, ids and keys, a key reused with another request.
    The full set, with processes killed mid-operation, is tests/components/test_idempotent_api_adversarial.py."""
    with tempfile.TemporaryDirectory() as d:
        return api_contract(os.path.join(d, "contract.db"))


def contract_text() -> dict:
    ck = contract_checks()
    return {"contract-scenarios": f"{ck['scenarios']:,}", "contract-held": f"{ck['held']:,}"}


SPEC = Spec("idempotent-resource-api", PARAMETERS, RESULTS, compute, closed_form=True)
