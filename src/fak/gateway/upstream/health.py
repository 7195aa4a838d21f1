"""Live health of each upstream deployment (tier T3): in flight, latency, failures, cooldown.

``HealthBoard`` is the router's one mutable table: ``begin``/``end`` bracket an attempt (the
in-flight count, a latency EWMA of successes, the requests and tokens of the last minute for
rpm/tpm), ``fail`` counts a retryable failure and puts the deployment in cooldown once it has
failed ``allowed_fails`` times in a row (for ``cooldown_s``, or the upstream's ``Retry-After``
when that is longer), and a success clears the streak. ``snapshot`` is what a strategy sees.
Time comes from an injected monotonic clock so tests are exact. One event loop owns a board;
it takes no locks and does no I/O.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from fak.gateway.upstream.strategies import Deployment, DeploymentStats

__all__ = ["HealthBoard", "parse_retry_after"]

_WINDOW_S = 60.0
_ALPHA = 0.3  # weight of the newest latency in the EWMA


def parse_retry_after(value: str | None) -> float | None:
    """``Retry-After`` in seconds (the delay form; an HTTP date or junk gives None), capped at
    an hour so a hostile upstream cannot park a deployment for ever."""
    if not value:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    if not seconds >= 0:
        return None
    return min(seconds, 3600.0)


@dataclass(slots=True)
class _Entry:
    in_flight: int = 0
    latency: float | None = None
    cooldown_until: float = 0.0
    streak: int = 0
    requests: collections.deque[float] = field(default_factory=collections.deque)
    tokens: collections.deque[tuple[float, int]] = field(default_factory=collections.deque)


class HealthBoard:
    def __init__(
        self,
        deployments: Iterable[Deployment],
        *,
        allowed_fails: int = 1,
        cooldown_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._entries = {d.id: _Entry() for d in deployments}
        self._allowed = max(1, allowed_fails)
        self._cooldown = cooldown_s
        self.clock = clock

    def _trim(self, entry: _Entry, now: float) -> None:
        edge = now - _WINDOW_S
        while entry.requests and entry.requests[0] <= edge:
            entry.requests.popleft()
        while entry.tokens and entry.tokens[0][0] <= edge:
            entry.tokens.popleft()

    def snapshot(self, deployment_id: str) -> DeploymentStats:
        e = self._entries[deployment_id]
        self._trim(e, self.clock())
        return DeploymentStats(
            in_flight=e.in_flight,
            latency_ewma_s=e.latency,
            cooldown_until=e.cooldown_until,
            consecutive_failures=e.streak,
            requests_last_minute=len(e.requests),
            tokens_last_minute=sum(t for _, t in e.tokens),
        )

    def cooling(self, deployment_id: str) -> bool:
        return self._entries[deployment_id].cooldown_until > self.clock()

    def over_limit(self, d: Deployment) -> bool:
        """At its rpm or tpm for the last minute (LiteLLM skips such a deployment too)."""
        if not d.rpm and not d.tpm:
            return False
        stats = self.snapshot(d.id)
        return bool(
            (d.rpm and stats.requests_last_minute >= d.rpm)
            or (d.tpm and stats.tokens_last_minute >= d.tpm)
        )

    def begin(self, deployment_id: str) -> float:
        e = self._entries[deployment_id]
        now = self.clock()
        e.in_flight += 1
        e.requests.append(now)
        return now

    def end(self, deployment_id: str, started: float, *, ok: bool, tokens: int = 0) -> float:
        """Close an attempt; returns its latency. A success feeds the EWMA and ends the streak."""
        e = self._entries[deployment_id]
        now = self.clock()
        e.in_flight = max(0, e.in_flight - 1)
        latency = max(0.0, now - started)
        if tokens:
            e.tokens.append((now, tokens))
        if ok:
            e.streak = 0
            e.latency = (
                latency if e.latency is None else _ALPHA * latency + (1 - _ALPHA) * e.latency
            )
        return latency

    def fail(self, deployment_id: str, retry_after_s: float | None = None) -> bool:
        """Count a retryable failure; True when the deployment is now cooling down."""
        e = self._entries[deployment_id]
        e.streak += 1
        if e.streak < self._allowed and retry_after_s is None:
            return False
        span = max(self._cooldown, retry_after_s or 0.0)
        e.cooldown_until = max(e.cooldown_until, self.clock() + span)
        return True

    def cooldown_until(self, deployment_id: str) -> float:
        return self._entries[deployment_id].cooldown_until
