"""The coherence feed: what changed in the world a cached answer or a page depends on (tier T2).

One ordered, bounded log of events with a cursor: world-version bumps (a write-shaped call ran),
witness revocations, tombstones, policy reloads and trace resets. A reader polls with
``since(cursor)`` and gets every newer event and the next cursor; a cursor older than the
retained window is answered with ``truncated=True`` so the reader knows to resynchronise.
Events carry names, counters and digests, never payload bytes.

Where the events are kept is a ``ChangeLog``: ``MemoryChangeLog`` here (one process), or
``fak.kernel.shared.RedisChangeLog`` when the workers share a Redis, so every worker answers
the same cursor and rows and a revocation made via one shows via all. A publish that cannot
reach a shared log is logged and counted (``lost``), never raised into the change it reports;
a read that cannot reach it raises ``ConnectionError`` (the route answers 503).
"""

from __future__ import annotations

import enum
import logging
import threading
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

__all__ = [
    "DEFAULT_RETAIN",
    "ChangeFeed",
    "ChangeKind",
    "ChangeLog",
    "FeedPage",
    "MemoryChangeLog",
]

_log = logging.getLogger(__name__)

DEFAULT_RETAIN: Final = 4096


class ChangeKind(enum.StrEnum):
    MUTATION = "mutation"
    REVOCATION = "revocation"
    TOMBSTONE = "tombstone"
    POLICY_RELOAD = "policy_reload"
    TRACE_RESET = "trace_reset"


@dataclass(frozen=True, slots=True)
class FeedPage:
    events: list[dict[str, Any]]
    cursor: int
    truncated: bool = False


class ChangeLog(Protocol):
    """Where the feed's events live: below it a deque or a Redis sorted set, above it the feed.

    ``append`` numbers an event (1, 2, 3, … with no gap, one counter for every writer) and keeps
    at most its retain bound of the newest; ``read`` answers atomically ``(head, oldest, events)``:
    the newest number given, the oldest number still kept (``head + 1`` when none is), and at
    most ``limit`` kept events numbered above ``cursor``, oldest first, each with its ``seq``.
    A shared log that cannot be reached raises ``ConnectionError``.
    """

    @property
    def shared(self) -> bool: ...

    def append(self, event: Mapping[str, Any]) -> int: ...

    def read(self, cursor: int, limit: int) -> tuple[int, int, list[dict[str, Any]]]: ...


class MemoryChangeLog:
    """A ``ChangeLog`` in this process (a bounded deque): the default, and the test double."""

    def __init__(self, retain: int = DEFAULT_RETAIN) -> None:
        self._events: deque[dict[str, Any]] = deque(maxlen=max(1, retain))
        self._seq = 0
        self._lock = threading.Lock()

    @property
    def shared(self) -> bool:
        return False

    def append(self, event: Mapping[str, Any]) -> int:
        with self._lock:
            self._seq += 1
            self._events.append({"seq": self._seq, **event})
            return self._seq

    def read(self, cursor: int, limit: int) -> tuple[int, int, list[dict[str, Any]]]:
        with self._lock:
            head = self._seq
            oldest = self._events[0]["seq"] if self._events else head + 1
            events = [dict(e) for e in self._events if e["seq"] > cursor][: max(0, limit)]
        return head, oldest, events


class ChangeFeed:
    """The change feed over a ``ChangeLog``; ``world`` and ``epoch`` report the counters stamped
    on events."""

    def __init__(
        self,
        *,
        retain: int = DEFAULT_RETAIN,
        world: Callable[[], int] | None = None,
        epoch: Callable[[], int] | None = None,
        clock: Callable[[], float] | None = None,
        log: ChangeLog | None = None,
    ) -> None:
        self._log: ChangeLog = log if log is not None else MemoryChangeLog(retain)
        self._world = world
        self._epoch = epoch
        self._clock = clock
        self._lost = 0
        self._lost_lock = threading.Lock()

    @property
    def shared(self) -> bool:
        return self._log.shared

    @property
    def lost(self) -> int:
        """Events that could not be appended to an unreachable shared log."""
        return self._lost

    @property
    def cursor(self) -> int:
        return self._log.read(0, 0)[0]

    def publish(self, kind: ChangeKind, fields: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Append one event; returns it with its ``seq`` (0 when the shared log was down)."""
        event: dict[str, Any] = {"kind": str(kind)}
        event.update(fields or {})
        if self._world is not None and "world_ver" not in event:
            event["world_ver"] = int(self._world())
        if self._epoch is not None and "trust_epoch" not in event:
            event["trust_epoch"] = int(self._epoch())
        if self._clock is not None:
            event["ts"] = float(self._clock())
        try:
            seq = self._log.append(event)
        except ConnectionError as exc:
            with self._lost_lock:
                self._lost += 1
            _log.error("change feed unavailable (%s): %s event lost", type(exc).__name__, kind)
            seq = 0
        return {"seq": seq, **event}

    def since(self, cursor: int, limit: int = 256) -> FeedPage:
        """Events with ``seq > cursor`` (at most ``limit``) and the cursor to poll from next."""
        head, oldest, events = self._log.read(max(cursor, 0), max(0, limit))
        if cursor > head:  # a cursor from before a restart: start over from the head
            return FeedPage([], head, True)
        truncated = cursor + 1 < oldest and cursor < head
        nxt = events[-1]["seq"] if events else max(cursor, 0)
        return FeedPage(events, nxt, truncated)
