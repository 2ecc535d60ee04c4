"""utils/components/work_queue.py against hostile handlers and arguments: whatever a handler raises (SystemExit
and KeyboardInterrupt included) every item is processed or recorded and no thread is left; bad arguments
are refused."""
import pytest

from utils.components.work_queue import run_pool


@pytest.mark.parametrize("exc", [ValueError, SystemExit, KeyboardInterrupt, GeneratorExit])
def test_whatever_a_handler_raises_no_item_is_lost_and_no_thread_is_left(exc):
    def handle(i):
        if i % 3 == 0:
            raise exc(f"item {i}")
    rep = run_pool(range(60), handle, workers=4, maxsize=4, timeout=2.0)
    assert rep.lost == 0 and len(rep.failed) == 20 and len(rep.processed) == 40
    assert rep.threads_left == 0 and not rep.join_hung and not rep.workers_hung


def test_a_source_that_raises_anything_still_shuts_down():
    def source():
        yield from range(10)
        raise SystemExit("the source died")
    rep = run_pool(source(), lambda i: None, workers=2, maxsize=2, timeout=2.0)
    assert rep.producer_error.startswith("SystemExit") and rep.lost == 0 and rep.threads_left == 0


@pytest.mark.parametrize("kw", [dict(workers=0), dict(workers=1.5), dict(workers=True), dict(maxsize=-1),
                                dict(maxsize=float("nan")), dict(timeout=float("nan")), dict(timeout=0),
                                dict(timeout=float("inf")), dict(sentinels="none"), dict(on_error="ignore")])
def test_bad_arguments_are_refused(kw):
    with pytest.raises(ValueError):
        run_pool(range(3), lambda i: None, **kw)
