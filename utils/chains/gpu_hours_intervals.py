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
    Result("tenant_overlap", "hour", "Time both tenants are running", of="T_ab"),
    Result("tenant_overlap_naive", "hour", "The same, counting records", of="T_ab_naive"),
)

SECONDS_PER_HOUR = 3600


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


def intervals_chain(n_gpus, hours, busy_share, mean_job_hours, duplicates, k, seed, source="parameters cell") -> Chain:
    """The sweep of a seeded day; the records and the sweep's lengths ride along in ch.data ("usage", "sweep")."""
    u = usage(n_gpus, hours, busy_share, mean_job_hours, duplicates, seed)
    s = sweep(u["by_gpu"], k)
    h = SECONDS_PER_HOUR
    ch = Chain("A day of one node's usage records, swept")
    ch.given("n", q(n_gpus, "GPU"), "GPUs", kind="assumption", source=source)
    ch.given("W", q(hours, "hour"), "window", kind="assumption", source=source)
    ch.given("D", q(duplicates, ""), "records GPU 0 reports twice", kind="assumption", source=source)
    ch.given("H_rep", q(s["reported"] / h, "GPU*hour"), "GPU-hours as reported: lengths summed",
             kind="assumption", source="utils.components.intervals.length", digits=4)
    ch.given("H_busy", q(s["busy"] / h, "GPU*hour"), "GPU-hours busy: each GPU's union summed",
             kind="assumption", source="utils.components.intervals.union", digits=4)
    ch.step("u", "H_busy/(n*W)", "", "the node's utilisation")
    ch.given("T_any", q(s["any"] / h, "hour"), "time at least one GPU is busy: the union",
             kind="assumption", source="utils.components.intervals.covered", digits=4)
    ch.given("k", q(k, "GPU"), "threshold of the counter", kind="assumption", source=source)
    ch.given("T_k", q(s["k"] / h, "hour"), "time at least k GPUs busy, each GPU unioned first",
             kind="assumption", source="utils.components.intervals.busy_at_least", digits=4)
    ch.given("T_k_naive", q(s["k_naive"] / h, "hour"), "the same, the counter over raw records",
             kind="assumption", source="utils.components.intervals.busy_at_least_naive", digits=4)
    ch.step("err", "(T_k_naive - T_k)/T_k" if s["k"] else "T_k_naive/W", "", "the double count's error")
    ch.given("T_ab", q(s["ab"] / h, "hour"), "time both tenants run: unions, then at least two",
             kind="assumption", source="utils.components.intervals.intersection", digits=4)
    ch.given("T_ab_naive", q(s["ab_naive"] / h, "hour"), "the same over raw records",
             kind="assumption", source="utils.components.intervals.at_least", digits=4)
    ch.data.update(usage=u, sweep=s)
    return ch


def compute(p) -> Chain:
    return intervals_chain(int(p.n_gpus), p.hours, p.busy_share, p.mean_job_hours, int(p.duplicates), int(p.k),
                           int(p.seed))


# --- the claim -------------------------------------------------------------------------------------------
QUOTE = ("The union is a sort and a scan. The intersection is the same sweep with a counter, and it is the "
         "one that goes wrong, because a single GPU reporting overlapping intervals will be counted twice "
         "and produce an answer that looks plausible.")
CLAIM = dict(n_gpus=8, hours=24.0, busy_share=0.8, mean_job_hours=2.0, duplicates=4, k=8, seed=0)


@memoised
def checks() -> dict:
    """The claim's scenario swept, with and without the re-reported records (deterministic, so memoised: the
    page and claims() share one run)."""
    C = CLAIM
    ch = intervals_chain(C["n_gpus"], C["hours"], C["busy_share"], C["mean_job_hours"], C["duplicates"], C["k"],
                         C["seed"], source="this book's scenario")
    u, s = ch.data["usage"], ch.data["sweep"]
    clean = sweep(u["clean"], C["k"])
    return dict(chain=ch, usage=u, sweep=s, clean=clean,
                union_ok=clean["any"] == s["any"] and clean["busy"] == s["busy"],
                plausible=0 <= s["k_naive"] <= u["window"], wrong=s["k_naive"] > s["k"],
                found=sum(len(v) for v in s["overlaps"].values()), gpus_flagged=sorted(s["overlaps"]))


def claims() -> list[Claim]:
    C, r = CLAIM, checks()
    s, h = r["sweep"], SECONDS_PER_HOUR
    ok = r["union_ok"] and r["plausible"] and r["wrong"] and r["found"] >= C["duplicates"]
    return [Claim(
        "double-count", quote=QUOTE, source="spec/001 (the usage-intervals paragraph)",
        claimed="the union is right; the counter over raw records double-counts one GPU's overlaps, plausibly",
        derived=f"all {C['n_gpus']} GPUs busy: {fmt(q(s['k_naive'] / h, 'hour'))} naive against {fmt(q(s['k'] / h, 'hour'))}",
        verdict=HOLDS if ok else WRONG,
        nearest_true="" if ok else "on this scenario the counter over raw records gives the right answer",
        reason=(f"with {num(C['duplicates'])} overlapping records on one GPU of {num(C['n_gpus'])}, the union is unchanged "
                f"({fmt(q(s['any'] / h, 'hour'))}), but the counter over raw records finds every GPU busy for "
                f"{fmt(q(s['k_naive'] / h, 'hour'))} against the right {fmt(q(s['k'] / h, 'hour'))}, "
                f"{pct(s['k_naive'] / s['k'] - 1) if s['k'] else 'infinitely'} too much and still inside the "
                f"{fmt(q(C['hours'], 'hour'))} window; the overlap check flags {num(r['found'])} pairs."))]


def check_text(r: dict) -> dict:
    s, c, h = r["sweep"], r["clean"], SECONDS_PER_HOUR
    return {"ck-n": num(CLAIM["n_gpus"]), "ck-hours": fmt(q(CLAIM["hours"], "hour")), "ck-dup": num(CLAIM["duplicates"]),
            "ck-any": fmt(q(s["any"] / h, "hour"), digits=4), "ck-any-clean": fmt(q(c["any"] / h, "hour"), digits=4),
            "ck-k": fmt(q(s["k"] / h, "hour"), digits=3), "ck-k-naive": fmt(q(s["k_naive"] / h, "hour"), digits=3),
            "ck-rep": fmt(q(s["reported"] / h, "GPU*hour"), digits=4), "ck-busy": fmt(q(s["busy"] / h, "GPU*hour"), digits=4),
            "ck-ab": fmt(q(s["ab"] / h, "hour"), digits=3), "ck-ab-naive": fmt(q(s["ab_naive"] / h, "hour"), digits=3),
            "ck-found": num(r["found"]), "ck-flagged": ", ".join(r["gpus_flagged"]) or "none"}


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
    more = intervals_chain(**{**base, "duplicates": 3 * base["duplicates"] or 3}).data["sweep"]
    busy = intervals_chain(**{**base, "busy_share": 0.95}).data["sweep"]
    k_less = intervals_chain(**{**base, "k": max(1, base["k"] - 2)}).data["sweep"]
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
