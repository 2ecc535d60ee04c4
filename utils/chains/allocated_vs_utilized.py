"""allocated-vs-utilized: the gap between GPUs a scheduler handed out and GPUs that did work, its four
causes, and the three metrics that separate them, run on a seeded synthetic fleet (utils.fleet.fleet_telemetry).

Utilised GPU-hours are tensor-active x allocated GPU-hours. With each cause c holding a share s_c of the
allocated GPU-hours at a mean tensor-active a_c, the fleet's utilised share is A * sum_c s_c a_c for an
allocated share A, and the gap in points of the fleet is A (1 - sum_c s_c a_c).
"""
from __future__ import annotations

import numpy as np

from utils.chain import Chain, memoised
from utils.fleet.fleet_telemetry import (
    CAUSES,
    METRICS,
    TENANTS,
    Thresholds,
    classify,
    confusion,
    generate,
    per_tenant,
    signature,
    waste,
)
from utils.params import Param, ParameterError, Result, Spec
from utils.units import fmt, pct, q
from utils.verdicts import UNCHECKABLE, Claim

SIMULATION = "a synthetic fleet's per-GPU, per-interval telemetry with each cause injected at its stated share"
ASSUME = "this book's assumption"

PARAMETERS = (
    Param("n_gpus", 1024, "GPUs in the fleet", unit="GPU", check="whole", source=ASSUME),
    Param("days", 3.0, "telemetry window", unit="day", source=ASSUME),
    Param("allocated_share", 0.9, "share of the fleet's GPU-hours the scheduler has handed out", check="fraction",
          source=ASSUME + ": a busy research cluster"),
    Param("share_notebook", 0.2, "share of allocated GPU-hours held by idle interactive notebooks", check="share",
          source=ASSUME),
    Param("share_data_wait", 0.2, "share held by jobs waiting on data (loader-bound)", check="share",
          source=ASSUME),
    Param("share_failed", 0.1, "share held by failed jobs whose allocation was never released", check="share",
          source=ASSUME),
    Param("share_over", 0.15, "share of a gang's GPUs requested but never used", check="share", source=ASSUME),
    Param("tensor_working", 0.75, "tensor-active of a working job", check="fraction", source=ASSUME),
    Param("tensor_data_wait", 0.2, "tensor-active of a loader-bound job", check="fraction",
          source="spec/001: 'a loader-bound run at 20% tensor-active'"),
    Param("stale_minutes", 30.0, "minutes without a step after which a job is not progressing", unit="minute",
          source=ASSUME + ": longer than any healthy step or checkpoint pause"),
    Param("seed", 0, "numpy Generator seed", check="non_negative", source="this book's choice"),
)

RESULTS = (
    Result("allocated_share", "", "Fleet GPU-hours allocated", of="A", percent=True),
    Result("utilised_share", "", "Fleet GPU-hours utilised (tensor-active)", of="U", percent=True),
    Result("gap_points", "", "Gap, allocated minus utilised, of the fleet", of="G", percent=True),
    Result("accuracy", "", "Rows the three metrics classify correctly", of="acc", percent=True),
    Result("worst_accuracy_without_one", "", "Best accuracy with any one metric dropped", of="acc_drop",
           percent=True),
    Result("wasted_notebook", "GPU*hour", "GPU-hours idle notebooks waste", of="W_nb"),
    Result("wasted_data_wait", "GPU*hour", "GPU-hours data waits waste", of="W_dw"),
    Result("wasted_failed", "GPU*hour", "GPU-hours failed jobs waste", of="W_f"),
    Result("wasted_over", "GPU*hour", "GPU-hours over-requested gangs waste", of="W_o"),
)
# Rows the telemetry holds at most: a bigger fleet or window is a seeded sample of its GPU-hours (the mean
# tensor-active of each cause and the classifier's accuracy are shares, which half a million rows measure
# to a tenth of a point; the GPU-hours come from A*N*T, not from counting rows), so any fleet answers in a second.
MAX_ROWS = 500_000
SHARES = ("share_notebook", "share_data_wait", "share_failed", "share_over")
SYM = dict(zip(CAUSES, ("wk", "nb", "dw", "f", "o")))


def validate(p):
    if sum(p[s] for s in SHARES) >= 1:
        raise ParameterError(f"share_notebook + share_data_wait + share_failed + share_over must be below one "
                             f"(the rest is working jobs), got {fmt(sum(p[s] for s in SHARES))}")
    for name in ("tensor_working", "tensor_data_wait"):
        if p[name] >= 1:
            raise ParameterError(f"{name} must be below one, got {p[name]!r}")
    if float(p.seed) != int(p.seed):
        raise ParameterError(f"seed must be a whole number, got {p.seed!r}")
    if p.n_gpus * p.allocated_share * p.days * 24 < 100:
        raise ParameterError("n_gpus x allocated_share x days gives under a hundred GPU-hours of telemetry")


def shares_of(p) -> dict:
    s = {CAUSES[1]: p.share_notebook, CAUSES[2]: p.share_data_wait, CAUSES[3]: p.share_failed,
         CAUSES[4]: p.share_over}
    return {CAUSES[0]: 1 - sum(s.values()), **s}


def fleet_with(p, shares: dict) -> Chain:
    """Generate, classify, account, with the causes' shares given (an exercise moves one cause's share into
    working): the chain, and in ch.data everything the page draws."""
    rows = int(round(min(p.n_gpus * p.days * 24 * p.allocated_share, MAX_ROWS)))
    t = generate(shares, tensor_working=p.tensor_working, tensor_data_wait=p.tensor_data_wait, n_rows=rows,
                 interval_h=1.0, seed=int(p.seed))
    th = Thresholds(stale_min=float(p.stale_minutes))
    pred = classify(t, th)
    drops = {m: float((classify(t, th, drop=m) == t.cause).mean()) for m in METRICS}
    w = waste(t)
    ch = Chain("The allocated-utilised gap on a synthetic fleet")
    ch.given("N", q(p.n_gpus, "GPU"), "GPUs in the fleet", kind="assumption", source=SPEC.source(p, "n_gpus"))
    ch.given("T", q(p.days, "day"), "telemetry window", kind="assumption", source=SPEC.source(p, "days"))
    ch.given("A", p.allocated_share, "share of fleet GPU-hours allocated", kind="assumption",
             source=SPEC.source(p, "allocated_share"))
    ch.step("H_a", "A*N*T", "GPU*hour", "allocated GPU-hours (one telemetry row each)")
    ch.given(f"s_{SYM[CAUSES[0]]}", shares[CAUSES[0]], f"{CAUSES[0]}: share of allocated GPU-hours", kind="derived",
             source="one less the other causes' shares")
    for c, name in zip(CAUSES[1:], SHARES):
        ch.given(f"s_{SYM[c]}", shares[c], f"{c}: share of allocated GPU-hours", kind="assumption",
                 source=SPEC.source(p, name) if shares[c] == p[name] else "the exercise")
    for k, c in enumerate(CAUSES):
        ch.given(f"a_{SYM[c]}", w["utilised"][k] / w["allocated"][k] if w["allocated"][k] else 0.0,
                 f"{c}: mean tensor-active (measured on the rows)", kind="derived",
                 source="utils.fleet.fleet_telemetry" + (f", a seeded sample of {rows:,} rows" if rows == MAX_ROWS else ""))
    ch.step("u", " + ".join(f"s_{SYM[c]}*a_{SYM[c]}" for c in CAUSES), "", "utilised share of allocated")
    ch.step("U", "A*u", "", "utilised share of the fleet")
    ch.step("G", "A - U", "", "the gap, in points of the fleet")
    for c in CAUSES[1:]:
        ch.step(f"W_{SYM[c]}", f"H_a*s_{SYM[c]}*(1 - a_{SYM[c]})", "GPU*hour", f"GPU-hours {c} wastes")
    acc = float((pred == t.cause).mean())
    ch.given("acc", acc, "rows classified correctly by the three metrics", kind="derived",
             source="utils.fleet.fleet_telemetry.classify")
    ch.value("acc_drop", q(max(drops.values()), ""))
    ch.data.update(telemetry=t, predicted=pred, confusion=confusion(t, pred), drops=drops, waste=w,
                   signature=signature(t), thresholds=th, rows=rows)
    return ch


def compute(p) -> Chain:
    return fleet_with(p, shares_of(p))


# --- the claims -----------------------------------------------------------------------------------
SOURCE = "spec/001, the paragraph on allocated against utilised GPUs"
QUOTE_GAP = ("Allocated means a scheduler handed the GPU out; utilized means it did work. A 60-point gap is "
             "jobs holding GPUs they do not use: idle notebooks, placeholder jobs, a loader-bound run at 20% "
             "tensor-active.")
QUOTE_METRICS = ("The three metrics that separate the causes, the per-tenant table that names them, and the policies "
                 "that close it.")
CLAIM = dict(gap=0.60, loader_tensor=0.20)
SEPARATES, NEEDED = 0.98, 0.90   # the three must classify this share of rows; any two must fall below this
SEEDS = 5   # the fleet's rows redrawn on seeds seed .. seed + 4: figures are shown as their range, checks hold on each


def spread(p) -> dict:
    """The gap and the classifier's accuracies over SEEDS seeds from the page's: (lowest, highest) of each."""
    runs = [compute(p.replace(seed=p.seed + i)) for i in range(SEEDS)]
    vals = {"gap": [r["G"].m for r in runs], "acc": [r["acc"].m for r in runs],
            "acc_drop": [r["acc_drop"].m for r in runs]}
    return {k: (min(v), max(v)) for k, v in vals.items()}


def span(lo_hi) -> str:
    lo, hi = (pct(x) for x in lo_hi)
    return lo if lo == hi else f"{lo} to {hi}"


def tenants_named(ch: Chain) -> int:
    """Tenants whose costliest cause the classifier names as the injected truth does."""
    t = ch.data["telemetry"]
    named = per_tenant(t, ch.data["predicted"])[:, 1:].argmax(axis=1)
    truth = per_tenant(t, t.cause)[:, 1:].argmax(axis=1)
    return int((named == truth).sum())


@memoised
def claim_runs() -> tuple:
    """The claim's fleet on each of SEEDS seeds: this book's fleet at its defaults (the source names none)."""
    return tuple(compute(SPEC.check(seed=s)) for s in range(SEEDS))


def claim_run() -> Chain:
    """The seed the page draws (0), for its tables."""
    return claim_runs()[0]


def claims() -> list[Claim]:
    runs = claim_runs()
    gap = (min(r["G"].m for r in runs), max(r["G"].m for r in runs))
    acc = (min(r["acc"].m for r in runs), max(r["acc"].m for r in runs))
    best_two = max(max(r.data["drops"].values()) for r in runs)
    agree = min(tenants_named(r) for r in runs)
    separates = acc[0] >= SEPARATES and best_two < NEEDED and agree == len(TENANTS)
    loader_waste = 1 - CLAIM["loader_tensor"]
    short = "" if separates else ", short of this page's own bar"
    seeds = f"over {SEEDS} seeds"
    return [
        Claim("sixty-points", quote=QUOTE_GAP, source=SOURCE, claimed=pct(CLAIM["gap"]),
              derived=f"{span(gap)} {seeds} of this book's synthetic fleet (its shares are assumptions)",
              verdict=UNCHECKABLE,
              reason=f"the source names no fleet, no telemetry and no shares of the causes, so its gap of "
                     f"{pct(CLAIM['gap'])} has no inputs to check; a loader-bound run at {pct(CLAIM['loader_tensor'])} "
                     f"tensor-active does waste {pct(loader_waste)} of its GPUs, and the book's assumed mix gives "
                     f"{span(gap)} {seeds}."),
        Claim("three-metrics", quote=QUOTE_METRICS, source=SOURCE,
              claimed="three metrics separate the causes",
              derived=f"this book's three on its synthetic fleet, {seeds}: {span(acc)} of rows classified right, "
                      f"the best any two at most {pct(best_two)}",
              verdict=UNCHECKABLE,
              reason=f"the source names neither the three metrics nor a fleet's causes beyond its examples, so "
                     f"the only check is the book's three metrics against the book's own synthetic fleet: on each "
                     f"of {SEEDS} seeds they classify {span(acc)} of allocated GPU-hours right, dropping any one "
                     f"leaves at most {pct(best_two)}, and the per-tenant table names the injected costliest cause "
                     f"for {agree} of {len(TENANTS)} tenants on the worst seed{short}."),
    ]


# --- what the page shows --------------------------------------------------------------------------
def cause_table(ch: Chain) -> list[list[str]]:
    """Cause -> signature in the three metrics -> GPU-hours allocated and wasted."""
    w, sig = ch.data["waste"], ch.data["signature"]
    total = w["wasted"].sum()
    rows = []
    for k, c in enumerate(CAUSES):
        s = sig[c]
        rows.append([c, pct(s["proc"]), pct(s["tensor"]), fmt(q(s["since_step"], "minute")),
                     fmt(q(w["allocated"][k], "GPU*hour")), fmt(q(w["wasted"][k], "GPU*hour")),
                     pct(w["wasted"][k] / total)])
    return rows


def tenant_table(ch: Chain) -> list[list[str]]:
    """Per tenant: wasted GPU-hours by classified cause, and the cause that costs it most."""
    tab = per_tenant(ch.data["telemetry"], ch.data["predicted"])
    rows = []
    for i, name in enumerate(TENANTS):
        worst = CAUSES[int(tab[i, 1:].argmax()) + 1]
        rows.append([name, *[fmt(q(x, "GPU*hour")) for x in tab[i]], worst])
    return rows


def drop_table(ch: Chain) -> list[list[str]]:
    """Accuracy with each metric dropped, and the pair of causes it then confuses most."""
    t, th = ch.data["telemetry"], ch.data["thresholds"]
    out = []
    for m in METRICS:
        cm = confusion(t, classify(t, th, drop=m))
        off = cm.copy()
        np.fill_diagonal(off, 0)
        i, j = np.unravel_index(off.argmax(), off.shape)
        out.append([m, pct(ch.data["drops"][m]), f"{CAUSES[i]} read as {CAUSES[j]}",
                    fmt(q(off[i, j], "GPU*hour"))])
    return out


def gap_curve(p, shares_scale) -> dict:
    """The gap in points against a multiple of the four causes' shares (the arithmetic, no simulation)."""
    base = shares_of(p)
    a = {CAUSES[0]: p.tensor_working, CAUSES[1]: 0.005, CAUSES[2]: p.tensor_data_wait, CAUSES[3]: 0.0,
         CAUSES[4]: 0.0}
    bad = sum(base[c] for c in CAUSES[1:])
    out = []
    for k in shares_scale:
        s_bad = min(bad * k, 1.0)
        u = (1 - s_bad) * a[CAUSES[0]] + sum(base[c] / bad * s_bad * a[c] for c in CAUSES[1:])
        out.append(p.allocated_share * (1 - u))
    return dict(scale=np.asarray(shares_scale), gap=np.asarray(out), bad=bad)


def what_changes(p, ch: Chain) -> dict:
    def gap(**kw):
        return compute(p.replace(**kw))["G"].m
    return {"wc-base": pct(ch["G"].m), "wc-nb-zero": pct(gap(share_notebook=0.0)),
            "wc-dw-fixed": pct(gap(tensor_data_wait=0.6)), "wc-tw": pct(gap(tensor_working=0.5))}


def exercises(p, ch: Chain) -> dict:
    s = shares_of(p)
    # 1: reaping idle notebooks after the stale threshold returns their GPU-hours; the gap, those hours freed.
    freed = float(ch["W_nb"].m)
    # 2: a stale threshold shorter than a healthy checkpoint pause: a two-minute threshold.
    short = compute(p.replace(stale_minutes=2.0))
    # 3: the loader-bound share fixed to working speed: the gap it closes.
    fixed = fleet_with(p, {**s, CAUSES[0]: s[CAUSES[0]] + s[CAUSES[2]], CAUSES[2]: 0.0})
    return {"ex1-freed": fmt(q(freed, "GPU*hour")),
            "ex1-gpus": fmt(q(freed / (p.days * 24), "GPU")),
            "ex2-threshold": fmt(q(2.0, "minute")), "ex2-acc": pct(float(short["acc"].m)),
            "ex3-gap": pct(float(fixed["G"].m)), "ex3-base": pct(float(ch["G"].m))}


SPEC = Spec("allocated-vs-utilized", PARAMETERS, RESULTS, compute, validate=validate)
