"""The seams between tiers, as Protocols (tier T0, stdlib only).

Each Protocol is documented by what sits above and below it. The in-memory doubles live next to
the real implementations in their own packages (``fak.cas.MemoryStore``, ...).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from fak.abi.turn import PlannerTurn, TurnRequest
from fak.abi.types import Ref

__all__ = [
    "BlobStore",
    "Clock",
    "JournalSink",
    "Planner",
    "PlannerEvent",
    "PlannerInputError",
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
class BlobStore(Protocol):
    """Above: the quarantine ledger, vDSO, recall. Below: memory or a directory on disk.

    ``put`` is idempotent by content; ``get`` re-verifies the digest and raises ``KeyError`` for an
    unknown or evicted digest. Pinned digests are never evicted.
    """

    def put(self, data: bytes) -> Ref: ...

    def get(self, ref: Ref | str) -> bytes: ...

    def pin(self, digest: str) -> None: ...

    def unpin(self, digest: str) -> None: ...

    def __contains__(self, digest: object) -> bool: ...


@runtime_checkable
class JournalSink(Protocol):
    """Above: the kernel's decision path. Below: the hash-chained file journal, or a list in tests.

    ``append`` must not return before the record is durable. Records carry digests, never bytes.
    """

    def append(self, record: Mapping[str, Any]) -> None: ...


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
