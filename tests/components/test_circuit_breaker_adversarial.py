"""utils/components/circuit_breaker.py against hostile callers: a probe that never answers does not hold the
breaker half-open for ever, only an answer to a half-open permit counts as a probe (a late answer from an
earlier state closes nothing, even while probes are out), a permit is answered once and only by its own
breaker, and bad arguments are refused."""
import pytest

from utils.components.circuit_breaker import (
    CLOSED,
    HALF_OPEN,
    OPEN,
    CircuitBreaker,
    ConsecutiveBreaker,
    FakeClock,
)


def opened(late: int = 0, **kw):
    """A breaker opened by two failures, with `late` more calls let through while closed and not answered."""
    clock = FakeClock()
    cb = CircuitBreaker(**{**dict(failure_rate=0.5, window_s=10, min_requests=2, open_timeout_s=30,
                                  probe_limit=2, close_after=2), **kw, "clock": clock})
    first = [cb.allow() for _ in range(2 + late)]
    assert all(first)
    for permit in first[:2]:
        cb.record(permit, False)
    assert cb.state == OPEN
    return clock, cb, first[2:]


def test_probes_that_never_answer_do_not_hold_the_breaker_half_open_for_ever():
    clock, cb, _ = opened()
    clock.advance(30)
    silent = [cb.allow(), cb.allow()]
    assert all(silent) and cb.allow() is None                 # both permits taken; the callers vanish
    clock.advance(29.9)
    assert cb.state == HALF_OPEN and cb.allow() is None
    clock.advance(0.1)
    assert cb.state == OPEN                                   # the silent probes counted as a failure
    clock.advance(30)
    probe = cb.allow()
    assert probe and cb.state == HALF_OPEN                    # fresh permits, and it can close again
    for old in silent:                                        # the vanished probes answer at last:
        cb.record(old, True)                                  # not probes of this spell
    assert cb.state == HALF_OPEN and cb.stale == 2
    cb.record(probe, True)
    cb.record(cb.allow(), True)
    assert cb.state == CLOSED


def test_a_late_answer_from_before_the_breaker_opened_is_not_a_probe():
    clock, cb, late = opened(late=2)
    clock.advance(30)
    assert cb.state == HALF_OPEN
    for permit in late:                                       # let through while closed, answered now
        cb.record(permit, True)
    assert cb.state == HALF_OPEN and cb.probes == 0           # not closed by answers to no probe
    assert sum(cb.allow() is not None for _ in range(5)) == 2  # the permits are still counted


def test_late_answers_while_probes_are_out_do_not_close_it():
    """The hole a review found: two probes out, two late successes from calls let through while closed."""
    clock, cb, late = opened(late=2)
    clock.advance(30)
    probes = [cb.allow(), cb.allow()]
    assert all(probes)
    for permit in late:
        cb.record(permit, True)
    assert cb.state == HALF_OPEN and cb.probe_successes == 0 and cb.stale == 2
    cb.record(probes[0], True)
    assert cb.state == HALF_OPEN
    cb.record(probes[1], True)
    assert cb.state == CLOSED                                 # only the two probes' answers closed it


def test_a_late_failure_does_not_reopen_a_closed_breaker_or_fail_a_probe():
    clock, cb, late = opened(late=1)
    clock.advance(30)
    probe = cb.allow()
    cb.record(late[0], False)                                 # a call from before it opened fails late
    assert cb.state == HALF_OPEN
    cb.record(probe, True)
    cb.record(cb.allow(), True)
    assert cb.state == CLOSED
    assert len(cb.window) == 0                                # the closed spell starts judged afresh


def test_a_permit_is_answered_once_and_only_by_its_own_breaker():
    clock, cb, _ = opened()
    clock.advance(30)
    probe = cb.allow()
    cb.record(probe, True)
    with pytest.raises(ValueError):
        cb.record(probe, True)                                # one answer per call: the second is refused
    assert cb.probe_successes == 1
    _, other, _ = opened()
    with pytest.raises(ValueError):
        other.record(probe, True)
    for fake in (None, True, 1, "permit"):
        with pytest.raises(ValueError):
            cb.record(fake, True)
    assert cb.state == HALF_OPEN and cb.probe_successes == 1


@pytest.mark.parametrize("kw", [dict(failure_rate=float("nan")), dict(window_s=float("nan")),
                                dict(open_timeout_s=float("inf")), dict(min_requests=1.5),
                                dict(probe_limit=True), dict(failure_rate=0), dict(probe_timeout_s=-1),
                                dict(close_after=6, probe_limit=5)])
def test_bad_arguments_are_refused(kw):
    with pytest.raises(ValueError):
        CircuitBreaker(**kw)


@pytest.mark.parametrize("k", [0, 1.5, True, float("nan"), "3"])
def test_a_consecutive_count_that_is_not_a_whole_number_is_refused(k):
    with pytest.raises(ValueError):
        ConsecutiveBreaker(k)


@pytest.mark.parametrize("ok", [None, 0, 1, "yes", float("nan")])
def test_an_outcome_that_is_not_a_bool_is_refused_and_changes_nothing(ok):
    cb = CircuitBreaker(min_requests=1, failure_rate=1.0, clock=FakeClock())
    permit = cb.allow()
    assert permit
    with pytest.raises(ValueError):
        cb.record(permit, ok)
    assert cb.state == CLOSED and len(cb.window) == 0
    cb.record(permit, False)                                  # the refused answer did not use the permit up
    assert cb.state == OPEN
