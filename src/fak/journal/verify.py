"""Verification of a journal file: the whole chain, row by row (tier T1).

Streams the file once, in constant memory. The report names the first bad row (1-based line
number) and why: malformed JSON, edited bytes, a sequence gap (a deleted or reordered row), a
broken link, a hash mismatch, or a torn final line left by a crash mid-write. Truncation of
whole rows at the end cannot be seen from the file alone; compare ``head_hash`` with an anchor.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from fak.journal.record import RowError, check_line

__all__ = ["VerifyReport", "read_rows", "verify", "verify_lines"]


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """``ok`` with ``rows`` verified rows, or the first ``bad_row`` and its ``error``.

    ``torn`` is True when the only problem is an unterminated final line (a crash mid-write);
    ``rows`` then counts the complete rows before it, all of which verified.
    """

    ok: bool
    rows: int
    bad_row: int = 0
    error: str = ""
    torn: bool = False
    head_hash: str = ""


def _lines(path: str | os.PathLike[str]) -> Iterator[tuple[bytes, bool]]:
    with open(path, "rb") as handle:
        for raw in handle:
            if raw.endswith(b"\n"):
                yield raw[:-1], True
            else:
                yield raw, False


def verify(path: str | os.PathLike[str]) -> VerifyReport:
    """Check every row of the journal at ``path``; ``OSError`` if it cannot be read."""
    return verify_lines(_lines(path))


def verify_lines(lines: Iterable[tuple[bytes, bool]]) -> VerifyReport:
    """Check a journal given as its stored lines in order, each ``(bytes, newline-terminated)``:
    a file's lines, or a database's rows (always terminated). The one chain check for every
    backend."""
    seq, prev = 0, ""
    for line, terminated in lines:
        row_no = seq + 1
        try:
            row = check_line(line, seq=row_no, prev=prev)
        except RowError as exc:
            if not terminated:
                return VerifyReport(
                    False, seq, row_no, f"torn final line ({exc})", torn=True, head_hash=prev
                )
            return VerifyReport(False, seq, row_no, str(exc), head_hash=prev)
        if not terminated:
            return VerifyReport(
                False, seq, row_no, "final line has no newline", torn=True, head_hash=prev
            )
        seq, prev = row_no, row["hash"]
    return VerifyReport(True, seq, head_hash=prev)


def read_rows(path: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    """The verified rows of a journal, in order; raises ``RowError`` at the first bad one."""
    seq, prev = 0, ""
    for line, terminated in _lines(path):
        row = check_line(line, seq=seq + 1, prev=prev)
        if not terminated:
            raise RowError(f"row {seq + 1}: torn final line")
        seq, prev = row["seq"], row["hash"]
        yield row
