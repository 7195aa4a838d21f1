"""The decision journal (tier T1): hash-chained, fsync'd JSONL, one row per kernel decision.

``Journal`` appends durable rows to a file (opt-in via ``FAK_AUDIT_JOURNAL``, opened by the
kernel's builder) and implements ``fak.abi.AuditJournal``; ``MemoryJournal`` is the in-memory
double; ``verify`` checks a file row by row. Rows carry names, verdicts and sha256 digests,
never argument or result bytes.
"""

from fak.journal.filejournal import Journal, JournalCorruptError, JournalHead, open_error_line
from fak.journal.memory import MemoryJournal
from fak.journal.record import (
    DIGEST_FIELDS,
    FIELDS,
    JournalKind,
    RowError,
    build_row,
    check_line,
    journal_record,
    row_hash,
)
from fak.journal.seek import journal_rows, rows_after
from fak.journal.verify import VerifyReport, read_rows, verify, verify_lines

__all__ = [
    "DIGEST_FIELDS",
    "FIELDS",
    "Journal",
    "JournalCorruptError",
    "JournalHead",
    "JournalKind",
    "MemoryJournal",
    "RowError",
    "VerifyReport",
    "build_row",
    "check_line",
    "journal_record",
    "journal_rows",
    "open_error_line",
    "read_rows",
    "row_hash",
    "rows_after",
    "verify",
    "verify_lines",
]
