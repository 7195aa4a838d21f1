"""The seams between tiers, as Protocols (tier T0, stdlib only).

Each Protocol is documented by what sits above and below it. The in-memory doubles live next to
the real implementations in their own packages (``fak.cas.MemoryStore``, ...). An ability a seam
offers is a member that always exists: a backend with nothing to do makes it a no-op (a local
store's ``ping`` answers True, a journal without group commit returns a null context), so a
caller never probes for it and a rename fails the type check instead of switching a feature off.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from fak.abi.turn import PlannerTurn, TurnRequest
from fak.abi.types import Ref

__all__ = [
    "AuditJournal",
    "BlobStore",
    "Clock",
    "JournalSink",
    "Planner",
    "PlannerEvent",
    "PlannerInputError",
    "Reachable",
    "TextDelta",
    "TurnDone",
]


@runtime_checkable
class Clock(Protocol):
    """Above: the kernel, journal and gateway. Below: time.time/monotonic, or a fake in tests."""

    def now(self) -> float:
        """Wall-clock seconds since the epoch."""
        ...

    def monotonic(self) -> float:
        """Monotonic seconds, for durations."""
        ...


@runtime_checkable
class Reachable(Protocol):
    """Above: ``/healthz`` and the store-up gauge. Below: a store or journal, local or shared."""

    @property
    def shared(self) -> bool:
        """True when it lives outside this process (shared by workers), so it can be down."""
        ...

    def ping(self) -> bool:
        """True when it answers now; a local one always does."""
        ...


@runtime_checkable
class BlobStore(Reachable, Protocol):
    """Above: the quarantine ledger, vDSO, recall. Below: memory, a directory on disk, Redis.

    ``put`` is idempotent by content; ``get`` re-verifies the digest and raises ``KeyError`` for an
    unknown or evicted digest. Pinned digests are never evicted.
    """

    def put(self, data: bytes) -> Ref: ...

    def put_hashed(self, data: bytes, digest: str) -> Ref:
        """``put`` for bytes whose sha256 the caller has just computed from ``data`` itself (a
        store that cannot use it hashes again)."""
        ...

    def put_pinned(self, data: bytes) -> Ref:
        """``put`` and ``pin`` in one step, so the blob cannot be evicted in between (an inline
        Ref comes back unpinned: nothing was stored)."""
        ...

    def get(self, ref: Ref | str) -> bytes: ...

    def pin(self, digest: str) -> None: ...

    def unpin(self, digest: str) -> None: ...

    def release(self, digest: str) -> None:
        """``unpin`` for a holder done with the bytes (an evicted quarantine hold): when no pin
        is left, a store that keeps blobs in memory it bounds (memory, Redis) drops them now
        instead of leaving them to its LRU; a directory store only unpins."""
        ...

    def __contains__(self, digest: object) -> bool: ...


@runtime_checkable
class JournalSink(Protocol):
    """Above: the kernel's decision path. Below: the hash-chained file journal, or a list in tests.

    ``append`` must not return before the record is durable. Records carry digests, never bytes.
    """

    def append(self, record: Mapping[str, Any]) -> None: ...


@runtime_checkable
class AuditJournal(JournalSink, Reachable, Protocol):
    """Above: the kernel (group commit for a batch of decisions) and the events feed (the rows
    after a cursor). Below: the file journal, the in-memory double, PostgreSQL."""

    def group(self) -> AbstractContextManager[None]:
        """Appends made by this thread inside the block are durable when it ends (one commit
        for all of them where the backend can; a null context where each append already is)."""
        ...

    def rows_after(self, since: int, limit: int) -> list[dict[str, Any]] | None:
        """Up to ``limit`` rows with ``seq > since``; None when this object cannot answer (the
        caller reads the journal's file instead)."""
        ...


class PlannerInputError(ValueError):
    """The planner cannot serve this request as stated, and the client can fix it.

    ``code`` is a stable error code (e.g. ``context_length_exceeded``); the message says what to
    change. The gateway answers it with HTTP ``status`` (400 unless the planner says otherwise:
    429 with ``retry_after`` seconds when it is full for now), never as an internal error.
    """

    def __init__(
        self, code: str, message: str, *, status: int = 400, retry_after: int | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status
        self.retry_after = retry_after


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of assistant text, streamed as it is produced."""

    text: str


@dataclass(frozen=True, slots=True)
class TurnDone:
    """End of a streamed turn: the whole turn (text and tool calls), for adjudication."""

    turn: PlannerTurn


PlannerEvent = TextDelta | TurnDone


@runtime_checkable
class Planner(Protocol):
    """Above: the gateway (wires, adjudication). Below: a scripted mock, an upstream model over
    HTTP, or the in-kernel engine. A planner proposes; it never executes tools and never sees a
    tool result the kernel has not admitted.
    """

    @property
    def kind(self) -> str:
        """``mock`` | ``proxy`` | ``inkernel``."""
        ...

    @property
    def model(self) -> str: ...

    async def complete(self, request: TurnRequest) -> PlannerTurn: ...

    def stream(self, request: TurnRequest) -> AsyncIterator[PlannerEvent]:
        """Text deltas as they arrive, then exactly one ``TurnDone``."""
        ...

    async def aclose(self) -> None: ...

    def stats(self) -> Mapping[str, Any] | None:
        """Counters and gauges for metrics and ``/healthz`` (numbers by name); None for a
        planner that keeps none."""
        ...

    def set_error_hook(self, hook: Callable[[str], None]) -> None:
        """``hook(kind)`` is called on every upstream failure (the gateway counts them by
        kind); a planner with no upstream never calls it."""
        ...
