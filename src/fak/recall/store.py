"""Where a core image lives: a directory on disk or memory, behind one small seam (tier T2).

A directory image is ``manifest.json`` plus ``cas/<2 hex>/<sha256>`` blob files. Blobs are
content-addressed, so writing one never changes what an existing manifest means; each is written
temp-file + fsync + rename. The manifest is the commit point, replaced the same way (and the
directory fsync'd), so a crash or SIGKILL at any moment leaves the previous image (or, for a
first persist, none) and never a half one. Loading hashes every blob file in 1 MiB chunks and
refuses the whole image on any mismatch, missing blob or foreign file. ``MemoryImage`` is the
same seam in a dict, for tests and embedding. The image holds sealed bytes (a leaked key
stays a leaked key on disk), so a new image directory is 0700 and every file 0600.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import tempfile
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Final, Protocol, runtime_checkable

from fak.recall.errors import RecallError, RecallErrorCode

__all__ = ["MANIFEST_NAME", "DirectoryImage", "ImageStore", "MemoryImage"]

MANIFEST_NAME: Final = "manifest.json"
_CAS: Final = "cas"
_TMP: Final = ".tmp-"
_CHUNK: Final = 1 << 20
_HEX: Final = frozenset("0123456789abcdef")


@runtime_checkable
class ImageStore(Protocol):
    """Above: a recall ``Session``. Below: a directory (durable) or a dict (tests).

    ``put_blob`` is idempotent by content and durable before it returns; ``commit_manifest``
    atomically replaces the manifest (the image changes only there); ``read_manifest`` raises
    ``RecallError`` IMAGE_MISSING when there is none; ``get_blob`` returns verified bytes or
    raises BLOB_MISSING / BLOB_CORRUPT; ``verify_blobs`` checks every stored blob and that each
    expected digest is present with its length.
    """

    def put_blob(self, digest: str, data: bytes) -> bool: ...

    def get_blob(self, digest: str) -> bytes: ...

    def commit_manifest(self, data: bytes) -> None: ...

    def read_manifest(self) -> bytes: ...

    def verify_blobs(self, expected: Mapping[str, int]) -> None: ...


def _is_hex64(name: str) -> bool:
    return len(name) == 64 and _HEX.issuperset(name)


def _missing(digest: str) -> RecallError:
    return RecallError(RecallErrorCode.BLOB_MISSING, f"the image has no blob {digest}")


def _corrupt(digest: str) -> RecallError:
    msg = f"blob {digest} does not hash to its name (flipped, truncated or replaced bytes)"
    return RecallError(RecallErrorCode.BLOB_CORRUPT, msg)


def _check_expected(expected: Mapping[str, int], sizes: Mapping[str, int]) -> None:
    for digest, length in expected.items():
        if digest not in sizes:
            raise _missing(digest)
        if sizes[digest] != length:
            raise _corrupt(digest)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_atomic(final: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=_TMP, dir=final.parent)
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


class DirectoryImage:
    """A core image in a directory: durable, atomic at the manifest, verified on load."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self._root = Path(root)
        self._lock = threading.Lock()
        self.blobs_written = 0
        self.blobs_deduplicated = 0

    @property
    def root(self) -> Path:
        return self._root

    def _blob_path(self, digest: str) -> Path:
        return self._root / _CAS / digest[:2] / digest

    def _hash_file(self, path: Path) -> tuple[str, int]:
        digest = hashlib.sha256()
        size = 0
        with open(path, "rb") as handle:
            while chunk := handle.read(_CHUNK):
                digest.update(chunk)
                size += len(chunk)
        return digest.hexdigest(), size

    def put_blob(self, digest: str, data: bytes) -> bool:
        """Store ``data`` under ``digest`` (the caller hashed it); False if it was already there."""
        final = self._blob_path(digest)
        try:
            with self._lock:
                if final.is_file() and self._hash_file(final)[0] == digest:
                    self.blobs_deduplicated += 1
                    return False
                created = not final.parent.is_dir()
                self._root.mkdir(parents=True, exist_ok=True, mode=0o700)
                final.parent.parent.mkdir(exist_ok=True, mode=0o700)
                final.parent.mkdir(exist_ok=True, mode=0o700)
                if created:
                    _fsync_dir(final.parent.parent)
                    _fsync_dir(self._root)
                _write_atomic(final, data)
                self.blobs_written += 1
                return True
        except OSError as exc:
            msg = f"cannot write a blob into {self._root}: {exc.strerror or type(exc).__name__}"
            raise RecallError(RecallErrorCode.WRITE_FAILED, msg) from exc

    def get_blob(self, digest: str) -> bytes:
        if not _is_hex64(digest):
            raise _missing(digest[:80])
        try:
            data = self._blob_path(digest).read_bytes()
        except FileNotFoundError as exc:
            raise _missing(digest) from exc
        except OSError as exc:
            raise _missing(digest) from exc
        if hashlib.sha256(data).hexdigest() != digest:
            raise _corrupt(digest)
        return data

    def commit_manifest(self, data: bytes) -> None:
        try:
            self._root.mkdir(parents=True, exist_ok=True, mode=0o700)
            _write_atomic(self._root / MANIFEST_NAME, data)
        except OSError as exc:
            msg = f"cannot write {self._root / MANIFEST_NAME}: {exc.strerror or type(exc).__name__}"
            raise RecallError(RecallErrorCode.WRITE_FAILED, msg) from exc

    def read_manifest(self) -> bytes:
        path = self._root / MANIFEST_NAME
        flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
        try:
            fd = os.open(path, flags)  # a symlink fails (ELOOP); a FIFO does not block
        except FileNotFoundError as exc:
            msg = f"no core image at {self._root} (no {MANIFEST_NAME})"
            raise RecallError(RecallErrorCode.IMAGE_MISSING, msg) from exc
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                msg = f"{path} is a symbolic link; an image's manifest must be a regular file"
                raise RecallError(RecallErrorCode.FOREIGN_FILE, msg) from exc
            msg = f"cannot read {path}: {exc.strerror or type(exc).__name__}"
            raise RecallError(RecallErrorCode.IMAGE_MISSING, msg) from exc
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                msg = f"{path} is not a regular file; an image's manifest must be one"
                raise RecallError(RecallErrorCode.FOREIGN_FILE, msg)
            try:
                return f.read()
            except OSError as exc:
                msg = f"cannot read {path}: {exc.strerror or type(exc).__name__}"
                raise RecallError(RecallErrorCode.IMAGE_MISSING, msg) from exc

    def _entries(self) -> Iterator[tuple[str, Path]]:
        """(digest, path) of every blob file; raises FOREIGN_FILE on anything else."""
        for top in sorted(self._root.iterdir()):
            if top.name == MANIFEST_NAME or top.name.startswith(_TMP):
                continue
            if top.name != _CAS or not top.is_dir() or top.is_symlink():
                msg = f"unexpected entry {top.name[:80]!r} in the image directory"
                raise RecallError(RecallErrorCode.FOREIGN_FILE, msg)
        cas = self._root / _CAS
        if not cas.is_dir():
            return
        for shard in sorted(cas.iterdir()):
            ok_shard = len(shard.name) == 2 and _HEX.issuperset(shard.name)
            if not ok_shard or not shard.is_dir() or shard.is_symlink():
                msg = f"unexpected entry cas/{shard.name[:80]!r} in the image"
                raise RecallError(RecallErrorCode.FOREIGN_FILE, msg)
            for blob in sorted(shard.iterdir()):
                if blob.name.startswith(_TMP):  # left by a crash mid-write; never referenced
                    continue
                ok = _is_hex64(blob.name) and blob.name[:2] == shard.name
                if not ok or not blob.is_file() or blob.is_symlink():
                    msg = f"unexpected entry cas/{shard.name}/{blob.name[:80]!r} in the image"
                    raise RecallError(RecallErrorCode.FOREIGN_FILE, msg)
                yield blob.name, blob

    def verify_blobs(self, expected: Mapping[str, int]) -> None:
        sizes: dict[str, int] = {}
        try:
            for digest, path in self._entries():
                actual, size = self._hash_file(path)
                if actual != digest:
                    raise _corrupt(digest)
                sizes[digest] = size
        except OSError as exc:
            msg = f"cannot read the image at {self._root}: {exc.strerror or type(exc).__name__}"
            raise RecallError(RecallErrorCode.IMAGE_MISSING, msg) from exc
        _check_expected(expected, sizes)

    def size_bytes(self) -> int:
        """Bytes on disk of the manifest and every blob (for reports and benchmarks)."""
        total = 0
        for path in self._root.rglob("*"):
            if path.is_file() and not path.name.startswith(_TMP):
                total += path.stat().st_size
        return total


class MemoryImage:
    """The image seam in memory: the same checks, no durability."""

    def __init__(self) -> None:
        self.blobs: dict[str, bytes] = {}
        self.manifest: bytes | None = None

    def put_blob(self, digest: str, data: bytes) -> bool:
        if digest in self.blobs:
            return False
        self.blobs[digest] = bytes(data)
        return True

    def get_blob(self, digest: str) -> bytes:
        data = self.blobs.get(digest)
        if data is None:
            raise _missing(digest[:80])
        if hashlib.sha256(data).hexdigest() != digest:
            raise _corrupt(digest)
        return data

    def commit_manifest(self, data: bytes) -> None:
        self.manifest = bytes(data)

    def read_manifest(self) -> bytes:
        if self.manifest is None:
            raise RecallError(RecallErrorCode.IMAGE_MISSING, "no core image in memory")
        return self.manifest

    def verify_blobs(self, expected: Mapping[str, int]) -> None:
        for digest, data in self.blobs.items():
            if hashlib.sha256(data).hexdigest() != digest:
                raise _corrupt(digest)
        _check_expected(expected, {d: len(b) for d, b in self.blobs.items()})
