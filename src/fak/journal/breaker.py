"""A circuit breaker for a journal store that can be unreachable (tier T1, stdlib only).

Closed, every caller goes to the store. The first failure that says the store is down opens it:
from then on callers are refused at once (no connect, no pool wait) until a back-off has passed;
then exactly one caller is let through as the probe while the others are still refused. The
probe's success closes the breaker; its failure reopens it with the back-off doubled (up to a
cap). It never decides anything about a decision itself: the journal raises, the kernel refuses.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from enum import StrEnum

__all__ = ["Breaker", "BreakerState"]


class BreakerState(StrEnum):
    CLOSED = "closed"  # the store answers: calls go through
    OPEN = "open"  # the store is down: calls are refused until the back-off has passed
    PROBING = "probing"  # one caller is trying the store; the others are still refused


class Breaker:
    """``admit()`` before a call; ``success()`` / ``failure()`` after it (a probe that reports
    neither lapses after one back-off and the next caller probes).

    ``base_s`` is the first back-off, doubled after each failed probe up to ``cap_s``; ``now``
    is a monotonic clock (injected by tests).
    """

    __slots__ = ("_backoff", "_base", "_cap", "_lock", "_now", "_retry_at", "_state", "trips")

    def __init__(
        self,
        *,
        base_s: float = 0.25,
        cap_s: float = 4.0,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        if not 0 < base_s <= cap_s:
            msg = f"the breaker's back-off must satisfy 0 < base_s <= cap_s ({base_s}, {cap_s})"
            raise ValueError(msg)
        self._base, self._cap, self._now = base_s, cap_s, now
        self._lock = threading.Lock()
        self._state = BreakerState.CLOSED
        self._backoff = base_s
        self._retry_at = 0.0
        self.trips = 0  # how many times the breaker opened from closed

    @property
    def state(self) -> BreakerState:
        return self._state

    @property
    def retry_in(self) -> float:
        """Seconds until a probe may be made (0 when closed or already due)."""
        if self._state is BreakerState.CLOSED:
            return 0.0
        return max(0.0, self._retry_at - self._now())

    def admit(self) -> BreakerState:
        """How this caller goes: ``CLOSED`` go ahead; ``PROBING`` go ahead as the one probe;
        ``OPEN`` refused now, without touching the store."""
        with self._lock:
            if self._state is BreakerState.CLOSED:
                return BreakerState.CLOSED
            now = self._now()
            if now >= self._retry_at:  # due (or a probe that never reported has lapsed)
                self._state = BreakerState.PROBING
                self._retry_at = now + self._backoff
                return BreakerState.PROBING
            return BreakerState.OPEN

    def success(self) -> None:
        if self._state is BreakerState.CLOSED:  # the common case: no lock per append
            return
        with self._lock:
            self._state = BreakerState.CLOSED
            self._backoff = self._base

    def failure(self) -> None:
        """The store is down: open (or reopen after a failed probe, the back-off doubled)."""
        with self._lock:
            match self._state:
                case BreakerState.CLOSED:
                    self.trips += 1
                    self._backoff = self._base
                case BreakerState.PROBING:
                    self._backoff = min(self._cap, self._backoff * 2)
                case BreakerState.OPEN:
                    return  # a call admitted before the trip failed late: already open
            self._state = BreakerState.OPEN
            self._retry_at = self._now() + self._backoff
