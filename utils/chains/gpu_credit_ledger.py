"""gpu-credit-ledger: a double-entry credit ledger with a scheduler attached, judged by running
utils.fleet.ledger on real SQLite files, and the allocation arithmetic that keeps a fleet busy without
starving a team (weighted max-min with borrowing, utils.fleet.ledger.allocate) on a seeded day of demand.

The day: four teams with shares of the fleet (this book's assumption), each demanding its share times a
load factor times a seeded lognormal swing, hour by hour. Three allocators over the same demand: static
quotas (a team gets at most its share), borrowing (what a quiet team leaves is lent out), and borrowing
under the ledger's daily spend cap (a team that has spent its cap for the day is refused until midnight).
"""
from __future__ import annotations

import os
import tempfile
import threading

import numpy as np

from utils.chain import Chain, memoised
from utils.fleet import ledger as lg
from utils.params import Param, ParameterError, Result, Spec
from utils.units import fmt, pct, q
from utils.verdicts import READING, UNCHECKABLE, WRONG, Claim

SIMULATION = "a seeded day of hourly demand from four teams, allocated by quota, by share with borrowing, and under daily caps"

# (team, share): this book's assumption of a training-heavy platform
TEAMS = (("pretraining", 4), ("post-training", 2), ("inference", 1), ("research", 1))
SIGMA = 0.6          # lognormal swing of a team's hourly demand: this book's assumption

PARAMETERS = (
    Param("gpus", 4096, "GPUs in the fleet", unit="GPU", check="whole",
          source="spec/001 (the GPU credit paragraph): 4,096 GPUs"),
    Param("hours", 24, "hours of demand simulated (the cap is per UTC day)", unit="hour", check="whole",
          source="this book's choice: one day"),
    Param("load", 1.1, "mean demand of each team as a multiple of its share of the fleet", check="positive",
          source="this book's assumption: a fleet slightly oversubscribed"),
    Param("cap_factor", 1.0, "a team's daily cap as a multiple of its share of the fleet's GPU-hours a day",
          check="positive", source="this book's assumption: caps that add up to the fleet"),
    Param("job_gpus", 512, "GPUs of the job whose checkpoint window the hold funds", unit="GPU", check="whole",
          source="this book's assumption"),
    Param("grace_minutes", 10.0, "checkpoint-and-stop window a hold funds at start", unit="minute",
          check="positive", source="this book's assumption: one checkpoint save and a clean exit"),
    Param("seed", 0, "numpy Generator seed of the demand", check="non_negative", source="this book's choice"),
)

RESULTS = (
    Result("fleet_gpu_hours", "GPU*hour", "GPU-hours the fleet offers in the period", of="C"),
    Result("demand_gpu_hours", "GPU*hour", "GPU-hours the teams asked for (capped at the fleet each hour)", of="D"),
    Result("util_borrowing", "", "Utilisation, allocation by share with borrowing", of="U_b", percent=True),
    Result("util_static", "", "Utilisation, static quotas", of="U_s", percent=True),
    Result("util_capped", "", "Utilisation, borrowing under the daily caps", of="U_c", percent=True),
    Result("idle_static", "GPU*hour", "GPU-hours static quotas leave idle that borrowing fills", of="I_s"),
    Result("cap_factor_needed", "", "Smallest cap factor at which the caps idle nothing", of="f_min"),
    Result("starved_team_hours", "", "Team-hours below min(demand, guarantee) with borrowing", of="S_b"),
    Result("job_hold", "GPU*hour", "Hold a job must fund to start: GPUs x checkpoint window", of="hold"),
)


def validate(p):
    for name in ("gpus", "hours", "job_gpus", "seed"):
        if float(p[name]) != int(p[name]):
            raise ParameterError(f"{name} must be a whole number, got {p[name]!r}")
    if not 1 <= p.hours <= 24 * 31:
        raise ParameterError(f"hours must be between 1 and 744 (a month), got {p.hours!r}")
    if p.gpus < len(TEAMS) or p.gpus > 1_000_000:
        raise ParameterError(f"gpus must be between {len(TEAMS)} and 1,000,000, got {p.gpus!r}")
    if p.load > 100:
        raise ParameterError(f"load must be at most 100, got {p.load!r}")


def shares() -> dict:
    return dict(TEAMS)


def demand(gpus: int, hours: int, load: float, seed: int) -> list[dict]:
    """Hourly GPU demand per team: share x load x fleet x a seeded lognormal swing (median one)."""
    rng = np.random.default_rng(int(seed))
    w = sum(s for _, s in TEAMS)
    swing = np.exp(SIGMA * rng.standard_normal((int(hours), len(TEAMS))) - SIGMA ** 2 / 2)
    return [{t: int(min(gpus, round(load * gpus * s / w * swing[h, i]))) for i, (t, s) in enumerate(TEAMS)}
            for h in range(int(hours))]


def run_day(gpus: int, day: list[dict], cap_factor: float) -> dict:
    """The three allocators over the same demand, hour by hour, with the starvation count."""
    sh, w = shares(), sum(s for _, s in TEAMS)
    cap = {t: cap_factor * gpus * s / w * 24 for t, s in TEAMS}       # GPU-hours a day
    spent = {t: 0.0 for t in sh}
    out = dict(borrow=[], static=[], capped=[], starved=0, demand=[])
    for h, want in enumerate(day):
        if h % 24 == 0:
            spent = {t: 0.0 for t in sh}
        b, s = lg.allocate(gpus, sh, want), lg.static_quota(gpus, sh, want)
        room = {t: min(want[t], int(max(0.0, cap[t] - spent[t]))) for t in sh}
        c = lg.allocate(gpus, sh, room)
        for t in sh:
            spent[t] += c[t]
            out["starved"] += b[t] < min(want[t], int(gpus * sh[t] / w))
        out["borrow"].append(b)
        out["static"].append(s)
        out["capped"].append(c)
        out["demand"].append(min(gpus, sum(want.values())))
    return out


def cap_needed(gpus: int, day: list[dict], step: float = 0.05) -> float:
    """The smallest cap factor (in steps) at which the capped allocator fills what borrowing fills."""
    target = sum(sum(b.values()) for b in run_day(gpus, day, 100.0)["borrow"])
    f = 1.0
    while f < 10 and sum(sum(c.values()) for c in run_day(gpus, day, f)["capped"]) < target:
        f = round(f + step, 10)
    return f


def compute(p) -> Chain:
    """The day's chain; the day's demand and the allocators' hours ride along as ch.data["day"] and ["run"]."""
    gpus, hours, seed = int(p.gpus), int(p.hours), int(p.seed)
    day = demand(gpus, hours, p.load, seed)
    r = run_day(gpus, day, p.cap_factor)
    total = lambda key: float(sum(sum(a.values()) for a in r[key]))    # noqa: E731
    ch = Chain("A day of demand on the fleet: quotas, borrowing, caps")
    ch.given("G", q(gpus, "GPU"), "GPUs in the fleet", kind="spec" if gpus == 4096 else "assumption",
             source=SPEC.source(p, "gpus"))
    ch.given("H", q(hours, "hour"), "period simulated", kind="assumption", source=SPEC.source(p, "hours"))
    ch.step("C", "G*H", "GPU*hour", "GPU-hours on offer")
    ch.given("D", q(float(sum(r["demand"])), "GPU*hour"), "GPU-hours demanded, at most the fleet each hour",
             kind="assumption", source="seeded demand (utils.chains.gpu_credit_ledger.demand)", digits=5)
    ch.given("A_b", q(total("borrow"), "GPU*hour"), "allocated by share with borrowing", kind="assumption",
             source="utils.fleet.ledger.allocate", digits=5)
    ch.given("A_s", q(total("static"), "GPU*hour"), "allocated by static quota", kind="assumption",
             source="utils.fleet.ledger.static_quota", digits=5)
    ch.given("A_c", q(total("capped"), "GPU*hour"), f"allocated with borrowing under caps of {fmt(p.cap_factor)} x share",
             kind="assumption", source="utils.fleet.ledger.allocate, demand cut at the daily cap", digits=5)
    ch.step("U_b", "A_b/C", "", "utilisation with borrowing")
    ch.step("U_s", "A_s/C", "", "utilisation with static quotas")
    ch.step("U_c", "A_c/C", "", "utilisation under the caps")
    ch.step("I_s", "A_b - A_s", "GPU*hour", "idle under quotas that borrowing fills", digits=4)
    ch.given("f_min", cap_needed(gpus, day), "smallest cap factor that idles nothing", kind="assumption",
             source="search in steps of a twentieth")
    ch.given("S_b", float(r["starved"]), "team-hours below min(demand, guarantee), borrowing",
             kind="assumption", source="utils.fleet.ledger.allocate")
    ch.given("g", q(int(p.job_gpus), "GPU"), "GPUs of the job", kind="assumption", source=SPEC.source(p, "job_gpus"))
    ch.given("t_g", q(p.grace_minutes, "minute"), "checkpoint window the hold funds", kind="assumption",
             source=SPEC.source(p, "grace_minutes"))
    ch.step("hold", "g*t_g", "GPU*hour", "hold moved to escrow at start")
    ch.data["day"], ch.data["run"] = day, r
    return ch


# --- the ledger, run: the four questions of the claim ---------------------------------------------------
WRITERS, KEYS, COPIES = 6, 60, 3       # the crowd: writers, logical debits, sends of each
GRANT_H, DEBIT_S = 4, 900              # each team's grant in GPU-hours, each debit in GPU-seconds


@memoised
def checks() -> dict:
    """Run utils.fleet.ledger on fresh SQLite files: the racy path, the one-transaction path under the same race,
    everyone spending at once, the cap, the empty account and a running job at zero."""
    with tempfile.TemporaryDirectory() as d:
        out = {name: race(os.path.join(d, f"{name}.db"), name) for name in ("racy", "atomic")}
        out["crowd"] = crowd(os.path.join(d, "crowd.db"))
        now = [0.0]
        with lg.Ledger(os.path.join(d, "rules.db"), clock=lambda: now[0]) as led:
            led.open_team("vision", daily_cap_gpu_hours=10)
            led.grant("vision", lg.gpu_hours(2), key="g")
            first, retry = led.debit("vision", 1800, key="d"), led.debit("vision", 1800, key="d")
            out["replay"] = (first.status, retry.status, first.txn == retry.txn)
            out["empty_start"] = led.start_job("big", "vision", gpus=64, grace_s=600, key="s-big").status
            led.start_job("j", "vision", gpus=2, grace_s=600, key="s-j")
            out["drain"] = [led.meter("j", 300, key=f"t{i}") for i in range(12)]
            out["after"] = dict(team=led.balance("vision"), hold=led.balance("hold:j"), audit=led.audit())
            led.open_team("speech", daily_cap_gpu_hours=10)
            led.grant("speech", lg.gpu_hours(100), key="g-s")
            cap = [led.debit("speech", lg.gpu_hours(4), key=f"c{i}").status for i in range(3)]
            now[0] = lg.SECONDS_PER_DAY
            cap.append(led.debit("speech", lg.gpu_hours(4), key="c2").status)
            out["cap"] = cap
    return out


def race(path, how: str) -> dict:
    """Two writers spend a balance that covers one of them, both released by a barrier. racy: each checks,
    waits for the other to check, then writes; atomic: the one-transaction debit."""
    with lg.Ledger(path) as led:
        led.open_team("vision")
        led.grant("vision", lg.gpu_hours(1), key="g")
    barrier, got = threading.Barrier(2, timeout=5), []

    def spend(i):
        with lg.Ledger(path) as led:
            if how == "racy":
                got.append(led.debit_racy("vision", 3600, key=f"k{i}", between=barrier.wait).status)
            else:
                barrier.wait()
                got.append(led.debit("vision", 3600, key=f"k{i}").status)

    ts = [threading.Thread(target=spend, args=(i,)) for i in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(10)
    with lg.Ledger(path) as led:
        return dict(statuses=sorted(got), balance=led.balance("vision"))


def crowd(path) -> dict:
    """WRITERS threads, each with its own connection, spend from three teams. Every logical debit (a key,
    a team, a fixed amount) is sent three times by three different writers, as a client and its retries
    would; the amounts are equal so that the counts below do not depend on which thread wins a race."""
    import random
    teams = ("vision", "speech", "text")
    with lg.Ledger(path) as led:
        for t in teams:
            led.open_team(t)
            led.grant(t, lg.gpu_hours(GRANT_H), key=f"g-{t}")
    sends = [(teams[i % 3], DEBIT_S, f"op-{i}") for i in range(KEYS) for _ in range(COPIES)]
    random.Random(0).shuffle(sends)
    plans = [sends[w::WRITERS] for w in range(WRITERS)]
    got = [[] for _ in range(WRITERS)]
    barrier = threading.Barrier(WRITERS, timeout=10)

    def work(w):
        with lg.Ledger(path) as led:
            barrier.wait()
            got[w] = [(k, a, led.debit(t, a, key=k).status) for t, a, k in plans[w]]

    ts = [threading.Thread(target=work, args=(w,)) for w in range(WRITERS)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(30)
    rows = [x for g in got for x in g]
    posted = {k: a for k, a, s in rows if s == "posted"}
    with lg.Ledger(path) as led:
        a = led.audit()
        return dict(attempts=len(rows), posted=sum(s == "posted" for _, _, s in rows), keys=len(posted),
                    replayed=sum(s == "replayed" for _, _, s in rows),
                    refused=sum(s == "insufficient" for _, _, s in rows),
                    used=a["used"], posted_amount=sum(posted.values()), total=a["total"],
                    negative=a["negative"], unbalanced=a["unbalanced_txns"], granted=a["granted"])


def gpuh(gpu_seconds) -> str:
    return fmt(q(gpu_seconds / 3600, "GPU*hour"))


def ledger_ok(ck: dict) -> dict:
    c = ck["crowd"]
    return {"who may spend": ck["replay"][:2] == ("posted", "replayed") and ck["racy"]["balance"] < 0 <= ck["atomic"]["balance"],
            "how fast": ck["cap"] == ["posted", "posted", "over_cap", "posted"],
            "the empty account": ck["empty_start"] == "insufficient" and "draining" in ck["drain"]
            and ck["drain"][-1] == "stopped"
            and ck["after"]["audit"]["negative"] == [],
            "everyone at once": c["posted"] == c["keys"] and c["used"] == c["posted_amount"] and c["total"] == 0
            and not c["negative"] and not c["unbalanced"]}


QUOTE_LEDGER = ("A GPU credit system is an accounting ledger with a scheduler attached: who may spend, how fast, "
                "what happens when the account is empty and what happens when everyone spends at once.")
QUOTE_FLEET = ("The data model, the debit path, the fairness rule and the arithmetic that keeps 4,096 GPUs busy "
               "without starving a team.")
CLAIM = dict(gpus=4096, hours=24, load=1.1, seed=0)


@memoised
def claim_day() -> Chain:
    """The claim's own day (its fleet, load and seed; the other inputs at their defaults)."""
    return compute(SPEC.check(**CLAIM))


SEEDS = tuple(range(5))     # the claim's check holds on every one of these days, not on one lucky draw


@memoised
def claim_days() -> list[Chain]:
    """The claim's day on each of SEEDS (seed 0 is claim_day, the one the page draws)."""
    return [compute(SPEC.check(**{**CLAIM, "seed": s})) for s in SEEDS]


def claims() -> list[Claim]:
    ck, ok = checks(), ledger_ok(checks())
    c = ck["crowd"]
    all_ok = all(ok.values())
    days = claim_days()
    u = {k: [float(d[k].m) for d in days] for k in ("U_b", "U_s", "U_c")}
    ud = [float(d["D"].m / d["C"].m) for d in days]
    busy = all(abs(b - a) < 1e-12 for b, a in zip(u["U_b"], ud))
    starved = sum(int(d["S_b"].m) for d in days)
    span = lambda xs: f"{pct(min(xs))} to {pct(max(xs))}"      # noqa: E731
    idle_s = [b - x for b, x in zip(u["U_b"], u["U_s"])]
    idle_c = [b - x for b, x in zip(u["U_b"], u["U_c"])]
    f_min = max(float(d["f_min"]) for d in days)
    holds = busy and starved == 0
    return [
        Claim("ledger", quote=QUOTE_LEDGER, source="spec/001 (the GPU credit paragraph)",
              claimed="four questions a ledger with a scheduler must answer",
              derived=f"the book's ledger (utils.fleet.ledger on SQLite): {c['attempts']:,} debits from {WRITERS} "
                      f"writers posted {c['keys']:,} keys once each",
              # A design stated as a definition, with no number: the book's own ledger answering the four questions
              # shows the design can be built, which is the book checked against itself.
              verdict=UNCHECKABLE,
              reason=(f"the sentence defines a design and gives no number, so the only check is the book's own ledger "
                      f"{'answering' if all_ok else 'failing one of'} the four questions: {WRITERS:,} threads made "
                      f"{c['attempts']:,} debits with colliding keys, {c['posted']:,} posted, one per key, "
                      f"{c['replayed']:,} replayed, {c['refused']:,} refused at an empty balance, the book summing to "
                      f"{fmt(c['total'])}; a check-then-write debit in the same race left {gpuh(ck['racy']['balance'])}.")),
        Claim("busy-not-starved", quote=QUOTE_FLEET, source="spec/001 (the GPU credit paragraph)",
              claimed=f"{CLAIM['gpus']:,} GPUs busy without starving a team",
              derived=f"on {len(days)} seeded days: borrowing {span(u['U_b'])} busy (all demand allows), static quotas "
                      f"{span(u['U_s'])}, caps at the share {span(u['U_c'])}; {starved} team-hours starved",
              verdict=READING if holds else WRONG,
              reading=(f"'busy' as every GPU allocated while demand lasts and 'without starving a team' as no team "
                       f"held below the smaller of its demand and its guaranteed share: allocation by share with "
                       f"borrowing does both on every day. The arithmetic alone does not: static quotas leave "
                       f"{span(idle_s)} of the fleet idle, and daily caps that add up to the fleet cut borrowers off "
                       f"by evening and idle up to {pct(max(idle_c))}; the caps must add up to {fmt(f_min)} times the "
                       f"fleet") if holds else "",
              nearest_true="" if holds else "borrowing leaves GPUs idle or starves a team on one of the days",
              reason=(f"on each of {len(days)} seeded days at a load of {fmt(CLAIM['load'])} times each share, "
                      f"borrowing keeps {span(u['U_b'])} of the fleet busy, all that demand allows, with no team-hour "
                      f"below its guarantee; static quotas reach {span(u['U_s'])} and caps equal to the shares "
                      f"{span(u['U_c'])}."))]


# --- the page's tables, figure, what changes, exercises ---------------------------------------------------
def case_rows(ck: dict) -> list[list[str]]:
    c, gh = ck["crowd"], lambda x: gpuh(x)      # noqa: E731
    drain = ", ".join(f"{s} x{ck['drain'].count(s)}" for s in dict.fromkeys(ck["drain"]))
    return [
        ["two writers check, then write (racy)", f"both {ck['racy']['statuses'][0]}; balance {gh(ck['racy']['balance'])}"],
        ["the same race in one BEGIN IMMEDIATE",
         f"{', '.join(ck['atomic']['statuses'])}; balance {gh(ck['atomic']['balance'])}"],
        ["a debit retried with its key", f"{ck['replay'][0]}, then {ck['replay'][1]} (same transaction)"],
        ["three debits of four tenths of the cap in a day, then midnight", ", ".join(ck["cap"])],
        ["start a job whose hold exceeds the balance", ck["empty_start"]],
        ["meter a running job to zero, twelve ticks", drain],
        [f"{WRITERS} threads, {c['attempts']:,} debits, colliding keys",
         f"{c['posted']:,} posted (one per key), {c['replayed']:,} replayed, {c['refused']:,} refused; "
         f"book sums to {c['total']}, none negative"],
    ]


def team_rows(ch: Chain) -> list[list[str]]:
    r, sh = ch.data["run"], shares()
    w = sum(sh.values())
    rows = []
    for t in sh:
        d = sum(h[t] for h in ch.data["day"])
        rows.append([t, pct(sh[t] / w), f"{d:,}", f"{sum(a[t] for a in r['static']):,}",
                     f"{sum(a[t] for a in r['borrow']):,}", f"{sum(a[t] for a in r['capped']):,}"])
    return rows


def hourly(ch: Chain) -> dict:
    r = ch.data["run"]
    return dict(hours=list(range(len(r["borrow"]))), demand=r["demand"],
                borrow={t: [a[t] for a in r["borrow"]] for t in shares()},
                static=[sum(a.values()) for a in r["static"]], capped=[sum(a.values()) for a in r["capped"]])


def check_text(ck: dict) -> dict:
    c = ck["crowd"]
    r = claim_day()
    return {"ck-writers": f"{WRITERS:,}", "ck-attempts": f"{c['attempts']:,}", "ck-posted": f"{c['posted']:,}",
            "ck-replayed": f"{c['replayed']:,}", "ck-refused": f"{c['refused']:,}",
            "ck-used": gpuh(c["used"]), "ck-granted": gpuh(c["granted"]),
            "ck-racy": gpuh(ck["racy"]["balance"]),
            "ck-load": fmt(CLAIM["load"]), "ck-ub": pct(float(r["U_b"].m)), "ck-us": pct(float(r["U_s"].m)),
            "ck-uc": pct(float(r["U_c"].m)), "ck-fmin": fmt(float(r["f_min"].m))}


def what_changes(p, ch: Chain) -> dict:
    out = {}
    for key, load in (("lo", 0.8), ("hi", 1.5)):
        c = compute(p.replace(load=load))
        out.update({f"wc-{key}": fmt(load), f"wc-{key}-b": pct(float(c["U_b"].m)), f"wc-{key}-s": pct(float(c["U_s"].m))})
    c = compute(p.replace(cap_factor=1.5))
    out.update({"wc-cap": fmt(1.5), "wc-cap-u": pct(float(c["U_c"].m))})
    return out


def exercises(p, ch: Chain) -> dict:
    sh = shares()
    quiet = {"pretraining": 4000, "post-training": 1500, "inference": 300, "research": 0}
    a = lg.allocate(4096, sh, quiet)
    hold = 2048 * 15 / 60
    return {"ex1-g": q(2048, "GPU"), "ex1-t": q(15, "minute"), "ex1-hold": q(hold, "GPU*hour"),
            "ex1-hours": fmt(hold / 2048 * 60, "minute"),
            "ex2-pre": f"{quiet['pretraining']:,}", "ex2-post": f"{quiet['post-training']:,}",
            "ex2-inf": f"{quiet['inference']:,}",
            "ex2-a-pre": f"{a['pretraining']:,}", "ex2-a-post": f"{a['post-training']:,}",
            "ex2-a-inf": f"{a['inference']:,}", "ex2-q-pre": f"{4096 * 4 // 8:,}",
            "ex3-teams": f"{len(sh)}", "ex3-f": fmt(1.0), "ex3-day": q(int(p.gpus) * 24, "GPU*hour")}


@memoised   # deterministic counts: the page and the tests share them
def contract_checks() -> dict:
    """The mechanism's contract, run small and in-process: {scenarios, held}. The scenarios:
    a key reused with another amount, team or call, hostile names and amounts.
    The full set, with processes killed mid-operation, is tests/fleet/test_ledger_adversarial.py."""
    with tempfile.TemporaryDirectory() as d:
        return lg.contract_scenarios(os.path.join(d, "contract.db"))


def contract_text() -> dict:
    ck = contract_checks()
    return {"contract-scenarios": f"{ck['scenarios']:,}", "contract-held": f"{ck['held']:,}"}


SPEC = Spec("gpu-credit-ledger", PARAMETERS, RESULTS, compute, validate=validate)
