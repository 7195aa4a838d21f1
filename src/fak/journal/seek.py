"""Reading a journal from a cursor without reading it from the start (tier T1).

Row ``n`` is line ``n`` and every line starts with ``{"seq":n,``, so the first row after a cursor
is found by binary search over byte offsets: O(log size) reads, not a pass over the file. The
rows handed back are checked as a chain among themselves and against the row at the cursor
(hashes, links, sequence); the whole-file check from genesis stays ``fak journal verify``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any, BinaryIO

from fak.abi.protocols import AuditJournal
from fak.journal.record import RowError, check_line

__all__ = ["journal_rows", "rows_after"]

_PREFIX = b'{"seq":'


def _seq_of(line: bytes) -> int:
    if not line.startswith(_PREFIX):
        raise RowError("not a journal row")
    digits = line[len(_PREFIX) : line.find(b",", len(_PREFIX))]
    if not digits.isdigit():
        raise RowError("not a journal row")
    return int(digits)


def _line_from(handle: BinaryIO, offset: int) -> tuple[int, bytes] | None:
    """The first whole line that starts at or after ``offset``: (its start, its bytes)."""
    handle.seek(offset)
    if offset > 0:
        handle.seek(offset - 1)
        skipped = handle.readline()  # the rest of the line we landed in (or just its newline)
        offset = offset - 1 + len(skipped)
    line = handle.readline()
    if not line.endswith(b"\n"):
        return None  # end of file, or a torn final line: not a row yet
    return offset, line[:-1]


def rows_after(path: str | os.PathLike[str], since: int, limit: int) -> list[dict[str, Any]]:
    """Up to ``limit`` rows with ``seq > since``, oldest first; ``RowError`` on a bad row."""
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        # invariant: every line starting before lo has seq <= since; the first line starting at
        # or after hi (if any) has seq > since
        lo, hi = 0, size
        while lo < hi:
            mid = (lo + hi) // 2
            found = _line_from(handle, mid)
            if found is None or _seq_of(found[1]) > since:
                hi = mid
            else:
                lo = found[0] + len(found[1]) + 1
                hi = max(hi, lo)
        first = _line_from(handle, lo)
        if first is None:
            return []
        lo = first[0]
        prev: str | None = None
        if since > 0 and lo > 0:
            before = _line_from(handle, _start_of_previous(handle, lo))
            if before is not None:
                prev = check_line(before[1], seq=since, prev=None)["hash"]
        handle.seek(lo)
        rows: list[dict[str, Any]] = []
        expected = since + 1
        for raw in handle:
            if len(rows) >= limit or not raw.endswith(b"\n"):
                break
            row = check_line(raw[:-1], seq=expected, prev=prev)
            rows.append(row)
            prev, expected = row["hash"], expected + 1
        return rows


def _start_of_previous(handle: BinaryIO, line_start: int) -> int:
    """The byte offset where the line ending just before ``line_start`` begins."""
    pos = line_start - 1  # the previous line's newline
    step = 4096
    while pos > 0:
        begin = max(0, pos - step)
        handle.seek(begin)
        chunk = handle.read(pos - begin)
        cut = chunk.rfind(b"\n")
        if cut >= 0:
            return begin + cut + 1
        pos = begin
        step *= 2
    return 0


def journal_rows(
    journal: AuditJournal, since: int = 0, page: int = 1024
) -> Iterator[dict[str, Any]]:
    """Every row of ``journal`` after ``since``, oldest first, a page at a time: from the object
    when it can answer, else from a file journal's file (seeked, never re-read from the start)."""
    from fak.journal.filejournal import Journal

    while True:
        rows = journal.rows_after(since, page)
        if rows is None:
            if not isinstance(journal, Journal):
                return
            rows = rows_after(journal.path, since, page)
        if not rows:
            return
        yield from rows
        since = int(rows[-1]["seq"])
