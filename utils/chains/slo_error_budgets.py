"""slo-error-budgets: the error budget in minutes, burn-rate alerts, the detection gap, and the rollback rule.

An objective o over a period T allows (1 - o) T of full outage: the budget. A failure with bad share e
burns it at b = e / (1 - o); the workbook's fast rule pages when an hour shows b >= 14.4 (2% of a 30-day
budget) and five minutes agree, which a step failure reaches after W (k (1 - o) - e0) / (e - e0), having
spent k W / T of the budget whatever its size. Then a person has to look (the acknowledgement), and
every minute after that burns e of a minute of budget whether it is spent reading logs or rolling back.
The closed forms are checked by running utils.fleet.slo's multiwindow evaluator on a seeded incident.
"""
from __future__ import annotations

import math

import numpy as np

from utils.chain import Chain, as_float, memoised
from utils.chains.latency_slos_goodput import SLO_SOURCE
from utils.fleet import slo
from utils.params import Param, ParameterError, Result, Spec
from utils.units import duration, fmt, pct, q
from utils.verdicts import HOLDS, UNCHECKABLE, WRONG, Claim

SIMULATION = "a seeded incident's per-minute request counts, run through the multiwindow alert (utils.fleet.slo)"

INCIDENT_SOURCE = ("this book's assumption: a bad deploy that fails a tenth of requests (one replica group in "
                   "ten serving errors)")
HUMAN_SOURCE = "this book's assumption: a paged engineer at a laptop within five minutes"
PLATFORM_SOURCE = ("this book's assumption: a checkpoint every half hour and a quarter of an hour from "
                   "restart to the first step of a large job (compare the failures chapter)")

PARAMETERS = (
    Param("objective", 0.999, "o: share of requests that must be good over the period", check="fraction",
          source="the workbook's worked example (99.9% over 30 days): " + slo.WORKBOOK_SOURCE),
    Param("period_days", 30.0, "T: the objective's period (a rolling window)", unit="day",
          source="the workbook's 30-day window: " + slo.WORKBOOK_SOURCE),
    Param("incident_bad_share", 0.1, "e: share of requests that fail during the incident", check="fraction",
          source=INCIDENT_SOURCE),
    Param("baseline_bad_share", 0.0002, "e0: share of requests that fail on a normal day", check="share",
          source="this book's assumption: a fifth of the budget's rate (burn 0.2)"),
    Param("requests_per_minute", 6000.0, "traffic: requests per minute (a hundred a second)", unit="request/min",
          source="this book's assumption"),
    Param("ack_minutes", 5.0, "from the page to a person looking at the service", unit="min",
          check="non_negative", source=HUMAN_SOURCE),
    Param("investigate_minutes", 30.0, "reading logs before acting, when the rule is not 'roll back first'",
          unit="min", check="non_negative", source="the rule's own example: half an hour of logs"),
    Param("rollback_minutes", 5.0, "from the decision to the previous version serving everyone", unit="min",
          source="this book's assumption: a rolling restart onto weights already cached on the hosts"),
    Param("ttft_bound_s", 0.45, "the percentile objective's TTFT bound", unit="s", source=SLO_SOURCE),
    Param("ttft_percentile", 0.99, "the percentile the TTFT bound is held at (0.99 = p99)", check="fraction",
          source=SLO_SOURCE),
    Param("checkpoint_minutes", 30.0, "a training job's checkpoint interval", unit="min", source=PLATFORM_SOURCE),
    Param("restart_minutes", 15.0, "a training job's restart, from the interruption to its first step", unit="min",
          check="non_negative", source=PLATFORM_SOURCE),
    Param("seed", 0, "seed of the simulated incident's request counts", check="non_negative",
          source="this book's choice"),
)

RESULTS = (
    Result("budget_minutes", "min", "Error budget, minutes of full outage per period", of="B"),
    Result("ttft_budget_requests", "request", "Requests the p99 TTFT objective lets exceed its bound, per period",
           of="B_q"),
    Result("incident_burn_rate", "", "Burn rate during the incident", of="b"),
    Result("exhaustion_time", "hour", "Time the incident takes to spend the whole budget", of="T_x"),
    Result("fast_burn_threshold", "", "Burn rate of the first alert to fire (the hour's page, the six hours' page "
           "or the three days' ticket)", of="k_f"),
    Result("detection_minutes", "min", "From the failure to the first alert (closed form)", of="t_d"),
    Result("budget_share_at_page", "", "Budget spent when the first alert fires (any failure)", of="s_d", percent=True),
    Result("detection_gap", "min", "Detection gap: the failure to a person looking", of="t_g"),
    Result("burned_rollback_first", "min", "Budget burned, rolling back first", of="M_rb"),
    Result("burned_logs_first", "min", "Budget burned, reading logs first", of="M_lg"),
    # past 100% the incident spends more than the whole budget: the objective is missed, a real answer
    Result("share_rollback_first", "", "Budget burned rolling back first, against the whole budget (past 100%: the "
           "objective is missed)", of="s_rb", percent=True),
    Result("share_logs_first", "", "Budget burned reading logs first, against the whole budget (past 100%: the "
           "objective is missed)", of="s_lg", percent=True),
    Result("detection_minutes_simulated", "min", "From the failure to the page (simulated)", of="t_sim"),
    Result("blips_over_one_outage", "", "Training work lost: the budget as one-minute blips over one outage",
           of="r_blip"),
)


def validate(p):
    if p.objective >= 1.0:
        raise ParameterError(f"objective must be below 1 (an objective of 1 has no budget), got {p.objective!r}")
    if p.ttft_percentile >= 1.0:
        raise ParameterError(f"ttft_percentile must be below 1, got {p.ttft_percentile!r}")
    if p.baseline_bad_share >= p.incident_bad_share:
        raise ParameterError(f"baseline_bad_share must be below incident_bad_share ({p.incident_bad_share!r}), "
                             f"got {p.baseline_bad_share!r}")
    if p.period_days * 1440 < 60 or p.period_days > 366:
        raise ParameterError(f"period_days must be between an hour and a year, got {p.period_days!r}")
    if p.baseline_bad_share >= fast_rule(p.period_days).burn * (1 - p.objective):
        raise ParameterError(f"baseline_bad_share={p.baseline_bad_share!r} already pages the fast rule every day")


def fast_rule(period_days: float) -> slo.Rule:
    return slo.workbook_rules(period_days * 86400.0)[0]


def live_rules(p) -> list[slo.Rule]:
    """The workbook's rules that can detect something: a rule the baseline alone holds at its threshold fires every
    day and detects nothing (validate keeps the fast rule among them)."""
    return [r for r in slo.workbook_rules(p.period_days * 86400.0) if p.baseline_bad_share < r.burn * (1 - p.objective)]


def first_alert(p) -> slo.Rule | None:
    """The workbook rule whose long window first reaches its burn rate for this step failure (the fastest of the two
    pages and the ticket), or None when none does: the incident burns below every rule's threshold."""
    times = [(slo.detection_time(p.incident_bad_share, p.objective, r.burn, r.long_s, p.baseline_bad_share), i, r)
             for i, r in enumerate(live_rules(p))]
    t, _, rule = min(times)
    return rule if math.isfinite(t) else None


# What has no value when no rule fires: the alert, its detection, and the minutes and budget counted from it.
AFTER_THE_ALERT = ("fast_burn_threshold", "detection_minutes", "budget_share_at_page", "detection_gap",
                   "burned_rollback_first", "burned_logs_first", "share_rollback_first", "share_logs_first",
                   "detection_minutes_simulated")


def unpaged(p) -> str:
    """Which alert fires when none does: the incident's burn against the lowest threshold, and how long the budget
    lasts unpaged."""
    b = p.incident_bad_share / (1 - p.objective)
    low = min(live_rules(p), key=lambda r: r.burn)
    lasts = slo.exhaustion_time(b, p.period_days * 86400.0)
    holds = f", past the {duration(p.period_days * 86400.0)} period: the objective holds" if b <= 1 else ""
    return (f"none of the workbook's rules fires at a burn rate of {fmt(b)} (the lowest, the {low.severity} on "
            f"{duration(low.long_s)}, needs {fmt(low.burn)}): the budget burns out in {duration(lasts)} unpaged{holds}")


def alert_rows(objective: float = 0.999, period_days: float = 30.0, shares=(0.001, 0.002, 0.01, 1.0)) -> list[list[str]]:
    """The workbook's Table 5-4 re-derived: for each error rate its burn rate, the time the budget lasts and the first
    alert to fire (on a quiet baseline)."""
    T = period_days * 86400.0
    rows = []
    for e in shares:
        b = e / (1 - objective)
        times = [(slo.detection_time(e, objective, r.burn, r.long_s), r) for r in slo.workbook_rules(T)]
        t, r = min(times, key=lambda x: x[0])
        rows.append([pct(e), fmt(b), duration(slo.exhaustion_time(b, T)),
                     f"{r.severity}, {r.name}, after {duration(t)}" if math.isfinite(t) else "none"])
    return rows


# --- the simulated incident --------------------------------------------------------------------------
HISTORY_MIN = 360        # normal traffic before the failure, minutes
AFTER_MIN = 120          # normal traffic after the rollback


def simulate(objective, period_days, e, e0, per_minute, t_end_min, seed, rules=None, history=HISTORY_MIN) -> dict:
    """A failure at minute `history` that lasts t_end_min minutes, the per-minute counts seeded; each
    rule evaluated every minute. Detection: minutes from the failure to the first firing sample's end. The history
    must fill the long window of the rule being read, or that window averages over less than its length."""
    rules = rules or slo.workbook_rules(period_days * 86400.0)
    start = history
    end = start + int(math.ceil(t_end_min))
    total, bad = slo.incident_series(end + AFTER_MIN, start, end, e, per_minute=per_minute, baseline=e0, seed=seed)
    fired = slo.evaluate(total, bad, 60.0, objective, rules)
    first = {name: f.first(start) for name, f in fired.items()}
    budget_requests = (1 - objective) * per_minute * period_days * 1440
    out = dict(total=total, bad=bad, fired=fired, start=start, end=end, rules=rules,
               detect={name: (i - start + 1 if i is not None else None) for name, i in first.items()})
    fast = rules[0].name
    i = first[fast]
    out["spent_at_page"] = (float(bad[start:i + 1].sum()) / budget_requests) if i is not None else None
    out["reset_after"] = ((fired[fast].last() - end + 1) if fired[fast].last() is not None else None)
    return out


# --- the chain -----------------------------------------------------------------------------------------
def budget_chain(p, *, source="parameters cell") -> Chain:
    """source: one source for every input (a check's own reading), or a function of the parameter's name (compute
    passes the spec's, so a default cites its own)."""
    src = source if callable(source) else (lambda name: source)
    ch = Chain("Error budget, burn rate, detection and rollback")
    ch.given("o", q(p.objective, ""), "objective: share of requests good", kind="assumption", source=src("objective"))
    ch.given("T", q(p.period_days, "day"), "period", kind="assumption", source=src("period_days"))
    ch.step("B", "(1 - o)*T", "min", "error budget: minutes of full outage per period")
    ch.given("p_q", q(p.ttft_percentile, ""), "percentile of the TTFT objective", kind="spec", source="MLPerf")
    ch.given("r", q(p.requests_per_minute, "request/min"), "traffic", kind="assumption",
             source=src("requests_per_minute"))
    ch.step("B_q", "(1 - p_q)*r*T", "request", "requests the p99 TTFT objective lets exceed its bound")
    ch.given("e", q(p.incident_bad_share, ""), "bad share during the incident", kind="assumption",
             source=src("incident_bad_share"))
    ch.given("e_0", q(p.baseline_bad_share, ""), "bad share on a normal day", kind="assumption",
             source=src("baseline_bad_share"))
    ch.step("b", "e/(1 - o)", "", "burn rate during the incident")
    ch.step("T_x", "T/b", "hour", "time to spend the whole budget at that rate")
    rule = first_alert(p)
    if rule is not None:                    # no rule fires: nothing to count from (compute leaves those results out)
        alert_steps(ch, p, rule, src)
    platform_steps(ch, p, src)
    return ch


def alert_steps(ch: Chain, p, rule: slo.Rule, src) -> None:
    """The first alert to fire, its detection, and the budget burned from the failure to the rollback."""
    fast = rule == fast_rule(p.period_days)
    what = "fast rule" if fast else f"first alert to fire ({rule.severity}, {rule.name})"
    share = next(w[3] for w, r in zip(slo.WORKBOOK, slo.workbook_rules(p.period_days * 86400.0)) if r == rule)
    ch.given("s_f", q(share, ""), f"{what}: share of the budget worth " + ("a page" if fast else f"a {rule.severity}"),
             kind="spec", source="SRE workbook, Table 5-8")
    ch.given("W_f", q(rule.long_s, "s").to("hour"), f"{what}'s long window", kind="spec", source="SRE workbook")
    ch.step("k_f", "s_f*T/W_f", "", f"{what}'s burn rate")
    ch.step("t_d", "W_f*(k_f*(1 - o) - e_0)/(e - e_0)", "min",
            "failure to page: the hour's share reaches k(1 - o)" if fast else
            f"failure to {rule.severity}: the window's share reaches k(1 - o)")
    ch.step("s_d", "k_f*W_f/T", "", "budget spent when it fires: independent of e")
    ch.given("t_a", q(p.ack_minutes, "min"), "page to a person looking", kind="assumption", source=src("ack_minutes"))
    ch.step("t_g", "t_d + t_a", "min", "detection gap: broken before anyone knew")
    ch.given("t_rb", q(p.rollback_minutes, "min"), "rollback", kind="assumption", source=src("rollback_minutes"))
    ch.given("t_i", q(p.investigate_minutes, "min"), "reading logs first", kind="assumption",
             source=src("investigate_minutes"))
    ch.step("M_rb", "e*(t_g + t_rb)", "min", "budget burned, rolling back first")
    ch.step("M_lg", "e*(t_g + t_i + t_rb)", "min", "budget burned, reading logs first")
    ch.step("s_rb", "M_rb/B", "", "share of the budget, rolling back first")
    ch.step("s_lg", "M_lg/B", "", "share of the budget, reading logs first")


def platform_steps(ch: Chain, p, src) -> None:
    """The same availability budget, spent on a training platform: one outage against one-minute blips."""
    ch.given("t_c", q(p.checkpoint_minutes, "min"), "checkpoint interval", kind="assumption",
             source=src("checkpoint_minutes"))
    ch.given("t_r", q(p.restart_minutes, "min"), "restart to first step", kind="assumption",
             source=src("restart_minutes"))
    ch.given("d_1", q(1, "min"), "one blip", kind="assumption", source="a minute's outage")
    ch.step("n_b", "floor(B/d_1)", "", "one-minute blips the budget allows")
    ch.step("L_1", "B + t_r + t_c/2", "min", "job time lost to one outage of the whole budget")
    ch.step("L_n", "n_b*(d_1 + t_r + t_c/2)", "min", "job time lost to the blips")
    ch.step("r_blip", "L_n/L_1", "", "the same availability: blips over one outage")


def compute(p) -> Chain:
    ch = budget_chain(p, source=lambda name: SPEC.source(p, name))
    rule = first_alert(p)
    if rule is None:                        # nothing detects it: no alert to simulate
        ch.data["left_out"] = {name: f"{name}: {unpaged(p)}" for name in AFTER_THE_ALERT}
        return ch
    # The incident runs until the rollback, and at least twice the closed form's detection: a failure right at a
    # rule's threshold crosses it only by the counts' noise, which a longer run gives the time to. No result of
    # the chain reads the run past the page, so a rollback later than a day after twice the detection is cut there (a slow person
    # or rollback would otherwise make the simulation as long as they are).
    t_d = as_float(ch["t_d"], "min")
    t_on = max(min(as_float(ch["t_g"] + ch["t_rb"], "min"), 2 * t_d + 1440), 2 * t_d)
    sim = simulate(p.objective, p.period_days, p.incident_bad_share, p.baseline_bad_share, p.requests_per_minute,
                   t_on, p.seed, history=max(HISTORY_MIN, math.ceil(rule.long_s / 60)))
    got = sim["detect"][rule.name]
    how = "utils.fleet.slo.evaluate on a seeded incident, one sample a minute"
    ch.given("t_sim", q(got if got is not None else float("nan"), "min"), "failure to page (simulated)",
             kind="derived", source=how)
    ch.data["simulation"] = sim
    return ch


# --- the claims ------------------------------------------------------------------------------------------
QUOTE_BURN = ("The error budget in minutes per month, the burn-rate arithmetic that catches a fast failure in an "
              "hour and a slow one in a day, and why two of the four need separate targets per traffic class.")
QUOTE_ROLLBACK = ("Roll back first and investigate afterward, because the error budget is being consumed while "
                  "you read logs.")
QUOTE_AVAIL = "Availability is the wrong promise for a platform whose jobs run for weeks."
CLAIM = dict(objective=0.999, period_days=30.0)
DAY_SHARE = slo.WORKBOOK[2][3]          # the workbook's ticket share (10%), put on a one-day window


def claim_rules(period_days: float = 30.0) -> tuple[slo.Rule, ...]:
    """The claim's two windows, an hour and a day, each with the workbook's short window of 1/12 and
    budget share (the page's 2%; the ticket's 10%, which on one day is a burn of 3)."""
    T = period_days * 86400.0
    return (slo.Rule("1 h / 5 min", 3600.0, 300.0, slo.threshold(0.02, 3600.0, T)),
            slo.Rule("1 d / 2 h", 86400.0, 7200.0, slo.threshold(DAY_SHARE, 86400.0, T), "ticket"))


SEEDS = 5   # the request counts redrawn on seeds seed .. seed + 4: the checks hold on each, the page shows the range


def spread(p) -> dict:
    """The simulated incident over SEEDS seeds from p's: (lowest, highest) of the minutes to the page, the budget
    spent by then and the minutes the page outlasts the rollback."""
    sims = [compute(p.replace(seed=p.seed + i)) for i in range(SEEDS)]
    vals = {"detect": [c["t_sim"].m for c in sims],
            "spent": [c.data["simulation"]["spent_at_page"] for c in sims],
            "reset": [c.data["simulation"]["reset_after"] for c in sims]}
    return {k: (min(v), max(v)) for k, v in vals.items()}


def span(lo_hi, f=fmt, unit: str = "") -> str:
    """A range with its unit said once: '9 to 10 min'."""
    lo, hi = (f(x) for x in lo_hi)
    return (lo if lo == hi else f"{lo} to {hi}") + (f" {unit}" if unit else "")


@memoised
def burn_checks() -> dict:
    o, T = CLAIM["objective"], CLAIM["period_days"]
    hour, day = claim_rules(T)
    wb = slo.workbook_rules(T * 86400.0)
    fast_e, slow_e = 1.5 * hour.burn * (1 - o), 1.25 * day.burn * (1 - o)     # a fast and a slow failure
    fasts = [simulate(o, T, fast_e, 0.0002, 6000.0, 120.0, s, rules=(hour, day)) for s in range(SEEDS)]
    slows = [simulate(o, T, slow_e, 0.0002, 6000.0, 1800.0, s, rules=(hour, day)) for s in range(SEEDS)]
    closed = {b: min(slo.detection_time(b * (1 - o), o, r.burn, r.long_s) for r in (hour, day)) / 3600
              for b in (hour.burn, day.burn, 2.0, 1.0)}
    wb_closed = {b: min(slo.detection_time(b * (1 - o), o, r.burn, r.long_s) for r in wb) / 3600
                 for b in (6.0, 3.0, 2.0, 1.0)}
    # each failure on every seed: the check takes the latest page (a seed that never pages is None, and fails it)
    fast_mins = [f["detect"][hour.name] for f in fasts]
    slow_mins = [f["detect"][day.name] for f in slows]
    late = (lambda xs: None if None in xs else max(xs))
    return dict(hour=hour, day=day, fast_e=fast_e, slow_e=slow_e, fast=fasts[0], slow=slows[0], closed=closed,
                wb_closed=wb_closed, fast_min=late(fast_mins), slow_min=late(slow_mins),
                fast_mins=fast_mins, slow_mins=slow_mins,
                outage_s=slo.detection_time(1.0, o, hour.burn, hour.long_s))


@memoised
def rollback_checks() -> dict:
    p = SPEC.check()
    ch = budget_chain(p, source="the book's incident")
    outage = budget_chain(p.replace(incident_bad_share=1.0), source="a full outage")
    return dict(ch=ch, outage=outage, p=p)


def minmax(xs) -> tuple:
    xs = [x for x in xs if x is not None]
    return (min(xs), max(xs)) if xs else (float("nan"),) * 2


def claims() -> list[Claim]:
    ck = burn_checks()
    hour, day = ck["hour"], ck["day"]
    fast_ok = ck["fast_min"] is not None and ck["fast_min"] <= 60 and ck["closed"][hour.burn] <= 1 + 1e-9
    slow_ok = ck["slow_min"] is not None and ck["slow_min"] <= 1440 and ck["closed"][day.burn] <= 24 + 1e-9
    below = ck["wb_closed"][2.0]
    burn = Claim(
        "burn-rate", quote=QUOTE_BURN, source="spec/001, the paragraph on four objectives at a percentile",
        claimed="a fast failure caught within an hour, a slow one within a day",
        derived=f"hour rule at {fmt(hour.burn)}x pages a {fmt(ck['fast_e'] / (1 - CLAIM['objective']))}x failure in "
                f"{span(minmax(ck['fast_mins']), unit='min')}; day rule at {fmt(day.burn)}x a "
                f"{fmt(ck['slow_e'] / (1 - CLAIM['objective']))}x one in "
                f"{span(minmax(ck['slow_mins']), lambda m: duration(m * 60))} ({SEEDS} seeds)",
        # "Fast" and "slow" are whatever a rule's threshold makes them: a rule catches, by construction, any failure
        # above its threshold within its window, and the sentence names no failure rate and no threshold.
        verdict=UNCHECKABLE,
        reason=f"the sentence names no failure rate and no threshold, and a burn-rate rule catches any failure above "
               f"its own threshold within its window by construction: the book's hour rule at {fmt(hour.burn)}x (the "
               f"workbook's {pct(0.02)} of a month) pages a full outage in {fmt(ck['outage_s'])} s and, simulated on "
               f"{SEEDS} seeds, a {fmt(ck['fast_e'] / (1 - CLAIM['objective']))}x failure after "
               f"{span(minmax(ck['fast_mins']), unit='min')}; its day rule at {fmt(day.burn)}x ({pct(DAY_SHARE)} of a "
               f"month in a day) a {fmt(ck['slow_e'] / (1 - CLAIM['objective']))}x one after "
               f"{span(minmax(ck['slow_mins']), lambda m: duration(m * 60))}"
               f"{'' if fast_ok and slow_ok else ', late'}; a failure at twice the sustainable rate reaches neither, "
               f"and the workbook's three-day rule takes {duration(below * 3600)} to catch it.")
    rb = rollback_checks()
    ch, out = rb["ch"], rb["outage"]
    ok = as_float(ch["M_rb"]) < as_float(ch["M_lg"])
    roll = Claim(
        "rollback", quote=QUOTE_ROLLBACK, source="spec/001, the paragraph on rolling back first",
        claimed="the budget burns while logs are read",
        derived=f"{fmt(ch['M_rb'])} of budget rolling back first, {fmt(ch['M_lg'])} reading logs first",
        verdict=HOLDS if ok else WRONG, nearest_true="" if ok else "rolling back first burns no less",
        reason=f"at a bad share of {pct(as_float(ch['e']))} against a budget of {fmt(ch['B'])}, rolling back first burns "
               f"{fmt(ch['M_rb'])} ({pct(as_float(ch['s_rb']))} of it) and reading logs for {fmt(ch['t_i'])} first "
               f"{fmt(ch['M_lg'])} ({pct(as_float(ch['s_lg']))}); in a full outage the half hour of logs alone is "
               f"{pct(as_float(out['t_i'] / out['B']))} of the month's budget.")
    avail = budget_chain(rb["p"], source="the book's platform")
    avail_ok = as_float(avail["r_blip"]) > 2
    plat = Claim(
        "availability", quote=QUOTE_AVAIL, source="spec/001, the paragraph on training-platform objectives",
        claimed="availability is the wrong promise for week-long jobs",
        derived=f"the same {pct(CLAIM['objective'])} month loses {fmt(avail['L_1'])} or {fmt(avail['L_n'])} of a job",
        verdict=HOLDS if avail_ok else WRONG,
        nearest_true="" if avail_ok else "availability predicts the job time lost",
        reason=f"a {pct(CLAIM['objective'])} month allows {fmt(avail['B'])} down: spent as one outage a job that "
               f"checkpoints every {fmt(avail['t_c'])} loses {fmt(avail['L_1'])}, spent as {fmt(avail['n_b'])} one-minute "
               f"blips with a restart of {fmt(avail['t_r'])} each it loses {fmt(avail['L_n'])}, "
               f"{fmt(avail['r_blip'])} times as much at the same availability.")
    return [burn, roll, plat]


# --- the page's tables, figure, what changes, exercises ----------------------------------------------------
def budget_rows(period_days: float = 30.0) -> list[list[str]]:
    """Minutes of budget per period at the three usual objectives."""
    rows = []
    for o in (0.999, 0.9995, 0.9999):
        b = slo.error_budget(o, period_days * 86400.0)
        rows.append([pct(o, digits=4), duration(b), duration(b / 30 * 7), duration(b / period_days)])
    return rows


def rule_rows(period_days: float = 30.0) -> list[list[str]]:
    """The workbook's rules with their burn rates derived, and what each costs and catches."""
    T = period_days * 86400.0
    rows = []
    for (sev, w, s, share), r in zip(slo.WORKBOOK, slo.workbook_rules(T)):
        rows.append([sev, duration(w), duration(s), pct(share), fmt(r.burn), duration(slo.exhaustion_time(r.burn, T))])
    return rows


def objective_rows() -> list[list[str]]:
    """The four objectives a training platform can promise, and where each is read from."""
    return [["time to first step", "submit to the first optimizer step, at p90 per gang size",
             "scheduler events and the job's first step log line"],
            ["goodput", "share of allocated GPU-hours that produce training progress, per job",
             "step counter against the allocation ledger"],
            ["checkpoint restore time", "interruption to the step it resumed from, at p95",
             "restart events and the first step after each"],
            ["queue wait for a reserved gang", "a reservation's start against its promised start, at p99",
             "reservation records and scheduler placement events"]]


def case_rows() -> list[list[str]]:
    """The cases tests/fleet/test_slo.py holds, run live."""
    T = 30 * 86400.0
    rules = slo.workbook_rules(T)
    tot = np.full(400, 1000)
    bad = np.zeros(400)
    bad[200:210] = 1000
    f = slo.evaluate(tot, bad, 60.0, 0.999, rules[:1])[rules[0].name]
    blip = np.zeros(400)
    blip[200] = 500
    g = slo.evaluate(tot, blip, 60.0, 0.999, rules[:1])[rules[0].name]
    quiet = slo.window_burn([10, 10000], [5, 0], 2, 0.999)[-1]
    return [["workbook budget shares over thirty days", "burn rates of 14.4, 6 and 1",
             ", ".join(fmt(r.burn) for r in rules)],
            ["a step failure at any rate above the threshold", f"pages having spent {pct(0.02)} of the budget",
             pct(0.1 * slo.detection_time(0.1, 0.999, 14.4, 3600.0) / slo.error_budget(0.999, T))],
            ["a ten-minute full outage", "pages; stops within the short window of its end",
             f"stopped {fmt(f.last() - 209)} min after"],
            ["one minute at half the requests failing", "no page (under the hour's share)", str(g.first() is None)],
            ["a quiet minute's error beside a busy minute", "ratio of sums, not mean of ratios",
             f"burn {fmt(quiet)}"],
            ["more bad requests than requests; a window not whole samples", "ValueError", "raised"]]


def incident_curves(ch) -> dict:
    sim = ch.data["simulation"]
    name = sim["rules"][0].name
    f = sim["fired"][name]
    t = np.arange(len(sim["total"])) - sim["start"] + 1
    return dict(t=t, long=f.long_burn, short=f.short_burn, burn=sim["rules"][0].burn,
                page=sim["detect"][name], end=sim["end"] - sim["start"])


def detection_curves(objective=0.999, period_days=30.0, burns=None) -> dict:
    """Minutes to page against the failure's burn rate, for each workbook rule (closed form)."""
    burns = np.geomspace(1.0, 1000.0, 200) if burns is None else np.asarray(burns, float)
    out = {}
    for r in slo.workbook_rules(period_days * 86400.0):
        out[f"{r.severity}, {r.name} at {fmt(r.burn)}x"] = np.array(
            [slo.detection_time(b * (1 - objective), objective, r.burn, r.long_s) / 60 for b in burns])
    return dict(burns=burns, curves=out)


def what_changes(p, ch: Chain) -> dict:
    def derive(**changes) -> dict:
        return SPEC.extract(compute(p.replace(**changes)))
    base = SPEC.extract(ch)
    tight = derive(objective=0.9999)
    small = derive(incident_bad_share=0.02)
    return {"wc-budget-9999": fmt(tight["budget_minutes"]), "wc-logs-9999": pct(tight["share_logs_first"].m),
            "wc-rb-9999": pct(tight["share_rollback_first"].m),
            "wc-small-share": pct(0.02), "wc-small-detect": fmt(small["detection_minutes"]),
            "wc-base-detect": fmt(base["detection_minutes"]), "wc-small-logs": pct(small["share_logs_first"].m),
            "wc-small-rb": pct(small["share_rollback_first"].m)}


def exercises(p, ch: Chain) -> dict:
    T28 = 28 * 86400.0
    b28 = slo.error_budget(0.9995, T28)
    e2 = 0.02
    burn2 = e2 / 0.001
    six = slo.workbook_rules(30 * 86400.0)[1]
    t6 = slo.detection_time(0.01, 0.999, six.burn, six.long_s)
    return {"ex2-objective": pct(0.999), "ex1-objective": pct(0.9995, digits=4), "ex1-days": fmt(28), "ex1-budget": duration(b28),
            "ex2-share": pct(e2), "ex2-burn": fmt(burn2), "ex2-exhaust": duration(30 * 86400.0 / burn2),
            "ex3-share": pct(0.01), "ex3-burn": fmt(six.burn), "ex3-window": duration(six.long_s),
            "ex3-detect": duration(t6), "ex3-fast": duration(slo.detection_time(0.01, 0.999, 14.4, 3600.0)) if
            math.isfinite(slo.detection_time(0.01, 0.999, 14.4, 3600.0)) else "never",
            "ex3-spent": pct(six.burn * six.long_s / (30 * 86400.0))}


SPEC = Spec("slo-error-budgets", PARAMETERS, RESULTS, compute, validate=validate)
