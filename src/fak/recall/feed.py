"""The coherence feed: what changed in the world a cached answer or a page depends on (tier T2).

One ordered, bounded, in-memory log of events with a cursor: world-version bumps (a write-shaped
call ran), witness revocations, tombstones, policy reloads and trace resets. A reader polls with
``since(cursor)`` and gets every newer event and the next cursor; a cursor older than the
retained window is answered with ``truncated=True`` so the reader knows to resynchronise.
Events carry names, counters and digests, never payload bytes.
"""

from __future__ import annotations

import enum
import threading
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["DEFAULT_RETAIN", "ChangeFeed", "ChangeKind", "FeedPage"]

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


class ChangeFeed:
    """A thread-safe change log; ``world`` and ``epoch`` report the counters stamped on events."""

    def __init__(
        self,
        *,
        retain: int = DEFAULT_RETAIN,
        world: Callable[[], int] | None = None,
        epoch: Callable[[], int] | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self._events: deque[dict[str, Any]] = deque(maxlen=max(1, retain))
        self._seq = 0
        self._lock = threading.Lock()
        self._world = world
        self._epoch = epoch
        self._clock = clock

    @property
    def cursor(self) -> int:
        with self._lock:
            return self._seq

    def publish(self, kind: ChangeKind, fields: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Append one event; returns it (with its ``seq``)."""
        event: dict[str, Any] = {"kind": str(kind)}
        event.update(fields or {})
        if self._world is not None and "world_ver" not in event:
            event["world_ver"] = int(self._world())
        if self._epoch is not None and "trust_epoch" not in event:
            event["trust_epoch"] = int(self._epoch())
        if self._clock is not None:
            event["ts"] = float(self._clock())
        with self._lock:
            self._seq += 1
            event = {"seq": self._seq, **event}
            self._events.append(event)
        return event

    def since(self, cursor: int, limit: int = 256) -> FeedPage:
        """Events with ``seq > cursor`` (at most ``limit``) and the cursor to poll from next."""
        with self._lock:
            head = self._seq
            if cursor > head:  # a cursor from before a restart: start over from the head
                return FeedPage([], head, True)
            oldest = self._events[0]["seq"] if self._events else head + 1
            truncated = cursor + 1 < oldest and cursor < head
            events = [dict(e) for e in self._events if e["seq"] > cursor][: max(0, limit)]
        nxt = events[-1]["seq"] if events else max(cursor, 0)
        return FeedPage(events, nxt, truncated)
