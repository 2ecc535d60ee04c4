"""utils.serving.admission: never over the KV budget, strict FIFO (no starvation of a large request), bounded
queue and wait, on a fake clock (the bug: admitting by request count instead of reserved tokens)."""
import random

import pytest

from utils.serving.admission import Admission


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_admits_by_tokens_not_by_count():
    a = Admission(kv_tokens=10, max_queue=4, max_wait=1.0, clock=Clock())
    assert a.offer("a", 6) == "admitted"
    assert a.offer("b", 6) == "queued"          # two requests, but the second's cache does not fit
    assert a.release("a") == ["b"] and a.used == 6


def test_fifo_keeps_a_large_request_from_starving():
    a = Admission(kv_tokens=10, max_queue=4, max_wait=10.0, clock=Clock())
    a.offer("small0", 4)
    assert a.offer("big", 10) == "queued"
    assert a.offer("small1", 2) == "queued"     # would fit now, but the big one is ahead
    assert a.release("small0") == ["big"]
    assert a.release("big") == ["small1"]


def test_queue_bound_wait_limit_and_oversize_shed():
    clock = Clock()
    a = Admission(kv_tokens=10, max_queue=1, max_wait=2.0, clock=clock)
    a.offer("run", 10)
    assert a.offer("q", 5) == "queued"
    assert a.offer("full", 5) == "shed"         # the queue is full
    assert a.offer("huge", 11) == "shed"        # no wait would ever fit it
    clock.t = 2.5
    assert a.expire() == ["q"] and a.shed == ["full", "huge", "q"]
    with pytest.raises(KeyError):
        a.release("nobody")
    with pytest.raises(ValueError):
        a.offer("run", 1)


def test_never_over_budget_under_random_traffic():
    rng, clock = random.Random(5), Clock()
    a = Admission(kv_tokens=100, max_queue=8, max_wait=3.0, clock=clock)
    for i in range(2000):
        clock.t += rng.random()
        if a.running and rng.random() < 0.45:
            a.release(rng.choice(sorted(a.running)))
        else:
            a.offer(f"r{i}", rng.randint(1, 60))
        a.expire()
        assert a.used <= 100 and len(a.queue) <= 8
        assert all(clock.t - since <= 3.0 for _, since in a.queue.values())
