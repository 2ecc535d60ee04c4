"""dominant-resource-fairness: sharing GPUs, CPU cores and host memory among users whose tasks need
them in different proportions, by Dominant Resource Fairness (Ghodsi et al., NSDI 2011).

A user's dominant share is the largest fraction of any one resource it holds; the greedy loop gives the
next task to the user with the lowest dominant share. The loop, its two buggy comparison keys and the
divisible version are utils.components.drf; this module runs them on a pooled GPU cluster and on the paper's
worked example (9 CPUs, 18 GB; A <1 CPU, 4 GB>, B <3 CPUs, 1 GB>: A gets three tasks, B two).
"""
from __future__ import annotations

from fractions import Fraction

from utils.chain import Chain, memoised
from utils.components.drf import allocate, dominant_resource, partition_tasks, progressive_filling
from utils.params import Column, Param, ParameterError, Result, Spec
from utils.units import fmt, num, pct, q
from utils.verdicts import UNCHECKABLE, Claim

NODE = "MLCommons Inference v4.1, NVIDIA H200-SXM-141GBx8 system description (read 2026-12-01)"
USERS = ("train", "prep", "eval")
NAMES = {"train": "training", "prep": "data prep", "eval": "evaluation"}

PARAMETERS = (
    Param("n_nodes", 16, "nodes pooled into one cluster", unit="node", check="whole",
          source="this book's assumption: a small training cluster"),
    Param("gpus_per_node", 8, "GPUs per node", unit="GPU/node", check="whole", source=NODE),
    Param("cores_per_node", 112, "CPU cores per node (two 56-core Xeon Platinum 8480C)", unit="1/node",
          check="whole", source=NODE),
    Param("memory_per_node", 2000.0, "host memory per node", unit="GB/node", source=NODE + ": 2 TB"),
    Param("train_gpus", 8, "training task: GPUs", unit="GPU", check="non_negative",
          source="this book's assumption: one eight-GPU training worker"),
    Param("train_cores", 32, "training task: CPU cores (data loaders)", check="non_negative",
          source="this book's assumption"),
    Param("train_memory", 512.0, "training task: host memory", unit="GB", check="non_negative",
          source="this book's assumption"),
    Param("prep_gpus", 0, "data-prep task: GPUs", unit="GPU", check="non_negative",
          source="this book's assumption: tokenising and packing on CPUs"),
    Param("prep_cores", 16, "data-prep task: CPU cores", check="non_negative", source="this book's assumption"),
    Param("prep_memory", 64.0, "data-prep task: host memory", unit="GB", check="non_negative",
          source="this book's assumption"),
    Param("eval_gpus", 1, "evaluation task: GPUs", unit="GPU", check="non_negative",
          source="this book's assumption: one GPU with weights offloaded to host memory"),
    Param("eval_cores", 4, "evaluation task: CPU cores", check="non_negative", source="this book's assumption"),
    Param("eval_memory", 512.0, "evaluation task: host memory", unit="GB", check="non_negative",
          source="this book's assumption"),
    # The reader's own cluster, any number of users and resources: both tables, or neither (the pooled cluster above).
    Param("users", [], "your users, replacing the three above: rows {\"user\": name, <resource>: demand of one "
          "task, ...} naming every resource of capacity (JSON, or a .json file)", check="table",
          columns=(Column("user", "text"), Column("*", "non_negative", "one task's demand of that resource")),
          source="this book's assumption: empty, the pooled cluster above"),
    Param("capacity", [], "your cluster's capacities, with users: rows {\"resource\": name, \"amount\": total}",
          check="table", columns=(Column("resource", "text"), Column("amount", "positive")),
          source="this book's assumption: empty, the pooled cluster above"),
)

RESULTS = (
    Result("train_tasks", "", "Training tasks under DRF (a table: its first user)", of="n_T"),
    Result("prep_tasks", "", "Data-prep tasks under DRF (a table: its second user, or 0)", of="n_P"),
    Result("eval_tasks", "", "Evaluation tasks under DRF (a table: its third user, or 0)", of="n_E"),
    Result("min_dominant_share", "", "Lowest dominant share under DRF", of="s_min", percent=True),
    Result("max_dominant_share", "", "Highest dominant share under DRF", of="s_max", percent=True),
    Result("gpu_utilisation", "", "GPUs allocated under DRF (a table: its first resource)", of="u_g", percent=True),
    Result("core_utilisation", "", "CPU cores allocated under DRF (a table: its second, or 0)", of="u_c", percent=True),
    Result("memory_utilisation", "", "Host memory allocated under DRF (a table: its third, or 0)", of="u_m", percent=True),
    Result("floor_bug_first_user_gpus", "", "GPUs the first user holds when shares are floored",
           of="bug_floor_gpu", percent=True),
    Result("raw_bug_gpu_utilisation", "", "GPUs allocated when users are compared by GPUs held",
           of="bug_raw_gpu", percent=True),
)


def capacity(p) -> tuple:
    return (p.n_nodes * p.gpus_per_node, p.n_nodes * p.cores_per_node, p.n_nodes * p.memory_per_node)


def demands(p) -> list[tuple]:
    return [(p[f"{u}_gpus"], p[f"{u}_cores"], p[f"{u}_memory"]) for u in USERS]


MAX_TASKS = 100_000     # the greedy loop hands out one task a round: more would not answer in a second


def table_mode(p) -> bool:
    return bool(p.users)


def table(p) -> tuple[tuple, list[tuple], list[str], list[str]]:
    """(capacity, demands, user names, resource names) of the reader's tables."""
    names = [r["resource"] for r in p.capacity]
    return (tuple(r["amount"] for r in p.capacity), [tuple(u[n] for n in names) for u in p.users],
            [u["user"] for u in p.users], names)


def _validate_table(p):
    if bool(p.users) != bool(p.capacity):
        raise ParameterError("users and capacity go together: set both tables (or neither, for the pooled cluster)")
    names = [r["resource"] for r in p.capacity]
    if len(set(names)) != len(names):
        raise ParameterError(f"capacity names a resource twice: {', '.join(names)}")
    users = [u["user"] for u in p.users]
    if len(set(users)) != len(users):
        raise ParameterError(f"users names a user twice: {', '.join(users)}")
    for i, u in enumerate(p.users):
        named = sorted(set(u) - {"user"})
        if named != sorted(names):
            raise ParameterError(f"users[{i}] ({u['user']}) names resources {named}, capacity names {sorted(names)}")
        if not any(u[n] for n in names):
            raise ParameterError(f"users[{i}] ({u['user']}) needs nothing: a task needs some resource")


def _bound_tasks(cap, dem):
    """Refuse a cluster whose loop would hand out more than MAX_TASKS tasks (each user alone fills it at most)."""
    most = sum(min(c / d for c, d in zip(cap, u) if d > 0) for u in dem)
    if most > MAX_TASKS:
        raise ParameterError(f"the cluster holds up to {most:.3g} tasks; the loop answers up to {MAX_TASKS:,}: "
                             "give larger tasks or a smaller cluster")


def validate(p):
    _validate_table(p)
    if table_mode(p):
        cap, dem, _, _ = table(p)
        _bound_tasks(cap, dem)
        return
    for u in USERS:
        if not any(p[f"{u}_{r}"] for r in ("gpus", "cores", "memory")):
            raise ParameterError(f"{u}_gpus, {u}_cores and {u}_memory are all zero: a task needs something")
    for name in ("train_gpus", "prep_gpus", "eval_gpus", "train_cores", "prep_cores", "eval_cores"):
        if float(p[name]) != int(p[name]):
            raise ParameterError(f"{name} must be a whole number, got {p[name]!r}")
    _bound_tasks(capacity(p), demands(p))


def _f(x) -> float:
    return float(Fraction(x))


def compute(p) -> Chain:
    """The chain on the pooled cluster: capacities, each task's dominant share, the loop's tasks, the
    shares and utilisations they give; and the two buggy keys on the same cluster. The allocations ride
    along in ch.data ("cap", "dem", "fair", "floor", "raw", "divisible", "partition")."""
    if table_mode(p):
        return table_chain(p)
    cap, dem = capacity(p), demands(p)
    fair = allocate(cap, dem)
    ch = Chain("Dominant Resource Fairness on a pooled GPU cluster")
    ch.given("N", q(p.n_nodes, "node"), "nodes", kind="assumption", source=SPEC.source(p, "n_nodes"))
    ch.given("g", q(p.gpus_per_node, "GPU/node"), "GPUs per node", kind="spec", source=SPEC.source(p, "gpus_per_node"))
    ch.given("c", q(p.cores_per_node, "1/node"), "CPU cores per node", kind="spec",
             source=SPEC.source(p, "cores_per_node"))
    ch.given("m", q(p.memory_per_node, "GB/node"), "host memory per node", kind="spec",
             source=SPEC.source(p, "memory_per_node"))
    ch.step("C_g", "N*g", "GPU", "GPUs in the pool")
    ch.step("C_c", "N*c", "", "CPU cores in the pool")
    ch.step("C_m", "N*m", "GB", "host memory in the pool")
    sym = {"train": "T", "prep": "P", "eval": "E"}
    for u in USERS:
        s = sym[u]
        ch.given(f"g_{s}", q(p[f"{u}_gpus"], "GPU"), f"{NAMES[u]} task: GPUs", kind="assumption",
                 source=SPEC.source(p, f"{u}_gpus"))
        ch.given(f"c_{s}", q(p[f"{u}_cores"], ""), f"{NAMES[u]} task: CPU cores", kind="assumption",
                 source=SPEC.source(p, f"{u}_cores"))
        ch.given(f"m_{s}", q(p[f"{u}_memory"], "GB"), f"{NAMES[u]} task: host memory", kind="assumption",
                 source=SPEC.source(p, f"{u}_memory"))
        ch.step(f"delta_{s}", f"Max(g_{s}/C_g, c_{s}/C_c, m_{s}/C_m)", "", f"dominant share of one {NAMES[u]} task",
                digits=3)
    for i, u in enumerate(USERS):
        ch.given(f"n_{sym[u]}", q(fair.tasks[i], ""), f"{NAMES[u]} tasks the loop gives", kind="derived",
                 source="utils.components.drf.allocate: lowest dominant share first")
    for u in USERS:
        s = sym[u]
        ch.step(f"s_{s}", f"n_{s}*delta_{s}", "", f"{NAMES[u]}'s dominant share")
    ch.step("u_g", "(n_T*g_T + n_P*g_P + n_E*g_E)/C_g", "", "GPUs allocated")
    ch.step("u_c", "(n_T*c_T + n_P*c_P + n_E*c_E)/C_c", "", "CPU cores allocated")
    ch.step("u_m", "(n_T*m_T + n_P*m_P + n_E*m_E)/C_m", "", "host memory allocated")
    shares = [ch[f"s_{sym[u]}"] for u in USERS]
    ch.value("s_min", min(shares))
    ch.value("s_max", max(shares))
    floor = allocate(cap, dem, key="floor")
    raw = allocate(cap, dem, key="raw")
    ch.value("bug_floor_gpu", q(_f(floor.used[0][0] / Fraction(cap[0])), ""))
    ch.value("bug_raw_gpu", q(_f(raw.utilisation(cap)[0]), ""))
    ch.data.update(cap=cap, dem=dem, fair=fair, floor=floor, raw=raw, divisible=progressive_filling(cap, dem),
                   partition=partition_tasks(cap, dem))
    return ch


def table_chain(p) -> Chain:
    """The reader's cluster: each capacity and demand, each task's dominant share, the loop's tasks and each user's
    share; the results read the first three users and resources (0 where the table has fewer). The allocations
    ride along in ch.data as in compute()."""
    cap, dem, users, names = table(p)
    fair = allocate(cap, dem)
    ch = Chain("Dominant Resource Fairness on your cluster")
    for j, n in enumerate(names):
        ch.given(f"C_{j + 1}", q(cap[j], ""), f"capacity of {n}", kind="assumption", source=SPEC.source(p, "capacity"))
    for i, u in enumerate(users):
        for j, n in enumerate(names):
            ch.given(f"d_{i + 1}_{j + 1}", q(dem[i][j], ""), f"{u}: one task's {n}", kind="assumption",
                     source=SPEC.source(p, "users"))
    how = "utils.components.drf.allocate: lowest dominant share first"
    for i, u in enumerate(users):
        ch.given(f"delta_{i + 1}", q(_f(max(Fraction(d) / Fraction(c) for d, c in zip(dem[i], cap))), ""),
                 f"dominant share of one {u} task", kind="derived", source="max over resources of demand/capacity")
        ch.given(f"n_{i + 1}", q(fair.tasks[i], ""), f"{u} tasks the loop gives", kind="derived", source=how)
        ch.given(f"s_{i + 1}", q(_f(fair.shares[i]), ""), f"{u}'s dominant share", kind="derived", source=how)
    util = fair.utilisation(cap)
    for j, n in enumerate(names):
        ch.given(f"u_{j + 1}", q(_f(util[j]), ""), f"{n} allocated", kind="derived", source=how)
    third = lambda xs, k: xs[k] if k < len(xs) else 0          # noqa: E731 - a result past the table's size is 0
    for key, k in (("n_T", 0), ("n_P", 1), ("n_E", 2)):
        ch.value(key, q(third(fair.tasks, k), ""))
    for key, k in (("u_g", 0), ("u_c", 1), ("u_m", 2)):
        ch.value(key, q(_f(third(util, k)), ""))
    ch.value("s_min", q(_f(min(fair.shares)), ""))
    ch.value("s_max", q(_f(max(fair.shares)), ""))
    floor, raw = allocate(cap, dem, key="floor"), allocate(cap, dem, key="raw")
    ch.value("bug_floor_gpu", q(_f(floor.used[0][0] / Fraction(cap[0])), ""))
    ch.value("bug_raw_gpu", q(_f(raw.utilisation(cap)[0]), ""))
    ch.data.update(cap=cap, dem=dem, fair=fair, floor=floor, raw=raw, divisible=progressive_filling(cap, dem),
                   partition=partition_tasks(cap, dem), users=users, resources=names)
    return ch


# --- the claim ------------------------------------------------------------------------------------
# The paper's worked example stays beside the claim rather than in the catalog: it is the check's own input set
# (and the result the paper prints for it), quoted from the paper the loop is checked against, used by this
# claim only, and no catalog kind holds a worked example.
PAPER = dict(capacity=(9, 18), demands=[(1, 4), (3, 1)], tasks=(3, 2), share=Fraction(2, 3))
PAPER_SOURCE = ("Ghodsi, Zaharia, Hindman, Konwinski, Shenker, Stoica, 'Dominant Resource Fairness: Fair "
                "Allocation of Multiple Resource Types', NSDI 2011, sec. 4 "
                "(https://static.usenix.org/event/nsdi11/tech/full_papers/Ghodsi.pdf, read 2026-12-01)")
QUOTE = ("Fair sharing of one resource is obvious and fair sharing of three is not, because a GPU-heavy job "
         "and a memory-heavy job are not comparable. The rule that makes them comparable, the greedy loop "
         "that implements it, and the tie-breaking bug that gave one user everything.")


@memoised
def checks() -> dict:
    """The claim's own inputs: the paper's example, the loop under each key, tie-break and stop rule."""
    cap, dem = PAPER["capacity"], PAPER["demands"]
    runs = {(k, t, s): allocate(cap, dem, key=k, tie=t, stop=s)
            for k in ("dominant", "floor", "raw") for t in ("index", "reverse") for s in ("skip", "paper")}
    fair = runs[("dominant", "index", "skip")]
    bug = runs[("floor", "index", "paper")]
    ties_harmless = len({runs[("dominant", t, s)].tasks for t in ("index", "reverse") for s in ("skip", "paper")}) == 1
    twins = max(abs(a - b) for k in range(1, 40) for a, b in [allocate((k,), [(1,), (1,)]).tasks])
    one = allocate((12,), [(1,), (1,), (1,)]).tasks
    return dict(runs=runs, fair=fair, bug=bug, bug_skip=runs[("floor", "index", "skip")],
                bug_reverse=allocate(cap, dem[::-1], key="floor", stop="paper"),
                raw=runs[("raw", "index", "skip")], ties_harmless=ties_harmless, twins=twins, one=one,
                dominant=[dominant_resource(d, cap) for d in dem],
                divisible=progressive_filling(cap, dem),
                matches=fair.tasks == PAPER["tasks"] and set(fair.shares) == {PAPER["share"]})


def claims() -> list[Claim]:
    ck = checks()
    fair, bug = ck["fair"], ck["bug"]
    share = fmt(_f(fair.shares[0]), digits=3)
    return [Claim(
        "drf-tie-break", quote=QUOTE, source="spec/001 (the fair-sharing paragraph); checked on " + PAPER_SOURCE,
        claimed=f"the loop gives A {PAPER['tasks'][0]} tasks and B {PAPER['tasks'][1]} (the paper); "
                "a tie-break bug gives one user everything",
        derived=f"A {fair.tasks[0]}, B {fair.tasks[1]}, both at a dominant share of {share}; floored shares: "
                f"A {bug.tasks[0]}, B {bug.tasks[1]}",
        # The rule and the loop hold against the paper, but the sentence's assertion is an incident (the bug that
        # gave one user everything) with no code, cluster or comparison named: the book can reproduce it only by
        # adding a flaw of its own (floored shares), which is the book checked against itself.
        verdict=UNCHECKABLE,
        reason=f"the source names no code, cluster or comparison for its bug; on the paper's cluster the loop gives "
               f"A {fair.tasks[0]} tasks and B {fair.tasks[1]}, both at a "
               f"dominant share of {share}, as the paper says; with shares floored to integers every round is a "
               f"tie, the first user wins each one, and A takes {bug.tasks[0]} tasks to B's {bug.tasks[1]}, a bug of the "
               f"book's own making.")]


def check_text(ck: dict) -> dict:
    fair, bug, skip, rev, raw = ck["fair"], ck["bug"], ck["bug_skip"], ck["bug_reverse"], ck["raw"]
    cap = PAPER["capacity"]
    return {"paper-year": "2011", "p-cpu": num(cap[0]), "p-mem": q(cap[1], "GB"),
            "p-a-cpu": num(PAPER["demands"][0][0]), "p-a-mem": q(PAPER["demands"][0][1], "GB"),
            "p-b-cpu": num(PAPER["demands"][1][0]), "p-b-mem": q(PAPER["demands"][1][1], "GB"),
            "p-a-tasks": num(fair.tasks[0]), "p-b-tasks": num(fair.tasks[1]),
            "p-a-used-cpu": num(_f(fair.used[0][0])), "p-a-used-mem": q(_f(fair.used[0][1]), "GB"),
            "p-b-used-cpu": num(_f(fair.used[1][0])), "p-b-used-mem": q(_f(fair.used[1][1]), "GB"),
            "p-share": fmt(_f(fair.shares[0])), "p-free-mem": q(_f(fair.free[1]), "GB"),
            "p-a-task-share": fmt(_f(Fraction(PAPER['demands'][0][1], cap[1]))),
            "p-b-task-share": fmt(_f(Fraction(PAPER['demands'][1][0], cap[0]))),
            "bug-a": num(bug.tasks[0]), "bug-b": num(bug.tasks[1]), "bug-mem": q(_f(bug.used[0][1]), "GB"),
            "bug-skip-a": num(skip.tasks[0]), "bug-skip-b": num(skip.tasks[1]),
            "bug-rev-b": num(rev.tasks[0]), "raw-a": num(raw.tasks[0]), "raw-b": num(raw.tasks[1]),
            "twins": num(ck["twins"]), "one-each": num(ck["one"][0]), "one-cap": num(sum(ck["one"]))}


def round_table(ck: dict) -> list[list[str]]:
    """The loop on the paper's example, round by round: who was lowest, what each then holds."""
    cap, dem = PAPER["capacity"], PAPER["demands"]
    tasks, rows = [0, 0], []
    for r, i in enumerate(ck["fair"].order, start=1):
        tasks[i] += 1
        shares = [Fraction(t * max(Fraction(d[0], cap[0]), Fraction(d[1], cap[1]))) for t, d in zip(tasks, dem)]
        cpu = sum(t * d[0] for t, d in zip(tasks, dem))
        mem = sum(t * d[1] for t, d in zip(tasks, dem))
        rows.append([str(r), "AB"[i], str(shares[0]), str(shares[1]), f"{cpu} of {cap[0]}", f"{mem} of {cap[1]} GB"])
    return rows


def variant_rows(ck: dict) -> list[list[str]]:
    """Every key, tie-break and stop rule on the paper's example."""
    label = {"dominant": "dominant share (DRF)", "floor": "dominant share floored to an integer",
             "raw": "raw CPUs held"}
    return [[label[k], "first user" if t == "index" else "last user", "stop at first refusal" if s == "paper" else
             "skip and go on", str(a.tasks[0]), str(a.tasks[1])] for (k, t, s), a in ck["runs"].items()]


# --- figure, what changes, exercises --------------------------------------------------------------
def figure_data(ch: Chain) -> dict:
    """Per user, the share of each resource it holds, under DRF and under the two buggy keys."""
    cap = ch.data["cap"]
    out = {}
    for name in ("fair", "floor", "raw"):
        a = ch.data[name]
        out[name] = [[_f(a.used[i][r] / Fraction(cap[r])) for r in range(3)] for i in range(3)]
    return out


def what_changes(p, ch: Chain) -> dict:
    res = ch.data
    fair, div = res["fair"], res["divisible"]
    gap = max(abs(a - _f(x)) for a, x in zip(fair.tasks, div))
    big = allocate(capacity(p), [(d[0], d[1], d[2] * 2) if i == 2 else d for i, d in enumerate(demands(p))])
    floor_gpu = _f(res["floor"].used[0][0] / Fraction(res["cap"][0]))
    return {"wc-floor-eval": num(res["floor"].tasks[2]), "wc-floor-gpu": pct(floor_gpu),
            "wc-raw-prep": num(res["raw"].tasks[1]), "wc-raw-gpu": pct(_f(res["raw"].utilisation(res["cap"])[0])),
            "wc-gap": fmt(gap, digits=2), "wc-div-t": fmt(_f(div[0]), digits=3), "wc-div-p": fmt(_f(div[1]), digits=3),
            "wc-div-e": fmt(_f(div[2]), digits=3),
            "wc-eval-mem2": q(2 * p.eval_memory, "GB"), "wc-eval2": num(big.tasks[2]), "wc-eval": num(fair.tasks[2]),
            "wc-train2": num(big.tasks[0]), "wc-train": num(fair.tasks[0]),
            "wc-prep2": num(big.tasks[1]), "wc-prep": num(fair.tasks[1])}


def exercises(p, ch: Chain) -> dict:
    # 1: a third user on the paper's cluster
    c_dem = (2, 2)
    three = allocate(PAPER["capacity"], PAPER["demands"] + [c_dem])
    # 2: the sharing-incentive floor on the GPU cluster, against what the loop gives
    part, fair = ch.data["partition"], ch.data["fair"]
    # 3: nodes until the evaluation user runs a given number of tasks
    target, nodes = 2 * fair.tasks[2], p.n_nodes
    while allocate(capacity(p.replace(n_nodes=nodes)), demands(p)).tasks[2] < target:
        nodes += 1
    return {"ex1-c-cpu": num(c_dem[0]), "ex1-c-mem": q(c_dem[1], "GB"),
            "ex1-a": num(three.tasks[0]), "ex1-b": num(three.tasks[1]), "ex1-c": num(three.tasks[2]),
            "ex1-share": ", ".join(fmt(_f(s)) for s in three.shares),
            "ex2-t": num(part[0]), "ex2-p": num(part[1]), "ex2-e": num(part[2]),
            "ex2-ft": num(fair.tasks[0]), "ex2-fp": num(fair.tasks[1]), "ex2-fe": num(fair.tasks[2]),
            "ex3-target": num(target), "ex3-nodes": q(nodes, "node")}


SPEC = Spec("dominant-resource-fairness", PARAMETERS, RESULTS, compute, validate=validate, closed_form=True)
