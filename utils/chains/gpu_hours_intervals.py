"""gpu-hours-intervals: the union of usage intervals by a sort and a scan, the intersection (time at least
k GPUs are busy, and the overlap of two tenants) by the same sweep with a counter, and the double count
when one GPU reports overlapping intervals, by running utils.components.intervals on a seeded day of usage.
"""
from __future__ import annotations

import numpy as np

from utils.chain import Chain, memoised
from utils.components import intervals as iv
from utils.params import Param, ParameterError, Result, Spec
from utils.units import fmt, num, pct, q
from utils.verdicts import HOLDS, WRONG, Claim

SIMULATION = "a seeded day of one node's usage records, swept by utils.components.intervals"

PARAMETERS = (
    Param("n_gpus", 8, "GPUs in the node whose usage records are swept", unit="GPU", check="whole",
          source="this book's assumption: one eight-GPU node"),
    Param("hours", 24.0, "the window swept", unit="hour", source="this book's assumption: a day"),
    Param("busy_share", 0.8, "each GPU's busy share of the window, on average", check="fraction",
          source="this book's assumption: a well-used node"),
    Param("mean_job_hours", 2.0, "mean length of one usage record (exponential)", unit="hour",
          source="this book's assumption"),
    Param("duplicates", 4, "records GPU 0 reports twice (a restart re-sends its open record, cut short)",
          check="non_negative", source="this book's assumption"),
    Param("k", 8, "the sweep's threshold: time at least k GPUs are busy (k = n_gpus: all of them)", unit="GPU",
          check="whole", source="this book's choice: every GPU busy"),
    Param("seed", 0, "numpy Generator seed of the usage records", check="non_negative", source="this book's choice"),
)

RESULTS = (
    Result("reported_gpu_hours", "GPU*hour", "GPU-hours as reported (the records' lengths summed)", of="H_rep"),
    Result("busy_gpu_hours", "GPU*hour", "GPU-hours busy (each GPU's union)", of="H_busy"),
    Result("any_busy", "hour", "Time at least one GPU is busy (the union)", of="T_any"),
    Result("k_busy", "hour", "Time at least k GPUs are busy, each GPU counted once", of="T_k"),
    Result("k_busy_naive", "hour", "The same, counting records (the double count)", of="T_k_naive"),
    Result("k_busy_error", "", "Naive over right, minus one", of="err", percent=True),
    Result("k_busy_error_low", "", "The same error, lowest over 20 seeds (seed to seed + 19)", of="err_lo",
           percent=True),
    Result("k_busy_error_high", "", "The same error, highest over 20 seeds", of="err_hi", percent=True),
    Result("tenant_overlap", "hour", "Time both tenants are running", of="T_ab"),
    Result("tenant_overlap_naive", "hour", "The same, counting records", of="T_ab_naive"),
)

SECONDS_PER_HOUR = 3600
SEEDS = 20        # one day's draw is one sample: the error is reported as its range over this many seeds


def validate(p):
    for name in ("n_gpus", "k", "duplicates", "seed"):
        if float(p[name]) != int(p[name]):
            raise ParameterError(f"{name} must be a whole number, got {p[name]!r}")
    if p.k > p.n_gpus:
        raise ParameterError(f"k must be at most n_gpus ({p.n_gpus}), got {p.k!r}")
    if p.n_gpus < 2 or p.n_gpus > 1024:
        raise ParameterError(f"n_gpus must be from 2 to 1,024 (two tenants split them), got {p.n_gpus!r}")
    if p.busy_share >= 1:
        raise ParameterError(f"busy_share must be below 1 (a GPU needs idle gaps), got {p.busy_share!r}")
    if p.hours / p.mean_job_hours > 10000:
        raise ParameterError(f"hours / mean_job_hours must be at most 10,000 records per GPU, got {p.hours / p.mean_job_hours:g}")


def usage(n_gpus: int, hours: float, busy_share: float, mean_job_hours: float, duplicates: int, seed: int) -> dict:
    """Seeded busy intervals per GPU in whole seconds (alternating idle gaps and jobs, so one GPU's own
    records never overlap), then `duplicates` of GPU 0's records re-reported as a copy cut short."""
    rng = np.random.default_rng(int(seed))
    window = int(round(hours * SECONDS_PER_HOUR))
    mean_busy = mean_job_hours * SECONDS_PER_HOUR
    mean_idle = mean_busy * (1 - busy_share) / busy_share
    by_gpu = {}
    for g in range(n_gpus):
        t, out = int(rng.exponential(mean_idle)), []
        while t < window:
            end = min(window, t + max(60, int(rng.exponential(mean_busy))))
            out.append((t, end))
            t = end + max(60, int(rng.exponential(mean_idle)))
        by_gpu[f"gpu{g}"] = out
    clean = {g: list(v) for g, v in by_gpu.items()}
    first = by_gpu["gpu0"]
    picks = rng.choice(len(first), size=min(int(duplicates), len(first)), replace=False) if first else []
    for i in sorted(int(x) for x in picks):
        s, e = first[i]
        cut = s + max(1, int((e - s) * rng.uniform(0.3, 0.9)))     # the restart's open record: [s, cut)
        first.append((s, cut))
    return dict(window=window, by_gpu=by_gpu, clean=clean)


def tenants(by_gpu: dict) -> tuple[list, list]:
    """GPUs split in two halves, one tenant each: their records as two lists."""
    names = list(by_gpu)
    half = len(names) // 2
    a = [x for g in names[:half] for x in by_gpu[g]]
    b = [x for g in names[half:] for x in by_gpu[g]]
    return a, b


def sweep(by_gpu: dict, k: int) -> dict:
    a, b = tenants(by_gpu)
    everything = [x for ivs in by_gpu.values() for x in ivs]
    return dict(reported=iv.length(everything), busy=sum(iv.covered(v) for v in by_gpu.values()),
                any=iv.covered(everything), k=iv.length(iv.busy_at_least(by_gpu, k)),
                k_naive=iv.length(iv.busy_at_least_naive(by_gpu, k)),
                ab=iv.length(iv.intersection(a, b)), ab_naive=iv.length(iv.at_least(a + b, 2)),
                overlaps=iv.overlaps_by_gpu(by_gpu))


def error(s: dict, window: int) -> float:
    """The double count's error: naive over right minus one (over the window where nothing is all-busy)."""
    return (s["k_naive"] - s["k"]) / s["k"] if s["k"] else s["k_naive"] / window


def seed_runs(n_gpus, hours, busy_share, mean_job_hours, duplicates, k, seeds) -> list[dict]:
    """The same scenario on each seed: its sweep, the sweep without the re-reported records, and the error."""
    out = []
    for seed in seeds:
        u = usage(n_gpus, hours, busy_share, mean_job_hours, duplicates, seed)
        s = sweep(u["by_gpu"], k)
        out.append(dict(seed=seed, usage=u, sweep=s, clean=sweep(u["clean"], k), err=error(s, u["window"])))
    return out


def intervals_chain(n_gpus, hours, busy_share, mean_job_hours, duplicates, k, seed, sources=None) -> Chain:
    """The sweep of a seeded day and the error's range over SEEDS seeds from it; the page's day rides along in
    ch.data ("usage", "sweep"), every seed's run in ch.data["runs"]. `sources` maps a parameter to its source."""
    runs = seed_runs(n_gpus, hours, busy_share, mean_job_hours, duplicates, k, range(seed, seed + SEEDS))
    u, s = runs[0]["usage"], runs[0]["sweep"]
    h = SECONDS_PER_HOUR
    src = (sources or {}).get
    sim = "simulated on the seeded day: utils.components.intervals."
    ch = Chain("A day of one node's usage records, swept")
    ch.given("n", q(n_gpus, "GPU"), "GPUs", kind="assumption", source=src("n_gpus", "parameters cell"))
    ch.given("W", q(hours, "hour"), "window", kind="assumption", source=src("hours", "parameters cell"))
    ch.given("D", q(duplicates, ""), "records GPU 0 reports twice", kind="assumption",
             source=src("duplicates", "parameters cell"))
    ch.given("H_rep", q(s["reported"] / h, "GPU*hour"), "GPU-hours as reported: lengths summed",
             kind="derived", source=sim + "length", digits=4)
    ch.given("H_busy", q(s["busy"] / h, "GPU*hour"), "GPU-hours busy: each GPU's union summed",
             kind="derived", source=sim + "union", digits=4)
    ch.step("u", "H_busy/(n*W)", "", "the node's utilisation")
    ch.given("T_any", q(s["any"] / h, "hour"), "time at least one GPU is busy: the union",
             kind="derived", source=sim + "covered", digits=4)
    ch.given("k", q(k, "GPU"), "threshold of the counter", kind="assumption", source=src("k", "parameters cell"))
    ch.given("T_k", q(s["k"] / h, "hour"), "time at least k GPUs busy, each GPU unioned first",
             kind="derived", source=sim + "busy_at_least", digits=4)
    ch.given("T_k_naive", q(s["k_naive"] / h, "hour"), "the same, the counter over raw records",
             kind="derived", source=sim + "busy_at_least_naive", digits=4)
    ch.step("err", "(T_k_naive - T_k)/T_k" if s["k"] else "T_k_naive/W", "", "the double count's error")
    errs = [r["err"] for r in runs]
    ch.given("err_lo", q(min(errs), ""), f"the error, lowest over {SEEDS} seeds", kind="derived",
             source=f"simulated: seeds {seed} to {seed + SEEDS - 1}", digits=3)
    ch.given("err_hi", q(max(errs), ""), f"the error, highest over {SEEDS} seeds", kind="derived",
             source=f"simulated: seeds {seed} to {seed + SEEDS - 1}", digits=3)
    ch.given("T_ab", q(s["ab"] / h, "hour"), "time both tenants run: unions, then at least two",
             kind="derived", source=sim + "intersection", digits=4)
    ch.given("T_ab_naive", q(s["ab_naive"] / h, "hour"), "the same over raw records",
             kind="derived", source=sim + "at_least", digits=4)
    ch.data.update(usage=u, sweep=s, runs=runs)
    return ch


NAMES = ("n_gpus", "hours", "busy_share", "mean_job_hours", "duplicates", "k", "seed")


def compute(p) -> Chain:
    return intervals_chain(int(p.n_gpus), p.hours, p.busy_share, p.mean_job_hours, int(p.duplicates), int(p.k),
                           int(p.seed), sources={n: SPEC.source(p, n) for n in NAMES})


# --- the claim -------------------------------------------------------------------------------------------
QUOTE = ("The union is a sort and a scan. The intersection is the same sweep with a counter, and it is the "
         "one that goes wrong, because a single GPU reporting overlapping intervals will be counted twice "
         "and produce an answer that looks plausible.")
CLAIM = dict(n_gpus=8, hours=24.0, busy_share=0.8, mean_job_hours=2.0, duplicates=4, k=8, seed=0)


def seed_checks(run: dict, duplicates: int) -> dict:
    """What the claim says, on one seed's day: the union ignores the re-reported records, the counter over raw
    records overstates the right answer and stays inside the window, and the overlap check finds every pair."""
    s, c, u = run["sweep"], run["clean"], run["usage"]
    found = sum(len(v) for v in s["overlaps"].values())
    return dict(union_ok=c["any"] == s["any"] and c["busy"] == s["busy"],
                plausible=0 <= s["k_naive"] <= u["window"], wrong=s["k_naive"] > s["k"],
                found_all=found == duplicates, second_route=c["k_naive"] == c["k"] == s["k"], found=found)


@memoised
def checks() -> dict:
    """The claim's scenario swept on SEEDS seeds, with and without the re-reported records (deterministic, so
    memoised: the page and claims() share one run). The claim must hold on every seed, not on the page's one."""
    C = CLAIM
    ch = intervals_chain(**C, sources=dict.fromkeys(NAMES, "this book's scenario"))
    runs = ch.data["runs"]
    per_seed = [seed_checks(r, C["duplicates"]) for r in runs]
    every = {key: all(x[key] for x in per_seed) for key in ("union_ok", "plausible", "wrong", "found_all",
                                                          "second_route")}
    s = runs[0]["sweep"]
    errs = [r["err"] for r in runs]
    return dict(chain=ch, usage=runs[0]["usage"], sweep=s, clean=runs[0]["clean"], runs=runs, every=every,
                err_lo=min(errs), err_hi=max(errs), found=per_seed[0]["found"], gpus_flagged=sorted(s["overlaps"]))


def claims() -> list[Claim]:
    C, r = CLAIM, checks()
    s, h, n = r["sweep"], SECONDS_PER_HOUR, len(r["runs"])
    ok = all(r["every"].values())
    return [Claim(
        "double-count", quote=QUOTE, source="spec/001 (the usage-intervals paragraph)",
        claimed="the union is right; the counter over raw records double-counts one GPU's overlaps, plausibly",
        derived=f"all {C['n_gpus']} GPUs busy: {fmt(q(s['k_naive'] / h, 'hour'))} naive against "
                f"{fmt(q(s['k'] / h, 'hour'))} on the page's seed; {pct(r['err_lo'])} to {pct(r['err_hi'])} too much "
                f"over {n} seeds",
        verdict=HOLDS if ok else WRONG,
        nearest_true="" if ok else "on some seed of this scenario the counter over raw records gives the right answer",
        reason=(f"with {num(C['duplicates'])} overlapping records on one GPU of {num(C['n_gpus'])}, on every one of "
                f"{num(n)} seeded days the union is unchanged, but the counter over raw records finds every GPU busy "
                f"for longer than they were, by {pct(r['err_lo'])} to {pct(r['err_hi'])}, and still inside the "
                f"{fmt(q(C['hours'], 'hour'))} window (the page's seed: {fmt(q(s['k_naive'] / h, 'hour'))} against "
                f"the right {fmt(q(s['k'] / h, 'hour'))}); the overlap check flags all {num(C['duplicates'])} pairs "
                f"on every seed."))]


def check_text(r: dict) -> dict:
    s, c, h = r["sweep"], r["clean"], SECONDS_PER_HOUR
    return {"ck-n": num(CLAIM["n_gpus"]), "ck-hours": fmt(q(CLAIM["hours"], "hour")), "ck-dup": num(CLAIM["duplicates"]),
            "ck-any": fmt(q(s["any"] / h, "hour"), digits=4), "ck-any-clean": fmt(q(c["any"] / h, "hour"), digits=4),
            "ck-k": fmt(q(s["k"] / h, "hour"), digits=3), "ck-k-naive": fmt(q(s["k_naive"] / h, "hour"), digits=3),
            "ck-rep": fmt(q(s["reported"] / h, "GPU*hour"), digits=4), "ck-busy": fmt(q(s["busy"] / h, "GPU*hour"), digits=4),
            "ck-ab": fmt(q(s["ab"] / h, "hour"), digits=3), "ck-ab-naive": fmt(q(s["ab_naive"] / h, "hour"), digits=3),
            "ck-found": num(r["found"]), "ck-flagged": ", ".join(r["gpus_flagged"]) or "none",
            "ck-seeds": num(len(r["runs"])), "ck-err-lo": pct(r["err_lo"]), "ck-err-hi": pct(r["err_hi"])}


def case_rows() -> list[list[str]]:
    """The hand cases tests/components/test_intervals.py holds the functions to, run live."""
    cases = [("disjoint", [(0, 2), (5, 7)]), ("touching", [(0, 3), (3, 5)]), ("nested", [(0, 10), (2, 4)]),
             ("identical twice", [(1, 4), (1, 4)]), ("three overlapping", [(0, 4), (2, 6), (3, 5)]),
             ("empty interval", [(2, 2), (0, 1)]), ("unsorted", [(6, 8), (0, 2), (1, 3)])]
    rows = []
    for name, ivs in cases:
        rows.append([name, f"`{ivs}`", f"`{iv.union(ivs)}`", f"`{iv.at_least(ivs, 2)}`", f"`{iv.overlaps(ivs)}`"])
    return rows


def timeline(ch: Chain) -> dict:
    """The counter over time, raw records and per-GPU unions: for the figure."""
    u = ch.data["usage"]
    by, n = u["by_gpu"], len(u["by_gpu"])
    t = np.arange(0, u["window"], 60)
    right = np.zeros(len(t), dtype=int)
    naive = np.zeros(len(t), dtype=int)
    for ivs in by.values():
        for s, e in ivs:
            naive += (t >= s) & (t < e)
        for s, e in iv.union(ivs):
            right += (t >= s) & (t < e)
    return dict(t=t / SECONDS_PER_HOUR, right=right, naive=naive, n=n)


def what_changes(p, ch: Chain) -> dict:
    base = dict(n_gpus=int(p.n_gpus), hours=p.hours, busy_share=p.busy_share, mean_job_hours=p.mean_job_hours,
                duplicates=int(p.duplicates), k=int(p.k), seed=int(p.seed))
    h = SECONDS_PER_HOUR
    def day(**change) -> dict:                      # the page's seed, one input changed
        b = {**base, **change}
        return seed_runs(*(b[n] for n in NAMES[:-1]), [b["seed"]])[0]["sweep"]
    more = day(duplicates=3 * base["duplicates"] or 3)
    busy = day(busy_share=0.95)
    k_less = day(k=max(1, base["k"] - 2))
    return {"wc-dup-more": num(3 * base["duplicates"] or 3), "wc-more-k": fmt(q(more["k"] / h, "hour")),
            "wc-more-naive": fmt(q(more["k_naive"] / h, "hour")),
            "wc-busy": pct(0.95), "wc-busy-k": fmt(q(busy["k"] / h, "hour")),
            "wc-busy-naive": fmt(q(busy["k_naive"] / h, "hour")),
            "wc-k-less": num(max(1, base["k"] - 2)), "wc-kl-k": fmt(q(k_less["k"] / h, "hour")),
            "wc-kl-naive": fmt(q(k_less["k_naive"] / h, "hour"))}


def exercises(p, ch: Chain) -> dict:
    a, b = [(0, 4), (2, 6)], [(5, 9)]
    by = {"g0": [(0, 10), (3, 6)], "g1": [(4, 8)]}
    return {"ex1-a": f"`{a}`", "ex1-b": f"`{b}`", "ex1-u": f"`{iv.intersection(a, b)}`",
            "ex1-naive": f"`{iv.at_least(a + b, 2)}`",
            "ex2-by": f"`{by}`", "ex2-right": f"`{iv.busy_at_least(by, 2)}`", "ex2-naive": f"`{iv.busy_at_least_naive(by, 2)}`",
            "ex2-pairs": f"`{iv.overlaps_by_gpu(by)}`",
            "ex3-n": num(CLAIM["n_gpus"])}


SPEC = Spec("gpu-hours-intervals", PARAMETERS, RESULTS, compute, validate=validate)
