"""utils/components/work_queue.py with real threads: every item exactly once, no thread alive after shutdown, and the
two bugs (one sentinel for all consumers, an exception that kills a worker) reproduced and released.
Every wait has a short timeout; a test that hangs fails instead."""
import threading
from collections import Counter

import pytest

from utils.components.work_queue import SENTINEL, held_items, run_pool

T = 0.1      # the timeout a bug costs; a correct pool never waits for it


def no_thread_of_ours_left(before: int) -> bool:
    return threading.active_count() <= before


@pytest.mark.parametrize("workers, maxsize", [(1, 1), (4, 2), (4, 16), (8, 0), (3, 500)])
def test_every_item_processed_exactly_once_and_no_thread_left(workers, maxsize):
    before = threading.active_count()
    rep = run_pool(range(300), lambda x: None, workers=workers, maxsize=maxsize)
    assert Counter(rep.processed) == Counter(range(300))            # each once: none lost, none twice
    assert rep.lost == 0 and rep.threads_left == 0 and not (rep.join_hung or rep.producer_hung or rep.workers_hung)
    assert no_thread_of_ours_left(before)


def test_failures_are_recorded_and_the_worker_keeps_consuming():
    def handle(x):
        if x % 10 == 3:
            raise ValueError(f"bad {x}")
    rep = run_pool(range(100), handle, workers=2, maxsize=4)
    assert sorted(i for i, _ in rep.failed) == list(range(3, 100, 10))
    assert sorted(rep.processed) == [x for x in range(100) if x % 10 != 3]
    assert rep.lost == 0 and rep.threads_left == 0 and rep.failed[0][1].startswith("ValueError: bad")


def test_none_is_an_item_not_a_sentinel():
    seen = []
    rep = run_pool([None, 0, None], seen.append, workers=2, maxsize=1)
    assert sorted(seen, key=repr) == [0, None, None] and rep.lost == 0 and SENTINEL not in seen


def test_one_sentinel_for_n_consumers_leaves_n_minus_one_hanging():
    before = threading.active_count()
    rep = run_pool(range(50), lambda x: None, workers=5, maxsize=8, sentinels="one", timeout=T)
    assert rep.workers_hung == 4                  # detected by join(timeout) ...
    assert rep.threads_left == 0 and rep.lost == 0 and no_thread_of_ours_left(before)   # ... then released


def test_a_worker_killed_by_an_exception_loses_its_item_and_hangs_the_join():
    def handle(x):
        if x == 7:
            raise ValueError("bad record")
    rep = run_pool(range(100), handle, workers=4, maxsize=8, on_error="die", timeout=T)
    assert rep.lost == 1 and not rep.failed and rep.died == ["ValueError: bad record"]    # silently gone
    assert rep.join_hung and rep.orphaned == 1 and 7 not in rep.processed
    assert rep.threads_left == 0
    good = run_pool(range(100), handle, workers=4, maxsize=8, timeout=T)                 # the fix
    assert good.lost == 0 and not good.join_hung and [i for i, _ in good.failed] == [7]


def test_when_every_worker_dies_the_producer_blocks_on_the_full_queue():
    def handle(x):
        if x in (10, 20, 30, 40):
            raise ValueError("bad")
    before = threading.active_count()
    rep = run_pool(range(200), handle, workers=4, maxsize=8, on_error="die", timeout=T)
    # items are taken in order and a dead worker takes no more: exactly 0..40 are taken
    assert rep.producer_hung and len(rep.processed) == 37 and rep.lost == 163 and rep.drained == 159
    assert rep.threads_left == 0 and no_thread_of_ours_left(before)


def test_a_failing_source_still_shuts_the_pool_down():
    def source():
        yield from range(30)
        raise OSError("source failed")
    rep = run_pool(source(), lambda x: None, workers=3, maxsize=4, timeout=T)
    assert rep.producer_error == "OSError: source failed" and rep.put == 30
    assert sorted(rep.processed) == list(range(30)) and rep.threads_left == 0


@pytest.mark.parametrize("maxsize, workers", [(1, 1), (4, 2), (16, 4)])
def test_the_bound_blocks_the_producer_at_maxsize_plus_workers(maxsize, workers):
    h = held_items(maxsize, workers, 200)
    assert h["held"] == maxsize + workers and h["producer_blocked"]
    assert h["processed"] == 200 and h["threads_left"] == 0


def test_without_a_bound_the_producer_never_blocks():
    h = held_items(0, 2, 300)
    assert h["held"] == 300 and not h["producer_blocked"] and h["threads_left"] == 0


@pytest.mark.parametrize("kw", [dict(sentinels="all"), dict(on_error="ignore"), dict(workers=0), dict(maxsize=-1)])
def test_bad_arguments_raise(kw):
    with pytest.raises(ValueError):
        run_pool(range(3), lambda x: None, **kw)
