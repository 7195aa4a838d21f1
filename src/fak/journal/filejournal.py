"""The hash-chained, fsync'd decision journal on a local file (tier T1).

``Journal.append`` writes one canonical JSON line with ``os.write`` on an ``O_APPEND`` descriptor
and fsyncs it before returning, under an advisory ``flock`` so several processes can share one
journal without forking the chain. Inside ``with journal.group():`` (per thread) appends skip
their own fsync and the group's exit makes all of them durable with one: a gateway request that
admits thousands of results pays one fsync, and still before it answers. Opening recovers the
head (seq and hash) from the last row; a torn final line (a crash mid-write) is completed if it
is a whole valid row, else cut off, so the chain resumes after the last good row. A file whose
last row is not a journal row is refused rather than touched.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import re
import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fak.abi import Clock
from fak.journal.record import RowError, build_row, check_line, row_line

__all__ = ["Journal", "JournalCorruptError", "JournalHead"]

_log = logging.getLogger(__name__)
_ROW_PREFIX = b'{"seq":'
# A torn write is a strict prefix of a row, so it never holds a row's complete closing hash.
_COMPLETE_ROW = re.compile(rb'"hash":"[0-9a-f]{64}"\}')


class JournalCorruptError(RuntimeError):
    """The journal file cannot be continued safely; run ``fak journal verify PATH``."""


@dataclass(frozen=True, slots=True)
class JournalHead:
    """The last row's sequence number and hash (0 and "" for an empty journal)."""

    seq: int
    hash: str


def _pread_tail(fd: int, size: int) -> tuple[bytes, int]:
    """The smallest tail window of the file that holds the last two newlines (or the whole file)."""
    window = min(size, 1 << 16)
    while True:
        start = size - window
        buf = os.pread(fd, window, start)
        last = buf.rfind(b"\n")
        if start == 0 or (last > 0 and buf.rfind(b"\n", 0, last) >= 0):
            return buf, start
        window = min(size, window * 4)


class Journal:
    """An append-only, tamper-evident JSONL journal; implements ``fak.abi.AuditJournal``."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        clock: Clock | None = None,
        tail_rows: int = 1024,
    ) -> None:
        self._path = Path(path)
        self._clock = clock
        self._lock = threading.Lock()
        self._groups = threading.local()  # depth and dirty flag of this thread's open group
        self._tail: deque[dict[str, Any]] = deque(maxlen=max(1, tail_rows))
        self._head = JournalHead(0, "")
        self._size = 0
        self.repaired_bytes = 0
        """Bytes of a torn final line cut off when the journal was last (re)read."""
        if self._path.parent != Path(""):
            self._path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(self._path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            with self._flocked():
                self._recover()
        except BaseException:
            os.close(self._fd)
            self._fd = -1
            raise

    # -- views ------------------------------------------------------------------------------
    @property
    def path(self) -> Path:
        return self._path

    @property
    def head(self) -> JournalHead:
        with self._lock:
            return self._head

    def tail(self, limit: int | None = None) -> list[dict[str, Any]]:
        """The most recent rows written by this process (oldest first), at most ``limit``."""
        with self._lock:
            rows = list(self._tail)
        return rows if limit is None else rows[-limit:] if limit > 0 else []

    @property
    def shared(self) -> bool:
        """A local file: never unreachable (an unwritable one refuses appends instead)."""
        return False

    def ping(self) -> bool:
        return True

    def rows_after(self, since: int, limit: int) -> list[dict[str, Any]] | None:
        """Rows with ``seq > since`` from the in-memory tail, or None when the tail cannot
        answer (the cursor is older than the tail, or another process has appended since)."""
        with self._lock:
            if self._fd < 0 or not self._tail or since + 1 < self._tail[0]["seq"]:
                return None
            if os.fstat(self._fd).st_size != self._size:
                return None
            return [row for row in self._tail if row["seq"] > since][: max(0, limit)]

    # -- writing ----------------------------------------------------------------------------
    def append(self, record: Mapping[str, Any]) -> None:
        """Chain, write and fsync one row; returns only once it is durable.

        Raises ``RowError`` (a ValueError) for a record that is not acceptable (nothing is
        written) and ``OSError`` if the row could not be made durable (the file is cut back).
        """
        with self._lock:
            if self._fd < 0:
                msg = f"journal {self._path} is closed"
                raise ValueError(msg)
            with self._flocked():
                if os.fstat(self._fd).st_size != self._size:
                    self._recover()  # another process appended (or the file changed)
                row = build_row(
                    record, seq=self._head.seq + 1, ts_unix_nano=self._now(), prev=self._head.hash
                )
                line = row_line(row)
                try:
                    self._write_all(line)
                    if getattr(self._groups, "depth", 0):
                        self._groups.dirty = True  # the group's exit fsyncs
                    else:
                        os.fsync(self._fd)
                except OSError:
                    self._cut_back()
                    raise
                self._size += len(line)
                self._head = JournalHead(row["seq"], row["hash"])
                self._tail.append(row)

    @contextlib.contextmanager
    def group(self) -> Iterator[None]:
        """Group commit: appends made by this thread inside the block share one fsync at its
        end. Re-entrant. If that fsync fails the block raises ``OSError`` (never silently)."""
        groups = self._groups
        depth = getattr(groups, "depth", 0)
        groups.depth = depth + 1
        try:
            yield
        finally:
            groups.depth = depth
            if depth == 0 and getattr(groups, "dirty", False):
                groups.dirty = False
                with self._lock:
                    if self._fd >= 0:
                        os.fsync(self._fd)

    def _write_all(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]

    def _cut_back(self) -> None:
        try:
            os.ftruncate(self._fd, self._size)
            os.fsync(self._fd)
        except OSError as exc:
            _log.error("journal %s: could not cut back a failed write (%s)", self._path, exc)

    def _now(self) -> int:
        if self._clock is None:
            return time.time_ns()
        return int(self._clock.now() * 1_000_000_000)

    # -- recovery ---------------------------------------------------------------------------
    def _flocked(self) -> _FileLock:
        return _FileLock(self._fd)

    def _recover(self) -> None:
        size = os.fstat(self._fd).st_size
        head = JournalHead(0, "")
        good = 0
        if size:
            buf, start = _pread_tail(self._fd, size)
            end = buf.rfind(b"\n")
            if end >= 0:
                begin = buf.rfind(b"\n", 0, end) + 1
                head = self._last_row(buf[begin:end])
                good = start + end + 1
            tail = buf[end + 1 :]
            if tail:
                good = self._repair_tail(tail, head, good)
                if good > start + end + 1:
                    head = self._last_row(tail)
        self._size = good
        self._head = head

    def _last_row(self, line: bytes) -> JournalHead:
        try:
            row = check_line(line, seq=None, prev=None)
        except RowError as exc:
            msg = (
                f"the last row of {self._path} is not a valid journal row ({exc}); "
                f"run `fak journal verify {self._path}`"
            )
            raise JournalCorruptError(msg) from exc
        return JournalHead(row["seq"], row["hash"])

    def _repair_tail(self, tail: bytes, head: JournalHead, good: int) -> int:
        """Complete a whole valid unterminated row, or cut off a torn one; return the good size."""
        try:
            check_line(tail, seq=head.seq + 1, prev=head.hash)
        except RowError:
            if not tail.startswith(_ROW_PREFIX[: len(tail)]) or _COMPLETE_ROW.search(tail):
                msg = (
                    f"{self._path} ends in {len(tail)} bytes that are neither a journal row nor "
                    f"a torn write; refusing to modify it (run `fak journal verify {self._path}`)"
                )
                raise JournalCorruptError(msg) from None
            os.ftruncate(self._fd, good)
            os.fsync(self._fd)
            self.repaired_bytes = len(tail)
            _log.warning("journal %s: cut off a torn final line (%d bytes)", self._path, len(tail))
            return good
        self._write_all(b"\n")
        os.fsync(self._fd)
        _log.warning("journal %s: completed an unterminated final row", self._path)
        return good + len(tail) + 1

    # -- lifecycle --------------------------------------------------------------------------
    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        fd = getattr(self, "_fd", -1)
        if fd >= 0:
            self._fd = -1
            os.close(fd)


class _FileLock:
    """An exclusive ``flock`` on the journal for the duration of one append or recovery."""

    __slots__ = ("_fd",)

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def __enter__(self) -> None:
        fcntl.flock(self._fd, fcntl.LOCK_EX)

    def __exit__(self, *exc: object) -> None:
        fcntl.flock(self._fd, fcntl.LOCK_UN)


def open_error_line(path: str, exc: BaseException) -> str:
    """One line, with a stable code, for a journal that cannot be opened: what to fix."""
    if isinstance(exc, JournalCorruptError):
        return f"[FAK-JOURNAL-CORRUPT] {exc}"
    if isinstance(exc, IsADirectoryError):
        return (
            f"[FAK-JOURNAL-OPEN] the audit journal {path} is a directory; point "
            f"FAK_AUDIT_JOURNAL at a file (e.g. {path}/audit.jsonl)"
        )
    if isinstance(exc, PermissionError):
        return f"[FAK-JOURNAL-OPEN] no permission to write the audit journal {path}"
    reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
    return f"[FAK-JOURNAL-OPEN] cannot open the audit journal {path}: {reason}"
