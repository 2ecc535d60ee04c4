"""utils/components/circuit_breaker.py against hostile callers: a probe that never answers does not hold the
breaker half-open for ever, a late answer is not a probe, and bad arguments are refused."""
import pytest

from utils.components.circuit_breaker import CLOSED, HALF_OPEN, OPEN, CircuitBreaker, FakeClock


def opened(**kw):
    clock = FakeClock()
    cb = CircuitBreaker(**{**dict(failure_rate=0.5, window_s=10, min_requests=2, open_timeout_s=30,
                                  probe_limit=2, close_after=2), **kw, "clock": clock})
    for _ in range(2):
        assert cb.allow()
        cb.record(False)
    assert cb.state == OPEN
    return clock, cb


def test_probes_that_never_answer_do_not_hold_the_breaker_half_open_for_ever():
    clock, cb = opened()
    clock.advance(30)
    assert cb.allow() and cb.allow() and not cb.allow()       # both permits taken; the callers vanish
    clock.advance(29.9)
    assert cb.state == HALF_OPEN and not cb.allow()
    clock.advance(0.1)
    assert cb.state == OPEN                                   # the silent probes counted as a failure
    clock.advance(30)
    assert cb.allow() and cb.state == HALF_OPEN               # fresh permits, and it can close again
    cb.record(True)
    assert cb.allow()
    cb.record(True)
    assert cb.state == CLOSED


def test_a_late_answer_from_before_the_breaker_opened_is_not_a_probe():
    clock, cb = opened()
    clock.advance(30)
    assert cb.state == HALF_OPEN
    cb.record(True)                                           # let through while closed, answered now
    cb.record(True)
    assert cb.state == HALF_OPEN and cb.probes == 0           # not closed by answers to no probe
    assert sum(cb.allow() for _ in range(5)) == 2             # the permits are still counted


@pytest.mark.parametrize("kw", [dict(failure_rate=float("nan")), dict(window_s=float("nan")),
                                dict(open_timeout_s=float("inf")), dict(min_requests=1.5),
                                dict(probe_limit=True), dict(failure_rate=0), dict(probe_timeout_s=-1),
                                dict(close_after=6, probe_limit=5)])
def test_bad_arguments_are_refused(kw):
    with pytest.raises(ValueError):
        CircuitBreaker(**kw)


@pytest.mark.parametrize("ok", [None, 0, 1, "yes", float("nan")])
def test_an_outcome_that_is_not_a_bool_is_refused_and_changes_nothing(ok):
    cb = CircuitBreaker(min_requests=1, failure_rate=1.0, clock=FakeClock())
    assert cb.allow()
    with pytest.raises(ValueError):
        cb.record(ok)
    assert cb.state == CLOSED and len(cb.window) == 0
