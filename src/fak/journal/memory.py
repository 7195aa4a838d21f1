"""The in-memory journal double (tier T1): the same rows and chain as the file, in a list.

For tests and embedded use where durability is not wanted. ``rows`` are the exact dicts the file
journal would write; ``lines()`` renders them as the file's bytes, so ``verify`` logic can be
exercised without a disk.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import Any

from fak.abi import Clock
from fak.journal.filejournal import JournalHead
from fak.journal.record import build_row, row_line

__all__ = ["MemoryJournal"]


class MemoryJournal:
    """A hash-chained journal held in memory; implements ``fak.abi.AuditJournal``."""

    def __init__(self, *, clock: Clock | None = None) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._rows: list[dict[str, Any]] = []
        self._head = JournalHead(0, "")

    def append(self, record: Mapping[str, Any]) -> None:
        with self._lock:
            ts = time.time_ns() if self._clock is None else int(self._clock.now() * 1e9)
            row = build_row(record, seq=self._head.seq + 1, ts_unix_nano=ts, prev=self._head.hash)
            self._rows.append(row)
            self._head = JournalHead(row["seq"], row["hash"])

    @property
    def head(self) -> JournalHead:
        with self._lock:
            return self._head

    @property
    def rows(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._rows)

    def tail(self, limit: int | None = None) -> list[dict[str, Any]]:
        rows = self.rows
        return rows if limit is None else rows[-limit:] if limit > 0 else []

    def rows_after(self, since: int, limit: int) -> list[dict[str, Any]]:
        """Up to ``limit`` rows with ``seq > since`` (every row is in memory)."""
        return [row for row in self.rows if row["seq"] > since][: max(0, limit)]

    def group(self) -> AbstractContextManager[None]:
        """Nothing to commit: every append is already in the list."""
        return contextlib.nullcontext()

    @property
    def shared(self) -> bool:
        return False

    def ping(self) -> bool:
        return True

    def lines(self) -> bytes:
        """The rows as the file journal would have written them."""
        return b"".join(row_line(row) for row in self.rows)
