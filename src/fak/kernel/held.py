"""The quarantine ledger's held-result table: a Protocol and its in-memory implementation (T2).

Above: ``QuarantineLedger``, which screens, pages bytes out to the blob store, writes stubs and
gates page-in. Below: where the record of each held result lives — this process's memory
(``MemoryHeldTable``, here) or Redis shared by every worker (``fak.kernel.shared.RedisHeldTable``).
A table keeps records only (digest, length, reason, whether cleared; never bytes beyond an
inline fallback the ledger hands it), mints the ids, and keeps the FIFO bound by count and by
bytes, handing back what it evicted so the ledger can unpin those blobs. A shared table that
cannot be reached raises ``ConnectionError`` (the ledger fails closed on it).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Final, Protocol

from fak.abi import Reason, Ref

__all__ = [
    "DEFAULT_MAX_HELD",
    "DEFAULT_MAX_HELD_BYTES",
    "LEDGER_DOWN",
    "Evicted",
    "HeldRecord",
    "HeldSpan",
    "HeldTable",
    "MemoryHeldTable",
    "held_bounds",
]

_log = logging.getLogger(__name__)

DEFAULT_MAX_HELD: Final = 8192
DEFAULT_MAX_HELD_BYTES: Final = 256 * 1024 * 1024
"""Total bytes of held (quarantined) results kept for page-in; the oldest are evicted past it."""

LEDGER_DOWN: Final = "ledger unavailable"
"""``PageInRefused.why`` (and the ``ConnectionError`` message) when a shared table is down."""


def _bad(value: object) -> bool:
    return isinstance(value, bool) or not isinstance(value, int) or value < 1


def held_bounds(max_held: object, max_held_bytes: object) -> tuple[int, int]:
    """The table's bounds (count, bytes); a bad value falls back to its default, logged."""
    if _bad(max_held):
        _log.warning("bad max_held %r, using the default %d", max_held, DEFAULT_MAX_HELD)
        max_held = DEFAULT_MAX_HELD
    if _bad(max_held_bytes):
        _log.warning("bad max_held_bytes %r, using the default", max_held_bytes)
        max_held_bytes = DEFAULT_MAX_HELD_BYTES
    assert isinstance(max_held, int) and isinstance(max_held_bytes, int)
    return max_held, max_held_bytes


@dataclass(frozen=True, slots=True)
class HeldSpan:
    """One span held out of a partly admitted result: ``<qid>.<n>``, where it was, its digest."""

    id: str
    start: int
    end: int
    reason: Reason
    digest: str


@dataclass(slots=True)
class HeldRecord:
    """A held result: where its bytes are (``ref``; inline when the store could not take them),
    whether they are pinned, why held, how long, and its clearances."""

    ref: Ref
    pinned: bool
    reason: Reason
    length: int = 0
    cleared: bool = False
    source: str = ""  # the tool whose result this was (its screen settings apply on page-in)
    spans: tuple[HeldSpan, ...] = ()  # span quarantine: what was cut out
    cleared_spans: frozenset[str] = field(default_factory=frozenset)


@dataclass(frozen=True, slots=True)
class Evicted:
    """A record the bound pushed out: the ledger unpins its blob when ``pinned``."""

    digest: str
    pinned: bool


class HeldTable(Protocol):
    """Above: the quarantine ledger. Below: memory, or Redis shared by the fleet."""

    @property
    def shared(self) -> bool:
        """True when the table lives outside this process (it can be unreachable)."""
        ...

    @property
    def holds_spans(self) -> bool:
        """True when records may carry held spans (span quarantine); False: hold whole."""
        ...

    @property
    def max_held(self) -> int: ...

    @property
    def max_held_bytes(self) -> int: ...

    def ping(self) -> bool: ...

    def reserve(self) -> str:
        """A fresh id for the next ``add`` (so span stubs can name it before the hold)."""
        ...

    def add(self, record: HeldRecord, qid: str = "") -> tuple[str, list[Evicted]]:
        """Hold ``record`` under ``qid`` (a reserved one, or minted now); evict past the bound.
        Returns the id and what was evicted, oldest first."""
        ...

    def get(self, qid: str) -> HeldRecord | None:
        """The record held under ``qid`` (a copy for a shared table), None if not held."""
        ...

    def clear(self, qid: str) -> int:
        """Record a clearance for a held id or span id: -1 unknown, 0 already, 1 now."""
        ...

    def reseal(self, qid: str) -> bool:
        """Take a clearance back; True if the id was cleared."""
        ...

    def note_paged(self, digest: str, length: int) -> None:
        """A benign result was paged out under ``digest`` (it may be paged in by digest)."""
        ...

    def is_paged(self, digest: str) -> bool: ...

    def stats(self) -> dict[str, int]:
        """``held`` and ``held_bytes`` (-1 when unknown), plus the table's own counters."""
        ...

    def close(self) -> None:
        """Release the connection of a shared table (a no-op here)."""
        ...


class MemoryHeldTable:
    """The held table in this process's memory; thread-safe, bounded, FIFO."""

    def __init__(
        self, *, max_held: int = DEFAULT_MAX_HELD, max_held_bytes: int = DEFAULT_MAX_HELD_BYTES
    ) -> None:
        self._max_held, self._max_held_bytes = held_bounds(max_held, max_held_bytes)
        self._lock = threading.Lock()
        self._held: OrderedDict[str, HeldRecord] = OrderedDict()
        self._paged: OrderedDict[str, int] = OrderedDict()  # digest -> length, FIFO-bounded
        self._held_bytes = 0
        self._minted = 0

    @property
    def shared(self) -> bool:
        return False

    @property
    def holds_spans(self) -> bool:
        return True

    @property
    def max_held(self) -> int:
        return self._max_held

    @property
    def max_held_bytes(self) -> int:
        return self._max_held_bytes

    def ping(self) -> bool:
        return True

    def reserve(self) -> str:
        with self._lock:
            self._minted += 1
            return f"q{self._minted}"

    def add(self, record: HeldRecord, qid: str = "") -> tuple[str, list[Evicted]]:
        with self._lock:
            if not qid:
                self._minted += 1
                qid = f"q{self._minted}"
            self._held[qid] = record
            self._held_bytes += record.length
            evicted: list[Evicted] = []
            while self._held and (
                len(self._held) > self._max_held or self._held_bytes > self._max_held_bytes
            ):
                _, old = self._held.popitem(last=False)
                self._held_bytes -= old.length
                evicted.append(Evicted(old.ref.digest, old.pinned))
        return qid, evicted

    def get(self, qid: str) -> HeldRecord | None:
        with self._lock:
            return self._held.get(qid)

    def clear(self, qid: str) -> int:
        parent, dot, tail = qid.partition(".")
        span = bool(dot and parent.startswith("q") and tail.isdigit())
        with self._lock:
            held = self._held.get(parent if span else qid)
            if held is None or (span and not any(s.id == qid for s in held.spans)):
                return -1
            if span:
                if qid in held.cleared_spans:
                    return 0
                held.cleared_spans = held.cleared_spans | {qid}
                return 1
            if held.cleared:
                return 0
            held.cleared = True
            return 1

    def reseal(self, qid: str) -> bool:
        with self._lock:
            held = self._held.get(qid)
            if held is None or not held.cleared:
                return False
            held.cleared = False
            return True

    def note_paged(self, digest: str, length: int) -> None:
        with self._lock:
            self._paged[digest] = length
            self._paged.move_to_end(digest)
            while len(self._paged) > self._max_held:
                self._paged.popitem(last=False)

    def is_paged(self, digest: str) -> bool:
        with self._lock:
            return digest in self._paged

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {"held": len(self._held), "held_bytes": self._held_bytes}

    def close(self) -> None:
        return None
