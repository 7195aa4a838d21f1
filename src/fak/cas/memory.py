"""The bounded in-memory content-addressed store (tier T1).

sha256 names the bytes; payloads up to ``INLINE_MAX`` bytes ride inline on the Ref and are never
stored. A byte bound evicts only unpinned blobs, least recently used first; pins are ref-counted,
so a blob pinned by two holders survives until both unpin. Thread-safe. It is also the in-memory
double for any ``BlobStore`` consumer.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict

from fak.abi import INLINE_MAX, Ref, RefKind
from fak.cas.refs import CasStats, inline_bytes, make_ref, parse_digest

__all__ = ["DEFAULT_MAX_BYTES", "MemoryStore"]

DEFAULT_MAX_BYTES = 1024 * 1024 * 1024
"""The default byte bound (``FAK_BLOB_MAX_BYTES``); 0 means unbounded."""


class MemoryStore:
    """A ``BlobStore`` in process memory with pin-aware LRU eviction under a byte bound."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0:
            msg = f"max_bytes must be a non-negative int (0 = unbounded), got {max_bytes!r}"
            raise ValueError(msg)
        self._max = max_bytes
        self._lock = threading.Lock()
        self._blobs: dict[str, bytes] = {}
        self._lru: OrderedDict[str, None] = OrderedDict()  # unpinned digests, oldest first
        self._pins: dict[str, int] = {}
        self._bytes = 0
        self._puts = self._dedup = self._resolves = self._evicted = 0

    @property
    def max_bytes(self) -> int:
        return self._max

    @property
    def shared(self) -> bool:
        """In this process only."""
        return False

    def ping(self) -> bool:
        """Always reachable (it is this process's memory)."""
        return True

    def put(self, data: bytes) -> Ref:
        """Store ``data`` (idempotent by content) and return its Ref; small payloads stay inline.

        Under pressure the new blob is evicted like any other unpinned one (possibly at once, if
        pinned blobs fill the bound); use ``put_pinned`` to store and pin in one step.
        """
        return self._put(data, pin=False)

    def put_pinned(self, data: bytes) -> Ref:
        """``put`` and ``pin`` atomically, so the blob cannot be evicted in between.

        An inline Ref (≤ ``INLINE_MAX`` bytes) is returned unpinned: nothing is stored.
        """
        return self._put(data, pin=True)

    def put_hashed(self, data: bytes, digest: str) -> Ref:
        """``put`` for a caller that has just hashed these very bytes in this process.

        The quarantine ledger names every result by its sha256 before it screens it; paging the
        benign bytes out then need not hash them a second time (~37 us per 64 KiB here). The
        digest is trusted: pass only one computed from ``data`` itself.
        """
        return self._put(data, pin=False, digest=digest)

    def _put(self, data: bytes, *, pin: bool, digest: str | None = None) -> Ref:
        data = bytes(data)
        if len(data) <= INLINE_MAX:
            return make_ref(data)
        if digest is None:
            digest = hashlib.sha256(data).hexdigest()
        with self._lock:
            self._puts += 1
            if digest in self._blobs:
                self._dedup += 1
                if digest in self._lru:
                    self._lru.move_to_end(digest)
            else:
                self._blobs[digest] = data
                self._bytes += len(data)
                self._lru[digest] = None
            if pin:
                self._pins[digest] = self._pins.get(digest, 0) + 1
                self._lru.pop(digest, None)
            self._evict_locked()
        return Ref(digest=digest, length=len(data), kind=RefKind.BLOB)

    def get(self, ref: Ref | str) -> bytes:
        """The bytes for ``ref`` (or a digest); ``KeyError`` if unknown or evicted."""
        if isinstance(ref, Ref) and ref.kind == RefKind.INLINE:
            return inline_bytes(ref)
        digest = parse_digest(ref.digest if isinstance(ref, Ref) else ref)
        with self._lock:
            data = self._blobs.get(digest)
            if data is None:
                msg = f"no blob {digest}"
                raise KeyError(msg)
            self._resolves += 1
            if digest in self._lru:
                self._lru.move_to_end(digest)
            return data

    def pin(self, digest: str) -> None:
        """Protect a resident blob from eviction; pins are counted. ``KeyError`` if not resident."""
        digest = parse_digest(digest)
        with self._lock:
            if digest not in self._blobs:
                msg = f"cannot pin {digest}: not resident"
                raise KeyError(msg)
            self._pins[digest] = self._pins.get(digest, 0) + 1
            self._lru.pop(digest, None)

    def unpin(self, digest: str) -> None:
        """Drop one pin; at zero the blob becomes evictable again (most recently used)."""
        digest = parse_digest(digest)
        with self._lock:
            if self._last_pin_dropped(digest):
                self._lru[digest] = None
                self._evict_locked()

    def release(self, digest: str) -> None:
        """Drop one pin; at zero the blob is removed now (its holder is done with it), so held
        bytes past the ledger's bound never linger in memory until the LRU bound is reached."""
        digest = parse_digest(digest)
        with self._lock:
            if self._last_pin_dropped(digest):
                data = self._blobs.pop(digest, None)
                if data is not None:
                    self._bytes -= len(data)

    def _last_pin_dropped(self, digest: str) -> bool:
        """Drop one pin (under the lock); True when it was the last one."""
        count = self._pins.get(digest, 0)
        if count == 0:
            msg = f"{digest} is not pinned"
            raise KeyError(msg)
        if count > 1:
            self._pins[digest] = count - 1
            return False
        del self._pins[digest]
        return True

    def pins(self, digest: str) -> int:
        with self._lock:
            return self._pins.get(digest, 0)

    def __contains__(self, digest: object) -> bool:
        if isinstance(digest, Ref):
            digest = digest.digest
        with self._lock:
            return isinstance(digest, str) and digest in self._blobs

    def __len__(self) -> int:
        with self._lock:
            return len(self._blobs)

    @property
    def stats(self) -> CasStats:
        with self._lock:
            return CasStats(
                puts=self._puts,
                dedup_hits=self._dedup,
                resolves=self._resolves,
                evicted=self._evicted,
                resident_blobs=len(self._blobs),
                resident_bytes=self._bytes,
                pinned_blobs=len(self._pins),
                max_bytes=self._max,
            )

    def _evict_locked(self) -> None:
        if self._max == 0:
            return
        while self._bytes > self._max and self._lru:
            digest, _ = self._lru.popitem(last=False)
            self._bytes -= len(self._blobs.pop(digest))
            self._evicted += 1
