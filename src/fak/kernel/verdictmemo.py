"""A bounded memo of screen verdicts keyed by content digest (tier T2).

Agents re-send the whole conversation every turn, so the same tool result reaches the gateway
once per later turn. When every admitter in the chain is a pure function of the bytes (it says
so with ``deterministic = True``), folding the chain again over identical bytes can only give the
same verdict; the memo answers instead. It is dropped whenever the chain is replaced, holds
verdicts only (never bytes), and is bounded by entry count with least-recently-used eviction.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Final

from fak.abi import Verdict

__all__ = ["DEFAULT_MEMO_ENTRIES", "VerdictMemo", "chain_is_deterministic"]

DEFAULT_MEMO_ENTRIES: Final = 4096


def chain_is_deterministic(admitters: Sequence[object]) -> bool:
    """True when every admitter declares ``deterministic = True`` (and the chain is not empty)."""
    return bool(admitters) and all(getattr(a, "deterministic", False) is True for a in admitters)


class VerdictMemo:
    """digest -> Verdict, LRU-bounded; ``enabled`` False makes it a no-op."""

    __slots__ = ("_entries", "_limit", "_lock", "enabled", "hits")

    def __init__(self, *, enabled: bool, limit: int = DEFAULT_MEMO_ENTRIES) -> None:
        self.enabled = enabled and limit > 0
        self._limit = limit
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, Verdict] = OrderedDict()
        self.hits = 0

    def get(self, digest: str) -> Verdict | None:
        if not self.enabled or not digest:
            return None
        with self._lock:
            verdict = self._entries.get(digest)
            if verdict is not None:
                self._entries.move_to_end(digest)
                self.hits += 1
            return verdict

    def put(self, digest: str, verdict: Verdict) -> None:
        if not self.enabled or not digest:
            return
        with self._lock:
            self._entries[digest] = verdict
            self._entries.move_to_end(digest)
            while len(self._entries) > self._limit:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)
