"""A producer-consumer pool over queue.Queue(maxsize): the queue is four lines, the shutdown is where it
goes wrong.

- One sentinel per consumer. A sentinel is a unique object (None could be a real item); each consumer
  that takes one exits, so N consumers need N of them. One sentinel for all leaves N - 1 blocked in
  get() forever.
- The exception path. A worker records an item's failure and keeps consuming, and calls task_done()
  for every get(), in a finally. A worker that lets the exception end its thread loses that item
  silently, never marks it done (so q.join() never returns), and consumes no more: if every worker
  dies, a producer blocked on a full queue never wakes either.
- Backpressure. put() blocks while the queue holds maxsize items, so the pool holds at most maxsize
  items in the queue plus one in flight per worker: memory is bounded by (maxsize + workers) x item
  size, and only if that bound is below the memory there is.

run_pool runs the pool to the end and reports what happened; the buggy variants (`sentinels="one"`,
`on_error="die"`) are here so the chapter and the tests can show the two bugs for real. Every wait has
a timeout: a hang is detected with join(timeout), then released (the missing sentinels sent, the
queue drained, the orphaned tasks marked done), so no thread is ever left behind.

The contract for every input (tests/components/test_work_queue_adversarial.py feeds each): every item that
entered the queue is processed or recorded as failed, whatever the handler raises (SystemExit and
KeyboardInterrupt included: a worker thread is no place for them to end the pool); no thread is left
alive; workers and maxsize are whole numbers (workers >= 1, maxsize >= 0) and timeout a finite number > 0,
else ValueError.

Chapters: queue-shutdown.
"""
from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass, field

SENTINEL = object()
SENTINELS = ("each", "one")
ON_ERROR = ("record", "die")


@dataclass
class Report:
    n_items: int                                    # items that entered the queue
    processed: list = field(default_factory=list)   # items handled, in completion order
    failed: list = field(default_factory=list)      # (item, error) recorded by a worker that kept going
    died: list = field(default_factory=list)        # errors that ended a (buggy) worker's thread
    put: int = 0                                    # items the producer got into the queue
    producer_error: str = ""                        # the source raised: the shutdown must still happen
    drained: int = 0                                # items the cleanup took out unprocessed
    producer_hung: bool = False                     # the producer was still blocked in put() at the timeout
    join_hung: bool = False                         # q.join() had not returned at the timeout
    orphaned: int = 0                               # tasks nobody would ever mark done
    workers_hung: int = 0                           # consumers still blocked in get() after the sentinels
    threads_left: int = 0                           # threads alive after the cleanup: must be 0

    def __post_init__(self):
        self._lock = threading.Lock()

    @property
    def lost(self) -> int:
        """Items neither processed nor recorded as failed: lost without a trace."""
        return self.n_items - len(self.processed) - len(self.failed)

    def ok(self, item) -> None:
        with self._lock:
            self.processed.append(item)

    def fail(self, item, e: BaseException) -> None:
        with self._lock:
            self.failed.append((item, f"{type(e).__name__}: {e}"))


def worker(q: queue.Queue, handle, rep: Report) -> None:
    """The consumer: one get(), one task_done(), whatever the item does."""
    while True:
        item = q.get()
        try:
            if item is SENTINEL:
                return
            try:
                handle(item)
            except BaseException as e:      # record it and keep consuming: the loop outlives any item
                rep.fail(item, e)
            else:
                rep.ok(item)
        finally:
            q.task_done()                   # every get() is matched, or q.join() never returns


def dying_worker(q: queue.Queue, handle, rep: Report) -> None:
    """The bug: an exception ends the thread. `died` stands for the traceback the thread would print to
    a stderr nobody reads; the item is neither processed nor recorded, and never marked done."""
    while True:
        item = q.get()
        if item is SENTINEL:
            q.task_done()
            return
        try:
            handle(item)
        except Exception as e:
            rep.died.append(f"{type(e).__name__}: {e}")
            return
        rep.ok(item)
        q.task_done()


def produce(q: queue.Queue, items, rep: Report) -> None:
    try:
        for item in items:
            q.put(item)                     # blocks while the queue is full: backpressure
            rep.put += 1
    except BaseException as e:              # the source failed: record it; run_pool still shuts down
        rep.producer_error = f"{type(e).__name__}: {e}"


def _put_sentinels(q: queue.Queue, n: int, timeout: float) -> None:
    for _ in range(n):
        try:
            q.put(SENTINEL, timeout=timeout)
        except queue.Full:                  # nobody left to consume them (only after a bug)
            return


def run_pool(items, handle, *, workers: int = 4, maxsize: int = 8, sentinels: str = "each",
             on_error: str = "record", timeout: float = 1.0) -> Report:
    """Feed `items` through `workers` consumers of a Queue(maxsize), then shut down; return the Report.
    `timeout` bounds each wait (it costs nothing when nothing hangs)."""
    if sentinels not in SENTINELS or on_error not in ON_ERROR:
        raise ValueError(f"sentinels must be one of {SENTINELS} and on_error one of {ON_ERROR}")
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (workers, maxsize)) \
            or workers < 1 or maxsize < 0:
        raise ValueError(f"need whole numbers workers >= 1 and maxsize >= 0, got {workers!r} and {maxsize!r}")
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout < float("inf"):
        raise ValueError(f"timeout must be a finite number > 0, got {timeout!r}")
    rep = Report(n_items=0)
    q: queue.Queue = queue.Queue(maxsize)
    target = worker if on_error == "record" else dying_worker
    threads = [threading.Thread(target=target, args=(q, handle, rep), daemon=True) for _ in range(workers)]
    producer = threading.Thread(target=produce, args=(q, items, rep), daemon=True)
    for t in (*threads, producer):
        t.start()

    producer.join(timeout)
    if producer.is_alive():                 # blocked on a full queue that nobody consumes: release it
        rep.producer_hung = True
        while producer.is_alive() or (not any(t.is_alive() for t in threads) and not q.empty()):
            try:
                q.get(timeout=0.01)
                q.task_done()
                rep.drained += 1
            except queue.Empty:
                pass
    joiner = threading.Thread(target=q.join, daemon=True)   # every item handled?
    joiner.start()
    joiner.join(timeout)
    if joiner.is_alive():                   # tasks a dead worker took and will never mark done
        rep.join_hung = True
        rep.orphaned = len(rep.died)        # each dead worker left exactly one; live ones finish theirs
        for _ in range(rep.orphaned):
            q.task_done()
        joiner.join(timeout)

    _put_sentinels(q, workers if sentinels == "each" else 1, timeout)   # the shutdown: one per consumer
    deadline = time.monotonic() + timeout
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    rep.workers_hung = sum(t.is_alive() for t in threads)
    if rep.workers_hung:                    # release them: the sentinels they were waiting for
        _put_sentinels(q, rep.workers_hung, timeout)
        for t in threads:
            t.join(timeout)
    rep.threads_left = sum(t.is_alive() for t in (*threads, producer, joiner))
    rep.n_items = rep.put                   # what entered the queue (a failing source stops early)
    return rep


def held_items(maxsize: int, workers: int, n_items: int, *, settle: float = 0.05, timeout: float = 1.0) -> dict:
    """Backpressure for real: workers stopped inside their first item, how many items the producer gets
    out before put() blocks. A bound holds maxsize in the queue plus one in flight per worker; with no
    bound (maxsize 0) the producer never blocks and everything is held."""
    q: queue.Queue = queue.Queue(maxsize)
    rep, gate = Report(n_items=n_items), threading.Event()
    threads = [threading.Thread(target=worker, args=(q, lambda _: gate.wait(timeout), rep), daemon=True)
               for _ in range(workers)]
    producer = threading.Thread(target=produce, args=(q, range(n_items), rep), daemon=True)
    for t in (*threads, producer):
        t.start()
    expect = min(n_items, maxsize + workers) if maxsize > 0 else n_items
    deadline = time.monotonic() + timeout
    while rep.put < expect and time.monotonic() < deadline:
        time.sleep(0.001)
    time.sleep(settle)                      # had it been able to put more, it would have by now
    held, in_queue = rep.put, q.qsize()
    blocked = producer.is_alive()
    gate.set()                              # let the workers go, then shut down as run_pool does
    producer.join(timeout)
    q.join()
    _put_sentinels(q, workers, timeout)
    for t in threads:
        t.join(timeout)
    return dict(held=held, in_queue=in_queue, in_flight=held - in_queue, producer_blocked=blocked,
                processed=len(rep.processed), threads_left=sum(t.is_alive() for t in (*threads, producer)))
