"""The coherence plane a server runs: the change feed, the session recorder, vDSO accounting
(tier T2).

One object the gateway and the MCP tools share. It publishes what changed (tombstones,
revocations, policy reloads, trace resets, and a world-version bump noticed after a call), records
admitted results into per-session core images when a recall directory is configured, and
attributes every kernel syscall to a vDSO hit or a miss with a closed reason. It reads the
kernel through ``KernelView`` (``tool_entry``, ``world_version``, ``trust_epoch``), a Protocol the
kernel satisfies, never importing it (both sit in T2).
"""

from __future__ import annotations

import enum
import logging
import threading
from collections.abc import Callable
from typing import Protocol

from fak.abi import Verdict
from fak.recall.feed import ChangeFeed, ChangeKind, ChangeLog
from fak.recall.image import ContextChange
from fak.recall.sessions import SessionDirectory

__all__ = ["CoherencePlane", "KernelView", "ToolHints", "VdsoMiss"]

_log = logging.getLogger(__name__)


class VdsoMiss(enum.StrEnum):
    """Why a syscall was not served by the vDSO (the ``reason`` label of the miss counter)."""

    DESTRUCTIVE = "DESTRUCTIVE"
    MISSING_HINTS = "MISSING_HINTS"
    RESOURCE_MISNAMED = "RESOURCE_MISNAMED"
    WITNESS_REVOKED = "WITNESS_REVOKED"
    NOT_CACHED = "NOT_CACHED"


class ToolHints(Protocol):
    """What the kernel knows of a registered tool (``fak.kernel.ToolEntry``)."""

    @property
    def cacheable(self) -> bool: ...

    @property
    def mutates(self) -> bool: ...


class KernelView(Protocol):
    """What the plane reads from the kernel (``fak.kernel.Kernel`` satisfies it)."""

    def tool_entry(self, name: str) -> ToolHints | None: ...

    @property
    def world_version(self) -> int: ...

    @property
    def trust_epoch(self) -> int: ...


_READ_PREFIXES = ("get_", "read_", "search_", "list_", "lookup_", "find_", "calc")


def miss_reason(
    kernel: KernelView, tool: str, served_by: str, revoked: bool = False
) -> VdsoMiss | None:
    """None for a vDSO hit, else why the call missed.

    A tool the kernel has no cacheable registration for is MISSING_HINTS, or RESOURCE_MISNAMED
    when its name reads like a read (``get_``, ``list_``, ...) yet it is registered as writing;
    a writing tool is DESTRUCTIVE; a presented revoked witness is WITNESS_REVOKED; a cacheable
    call that simply was not in the cache is NOT_CACHED.
    """
    if served_by == "vdso":
        return None
    if revoked:
        return VdsoMiss.WITNESS_REVOKED
    entry = kernel.tool_entry(tool)
    if entry is None:
        return VdsoMiss.MISSING_HINTS
    if entry.mutates:
        if tool.lower().startswith(_READ_PREFIXES):
            return VdsoMiss.RESOURCE_MISNAMED
        return VdsoMiss.DESTRUCTIVE
    if not entry.cacheable:
        return VdsoMiss.MISSING_HINTS
    return VdsoMiss.NOT_CACHED


class CoherencePlane:
    """Feed + optional recorder + vDSO counters for one kernel. ``log`` is where the feed keeps
    its events (``None``: in this process; a shared log when N workers serve one fleet)."""

    def __init__(
        self,
        kernel: KernelView,
        *,
        sessions: SessionDirectory | None = None,
        clock: Callable[[], float] | None = None,
        log: ChangeLog | None = None,
    ) -> None:
        self._kernel = kernel
        self.sessions = sessions
        self.feed = ChangeFeed(world=self._world, epoch=self._epoch, clock=clock, log=log)
        self._lock = threading.Lock()
        self._last_world = self._world()
        self._lookups = 0
        self._misses = dict.fromkeys(VdsoMiss, 0)

    def _world(self) -> int:
        return self._kernel.world_version

    def _epoch(self) -> int:
        return self._kernel.trust_epoch

    # -- vDSO accounting and world bumps ----------------------------------------------------
    def observe_syscall(self, tool: str, served_by: str, *, revoked: bool = False) -> None:
        reason = miss_reason(self._kernel, tool, served_by, revoked)
        world = self._world()
        with self._lock:
            self._lookups += 1
            if reason is not None:
                self._misses[reason] += 1
            bumped = world != self._last_world
            self._last_world = world
        if bumped:
            self.feed.publish(ChangeKind.MUTATION, {"tool": tool, "world_ver": world})

    def vdso_counts(self) -> tuple[int, dict[str, int]]:
        """(lookups, misses by reason) — every reason present, zero or not."""
        with self._lock:
            return self._lookups, {str(k): v for k, v in self._misses.items()}

    # -- recording ---------------------------------------------------------------------------
    def record(self, session_id: str, tool: str, payload: bytes, verdict: Verdict | None) -> None:
        """Record an admitted result when a recall directory is configured; never raises."""
        if self.sessions is None or not session_id:
            return
        try:
            self.sessions.record(session_id, tool, payload, verdict)
        except Exception as exc:  # recording must never break admission; the result is screened
            _log.warning("recall recording failed (%s)", type(exc).__name__)

    # -- changes -----------------------------------------------------------------------------
    def tombstone(
        self, session_id: str, step: int, reason: str, **kw: str
    ) -> tuple[ContextChange, bool]:
        if self.sessions is None:
            raise LookupError("no recall directory")
        change, applied = self.sessions.tombstone(session_id, step, reason, **kw)
        if applied:
            fields = {"session_id": session_id, "step": step, "digest": change.digest}
            self.feed.publish(ChangeKind.TOMBSTONE, {**fields, "id": change.id})
        return change, applied

    def revoked(self, witness: str, evicted: int = 0) -> int:
        """A witness was revoked (by the kernel): seal recall pages cleared under it, publish."""
        sealed = self.sessions.revoke_witness(witness) if self.sessions is not None else 0
        fields = {"witness": witness, "evicted": evicted, "sealed_pages": sealed}
        self.feed.publish(ChangeKind.REVOCATION, fields)
        return sealed

    def policy_reloaded(self, source: str) -> None:
        self.feed.publish(ChangeKind.POLICY_RELOAD, {"source": source})

    def trace_reset(self, trace_id: str) -> None:
        if self.sessions is not None:
            self.sessions.forget(trace_id)
        self.feed.publish(ChangeKind.TRACE_RESET, {"trace_id": trace_id})
