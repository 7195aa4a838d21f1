"""The durable directory content-addressed store (``FAK_BLOB_DIR``) (tier T1).

Each blob is one file ``<root>/<first 2 hex>/<digest>``, written atomically: a temporary file in
the same directory, fsync, rename over the final name, fsync of the directory. Every read
re-hashes the file; bytes that no longer match their digest raise ``CorruptBlobError`` and are
never returned. Nothing is evicted from disk; pins are counted in memory so the store honours
the ``BlobStore`` contract (a pinned digest stays resident).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from pathlib import Path

from fak.abi import INLINE_MAX, Ref, RefKind
from fak.cas.refs import CasStats, CorruptBlobError, inline_bytes, make_ref, parse_digest

__all__ = ["DirectoryStore"]


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class DirectoryStore:
    """A ``BlobStore`` on a local directory: durable, verified on read, never evicting."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self._root = Path(root)
        self._root.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._pins: dict[str, int] = {}
        self._puts = self._dedup = self._resolves = 0

    @property
    def root(self) -> Path:
        return self._root

    def _path(self, digest: str) -> Path:
        return self._root / digest[:2] / digest

    def put(self, data: bytes) -> Ref:
        """Write ``data`` durably (idempotent by content); small payloads stay inline."""
        data = bytes(data)
        if len(data) <= INLINE_MAX:
            return make_ref(data)
        digest = hashlib.sha256(data).hexdigest()
        final = self._path(digest)
        with self._lock:
            self._puts += 1
        if final.is_file() and self._verify(final, digest):
            with self._lock:
                self._dedup += 1
            return Ref(digest=digest, length=len(data), kind=RefKind.BLOB)
        final.parent.mkdir(exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=final.parent)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, final)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        _fsync_dir(final.parent)
        return Ref(digest=digest, length=len(data), kind=RefKind.BLOB)

    def put_hashed(self, data: bytes, digest: str) -> Ref:
        """``put`` (the file is named by a digest computed here, so ``digest`` is not used)."""
        return self.put(data)

    @property
    def shared(self) -> bool:
        """A local directory: this host's workers only, never unreachable."""
        return False

    def ping(self) -> bool:
        return True

    def put_pinned(self, data: bytes) -> Ref:
        """``put`` then ``pin`` (nothing is evicted from disk, so there is no race)."""
        ref = self.put(data)
        if ref.kind == RefKind.BLOB:
            self.pin(ref.digest)
        return ref

    def _verify(self, path: Path, digest: str) -> bool:
        try:
            return hashlib.sha256(path.read_bytes()).hexdigest() == digest
        except OSError:
            return False

    def get(self, ref: Ref | str) -> bytes:
        """The verified bytes; ``KeyError`` if absent, ``CorruptBlobError`` if they do not match."""
        if isinstance(ref, Ref) and ref.kind == RefKind.INLINE:
            return inline_bytes(ref)
        digest = parse_digest(ref.digest if isinstance(ref, Ref) else ref)
        try:
            data = self._path(digest).read_bytes()
        except FileNotFoundError as exc:
            msg = f"no blob {digest}"
            raise KeyError(msg) from exc
        if hashlib.sha256(data).hexdigest() != digest:
            msg = f"blob {digest} is corrupt on disk (content does not match its digest)"
            raise CorruptBlobError(msg)
        with self._lock:
            self._resolves += 1
        return data

    def pin(self, digest: str) -> None:
        digest = parse_digest(digest)
        if not self._path(digest).is_file():
            msg = f"cannot pin {digest}: not resident"
            raise KeyError(msg)
        with self._lock:
            self._pins[digest] = self._pins.get(digest, 0) + 1

    def unpin(self, digest: str) -> None:
        digest = parse_digest(digest)
        with self._lock:
            count = self._pins.get(digest, 0)
            if count == 0:
                msg = f"{digest} is not pinned"
                raise KeyError(msg)
            if count > 1:
                self._pins[digest] = count - 1
            else:
                del self._pins[digest]

    def release(self, digest: str) -> None:
        """Only ``unpin``: the bytes are on disk, not in memory, and another process sharing
        the directory may still hold the same file (its pins are not visible here)."""
        self.unpin(digest)

    def pins(self, digest: str) -> int:
        with self._lock:
            return self._pins.get(digest, 0)

    def __contains__(self, digest: object) -> bool:
        if isinstance(digest, Ref):
            digest = digest.digest
        try:
            key = parse_digest(digest) if isinstance(digest, str) else None
        except KeyError:
            return False
        return key is not None and self._path(key).is_file()

    @property
    def stats(self) -> CasStats:
        blobs = [p for p in self._root.glob("??/*") if not p.name.startswith(".tmp-")]
        with self._lock:
            return CasStats(
                puts=self._puts,
                dedup_hits=self._dedup,
                resolves=self._resolves,
                resident_blobs=len(blobs),
                resident_bytes=sum(p.stat().st_size for p in blobs),
                pinned_blobs=len(self._pins),
            )
