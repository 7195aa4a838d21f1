"""The segment ledger: named spans over one addressable cache (tier T3).

Each appended span (a message, a tool result) is a named segment with a start row and a
length. Evicting a segment removes its rows and renumbers every later segment, so names keep
pointing at the right rows. ``admit_result`` prefills a tool result and then asks the kernel's
result gate about its bytes; a quarantine evicts the span at once (write time: nothing has
attended to it yet). Eviction is exact by default: later segments are recomputed
(``Engine.evict_exact``); ``recompute=False`` only compacts and re-rotates (positions right,
content still carrying the span's influence), for measuring what exactness costs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from fak.abi import ToolResult, VerdictKind
from fak.engine.engine import Engine
from fak.engine.kvcache import KVCache

__all__ = ["AdmittedSpan", "Segment", "SegmentLedger"]


@dataclass(slots=True)
class Segment:
    """A named span of cache rows [start, start + length)."""

    name: str
    start: int
    length: int
    tool: str = ""

    @property
    def end(self) -> int:
        return self.start + self.length


@dataclass(frozen=True, slots=True)
class AdmittedSpan:
    """What happened to a tool result span: the gate's verdict, whether it stayed, logits."""

    verdict: VerdictKind
    kept: bool
    evicted_rows: int
    logits: torch.Tensor | None


# Anything the kernel's result gate returns with a ``verdict.kind`` and a ``payload``.
ResultGate = Callable[[ToolResult], object]
_KEEP = frozenset({VerdictKind.ALLOW})


class SegmentLedger:
    """Named segments over ``cache``; all writes go through the engine."""

    def __init__(self, engine: Engine, cache: KVCache | None = None) -> None:
        self.engine = engine
        self.cache = cache if cache is not None else engine.new_cache()
        self.segments: list[Segment] = []
        self.logits: torch.Tensor | None = None

    def __contains__(self, name: object) -> bool:
        return any(s.name == name for s in self.segments)

    def segment(self, name: str) -> Segment:
        for seg in self.segments:
            if seg.name == name:
                return seg
        raise KeyError(f"no segment named {name!r}")

    def append(self, name: str, ids: Sequence[int], *, tool: str = "") -> torch.Tensor:
        """Prefill ``ids`` as segment ``name``; returns the next-token logits."""
        if name in self:
            raise ValueError(f"segment {name!r} already exists")
        if not ids:
            raise ValueError("a segment needs at least one token")
        seg = Segment(name, self.cache.length, len(ids), tool)
        self.logits = self.engine.prefill(self.cache, ids)
        self.segments.append(seg)
        return self.logits

    def admit_result(
        self,
        name: str,
        tool: str,
        ids: Sequence[int],
        payload: bytes,
        gate: ResultGate,
    ) -> AdmittedSpan:
        """Prefill a tool result, then screen its bytes; anything but ALLOW is evicted now."""
        self.append(name, ids, tool=tool)
        admission = gate(ToolResult(tool=tool, payload=payload, call_id=name))
        verdict = getattr(getattr(admission, "verdict", None), "kind", None)
        kind = verdict if isinstance(verdict, VerdictKind) else VerdictKind.DENY
        if kind in _KEEP:
            return AdmittedSpan(kind, True, 0, self.logits)
        removed = self.evict(name)
        return AdmittedSpan(kind, False, removed, self.logits)

    def evict(self, name: str, *, recompute: bool = True) -> int:
        """Remove segment ``name``; later segments are renumbered (and recomputed if asked)."""
        seg = self.segment(name)
        if recompute:
            result = self.engine.evict_exact(self.cache, seg.start, seg.length)
            removed = result.removed
            self.logits = result.logits
        else:
            removed = self.cache.evict(seg.start, seg.length)
            self.logits = None
        self.segments.remove(seg)
        for later in self.segments:
            if later.start > seg.start:
                later.start -= seg.length
        return removed
