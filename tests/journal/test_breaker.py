"""The journal store's circuit breaker (issue 23 D8), on an injected clock: exact transitions."""

from __future__ import annotations

import pytest

from fak.journal.breaker import Breaker, BreakerState


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_D8_closed_admits_and_one_failure_opens_until_the_back_off() -> None:
    clock = Clock()
    b = Breaker(base_s=0.25, cap_s=1.0, now=clock)
    assert b.admit() is BreakerState.CLOSED
    b.failure()
    assert (b.state, b.trips, b.retry_in) == (BreakerState.OPEN, 1, 0.25)
    clock.t += 0.2
    assert b.admit() is BreakerState.OPEN  # refused without touching the store
    clock.t += 0.05
    assert b.admit() is BreakerState.PROBING  # exactly one probe ...
    assert b.admit() is BreakerState.OPEN  # ... the others are still refused
    b.success()
    assert (b.state, b.retry_in) == (BreakerState.CLOSED, 0.0)
    assert b.admit() is BreakerState.CLOSED


def test_D8_failed_probes_double_the_back_off_up_to_the_cap() -> None:
    clock = Clock()
    b = Breaker(base_s=0.25, cap_s=1.0, now=clock)
    b.failure()
    waits = []
    for _ in range(4):
        waits.append(b.retry_in)
        clock.t += b.retry_in
        assert b.admit() is BreakerState.PROBING
        b.failure()
    assert waits == [0.25, 0.5, 1.0, 1.0]
    assert b.trips == 1
    clock.t += 1.0
    assert b.admit() is BreakerState.PROBING
    b.success()
    b.failure()  # a new outage starts from the base again
    assert (b.trips, b.retry_in) == (2, 0.25)


def test_D8_a_late_failure_does_not_push_the_probe_back_and_a_lost_probe_lapses() -> None:
    clock = Clock()
    b = Breaker(base_s=0.25, cap_s=1.0, now=clock)
    b.failure()
    clock.t += 0.1
    b.failure()  # a call admitted before the trip failing late
    assert b.retry_in == pytest.approx(0.15)
    clock.t += 0.15
    assert b.admit() is BreakerState.PROBING  # this probe never reports
    clock.t += 0.25
    assert b.admit() is BreakerState.PROBING


def test_the_back_off_must_be_positive_and_under_its_cap() -> None:
    with pytest.raises(ValueError, match="0 < base_s <= cap_s"):
        Breaker(base_s=2.0, cap_s=1.0)
