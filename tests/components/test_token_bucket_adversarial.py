"""utils/components/token_bucket.py against hostile callers and clocks: threads never get more than the burst
plus the refill, hostile request sizes are refused, and a clock that reads NaN is refused without
breaking the bucket."""
import math
import threading

import pytest

from utils.components.token_bucket import FakeClock, TokenBucket


def test_threads_never_get_more_than_the_burst_plus_the_refill():
    clock = FakeClock()
    b = TokenBucket(capacity=50, rate=100.0, clock=clock)
    admitted, lock, go = [0], threading.Lock(), threading.Barrier(8)

    def hammer():
        go.wait()
        for _ in range(500):
            if b.try_acquire().admitted:
                with lock:
                    admitted[0] += 1

    def tick():
        go.wait()
        for _ in range(100):
            clock.advance(0.01)                                 # 1 s of refill in all
    threads = [threading.Thread(target=hammer) for _ in range(7)] + [threading.Thread(target=tick)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert admitted[0] <= 50 + 100.0 * clock.t + 1e-9 and admitted[0] >= 50


@pytest.mark.parametrize("n", [None, float("nan"), float("inf"), -1, 0, True, "1", 51])
def test_hostile_sizes_are_refused_and_take_nothing(n):
    b = TokenBucket(capacity=50, rate=1.0, clock=FakeClock())
    with pytest.raises(ValueError):
        b.try_acquire(n)
    assert b.tokens() == 50


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), None])
def test_a_clock_that_reads_garbage_is_refused_and_the_bucket_still_refills(bad):
    clock = FakeClock()
    b = TokenBucket(capacity=10, rate=1.0, clock=clock)
    for _ in range(10):
        b.try_acquire()
    clock.t = bad
    with pytest.raises(ValueError):
        b.try_acquire()
    clock.t = 5.0
    assert math.isclose(b.tokens(), 5.0)                       # not stuck: the garbage reading was not kept
