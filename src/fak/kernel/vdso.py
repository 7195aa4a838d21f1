"""The vDSO fast path: repeat reads served from memory without adjudication or dispatch (T2).

Only results of read-only, idempotent tools whose call was ALLOWed and whose result was admitted
unchanged are cached. The key is the tool name, the sha256 of the canonical arguments, the
world version and the policy epoch, so a write-shaped completion (which bumps the world version)
or a policy change makes every older entry unreachable; both also flush the cache. A hit is
therefore the value a fresh call would have produced. Bounded LRU; thread-safe.

With N workers the world version and the policy (trust) epoch come from a ``SharedEpochs``
(``fak.kernel.shared.RedisEpochs``), read before every cached answer, so a bump on any worker
makes every worker's older entries unreachable before its next response.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Protocol

from fak.kernel.quarantine import Admission

__all__ = ["DEFAULT_CAPACITY", "EpochStamp", "SharedEpochs", "VdsoCache", "VdsoEntry", "VdsoKey"]

DEFAULT_CAPACITY: Final = 1024

VdsoKey = tuple[str, str, int, int]
"""(tool, canonical-args sha256, world version, policy epoch)."""


@dataclass(frozen=True, slots=True)
class EpochStamp:
    """The fleet's world version and trust epoch, and the nonce naming the store's data set
    (a new nonce means the counters restarted: every cached entry must go)."""

    world: int
    trust: int
    nonce: str


class SharedEpochs(Protocol):
    """Above: the kernel's vDSO. Below: Redis (``fak.kernel.shared.RedisEpochs``).

    Each method raises ``ConnectionError`` when the store cannot be reached."""

    def read(self) -> EpochStamp: ...

    def bump_world(self) -> int: ...

    def bump_trust(self) -> int: ...

    def follow(self, on_change: Callable[[str, int], None], stop: threading.Event) -> None:
        """Call ``on_change(kind, value)`` for every bump from now on until ``stop`` is set
        (run it in a thread; outages are waited out, never raised)."""
        ...


@dataclass(frozen=True, slots=True)
class VdsoEntry:
    payload: bytes
    admission: Admission
    witness: str = ""  # the witness id the filling call was admitted under, if any


class VdsoCache:
    __slots__ = ("_capacity", "_entries", "_lock", "_stats")

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1:
            msg = f"vdso capacity must be a positive int, got {capacity!r}"
            raise ValueError(msg)
        self._capacity = capacity
        self._entries: OrderedDict[VdsoKey, VdsoEntry] = OrderedDict()
        self._lock = threading.Lock()
        self._stats = {"lookups": 0, "hits": 0, "fills": 0, "evictions": 0, "flushes": 0}

    def get(self, key: VdsoKey) -> VdsoEntry | None:
        with self._lock:
            self._stats["lookups"] += 1
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
                self._stats["hits"] += 1
            return entry

    def put(self, key: VdsoKey, entry: VdsoEntry) -> None:
        with self._lock:
            self._entries[key] = entry
            self._entries.move_to_end(key)
            self._stats["fills"] += 1
            while len(self._entries) > self._capacity:
                self._entries.popitem(last=False)
                self._stats["evictions"] += 1

    def evict_witness(self, witness: str) -> int:
        """Drop every entry filled under ``witness``; returns how many."""
        with self._lock:
            doomed = [k for k, e in self._entries.items() if witness and e.witness == witness]
            for key in doomed:
                del self._entries[key]
            self._stats["evictions"] += len(doomed)
            return len(doomed)

    def flush(self) -> None:
        with self._lock:
            if self._entries:
                self._entries.clear()
            self._stats["flushes"] += 1

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    @property
    def stats(self) -> dict[str, int]:
        with self._lock:
            return {**self._stats, "size": len(self._entries)}
