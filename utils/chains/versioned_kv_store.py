"""versioned-kv-store: per key an ascending list of versions and a parallel list of values, reads by
binary search; what a read costs, what a version costs in memory, and the read cases that decide whether
the design is right.

The store is utils.components.versioned_store (bisect, tombstones, out-of-order appends, one lock). This module
prices it (comparisons per read against a scan, bytes per version) and runs it on a seeded sequence of
writes, reading every key at every version against an independent sweep, beside the off-by-one variant
(bisect_left instead of bisect_right).
"""
from __future__ import annotations

import random
import sys
import threading

from utils.chain import Chain, memoised
from utils.components.versioned_store import TOMBSTONE, ScanModel, VersionedStore, comparisons, read_case
from utils.params import Param, ParameterError, Result, Spec
from utils.units import fmt, num, pct, q, short
from utils.verdicts import READING, WRONG, Claim

PARAMETERS = (
    Param("n_keys", 1000000, "keys in the store", check="whole", source="this book's assumption"),
    Param("versions_per_key", 1000, "versions kept per key, v", check="whole", source="this book's assumption"),
    Param("value_bytes", 64.0, "average value size", unit="B", source="this book's assumption"),
    Param("version_bytes", 8.0, "one version number: a 64-bit integer in a packed array", unit="B",
          source="int64 (Python array('q') or a numpy int64 column)"),
    Param("pointer_bytes", 8.0, "one slot of the value list: a 64-bit pointer", unit="B",
          source="a CPython list slot on a 64-bit build"),
    Param("sim_keys", 8, "keys in the seeded simulation", check="whole", source="this book's choice"),
    Param("sim_writes", 2000, "writes in the seeded simulation (one version each)", check="whole",
          source="this book's choice"),
    Param("delete_share", 0.25, "share of the simulation's writes that are deletes", check="share",
          source="this book's choice"),
    Param("seed", 0, "random.Random seed of the simulation", check="non_negative", source="this book's choice"),
)

SIMULATION = "seeded writes to a versioned store, every key read at every version, with the off-by-one search"

RESULTS = (
    Result("bisect_comparisons", "", "Comparisons per read, binary search (counted)", of="c_bin"),
    Result("scan_comparisons", "", "Comparisons per read, scan (average)", of="c_scan"),
    Result("read_speedup", "", "Scan over binary search, comparisons", of="x"),
    Result("bytes_per_version", "B", "Bytes per stored version", of="b_entry"),
    Result("store_bytes", "GB", "Store size", of="M"),
    Result("version_overhead", "", "Share of a version's bytes that are not the value", of="o", percent=True),
    Result("off_by_one_wrong_reads", "", "Reads the bisect_left store gets wrong (simulation)", of="w_bug",
           percent=True),
)


SIM_READS_MAX = 200_000   # reads the simulation checks, at most (validate says why)


def validate(p):
    reads = (p.sim_keys + 1) * (p.sim_writes + 1)
    if reads > SIM_READS_MAX:
        raise ParameterError(f"sim_keys and sim_writes: the simulation reads every key at every version, "
                             f"(sim_keys + 1) x (sim_writes + 1) = {reads:,} reads, past a second beyond "
                             f"{SIM_READS_MAX:,}")


def simulate(n_keys: int, n_writes: int, delete_share: float, seed: int, side: str = "right") -> dict:
    """Seeded writes through the store's clock, then every key read at every version, checked against an
    independent sweep of the write log (no binary search). Returns the wrong reads, by case."""
    rng = random.Random(seed)
    s = VersionedStore(side=side)
    log = []
    for i in range(n_writes):
        key = f"k{rng.randrange(n_keys)}"
        if rng.random() < delete_share:
            log.append((s.delete(key), key, TOMBSTONE))
        else:
            log.append((s.put(key, i), key, i))
    keys = [f"k{j}" for j in range(n_keys)] + ["never written"]
    last = s.version
    truth, state = {}, {}
    by_version = {v: (k, val) for v, k, val in log}
    for v in range(1, last + 2):                    # the sweep: the store's state after each version
        if v in by_version:
            k, val = by_version[v]
            state[k] = val
        for k in keys:
            val = state.get(k, None)
            truth[(k, v)] = None if val is TOMBSTONE else val
    wrong, cases = [], {}
    for k in keys:
        h = s.history(k)
        versions, values = [x for x, _ in h], [y for _, y in h]
        own = set(versions)
        for v in range(1, last + 2):
            case = read_case(versions, values, v)
            cases[case] = cases.get(case, 0) + 1
            if s.get(k, v) != truth[(k, v)]:
                wrong.append((k, v, case, v in own))
    return dict(reads=len(truth), wrong=wrong, cases=cases, store=s, log=log)


def memory_chain(p) -> Chain:
    ch = Chain("Reads and memory of a versioned store")
    ch.given("n_k", float(p.n_keys), "keys", kind="assumption", source=SPEC.source(p, "n_keys"))
    ch.given("v", float(p.versions_per_key), "versions per key", kind="assumption",
             source=SPEC.source(p, "versions_per_key"))
    ch.step("c_log", "ceiling(log(v + 1)/log(2))", "", "comparisons a binary search needs, at most")
    ch.given("c_bin", max(comparisons(p.versions_per_key, t) for t in (0, p.versions_per_key // 2,
                                                                        p.versions_per_key + 1)),
             "comparisons bisect_right makes (counted, worst of three reads)", kind="derived",
             source="utils.components.versioned_store.comparisons")
    ch.step("c_scan", "(v + 1)/2", "", "comparisons a scan makes, read at a random version")
    ch.step("x", "c_scan/c_bin", "", "scan over binary search")
    ch.given("b_ver", q(p.version_bytes, "B"), "bytes of one version number", kind="assumption",
             source=SPEC.source(p, "version_bytes"))
    ch.given("b_ptr", q(p.pointer_bytes, "B"), "bytes of one value-list slot", kind="assumption",
             source=SPEC.source(p, "pointer_bytes"))
    ch.given("b_val", q(p.value_bytes, "B"), "bytes of one value", kind="assumption",
             source=SPEC.source(p, "value_bytes"))
    ch.step("b_entry", "b_ver + b_ptr + b_val", "B", "bytes per stored version (one slot in each list)")
    ch.step("M", "n_k*v*b_entry", "GB", "store size")
    ch.step("o", "(b_ver + b_ptr)/b_entry", "", "share of a version's bytes that are bookkeeping")
    return ch


def compute(p) -> Chain:
    ch = memory_chain(p)
    sim = simulate(p.sim_keys, p.sim_writes, p.delete_share, p.seed, side="left")
    ch.value("w_bug", q(len(sim["wrong"]) / sim["reads"], ""))
    return ch


# --- the claim ------------------------------------------------------------------------------------
CLAIM = dict(keys=8, writes=2000, delete_share=0.25, seed=0)
QUOTE = ("Per key, an ascending list of versions and a parallel list of values, with reads doing a binary "
         "search. The three cases that decide whether the design is right: a key that did not exist yet, a "
         "key that was deleted, and a version at which some other key was written.")


SEEDS = range(5)       # the claim's run on several seeded write logs: what it asserts must hold on every one


def edges(run: dict) -> dict:
    """Where the off-by-one's wrong reads fall: at the version that created a key, at a delete's own version."""
    st = run["store"]
    first = {k: h[0][0] for k in {k for _, k, _ in run["log"]} if (h := st.history(k))}
    return dict(at_creation=sum(1 for k, v, _, _ in run["wrong"] if first.get(k) == v),
                at_delete=sum(1 for *_, case, _ in run["wrong"] if case == "deleted"))


@memoised
def checks() -> dict:
    """The design and its off-by-one variant on the claim's simulation, every key read at every version, on each
    of SEEDS (deterministic, so memoised: the page and claims() share one run); the page shows the first seed."""
    C = CLAIM
    per_seed = []
    for seed in SEEDS:
        good = simulate(C["keys"], C["writes"], C["delete_share"], seed)
        bad = simulate(C["keys"], C["writes"], C["delete_share"], seed, side="left")
        own = [w for w in bad["wrong"] if w[3]]
        by_case = {}
        for _, _, case, _ in bad["wrong"]:
            by_case[case] = by_case.get(case, 0) + 1
        e = edges({**bad, "store": good["store"]})          # the same log: the right store's histories
        per_seed.append(dict(good=good, bad=bad, by_case=by_case, own=len(own), **e,
                             design_right=not good["wrong"], bug_only_at_own=len(own) == len(bad["wrong"]) > 0,
                             caught_at_edges=e["at_creation"] > 0 and e["at_delete"] > 0,
                             share=len(bad["wrong"]) / bad["reads"]))
    first = per_seed[0]
    return dict(good=first["good"], bad=first["bad"], own=first["own"], bad_by_case=first["by_case"],
                at_creation=first["at_creation"], per_seed=per_seed,
                design_right=all(r["design_right"] for r in per_seed),
                bug_only_at_own=all(r["bug_only_at_own"] for r in per_seed),
                caught_at_edges=all(r["caught_at_edges"] for r in per_seed),
                share_lo=min(r["share"] for r in per_seed), share_hi=max(r["share"] for r in per_seed))


def claims() -> list[Claim]:
    ck = checks()
    good, bad, n = ck["good"], ck["bad"], len(ck["per_seed"])
    ok = ck["design_right"] and ck["bug_only_at_own"] and ck["caught_at_edges"]
    return [Claim(
        "three-cases", quote=QUOTE, source="spec/001 (the versioned key-value store paragraph)",
        claimed="three read cases decide whether a bisect-based versioned store is right",
        derived=f"bisect_right: {len(good['wrong']):,} wrong of {good['reads']:,} reads; bisect_left: "
                f"{len(bad['wrong']):,} wrong, all at a version the key itself wrote (first of {n} seeds)",
        verdict=READING if ok else WRONG,
        reading="'a key that did not exist yet' and 'a key that was deleted' read at their edges as well as "
                "inside them: a read at the very version that created the key and at the very version that "
                "deleted it. Read only strictly inside the three cases, the off-by-one search passes all three "
                "and only a read at a version the key itself wrote, a case the source does not list, catches it",
        nearest_true="" if ok else "the three cases do not separate the right search from the off-by-one",
        reason=f"on each of {num(n)} seeded write logs the bisect_right store matches an independent sweep on every "
               f"read ({fmt(good['reads'])} a log); the off-by-one bisect_left store gets {pct(ck['share_lo'])} to "
               f"{pct(ck['share_hi'])} of them wrong, every one at a version the key itself wrote, including reads at "
               f"the version that created a key and at the version that deleted it, and passes every read strictly "
               f"inside the three cases.")]


def case_rows(ck: dict) -> list[list[str]]:
    good, by = ck["good"], ck["bad_by_case"]
    order = ("did not exist yet", "deleted", "another key's version", "exact hit")
    good_by = {}
    for _, _, case, _ in good["wrong"]:
        good_by[case] = good_by.get(case, 0) + 1
    return [[case, f"{good['cases'].get(case, 0):,}", f"{good_by.get(case, 0):,}", f"{by.get(case, 0):,}"]
            for case in order]


def check_text(ck: dict) -> dict:
    C, good, bad, by = CLAIM, ck["good"], ck["bad"], ck["bad_by_case"]
    return {"check-keys": fmt(C["keys"]), "check-writes": fmt(C["writes"]),
            "check-deletes": pct(C["delete_share"]), "check-reads": fmt(good["reads"]),
            "check-good-wrong": fmt(len(good["wrong"])), "check-bad-wrong": fmt(len(bad["wrong"])),
            "check-bad-share": pct(len(bad["wrong"]) / bad["reads"]),
            "check-bad-exact": fmt(by.get("exact hit", 0)), "check-bad-deleted": fmt(by.get("deleted", 0)),
            "check-inverse-keys": pct(1 / (C["keys"] + 1)), "check-creation": fmt(ck["at_creation"]),
            "check-seeds": fmt(len(ck["per_seed"])), "check-share-lo": pct(ck["share_lo"]),
            "check-share-hi": pct(ck["share_hi"])}


# --- figure, what changes, exercises --------------------------------------------------------------
def comparison_curve(versions) -> dict:
    """Counted comparisons of one binary search, and a scan's average, against versions per key."""
    return dict(bisect=[max(comparisons(int(v), t) for t in (0, int(v) // 2, int(v) + 1)) for v in versions],
                scan=[(float(v) + 1) / 2 for v in versions])


def bug_curve(key_counts, n_writes: int = 600, seed: int = 0) -> dict:
    """The off-by-one store's wrong-read share against the number of keys written (simulated)."""
    shares = [len(s["wrong"]) / s["reads"] for s in
              (simulate(int(k), n_writes, 0.25, seed, side="left") for k in key_counts)]
    return dict(simulated=shares, inverse=[1 / (k + 1) for k in key_counts])


def what_changes(p, ch: Chain) -> dict:
    # an int object for the largest version the store holds, its list slot, and the value's slot
    cpython = sys.getsizeof(p.n_keys * p.versions_per_key) + 2 * 8
    big = memory_chain(p.replace(versions_per_key=p.versions_per_key * 1000))
    return {"wc-cpython": q(cpython, "B"), "wc-packed": fmt(ch["b_ver"] + ch["b_ptr"]),
            "wc-cpython-entry": q(cpython + p.value_bytes, "B"),
            "wc-cpython-store": fmt((p.n_keys * p.versions_per_key * (cpython + p.value_bytes) * q(1, "B")).to("GB")),
            "wc-v-big": short(p.versions_per_key * 1000), "wc-bin-big": fmt(big["c_bin"]),
            "wc-x-big": short(big["x"].m), "wc-bin": fmt(ch["c_bin"]), "wc-x": short(ch["x"].m)}


def exercises(p, ch: Chain) -> dict:
    v1 = 10 ** 9
    budget = q(1, "TB")
    fit = (budget / (p.n_keys * ch["b_entry"])).to("").m
    n3 = 4
    sim3 = simulate(n3, 1200, 0.25, 1, side="left")
    return {"ex1-v": short(v1), "ex1-c": fmt(comparisons(v1, v1 // 3)),
            "ex2-budget": fmt(budget), "ex2-keys": short(p.n_keys), "ex2-entry": fmt(ch["b_entry"]),
            "ex2-v": fmt(int(fit)), "ex3-keys": fmt(n3), "ex3-inverse": pct(1 / (n3 + 1)),
            "ex3-sim": pct(len(sim3["wrong"]) / sim3["reads"])}


def out_of_order_rows() -> list[list[str]]:
    """A write below the key's newest version, after a read was answered, under each policy."""
    from utils.components.versioned_store import OutOfOrderWrite
    stores = {policy: VersionedStore(out_of_order=policy) for policy in ("insort", "refuse")}
    steps = [("put a = new at version 10", lambda s: s.put("a", "new", version=10)),
             ("read a at version 7", lambda s: s.get("a", 7)),
             ("put a = late at version 6", lambda s: s.put("a", "late", version=6)),
             ("read a at version 7 again", lambda s: s.get("a", 7)),
             ("a's versions", lambda s: [v for v, _ in s.history("a")])]
    rows = []
    for label, step in steps:
        cells = []
        for s in stores.values():
            try:
                out = step(s)
                cells.append("missing" if out is None else f"`{out}`")
            except OutOfOrderWrite as e:
                cells.append(f"refused: {e}")
        rows.append([label] + cells)
    return rows


# --- the mechanism's contract, run small and in-process ---------------------------------------------
HOSTILE_KEYS = (float("nan"), True, [1], {"a": 1})         # never read back, one key with 1, unhashable
HOSTILE_VERSIONS = (0, -1, 1.0, True, type(None), float("nan"))
RACE_KEYS, RACE_SNAPSHOTS, LOG_WRITES = 50, 100, 300


def torn(snap: dict, keys: list) -> bool:
    """A writer rewrites the keys in order, round r: one version of the store shows a prefix of them at some
    round and the rest at the round before. Anything else mixes versions."""
    values = [snap[k] for k in keys]
    return len(set(values)) > 2 or values != sorted(values, reverse=True)


def race_snapshots() -> int:
    """Snapshots taken while a writer thread rewrites every key, round after round: how many were torn."""
    s, keys = VersionedStore(), [f"k{i}" for i in range(RACE_KEYS)]
    for k in keys:
        s.put(k, 0)
    stop, started = threading.Event(), threading.Event()

    def writer():
        r = 0
        while not stop.is_set():
            r += 1
            for k in keys:
                s.put(k, r)
            started.set()
    w = threading.Thread(target=writer, daemon=True)
    w.start()
    started.wait(10)
    bad = sum(torn(s.snapshot(), keys) for _ in range(RACE_SNAPSHOTS))
    stop.set()
    w.join(10)
    return bad


def log_snapshots(seed: int = 0, side: str = "right") -> int:
    """Seeded writes and deletes over a few keys, then a snapshot at every version against the scan model:
    how many differ."""
    rng, s, model, keys = random.Random(seed), VersionedStore(side=side), ScanModel(), [f"k{i}" for i in range(8)]
    for i in range(LOG_WRITES):
        k, value = rng.choice(keys), TOMBSTONE if rng.random() < 0.25 else i
        model.write(k, value, s.delete(k) if value is TOMBSTONE else s.put(k, value))
    return sum(s.snapshot(v) != {k: x for k in keys if (x := model.get(k, v)) is not None}
               for v in range(1, s.version + 1))


def refused(fn, *args, **kw) -> bool:
    try:
        fn(*args, **kw)
    except ValueError:
        return True
    return False


@memoised   # deterministic counts: the page and the tests share them
def contract_checks() -> dict:
    """The mechanism's contract, run small and in-process: {scenarios, held, race, versions, torn}. The
    scenarios: snapshots while a writer rewrites every key, a snapshot at every version of a seeded log
    against a scan, hostile keys and versions (refused, the store unchanged). The full set is
    tests/components/test_versioned_store_adversarial.py."""
    bad_race, bad_log = race_snapshots(), log_snapshots()
    held = (bad_race == 0) + (bad_log == 0)
    for key in HOSTILE_KEYS:
        s = VersionedStore()
        held += refused(s.put, key, 1) and refused(s.get, key) and s.version == 0 and s.entries() == 0
    for version in HOSTILE_VERSIONS:
        s = VersionedStore()
        s.put("a", 1)
        held += refused(s.put, "a", 2, version=version) and refused(s.get, "a", version) and s.history("a") == [(1, 1)]
    return dict(scenarios=2 + len(HOSTILE_KEYS) + len(HOSTILE_VERSIONS), held=held, race=RACE_SNAPSHOTS,
                versions=LOG_WRITES, torn=bad_race + bad_log)


def contract_text() -> dict:
    ck = contract_checks()
    return {f"contract-{k}": f"{ck[k]:,}" for k in ("scenarios", "held", "race", "versions", "torn")}


SPEC = Spec("versioned-kv-store", PARAMETERS, RESULTS, compute, validate=validate)
