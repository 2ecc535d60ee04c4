"""queue-shutdown: a producer-consumer queue, one sentinel per consumer, the exception path that must
still signal, and a bound small enough to apply backpressure; no item lost, no thread left hanging.

The pool is utils.components.work_queue, run here for real with threads: the correct pool on the reader's items,
and (in the check) the two bugs, each detected with a join timeout and then released. The arithmetic is
the bound's: when the producer outruns the consumers, an unbounded queue grows by the surplus times the
item size every second until memory runs out, and a bound holds (maxsize + workers) items at most; it
applies backpressure only if that is less than the memory there is.
"""
from __future__ import annotations

from utils.chain import Chain, memoised
from utils.components.work_queue import held_items, run_pool
from utils.params import Param, ParameterError, Result, Spec
from utils.units import fmt, q
from utils.verdicts import HOLDS, WRONG, Claim

PARAMETERS = (
    Param("n_items", 200, "items the producer puts", check="whole", source="this book's choice"),
    Param("workers", 4, "consumer threads", check="whole", source="this book's assumption"),
    Param("maxsize", 16, "the queue's bound, in items", check="whole", source="this book's assumption"),
    Param("fail_every", 50, "every this many items, one raises in its handler (0: none does)",
          check="non_negative", source="this book's assumption: a bad record now and then"),
    Param("item_mb", 64.0, "bytes one item holds (a decoded batch, say)", unit="MB",
          source="this book's assumption"),
    Param("producer_rate", 50.0, "items per second the producer makes", unit="1/s",
          source="this book's assumption"),
    Param("worker_rate", 10.0, "items per second one consumer finishes", unit="1/s",
          source="this book's assumption"),
    Param("host_memory_gb", 64.0, "host memory the queue may use", unit="GB",
          source="this book's assumption"),
    Param("big_maxsize", 1000, "a bound picked as a round number, to compare", check="whole",
          source="this book's assumption"),
)

RESULTS = (
    Result("items_processed", "", "Items processed by the correct pool", of="n_ok"),
    Result("items_failed", "", "Items whose failure was recorded", of="n_fail"),
    Result("items_lost", "", "Items lost without a trace", of="n_lost"),
    Result("threads_left", "", "Threads alive after shutdown", of="n_left"),
    Result("held_items", "", "Items held when the producer blocks (counted in a threaded run)", of="H"),
    Result("bounded_memory", "GB", "Memory the bounded queue holds at most", of="m_M"),
    Result("unbounded_growth", "GB/s", "Growth of an unbounded queue", of="g"),
    Result("time_to_exhaust", "s", "Time until an unbounded queue fills the host memory", of="t_oom"),
    Result("largest_bound", "", "Largest bound that fits the host memory", of="M_max"),
)


def validate(p):
    for name in ("fail_every",):
        if float(p[name]) != int(p[name]):
            raise ParameterError(f"{name} must be a whole number, got {p[name]!r}")
    if p.producer_rate <= p.workers * p.worker_rate:
        raise ParameterError(f"producer_rate must exceed workers x worker_rate ({p.workers * p.worker_rate:g}/s), "
                             f"got {p.producer_rate:g}/s: otherwise the queue never fills and no bound is needed")
    if p.n_items > 5000:
        raise ParameterError(f"n_items must be at most 5000 (the pool runs for real), got {p.n_items}")


def handler(fail_every: int):
    """Every fail_every-th item raises (the item after the multiple, so item zero is fine)."""
    def handle(item):
        if fail_every and item % fail_every == fail_every - 1:
            raise ValueError(f"bad record {item}")
    return handle


def shutdown_chain(n_items, workers, maxsize, fail_every, item_mb, producer_rate, worker_rate, host_gb,
                   big_maxsize, *, sources=None) -> Chain:
    """The pool run for real and the bound's arithmetic; the run's report and held-items count ride along in
    ch.data ("report", "held"). `sources` maps a parameter to its source (a string: every input's)."""
    def source(name: str) -> str:
        return sources if isinstance(sources, str) else (sources or {}).get(name, "parameters cell")
    rep = run_pool(range(int(n_items)), handler(int(fail_every)), workers=int(workers), maxsize=int(maxsize))
    held = held_items(int(maxsize), int(workers), int(n_items))
    ch = Chain("The pool, run for real, and the bound's arithmetic")
    # counts from running this book's pool with threads: derived by running the code, not a GPU measurement
    run = "counted in a run of utils.components.work_queue.run_pool (threads)"
    ch.given("n", n_items, "items put", kind="assumption", source=source("n_items"))
    ch.given("n_ok", len(rep.processed), "items processed", kind="derived", source=run)
    ch.given("n_fail", len(rep.failed), "items whose failure was recorded", kind="derived", source=run)
    ch.step("n_lost", "n - n_ok - n_fail", "", "items lost without a trace")
    ch.given("n_left", rep.threads_left, "threads alive after shutdown", kind="derived", source=run)
    ch.given("N_w", workers, "consumers", kind="assumption", source=source("workers"))
    ch.given("M", maxsize, "bound, items", kind="assumption", source=source("maxsize"))
    ch.given("H", held["held"], "items out when the producer blocks", kind="derived",
             source="counted in a run of utils.components.work_queue.held_items (threads)")
    ch.given("S", q(item_mb, "MB"), "bytes per item", kind="assumption", source=source("item_mb"))
    ch.step("m_M", "(M + N_w)*S", "GB", "most the bounded queue holds (queue plus one in flight each)")
    ch.given("P", q(producer_rate, "1/s"), "producer rate", kind="assumption", source=source("producer_rate"))
    ch.given("c", q(worker_rate, "1/s"), "rate of one consumer", kind="assumption", source=source("worker_rate"))
    ch.step("D", "P - N_w*c", "1/s", "surplus the consumers cannot keep up with")
    ch.step("g", "D*S", "GB/s", "growth of an unbounded queue")
    ch.given("B", q(host_gb, "GB"), "host memory the queue may use", kind="assumption",
             source=source("host_memory_gb"))
    ch.step("t_oom", "B/g", "s", "time until an unbounded queue fills it")
    ch.solve("M_max", "(M_max + N_w)*S = B", "", "largest bound that fits")
    ch.given("M_big", big_maxsize, "a round-number bound", kind="assumption", source=source("big_maxsize"))
    ch.step("m_big", "(M_big + N_w)*S", "GB", "what the round-number bound lets the queue hold")
    ch.data["report"], ch.data["held"] = rep, held
    return ch


def compute(p) -> Chain:
    return shutdown_chain(p.n_items, p.workers, p.maxsize, p.fail_every, p.item_mb, p.producer_rate,
                          p.worker_rate, p.host_memory_gb, p.big_maxsize,
                          sources={prm.name: SPEC.source(p, prm.name) for prm in PARAMETERS})


# --- the claim ------------------------------------------------------------------------------------
QUOTE = ("The queue is four lines and the shutdown is where it goes wrong. One sentinel per consumer rather "
         "than one for all of them, an exception path that cannot silently kill a worker, and a bound that "
         "must be small enough to actually apply backpressure.")
CLAIM = dict(n_items=200, workers=4, maxsize=16, fail_every=50, item_mb=64.0, producer_rate=50.0,
             worker_rate=10.0, host_gb=64.0, big_maxsize=1000, timeout=0.1)
ALL_DIE = (10, 20, 30, 40)           # one bad item for each of the four workers


@memoised                         # the runs are deterministic: the page and the claim share one
def checks() -> dict:
    """The correct pool and the two bugs, on the claim's scenario (threads, short timeouts)."""
    C = CLAIM
    n, w, m, t = C["n_items"], C["workers"], C["maxsize"], C["timeout"]
    good = run_pool(range(n), handler(C["fail_every"]), workers=w, maxsize=m)
    one = run_pool(range(n), handler(C["fail_every"]), workers=w, maxsize=m, sentinels="one", timeout=t)
    die = run_pool(range(n), handler(C["fail_every"]), workers=w, maxsize=m, on_error="die", timeout=t)

    def four_bad(item):
        if item in ALL_DIE:
            raise ValueError(f"bad record {item}")
    die_all = run_pool(range(n), four_bad, workers=w, maxsize=m, on_error="die", timeout=t)
    ch = shutdown_chain(n, w, m, C["fail_every"], C["item_mb"], C["producer_rate"], C["worker_rate"],
                        C["host_gb"], C["big_maxsize"], sources="the claim's scenario")
    return dict(good=good, one=one, die=die, die_all=die_all, chain=ch, held=ch.data["held"])


def claims() -> list[Claim]:
    ck, C = checks(), CLAIM
    good, one, die, die_all, ch = ck["good"], ck["one"], ck["die"], ck["die_all"], ck["chain"]
    m_big, B = ch["m_big"], q(C["host_gb"], "GB")
    ok = (good.lost == 0 and good.threads_left == 0 and one.workers_hung == C["workers"] - 1
          and die.lost > 0 and die.join_hung and die_all.producer_hung and ck["held"]["held"] == C["maxsize"] + C["workers"]
          and m_big > B and all(r.threads_left == 0 for r in (one, die, die_all)))
    return [Claim(
        "sentinel-exception-bound", quote=QUOTE, source="spec/001 (the queue shutdown paragraph)",
        claimed="three ways the shutdown goes wrong: one sentinel, a dying worker, a bound too large",
        derived=f"all three reproduced with threads: {one.workers_hung:,} of {C['workers']:,} consumers hang on one "
                f"sentinel; a dying worker loses {die.lost:,} items and hangs the join; a bound of "
                f"{C['big_maxsize']:,} items holds {fmt(m_big, 'GB')} against {fmt(B)}",
        verdict=HOLDS if ok else WRONG,
        nearest_true="" if ok else "not every one of the three failures happens",
        reason=f"one sentinel for {C['workers']:,} consumers leaves {one.workers_hung:,} blocked in get(); a worker "
               f"that dies on an exception loses {die.lost:,} items silently and q.join() never returns, and if "
               f"every worker dies the producer blocks for good ({die_all.lost:,} of {die_all.n_items:,} items lost); "
               f"a bound of {C['big_maxsize']:,} items lets the queue hold {fmt(m_big, 'GB')}, more than the "
               f"{fmt(B)} there is, so memory runs out before backpressure applies.")]


def check_text(ck: dict) -> dict:
    C, good, one, die, die_all, ch = CLAIM, ck["good"], ck["one"], ck["die"], ck["die_all"], ck["chain"]
    return {"check-n": f"{C['n_items']:,}", "check-w": f"{C['workers']:,}", "check-m": f"{C['maxsize']:,}",
            "check-fail-every": f"{C['fail_every']:,}", "check-good-ok": f"{len(good.processed):,}",
            "check-good-fail": f"{len(good.failed):,}", "check-one-hung": f"{one.workers_hung:,}",
            "check-die-lost": f"{die.lost:,}", "check-die-orphaned": f"{die.orphaned:,}",
            "check-dieall-ok": f"{len(die_all.processed):,}", "check-dieall-lost": f"{die_all.lost:,}",
            "check-dieall-bad": f"{len(ALL_DIE):,}", "check-held": f"{ck['held']['held']:,}",
            "check-big": f"{C['big_maxsize']:,}", "check-m-big": fmt(ch["m_big"], "GB"),
            "check-B": fmt(q(C["host_gb"], "GB")), "check-m-max": fmt(ch["M_max"], style="plain"),
            "check-timeout": fmt(q(C["timeout"], "s"))}


def case_rows(ck: dict) -> list[list[str]]:
    """The pool's runs, one row each: what each variant processed, lost and left behind."""
    rows = []
    for name, r in (("correct: one sentinel each, failures recorded", ck["good"]),
                    ("one sentinel for all consumers", ck["one"]),
                    ("a worker dies on an exception", ck["die"]),
                    ("every worker dies on an exception", ck["die_all"])):
        rows.append([name, f"{len(r.processed):,}", f"{len(r.failed):,}", f"{r.lost:,}",
                     "yes" if r.join_hung else "no", "yes" if r.producer_hung else "no",
                     f"{r.workers_hung:,}", f"{r.threads_left:,}"])
    return rows


# --- figure, what changes, exercises --------------------------------------------------------------
def memory_curves(p, seconds: float = 120.0, n: int = 121) -> dict:
    """Queue memory over time: unbounded (grows by the surplus) against bounded (flat at (M + N_w) S)."""
    import numpy as np
    t = np.linspace(0, seconds, n)
    surplus = p.producer_rate - p.workers * p.worker_rate
    unbounded = np.minimum(t * surplus, 1e12) * p.item_mb / 1e3
    cap = lambda m: (m + p.workers) * p.item_mb / 1e3      # noqa: E731  (GB)
    return dict(t=t, unbounded=unbounded, bounded=np.minimum(unbounded + p.workers * p.item_mb / 1e3, cap(p.maxsize)),
                big=np.minimum(unbounded + p.workers * p.item_mb / 1e3, cap(p.big_maxsize)), budget=p.host_memory_gb)


def what_changes(p, ch: Chain) -> dict:
    slow = p.worker_rate * 1.2
    g_slow = (p.producer_rate - p.workers * slow) * p.item_mb / 1e3
    return {"wc-item-2x": fmt(q(2 * p.item_mb, "MB")),
            "wc-max-2x": fmt((p.host_memory_gb * 1e3 / (2 * p.item_mb)) - p.workers, style="plain"),
            "wc-max": fmt(ch["M_max"], style="plain"),
            "wc-rate": fmt(q(slow, "1/s")), "wc-t-slow": fmt(q(p.host_memory_gb / g_slow, "s")),
            "wc-t": fmt(ch["t_oom"])}


def exercises(p, ch: Chain) -> dict:
    w, m, s = 8, 32, 256.0
    return {"ex1-w": f"{w:,}", "ex1-m": f"{m:,}", "ex1-s": fmt(q(s, "MB")), "ex1-mem": fmt(q((w + m) * s / 1e3, "GB")),
            "ex2-w": f"{w:,}", "ex2-hung": f"{w - 1:,}",
            "ex3-rate": fmt(q(p.producer_rate, "1/s")), "ex3-c": fmt(q(p.worker_rate, "1/s")),
            "ex3-w": f"{int(-(-p.producer_rate // p.worker_rate)):,}"}


# --- the mechanism's contract, run small and in-process ---------------------------------------------
RAISES = (ValueError, SystemExit, KeyboardInterrupt, GeneratorExit)    # what a handler may throw at a worker
BAD_ARGS = (dict(workers=0), dict(workers=1.5), dict(workers=True), dict(maxsize=-1), dict(maxsize=float("nan")),
            dict(timeout=float("nan")), dict(timeout=0), dict(timeout=float("inf")), dict(sentinels="none"),
            dict(on_error="ignore"))


@memoised   # deterministic counts: the page and the tests share them
def contract_checks() -> dict:
    """The mechanism's contract, run small and in-process: {scenarios, held, items, lost, threads}. The
    scenarios: handlers that raise anything (SystemExit and KeyboardInterrupt included) on every third item,
    a source that raises part-way, bad arguments. The full set is tests/components/test_work_queue_adversarial.py."""
    runs = []
    for exc in RAISES:
        def handle(i, exc=exc):
            if i % 3 == 0:
                raise exc(f"item {i}")
        runs.append(run_pool(range(60), handle, workers=4, maxsize=4, timeout=2.0))
    held = sum(r.lost == 0 and len(r.failed) == 20 and len(r.processed) == 40 and r.threads_left == 0
               and not r.join_hung and not r.workers_hung for r in runs)

    def source():
        yield from range(10)
        raise SystemExit("the source died")
    dead = run_pool(source(), lambda i: None, workers=2, maxsize=2, timeout=2.0)
    held += dead.producer_error.startswith("SystemExit") and dead.lost == 0 and dead.threads_left == 0
    runs.append(dead)
    for kw in BAD_ARGS:
        try:
            run_pool(range(3), lambda i: None, **kw)
        except ValueError:
            held += 1
    return dict(scenarios=len(RAISES) + 1 + len(BAD_ARGS), held=held, items=sum(r.n_items for r in runs),
                lost=sum(r.lost for r in runs), threads=sum(r.threads_left for r in runs))


def contract_text() -> dict:
    ck = contract_checks()
    return {k: f"{ck[n]:,}" for k, n in (("contract-scenarios", "scenarios"), ("contract-held", "held"),
                                         ("contract-items", "items"), ("contract-lost", "lost"),
                                         ("contract-threads", "threads"))}


SPEC = Spec("queue-shutdown", PARAMETERS, RESULTS, compute, validate=validate)
