"""The cache-metadata contract between a router and its engine workers (tier T0).

Payload-free values only: no K/V bytes, no cache. A worker's KV prefixes are named by
``prefix_chain``: one content hash per message of a turn, each chaining every message (and the
tool listing) before it, so a router that never tokenizes names the same prefixes the worker's
radix tree holds; a ``Residency`` pairs such a hash with the tokens it covers. Workers announce
what they come to hold and what they evict as ``ResidencyEvent`` values; each turn's lookup is
answered by one ``CacheVerdict`` of a closed kind (hit, miss, revalidate, transform, quarantine,
fault). A restore that fails is a FAULT verdict carried by ``CacheFault``, never a silent
recompute. Stdlib only, no I/O.
"""

from __future__ import annotations

import enum
import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from fak.abi.turn import Message, PlannerTurn, ToolSpec, TurnRequest

__all__ = [
    "CHAIN_VERSION",
    "CacheAwarePlanner",
    "CacheFault",
    "CacheVerdict",
    "CachedTurn",
    "FaultCode",
    "LookupKind",
    "Residency",
    "ResidencyEvent",
    "ResidencyKind",
    "prefix_chain",
]

CHAIN_VERSION = "fak-prefix-v1"  # changes whenever prefix_chain's input framing changes


class LookupKind(enum.StrEnum):
    """What a worker's cache lookup for one turn found; the values are the wire strings."""

    HIT = "hit"  # a cached prefix was reused (and the router's claim, if any, held)
    MISS = "miss"  # nothing cached matched: the whole prompt was prefilled
    REVALIDATE = "revalidate"  # the router claimed a prefix the worker no longer holds
    TRANSFORM = "transform"  # reused a cut of a longer cached run (the divergence fell mid-run)
    QUARANTINE = "quarantine"  # a span the session dropped was evicted from the cache first
    FAULT = "fault"  # the cached prefix could not be restored: the turn did not run


class FaultCode(enum.StrEnum):
    """Why a restore failed (closed; a FAULT verdict always names one)."""

    RESTORE_MISMATCH = "restore_mismatch"  # the restored rows are not the request's tokens
    RESTORE_ERROR = "restore_error"  # the restore itself raised
    WORKER_LOST = "worker_lost"  # the worker holding the prefix died mid-turn


class ResidencyKind(enum.StrEnum):
    HELD = "held"  # the worker now holds these prefixes
    EVICTED = "evicted"  # the worker no longer holds these prefixes


@dataclass(frozen=True, slots=True)
class Residency:
    """A prefix by its chain hash (``prefix_chain``) and the prompt tokens it covers."""

    digest: str
    tokens: int


@dataclass(frozen=True, slots=True)
class ResidencyEvent:
    """A worker's announcement: it came to hold, or evicted, ``prefixes``."""

    kind: ResidencyKind
    prefixes: tuple[Residency, ...]


@dataclass(frozen=True, slots=True)
class CacheVerdict:
    """One turn's lookup: ``reused`` of ``prompt`` tokens came from the cache.

    ``claimed`` is the prefix the router expected the worker to hold (empty: none); a FAULT
    carries its ``fault`` code, every other kind carries none.
    """

    kind: LookupKind
    reused: int
    prompt: int
    claimed: str = ""
    fault: FaultCode | None = None

    def __post_init__(self) -> None:
        if (self.kind is LookupKind.FAULT) != (self.fault is not None):
            msg = "a FAULT verdict names its fault code, and only a FAULT verdict has one"
            raise ValueError(msg)
        if not 0 <= self.reused <= max(self.prompt, 0):
            raise ValueError(f"reused {self.reused} outside a prompt of {self.prompt} tokens")


@dataclass(frozen=True, slots=True)
class CachedTurn:
    """A turn served by a cache-aware worker: the turn, its verdict, what its cache now holds
    or dropped since the worker's last answer."""

    turn: PlannerTurn
    verdict: CacheVerdict
    events: tuple[ResidencyEvent, ...] = ()


class CacheFault(RuntimeError):
    """A turn whose cached prefix could not be restored; ``verdict.kind`` is FAULT."""

    def __init__(self, verdict: CacheVerdict, events: tuple[ResidencyEvent, ...] = ()) -> None:
        message = f"cache restore failed ({verdict.fault}) after {verdict.reused} tokens"
        super().__init__(message)
        self.verdict = verdict
        self.events = events


@runtime_checkable
class CacheAwarePlanner(Protocol):
    """Above: a router choosing among workers. Below: an engine with a prefix cache.

    ``complete_cached`` serves a turn and says what its cache lookup found; ``claim`` is the
    ``prefix_chain`` digest the router expects this worker to hold ("" for none); ``on_text``,
    when given, gets the turn's streamable text as it is produced (from any thread). A failed
    restore raises ``CacheFault`` before any text. ``residency`` drains the events not yet
    reported.
    """

    async def complete_cached(
        self,
        request: TurnRequest,
        claim: str = "",
        on_text: Callable[[str], None] | None = None,
    ) -> CachedTurn: ...

    def residency(self) -> tuple[ResidencyEvent, ...]: ...


def _canon(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _canon(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_canon(v) for v in value]
    return value


def _tools_blob(tools: tuple[ToolSpec, ...]) -> bytes:
    listing = [[t.name, t.description, _canon(t.parameters)] for t in tools]
    return json.dumps(listing, ensure_ascii=False, sort_keys=True, default=str).encode()


def _message_blob(m: Message) -> bytes:
    calls = [[c.name, c.arguments] for c in m.tool_calls]
    return json.dumps(
        [str(m.role), m.content, calls, m.name], ensure_ascii=False, separators=(",", ":")
    ).encode()


def prefix_chain(request: TurnRequest) -> tuple[str, ...]:
    """One digest per message: entry i names the prompt prefix up to and including message i
    (with the tool listing, which renders before the first message). Equal digests mean equal
    rendered text, so equal token ids on one model."""
    h = hashlib.sha256(CHAIN_VERSION.encode())
    h.update(_tools_blob(request.tools))
    out: list[str] = []
    for m in request.messages:
        blob = _message_blob(m)
        h.update(len(blob).to_bytes(8, "little"))
        h.update(blob)
        out.append(h.copy().hexdigest()[:32])
    return tuple(out)
