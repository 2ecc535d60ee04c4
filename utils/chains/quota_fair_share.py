"""quota-fair-share: guaranteed quotas, borrowing, a decayed fair share and cheap preemption
(utils.fleet.fair_share), and the pooling arithmetic that says what static quotas cost.

Pooling: n teams, each busy (at its peak of g GPUs) a share p of the time, independently. Static
partitions of g GPUs each idle 1 - p of the fleet whatever n is. A pooled fleet of k g GPUs, with k the
smallest count of busy teams not exceeded with probability 1 - epsilon (a binomial quantile), idles
1 - E[min(B, k)] / k with B ~ Binomial(n, p). A seeded simulation of on/off teams checks both.
Fair share: usage decayed by 0.5^(dt / h); Slurm's classic factor 2^(-U/S), from a usage history. The history
is two tables, shaped as a Slurm site reads them: `teams` ({team, quota_gpus}, one row per account: the
guarantee, or sshare's RawShares) and `usage` ({team, gpu_hours, start_days_ago, end_days_ago}, one row per
account and window: sreport's AccountUtilizationByUser with -t hours over start=/end=, or one job's GPU-hours
with start_days_ago = end_days_ago). Empty, they are the hoarding week below, written as such rows.
"""
from __future__ import annotations

import json

import numpy as np

from utils.chain import Chain
from utils.fleet import fair_share
from utils.fleet.fair_share import Cluster, Job, fair_share_factor, pooled_idle, pooled_size, simulate_pool
from utils.params import Column, Param, ParameterError, Result, Spec
from utils.units import fmt, pct, q
from utils.verdicts import READING, UNCHECKABLE, WRONG, Claim

SIMULATION = "on/off team demand as a two-state Markov chain, against static and pooled fleets"
ASSUME = "this book's assumption"
SLURM = ("Slurm documentation, 'Classic Fairshare Algorithm' (https://slurm.schedmd.com/classic_fair_share.html) "
         "and slurm.conf PriorityDecayHalfLife, default 7-0 (seven days) (read 2026-12-01)")

PARAMETERS = (
    Param("n_teams", 16, "teams sharing the cluster", check="whole", source=ASSUME),
    Param("gpus_per_team", 64, "GPUs a team needs when it is busy (its peak, and its static quota)", unit="GPU",
          check="whole", source=ASSUME),
    Param("busy_share", 0.5, "share of the time a team is busy at its peak", check="share",
          source=ASSUME + ": research demand comes in bursts"),
    Param("overflow", 0.05, "share of the time the pooled fleet may be short", check="share", source=ASSUME),
    Param("burst_hours", 24.0, "mean length of a busy burst", unit="hour", source=ASSUME),
    Param("sim_hours", 8760, "hours simulated", unit="hour", check="whole", source="this book's choice: a year"),
    Param("half_life_days", 7.0, "fair-share usage half-life", unit="day", source=SLURM),
    Param("seed", 0, "numpy Generator seed", check="non_negative", source="this book's choice"),
    # The reader's own usage history: both tables, or neither (the hoarding week below).
    Param("teams", [], "your teams, replacing the hoarding week: rows {\"team\": name, \"quota_gpus\": guarantee} "
          "(JSON, or a .json file; sshare's RawShares serve as quotas)", check="table",
          columns=(Column("team", "text"), Column("quota_gpus", "positive", "the team's guarantee (its share S)")),
          source="this book's assumption: empty, the hoarding week"),
    Param("usage", [], "your usage history, with teams: rows {\"team\", \"gpu_hours\", \"start_days_ago\", "
          "\"end_days_ago\"}, GPU-hours used evenly over that window (sreport -t hours per account), or a lump "
          "when the two ages are equal", check="table",
          columns=(Column("team", "text"), Column("gpu_hours", "non_negative"),
                   Column("start_days_ago", "non_negative"), Column("end_days_ago", "non_negative")),
          source="this book's assumption: empty, the hoarding week"),
)

RESULTS = (
    Result("static_idle", "", "Idle share of static quotas (closed form)", of="I_s", percent=True),
    Result("pooled_gpus", "GPU", "Pooled fleet that serves the same demand", of="C_p"),
    Result("pooled_idle", "", "Idle share of the pooled fleet (closed form)", of="I_p", percent=True),
    Result("gpus_saved", "", "Share of the static fleet pooling saves", of="saved", percent=True),
    Result("sim_static_idle", "", "Idle share of static quotas (simulated)", of="I_s_sim", percent=True),
    Result("sim_pooled_idle", "", "Idle share of the pooled fleet (simulated)", of="I_p_sim", percent=True),
    Result("week_old_weight", "", "Weight of week-old usage today", of="w_7", percent=True),
    Result("hoarder_factor", "", "Fair-share factor of a team that hoarded its quota (your tables: the first team)",
           of="F_H", digits=3),
    Result("fair_factor", "", "Fair-share factor of a team that released it (your tables: the second team)",
           of="F_N", digits=3),
)


def validate(p):
    if p.n_teams < 2:
        raise ParameterError(f"n_teams must be at least 2 (one team pools with nobody), got {p.n_teams!r}")
    if not 0 < p.busy_share:
        raise ParameterError(f"busy_share must be above zero, got {p.busy_share!r}")
    if p.burst_hours < 1 or p.burst_hours * (1 - p.busy_share) / p.busy_share < 1:
        raise ParameterError("burst_hours must be at least one hour, and long enough that an idle spell is too")
    if not 100 <= p.sim_hours <= 100000:
        raise ParameterError(f"sim_hours must be in [100, 100000], got {p.sim_hours!r}")
    if float(p.seed) != int(p.seed):
        raise ParameterError(f"seed must be a whole number, got {p.seed!r}")
    _validate_history(p)


def _validate_history(p):
    if bool(p.teams) != bool(p.usage):
        raise ParameterError("teams and usage go together: set both tables (or neither, for the hoarding week)")
    if not p.teams:
        return
    names = [t["team"] for t in p.teams]
    if len(names) < 2:
        raise ParameterError(f"teams must name at least two teams (a fair share compares them), got {len(names)}")
    if len(set(names)) != len(names):
        raise ParameterError(f"teams names a team twice: {', '.join(names)}")
    for i, r in enumerate(p.usage):
        if r["team"] not in names:
            raise ParameterError(f"usage[{i}] names team {r['team']!r}, which teams does not: {', '.join(names)}")
        if r["start_days_ago"] < r["end_days_ago"]:
            raise ParameterError(f"usage[{i}]: start_days_ago ({r['start_days_ago']:g}) must be at least "
                                 f"end_days_ago ({r['end_days_ago']:g}): a window runs from its start to its end")


HOARD_GPUS, HOARD_WEEK_DAYS, FAIR_BUSY_HOURS = 32, 7, 12   # the hoarding week: quotas of 32, the fair team busy 12 h a day


def example_history() -> tuple[tuple, tuple]:
    """The hoarding week (hoarding() below) as the two tables a reader gives: (teams, usage), ages in days from
    the week's end. The hoarder and everyone else hold their quotas all week; the fair team 12 hours a day."""
    g, week = HOARD_GPUS, HOARD_WEEK_DAYS
    teams = ({"team": "hoarder", "quota_gpus": g}, {"team": "fair", "quota_gpus": g}, {"team": "others", "quota_gpus": 2 * g})
    usage = [{"team": "hoarder", "gpu_hours": g * 24 * week, "start_days_ago": week, "end_days_ago": 0},
             {"team": "others", "gpu_hours": 2 * g * 24 * week, "start_days_ago": week, "end_days_ago": 0}]
    usage += [{"team": "fair", "gpu_hours": g * FAIR_BUSY_HOURS, "start_days_ago": week - day,
               "end_days_ago": week - day - FAIR_BUSY_HOURS / 24} for day in range(week)]
    return teams, tuple(usage)


def history(p) -> dict:
    """Each team's quota, share of the quotas, decayed usage (GPU-hours), share of it and fair-share factor, and
    the order their next jobs start (utils.fleet.fair_share), from the reader's tables or the hoarding week."""
    teams, usage = (p.teams, p.usage) if p.teams else example_history()
    records = [(r["team"], r["gpu_hours"], 24 * r["start_days_ago"], 24 * r["end_days_ago"]) for r in usage]
    used = fair_share.decayed_usage(records, 24 * p.half_life_days)
    quota = {t["team"]: t["quota_gpus"] for t in teams}
    used = {k: used.get(k, 0.0) for k in quota}
    total_q, total_u = sum(quota.values()), sum(used.values())
    share = {k: quota[k] / total_q for k in quota}
    u_share = {k: used[k] / total_u if total_u else 0.0 for k in quota}
    factor = {k: fair_share_factor(u_share[k], share[k]) for k in quota}
    return dict(teams=list(quota), quota=quota, share=share, used=used, usage_share=u_share, factor=factor,
                order=fair_share.start_order(factor))


def hoarding(half_life_h: float, week_h: float = 168.0) -> dict:
    """Two teams with equal guarantees, one week: the hoarder holds its whole quota all week (used or
    not); the other holds it only while busy, half the week. Then both ask to borrow the same free GPUs."""
    c = Cluster(128, {"hoarder": 32, "fair": 32, "others": 64}, half_life=half_life_h)
    c.submit(0.0, Job("hold", "hoarder", 32))
    c.submit(0.0, Job("big", "others", 64))
    for day in range(7):                                  # the fair team: busy twelve hours a day
        c.submit(day * 24.0, Job(f"run{day}", "fair", 32))
        c.finish(day * 24.0 + 12, f"run{day}")
    c.submit(week_h, Job("run7", "fair", 32))             # the cluster is full again
    f = c.factors(week_h)
    # both now want 64 more GPUs, beyond their guarantees: borrowed, so they wait for free GPUs
    c.submit(week_h, Job("extra-H", "hoarder", 64))
    c.submit(week_h, Job("extra-N", "fair", 64))
    c.finish(week_h, "big")                               # 64 free: room for one of the two
    first = next(j.team for j in c.running if j.name.startswith("extra"))
    return dict(factors=f, first=first, usage={k: u.value for k, u in c.usage.items()}, cluster=c)


def compute(p) -> Chain:
    """Static quotas against a pooled fleet, then the fair-share factors of the usage history's first two teams;
    the pool's simulation and every team's history (history()) ride along as ch.data["sim"] and ["history"], the
    pool's size as ["k"]."""
    n, g, busy, eps = p.n_teams, p.gpus_per_team, p.busy_share, p.overflow
    k = pooled_size(n, busy, eps)
    sim = simulate_pool(np.random.default_rng(int(p.seed)), n, busy, k, int(p.sim_hours), p.burst_hours)
    ch = Chain("Static quotas against a pooled fleet")
    ch.given("n", q(n, ""), "teams", kind="assumption", source=SPEC.source(p, "n_teams"))
    ch.given("g", q(g, "GPU"), "GPUs per team at its peak (its static quota)", kind="assumption",
             source=SPEC.source(p, "gpus_per_team"))
    ch.given("p", busy, "share of the time a team is busy", kind="assumption", source=SPEC.source(p, "busy_share"))
    ch.step("C_s", "n*g", "GPU", "static fleet: every team's peak")
    ch.step("I_s", "1 - p", "", "idle share of static quotas")
    ch.given("epsilon", eps, "share of the time the pool may be short", kind="assumption",
             source=SPEC.source(p, "overflow"))
    ch.given("k", q(k, ""), "busy teams the pool serves (binomial quantile at 1 - epsilon)", kind="derived",
             source="utils.fleet.fair_share.pooled_size")
    ch.step("C_p", "k*g", "GPU", "pooled fleet")
    ch.given("I_p", pooled_idle(n, busy, k), "idle share of the pool, 1 - E[min(B, k)]/k", kind="derived",
             source="utils.fleet.fair_share.pooled_idle")
    ch.step("saved", "1 - C_p/C_s", "", "share of the static fleet pooling saves")
    ch.given("I_s_sim", sim["static_idle"], "idle share of static quotas, simulated", kind="derived",
             source="utils.fleet.fair_share.simulate_pool")
    ch.given("I_p_sim", sim["pooled_idle"], "idle share of the pool, simulated", kind="derived",
             source="utils.fleet.fair_share.simulate_pool")
    ch.given("h", q(p.half_life_days, "day"), "fair-share half-life", kind="spec",
             source=SPEC.source(p, "half_life_days"))
    ch.given("T", q(7, "day"), "last week", kind="assumption", source="the claim")
    ch.step("w_7", "0.5**(T/h)", "", "weight of usage a week old")
    hist = history(p)
    first, second = hist["teams"][:2]
    where = SPEC.source(p, "teams") if p.teams else "the hoarding example (example_history)"
    how = "utils.fleet.fair_share.decayed_usage over " + (SPEC.source(p, "usage") if p.teams else "the hoarding week")
    for sym, team in (("H", first), ("N", second)):
        ch.given(f"S_{sym}", hist["share"][team], f"{team}'s share of the guarantees", kind="derived", source=where)
    for sym, team in (("H", first), ("N", second)):
        ch.given(f"U_{sym}", hist["usage_share"][team], f"{team}'s share of decayed usage", kind="derived", source=how)
    ch.step("F_H", "2**(-U_H/S_H)", "", f"{first}'s fair-share factor")
    ch.step("F_N", "2**(-U_N/S_N)", "", f"{second}'s fair-share factor")
    ch.data.update(sim=sim, k=k, history=hist)
    return ch


# --- the claims -----------------------------------------------------------------------------------
QUOTE_DECAY = ("A quota tree with guarantees and borrowing, a fair-share formula that decays so last week's usage "
               "does not cost you today, preemption that is cheap because checkpoints are, and the incentives "
               "that make hoarding lose.")
QUOTE_STATIC = "Static quotas waste half the fleet and a free-for-all starves the small teams."
CLAIM = dict(half_life_days=7.0, static_waste=0.5)


def claims() -> list[Claim]:
    w = 0.5 ** (7 / CLAIM["half_life_days"])
    day = 0.5 ** 7
    h = hoarding(24)             # the reading's half-life of a day
    hd = hoarding(CLAIM["half_life_days"] * 24)
    hoard_loses = all(x["first"] == "fair" and x["factors"]["hoarder"] < x["factors"]["fair"] for x in (h, hd))
    # Slurm's default half-life is one product's default, which the sentence does not name: refuting with it would
    # be too harsh when the words "decays so" ask for the half-life that does the job (a setting, not a constant).
    return [
        Claim("decay", quote=QUOTE_DECAY, source="spec/000 and spec/001, the paragraph on a shared research cluster",
              claimed="last week's usage does not cost you today",
              derived=f"week-old usage weighs {pct(day)} at a half-life of a day; {pct(w)} at Slurm's default of "
                      f"{fmt(q(CLAIM['half_life_days'], 'day'))}",
              verdict=READING if hoard_loses else WRONG,
              reading=(f"\"a fair-share formula that decays so last week's usage does not cost you today\" read as a "
                       f"decay whose half-life is set for that purpose (Slurm's PriorityDecayHalfLife is a setting): "
                       f"at {fmt(q(1, 'day'))} a GPU-hour from a week ago weighs {pct(day)}; at Slurm's default of "
                       f"{fmt(q(CLAIM['half_life_days'], 'day'))} it still weighs {pct(w)}, so the default does not "
                       f"do it") if hoard_loses else "",
              nearest_true="" if hoard_loses else "hoarding did not lose in the example",
              reason=(f"usage decays by a half every half-life, so a half-life of a day leaves a week-old GPU-hour "
                      f"{pct(day)} of its weight (Slurm's default of {fmt(q(CLAIM['half_life_days'], 'day'))} leaves "
                      f"{pct(w)}); the hoarding clause holds at either ({fmt(h['factors']['hoarder'])} against "
                      f"{fmt(h['factors']['fair'])} at a day, and the other team borrows first).")
              if hoard_loses else "hoarding did not lose in the example"),
        Claim("static-half", quote=QUOTE_STATIC, source="spec/001, the paragraph on quotas and fair share",
              claimed=pct(CLAIM["static_waste"]), derived="one minus the busy share of each team",
              verdict=UNCHECKABLE,
              reason=f"static quotas sized to each team's peak idle one minus the share of time a team is busy, "
                     f"whatever the number of teams; the source names no demand, so {pct(CLAIM['static_waste'])} "
                     f"is the waste only for teams busy {pct(1 - CLAIM['static_waste'])} of the time, and the "
                     f"free-for-all needs team sizes it does not give."),
    ]


SEEDS = 5   # the teams' bursts redrawn on seeds seed .. seed + 4: the simulation is shown as its range over these
AGREE = 0.03   # the simulated idle shares must sit this close to the closed forms, on every seed


def spread(p) -> dict:
    """The simulation's idle shares and the demand it turns away: (lowest, highest) over SEEDS seeds from p's."""
    runs = [compute(p.replace(seed=p.seed + i)) for i in range(SEEDS)]
    vals = {"static": [r["I_s_sim"].m for r in runs], "pooled": [r["I_p_sim"].m for r in runs],
            "turned": [r.data["sim"]["turned_away"] for r in runs],
            "off": [max(abs(r["I_s_sim"].m - r["I_s"].m), abs(r["I_p_sim"].m - r["I_p"].m)) for r in runs]}
    return {k: (min(v), max(v)) for k, v in vals.items()}


def span(lo_hi) -> str:
    lo, hi = (pct(x) for x in lo_hi)
    return lo if lo == hi else f"{lo} to {hi}"


# --- what the page shows --------------------------------------------------------------------------
def pooling_curves(p, teams) -> dict:
    """Closed-form idle share of the pool and the fleet saved, against the number of teams."""
    ks = [pooled_size(int(n), p.busy_share, p.overflow) for n in teams]
    return dict(teams=np.asarray(teams), idle=np.array([pooled_idle(int(n), p.busy_share, k) for n, k in zip(teams, ks)]),
                saved=np.array([1 - k / n for n, k in zip(teams, ks)]), static=1 - p.busy_share)


def decay_curve(days, half_lives) -> dict:
    return {h: 0.5 ** (np.asarray(days) / h) for h in half_lives}


# What changes the answer, as a reader types it: two accounts of equal shares, A's usage in the last week and B's in
# the week before (sreport -t hours over each week), at the page's half-life.
WC_TEAMS = [{"team": "A", "quota_gpus": 64}, {"team": "B", "quota_gpus": 64}]
WC_USAGE = [{"team": "A", "gpu_hours": 1000, "start_days_ago": 7, "end_days_ago": 0},
            {"team": "B", "gpu_hours": 1000, "start_days_ago": 14, "end_days_ago": 7}]


def history_rows(hist: dict) -> list[list[str]]:
    """The history's table: each team's quota, share, decayed usage, usage share, factor, and its place in line."""
    place = {t: i + 1 for i, t in enumerate(hist["order"])}
    return [[t, fmt(q(hist["quota"][t], "GPU")), pct(hist["share"][t]), fmt(q(hist["used"][t], "GPU*hour")),
             pct(hist["usage_share"][t]), fmt(hist["factor"][t], digits=3), str(place[t])] for t in hist["teams"]]


def what_changes(p, ch: Chain) -> dict:
    def idle(n, bs):
        k = pooled_size(n, bs, p.overflow)
        return pooled_idle(n, bs, k), 1 - k / n
    i4, s4 = idle(4, p.busy_share)
    i64, s64 = idle(64, p.busy_share)
    mine = history(SPEC.check(half_life_days=p.half_life_days, teams=WC_TEAMS, usage=WC_USAGE))
    cmd = (f"python -m utils.rederive quota-fair-share --set teams='{json.dumps(WC_TEAMS)}' "
           f"--set usage='{json.dumps(WC_USAGE)}'")
    return {"wc-n-small": str(4), "wc-idle-small": pct(i4), "wc-saved-small": pct(s4),
            "wc-n-large": str(64), "wc-idle-large": pct(i64), "wc-saved-large": pct(s64),
            "wc-busy": pct(0.25), "wc-static-busy": pct(0.75),
            "wc-eps": pct(0.01), "wc-eps-k": fmt(q(pooled_size(p.n_teams, p.busy_share, 0.01) * p.gpus_per_team, "GPU")),
            "wc-hist-cmd": cmd, "wc-hist-hours": fmt(q(WC_USAGE[0]["gpu_hours"], "GPU*hour")),
            "wc-hist-a": fmt(mine["factor"]["A"], digits=3), "wc-hist-b": fmt(mine["factor"]["B"], digits=3),
            "wc-hist-first": mine["order"][0]}


def exercises(p, ch: Chain) -> dict:
    h2 = hoarding(2 * 24)
    return {"ex1-days": fmt(q(7, "day")), "ex1-weight": pct(0.5 ** (7 / 3)), "ex1-h": fmt(q(3, "day")),
            "ex2-h": fmt(q(2, "day")), "ex2-hoarder": fmt(h2["factors"]["hoarder"]), "ex2-fair": fmt(h2["factors"]["fair"]),
            "ex3-n": str(32), "ex3-k": fmt(q(pooled_size(32, 0.5, 0.05) * 64, "GPU")),
            "ex3-static": fmt(q(32 * 64, "GPU")), "ex3-idle": pct(pooled_idle(32, 0.5, pooled_size(32, 0.5, 0.05)))}


def fair_share_table() -> list[list[str]]:
    """The factor worked by hand: usage share against share."""
    rows = []
    for u, s in ((0.0, 0.25), (0.125, 0.25), (0.25, 0.25), (0.5, 0.25), (0.75, 0.25)):
        rows.append([pct(u), pct(s), fmt(u / s), fmt(fair_share_factor(u, s))])
    return rows


SPEC = Spec("quota-fair-share", PARAMETERS, RESULTS, compute, validate=validate)
