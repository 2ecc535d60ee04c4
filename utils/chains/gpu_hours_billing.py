"""gpu-hours-billing: Decimal money, the partial-hour rule, and the records a bill must refuse, by running
utils.components.gpu_hours.

Three numbers carry the chapter. The float trap: a month of per-second charges for a fleet, summed in a
float64 running total, against the exact total (integer GPU-seconds priced once in Decimal); the drift is
computed exactly by utils.components.gpu_hours.float_running_sum, binade by binade, not by adding billions of floats.
The partial hours: a seeded job mix billed per second, per started minute and per started hour. The
refusals: a handful of records that make no sense and the reason the validator gives for each.
"""
from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

import numpy as np

from utils import catalog
from utils.chain import Chain, memoised
from utils.components import gpu_hours as gh
from utils.components.gpu_hours import ROUNDINGS, Usage
from utils.params import Param, ParameterError, Result, Spec
from utils.units import fmt, num, pct, q
from utils.verdicts import HOLDS, READING, WRONG, Claim

SIMULATION = "a seeded job mix billed by utils.components.gpu_hours under each partial-hour rule"

PARAMETERS = (
    Param("price", 3.99, "price per GPU-hour (read as the decimal it is typed as)", unit="USD/GPU/hour",
          source="catalog: price.h100-rental lambda_on_demand (Lambda on-demand H100 SXM, read 2026-11-29)"),
    Param("rounding", "second", "the partial-hour rule: bill per second, per started minute or per started hour",
          check="choice", choices=tuple(ROUNDINGS), source="this book's choice (the per-second rule)"),
    Param("fleet_gpus", 1024, "GPUs in the fleet whose per-second records one running total sums", unit="GPU",
          check="whole", source="this book's assumption: a mid-sized training and serving fleet"),
    Param("days", 30.0, "the billing period", unit="day", source="this book's assumption: a month"),
    Param("n_jobs", 2000, "jobs in the seeded job mix the rounding rules are compared on", check="whole",
          source="this book's choice"),
    Param("seed", 0, "numpy Generator seed of the job mix", check="non_negative", source="this book's choice"),
)

RESULTS = (
    Result("month_bill", "USD", "Exact bill for the fleet's month of per-second records", of="B"),
    Result("float64_drift", "USD", "Float64 running total minus the exact total", of="e64"),
    Result("float64_relative", "", "Float64 drift as a share of the bill", of="r64"),
    Result("first_cent_off_days", "day", "Days of fleet usage until the float64 total is a cent off", of="t_cent"),
    Result("float32_total", "USD", "What a float32 running total shows for the same month", of="s32"),
    Result("mix_used", "GPU*hour", "GPU-hours the job mix used", of="H_used"),
    Result("mix_billed", "GPU*hour", "GPU-hours billed under the rounding rule", of="H_billed"),
    Result("rounding_markup", "", "Billed over used, minus one, under the rounding rule", of="m", percent=True),
    Result("mix_invoice", "USD", "The job mix's bill under the rounding rule", of="B_mix"),
)

SECONDS_PER_DAY = 86400
CENT = Fraction(1, 100)


def validate(p):
    for name in ("fleet_gpus", "n_jobs", "seed"):
        if float(p[name]) != int(p[name]):
            raise ParameterError(f"{name} must be a whole number, got {p[name]!r}")
    if p.fleet_gpus * p.days > 1e9:
        raise ParameterError(f"fleet_gpus x days must be at most 1e9 GPU-days, got {p.fleet_gpus * p.days:g}")
    if p.days * SECONDS_PER_DAY != int(p.days * SECONDS_PER_DAY):
        raise ParameterError(f"days must be whole seconds long, got {p.days!r}")
    if p.n_jobs > 100000:
        raise ParameterError(f"n_jobs must be at most 100,000, got {p.n_jobs!r}")


def decimal_price(price: float) -> Decimal:
    """The parameter as the decimal it was typed as: repr(3.99) is '3.99', never Decimal(3.99)."""
    return Decimal(repr(float(price)))


# --- the float trap ----------------------------------------------------------------------------------
def float_trap(price: float, gpus: int, days: float) -> dict:
    """A month of per-second records, one charge each (price / 3,600 for one GPU-second), into one
    running total: float64 and float32 against the exact total."""
    n = int(gpus) * int(days * SECONDS_PER_DAY)
    per_second = Fraction(decimal_price(price)) / 3600          # exact: the price is a decimal
    c = float(per_second)
    exact = per_second * n
    s64, s32 = gh.float_running_sum(c, n), gh.float_running_sum(c, n, "float32")
    first = gh.first_off_by(c, per_second, CENT, n)
    # Each addition errs by at most half an ulp of the running sum (never more than the total's), and the charge
    # itself by half an ulp of its own: n x (ulp(total) + ulp(c)) / 2 bounds the drift, a bound that grows with the
    # record count and doubles each time the total crosses a binade.
    bound64 = n * (math.ulp(s64) + math.ulp(c)) / 2
    return dict(n=n, c=c, exact=exact, s64=s64, s32=s32, e64=float(Fraction(s64) - exact), bound64=bound64,
                e32=float(Fraction(s32) - exact), first=first,
                first_days=None if first is None else first / (int(gpus) * SECONDS_PER_DAY))


# --- the job mix and the partial-hour rules ------------------------------------------------------------
# (share of jobs, GPUs, median minutes, lognormal sigma): this book's assumption of a shared cluster
MIX = (("notebook", 0.55, 1, 20.0, 1.0), ("inference or eval", 0.30, 8, 45.0, 0.8),
       ("training", 0.15, 64, 360.0, 1.0))


def job_mix(n_jobs: int, seed: int) -> list[Usage]:
    """Seeded jobs, one record each, on distinct devices, durations in whole seconds."""
    rng = np.random.default_rng(int(seed))
    shares = np.array([m[1] for m in MIX])
    kinds = rng.choice(len(MIX), size=int(n_jobs), p=shares / shares.sum())
    out, t0 = [], 1_764_547_200                                   # 2025-12-01 00:00 UTC
    for i, k in enumerate(kinds):
        _, _, gpus, median_min, sigma = MIX[k]
        seconds = max(1, int(round(60 * median_min * float(np.exp(sigma * rng.standard_normal())))))
        start = t0 + int(rng.integers(0, 20 * SECONDS_PER_DAY))
        out.append(Usage(f"job-{i:05d}", f"tenant-{i % 7}", f"alloc-{i:05d}", "h100", gpus, start, start + seconds))
    return out


def rounding_table(jobs, price: Decimal) -> dict:
    """The same jobs under each rule: GPU-seconds billed and the bill."""
    return {r: gh.bill(jobs, {"h100": price}, r) for r in ROUNDINGS}


def float_ceil_trap(max_minutes: int = 10080) -> dict:
    """Whole-minute durations up to a week: how many the float route (seconds / 3600 x 60, then ceil)
    bills one minute too many, against billed_seconds in integers."""
    over = [m for m in range(1, max_minutes + 1)
            if gh.billed_seconds_float(60 * m, "minute") != gh.billed_seconds(60 * m, "minute")]
    return dict(n=max_minutes, over=over, share=len(over) / max_minutes)


# --- the chain -----------------------------------------------------------------------------------------
def billing_chain(price: float, gpus: int, days: float, rounding: str, n_jobs: int, seed: int,
                  source="parameters cell", price_source="parameters cell") -> Chain:
    """The month's float trap and the job mix under the rule; the runs ride along in ch.data ("float_trap",
    "jobs", "bills", "bill")."""
    def src(name: str) -> str:          # `source`: one string for every input, or a dict by parameter
        return source if isinstance(source, str) else source.get(name, "parameters cell")
    ft = float_trap(price, gpus, days)
    dp = decimal_price(price)
    jobs = job_mix(n_jobs, seed)
    bills = rounding_table(jobs, dp)
    b = bills[rounding]
    ch = Chain("A month of per-second records, and the partial-hour rule")
    ch.given("p", q(price, "USD/GPU/hour"), "price per GPU-hour", kind="market", source=price_source)
    ch.given("G", q(gpus, "GPU"), "GPUs, one per-second record each per second", kind="assumption", source=src("fleet_gpus"))
    ch.given("T", q(days, "day"), "billing period", kind="assumption", source=src("days"))
    ch.step("N", "G*T", "GPU*s", "GPU-seconds: one record each")
    ch.step("B", "p*N", "USD", "exact bill: GPU-seconds priced once", digits=6)
    ch.given("S_64", q(ft["s64"], "USD"), "float64 running total of the per-second charges", kind="derived",
             source="utils.components.gpu_hours.float_running_sum", digits=10)
    ch.step("e64", "S_64 - B", "USD", "float64 drift")
    ch.step("r64", "e64/B", "", "drift as a share of the bill", digits=2)
    ch.given("N_cent", q(ft["first"] or 0, "GPU*s"), "records until the float64 total is a cent off",
             kind="derived", source="utils.components.gpu_hours.first_off_by")
    ch.step("t_cent", "N_cent/G", "day", "fleet time until then")
    ch.given("s32", q(ft["s32"], "USD"), "float32 running total: it stops growing", kind="derived",
             source="utils.components.gpu_hours.float_running_sum")
    ch.given("H_used", q(b.used_seconds / 3600, "GPU*hour"), f"GPU-hours the {n_jobs:,} jobs used",
             kind="derived", source="utils.components.gpu_hours.bill on the seeded job mix", digits=6)
    ch.given("H_billed", q(b.billed_seconds / 3600, "GPU*hour"), f"GPU-hours billed, per {rounding}",
             kind="derived", source="utils.components.gpu_hours.billed_seconds", digits=6)
    ch.step("m", "(H_billed - H_used)/H_used", "", "markup of the rounding rule", digits=3)
    ch.value("B_mix", q(float(b.total), "USD"))
    ch.data.update(float_trap=ft, jobs=jobs, bills=bills, bill=b)
    return ch


def compute(p) -> Chain:
    # the table's short citation of the catalog price while the price is the default (SPEC.source's full one
    # would change the page's table)
    at_default = SPEC.source(p, "price") != "parameters cell"
    return billing_chain(p.price, int(p.fleet_gpus), p.days, p.rounding, int(p.n_jobs), int(p.seed),
                         source={n: SPEC.source(p, n) for n in ("fleet_gpus", "days")},
                         price_source="catalog price.h100-rental" if at_default else "parameters cell")


# --- the claim -------------------------------------------------------------------------------------------
QUOTE = ("Three decisions decide whether this is correct: the numeric type, how partial hours are handled, "
         "and what happens to a record that does not make sense. The implementation with its tests, the "
         "floating-point trap that costs real money, and the questions to ask before writing any of it.")
# The source names no scale; this book states one: a month of per-second records for a fleet, at the
# catalog's on-demand price, and reads "real money" as at least a dollar a month (a hundred cents).
CLAIM = dict(price=catalog.price("h100-rental")["lambda_on_demand"].q.to("USD/GPU/hour").m,
             fleet_gpus=1024, days=30.0, real_money=1.0, big_fleet=100000)


SEEDS = 5   # the job mix redrawn on seeds seed .. seed + 4: each rule's markup is shown as its range over these


def markups(price: float, n_jobs: int, seed: int) -> dict:
    """Each rule's markup over per second on SEEDS job mixes from `seed`: (lowest, highest) by rule."""
    dp = decimal_price(price)
    runs = [rounding_table(job_mix(n_jobs, seed + i), dp) for i in range(SEEDS)]
    by = {r: [b[r].billed_seconds / b["second"].used_seconds - 1 for b in runs] for r in ROUNDINGS}
    return {r: (min(v), max(v)) for r, v in by.items()}


def span(lo_hi) -> str:
    lo, hi = (pct(x) for x in lo_hi)
    return lo if lo == hi else f"{lo} to {hi}"


@memoised
def checks() -> dict:
    """The claim's month at the stated fleet and at a big one, the float ceiling of partial minutes, and the
    job mix's bills (deterministic, so memoised: the page and claims() share one run)."""
    C = CLAIM
    return dict(base=float_trap(C["price"], C["fleet_gpus"], C["days"]),
                big=float_trap(C["price"], C["big_fleet"], C["days"]), ceil=float_ceil_trap(),
                mix=rounding_table(job_mix(2000, 0), decimal_price(C["price"])),
                markups=markups(C["price"], 2000, 0))


def claims() -> list[Claim]:
    C, r = CLAIM, checks()
    base, big = r["base"], r["big"]
    real = abs(base["e64"]) >= C["real_money"]
    markup = r["markups"]["hour"]
    ceil = r["ceil"]
    # "The floating-point trap" names no one trap. Read as the float64 sum alone it is cents (wrong); read as
    # floats anywhere in the billing path it holds: the float ceiling of partial minutes overbills real jobs.
    overbills = len(ceil["over"]) > 0
    return [Claim(
        "float-trap", quote=QUOTE, source="spec/001 (the GPU-hours billing paragraph)",
        claimed="the floating-point trap costs real money",
        derived=f"a month of per-second charges for {C['fleet_gpus']:,} GPUs summed in float64 is off by "
                f"{fmt(abs(base['e64']), 'USD', digits=3)} on {fmt(float(base['exact']), 'USD', digits=3)}; the float "
                f"route to a per-started-minute bill overbills {pct(ceil['share'])} of whole-minute durations",
        verdict=HOLDS if real else (READING if overbills else WRONG),
        reading=(f"'the floating-point trap that costs real money' read as floats anywhere in the billing path, "
                 f"not only the running sum: hours as seconds over an hour's "
                 f"seconds and then a ceiling of minutes bills one minute too many on {pct(ceil['share'])} "
                 f"of whole-minute durations, and a "
                 f"float32 total stops growing at {fmt(base['s32'], 'USD', digits=3)}. Read as the float64 sum alone, the "
                 f"claim is wrong: it drifts by cents a month at fleet scale "
                 f"({fmt(abs(base['e64']) / float(base['exact']), digits=2)} of the bill, under its bound of half an ulp "
                 f"of the total a record, {fmt(base['bound64'], 'USD', digits=3)}); that bound, half the record count times "
                 f"the total's ulp, grows with the count and doubles each time the total crosses a binade, and at "
                 f"{num(C['big_fleet'])} GPUs the drift is {fmt(abs(big['e64']), 'USD', digits=3)} under a bound of "
                 f"{fmt(big['bound64'], 'USD', digits=3)}, which breaks exact reconciliation, not budgets")
                if overbills and not real else "",
        nearest_true="" if (real or overbills) else (
            f"a float64 running total drifts by cents a month at fleet scale; per started hour bills {span(markup)} more "
            f"than per second on {SEEDS} seeds of this book's job mix, and that rule, not the float, is where the "
            f"money goes"),
        reason=(f"at the catalog's price of {fmt(C['price'], 'USD/GPU/hour')}, {C['fleet_gpus']:,} GPUs' per-second "
                f"records for {num(C['days'])} days summed in float64 come to {fmt(abs(base['e64']), 'USD', digits=3)} "
                f"off the exact {fmt(float(base['exact']), 'USD', digits=3)}, below a real-money threshold of "
                f"{fmt(C['real_money'], 'USD')}, while computing partial minutes in floats overbills one minute on "
                f"{pct(ceil['share'])} of durations."))]


# --- the page's tables, figure, what changes, exercises ---------------------------------------------------
def bad_records() -> list[Usage]:
    """One record per thing that makes no sense, after two good ones."""
    t = 1_764_547_200
    return [Usage("ok-1", "acme", "node-1", "h100", 8, t, t + 5400),
            Usage("ok-2", "acme", "node-2", "h100", 8, t, t + 3600),
            Usage("backwards", "acme", "node-3", "h100", 8, t + 600, t),
            Usage("empty", "acme", "node-3", "h100", 8, t, t),
            Usage("negative", "acme", "node-4", "h100", -8, t, t + 60),
            Usage("fractional", "acme", "node-4", "h100", 1, t + 0.5, t + 60),
            Usage("unpriced", "acme", "node-5", "mi300x", 8, t, t + 60),
            Usage("ok-1", "acme", "node-6", "h100", 8, t, t + 60),
            Usage("overlap-a", "beta", "node-7", "h100", 8, t, t + 3600),
            Usage("overlap-b", "beta", "node-7", "h100", 8, t + 1800, t + 5400)]


def refusal_rows(price: float = CLAIM["price"]) -> list[list[str]]:
    records = bad_records()
    b = gh.bill(records, {"h100": decimal_price(price)})
    refused = {id(x.record): x.reason for x in b.refused}
    rows = []
    for r in records:
        rows.append([f"`{r.id}`", r.device, f"{r.gpus}", f"{r.end - r.start:g} s",
                     refused.get(id(r), "billed")])
    return rows


def rounding_rows(bills: dict) -> list[list[str]]:
    used = bills["second"].used_seconds
    return [[f"per {'started ' if r != 'second' else ''}{r}", fmt(b.billed_seconds / 3600, digits=6),
             f"${b.total:,}", pct(b.billed_seconds / used - 1)] for r, b in bills.items()]


def mix_rows(jobs) -> list[list[str]]:
    rows = []
    for name, share, gpus, median, _ in MIX:
        mine = [j for j in jobs if j.gpus == gpus]
        rows.append([name, pct(share), str(gpus), f"{num(median)} min",
                     f"{len(mine):,}", fmt(sum(j.gpus * j.seconds for j in mine) / 3600, digits=3)])
    return rows


def drift_curve(price: float, days: float, fleets) -> dict:
    out = {"fleet": list(fleets), "e64": [], "bound": [], "bill": [], "s32": []}
    for g in fleets:
        ft = float_trap(price, g, days)
        out["e64"].append(abs(ft["e64"]))
        out["bound"].append(ft["bound64"])
        out["bill"].append(float(ft["exact"]))
        out["s32"].append(ft["s32"])
    return out


def check_text() -> dict:
    C, r = CLAIM, checks()
    base, big = r["base"], r["big"]
    c = base["c"]
    ceil = r["ceil"]
    example = ceil["over"][0]
    tenth = Fraction(decimal_price(C["price"])) / 10
    n_tenths = 10 * 24 * int(C["days"]) * C["fleet_gpus"]
    s_tenths = gh.float_running_sum(float(tenth), n_tenths)
    return {"ck-gpus": q(C["fleet_gpus"], "GPU"), "ck-days": num(C["days"]), "ck-price": fmt(C["price"], "USD/GPU/hour"),
            "ck-records": fmt(base["n"], digits=3), "ck-charge": f"{c:.6f}", "ck-charge-exact": f"{Decimal(c)}",
            "ck-bill": fmt(float(base["exact"]), "USD", digits=9), "ck-s64": fmt(base["s64"], "USD", digits=12),
            "ck-e64": fmt(abs(base["e64"]), "USD", digits=3), "ck-first": fmt(base["first"], digits=4),
            "ck-first-days": num(base["first_days"]), "ck-real": fmt(C["real_money"], "USD"),
            "ck-s32": fmt(base["s32"], "USD", digits=5), "ck-lost32": pct(1 - base["s32"] / float(base["exact"])),
            "ck-big": num(C["big_fleet"]), "ck-big-e64": fmt(abs(big["e64"]), "USD", digits=3),
            "ck-big-bill": fmt(float(big["exact"]), "USD", digits=3), "ck-bound": fmt(base["bound64"], "USD", digits=3),
            "ck-big-bound": fmt(big["bound64"], "USD", digits=3),
            "ck-big-rel": pct(abs(big["e64"]) / float(big["exact"]), digits=2),
            "ck-tenth": fmt(float(tenth), "USD"), "ck-tenths": fmt(n_tenths, digits=4),
            "ck-tenths-e": fmt(abs(float(Fraction(s_tenths) - tenth * n_tenths)), "USD", digits=2),
            "ck-ceil-n": num(ceil["n"]), "ck-ceil-over": num(len(ceil["over"])), "ck-ceil-share": pct(ceil["share"]),
            "ck-ceil-example": num(example), "ck-ceil-float": repr(60 * example / 3600 * 60),
            "ck-price-float": f"{Decimal(C['price'])}"}


def what_changes(p, ch: Chain) -> dict:
    bills = ch.data["bills"]
    used = bills["second"].used_seconds
    g2 = 8192
    ft2 = float_trap(p.price, g2, p.days)
    mk = markups(p.price, int(p.n_jobs), int(p.seed))
    return {"wc-seeds": str(SEEDS), "wc-minute-range": span(mk["minute"]), "wc-hour-range": span(mk["hour"]),
            "wc-minute": pct(bills["minute"].billed_seconds / used - 1),
            "wc-hour": pct(bills["hour"].billed_seconds / used - 1),
            "wc-hour-usd": f"${bills['hour'].total - bills['second'].total:,}",
            "wc-g2": num(g2), "wc-g2-e": fmt(abs(ft2["e64"]), "USD", digits=3),
            "wc-g1-e": fmt(abs(ch.data["float_trap"]["e64"]), "USD", digits=3)}


def exercises(p, ch: Chain) -> dict:
    dp = decimal_price(p.price)
    job = [Usage("ex", "t", "n", "h100", 8, 0, 61 * 60 + 1)]
    by = {r: gh.bill(job, {"h100": dp}, r).total for r in ROUNDINGS}
    per_second = Fraction(dp) / 3600
    cent_records = gh.first_off_by(float(per_second), per_second, CENT, 10**12)
    tenth = Fraction(dp) / 10
    first_tenth = gh.first_off_by(float(tenth), tenth, CENT, 10**12)
    line = gh.amount(1, dp)
    return {"ex1-gpus": "8", "ex1-dur": "61 min 1 s", "ex1-s": f"${by['second']}", "ex1-m": f"${by['minute']}",
            "ex1-h": f"${by['hour']}",
            "ex2-records": fmt(cent_records, digits=4), "ex2-tenths": fmt(first_tenth, digits=4),
            "ex2-tenth": fmt(float(tenth), "USD"),
            "ex3-line": f"${line}", "ex3-exact": f"{fmt(float(per_second), 'USD', digits=4)}",
            "ex3-records": fmt(86400 * 30, digits=4), "ex3-lost": fmt(float(per_second) * 86400 * 30, "USD", digits=4)}


SPEC = Spec("gpu-hours-billing", PARAMETERS, RESULTS, compute, validate=validate)
