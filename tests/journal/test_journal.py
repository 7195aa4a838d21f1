"""The decision journal: chained rows, durability, reopen, torn tails, and tamper evidence."""

from __future__ import annotations

import hashlib
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fak.abi import JournalSink
from fak.journal import (
    FIELDS,
    Journal,
    JournalCorruptError,
    JournalKind,
    MemoryJournal,
    RowError,
    journal_record,
    read_rows,
    row_hash,
    verify,
)

DIGEST = hashlib.sha256(b"arguments").hexdigest()


class FakeClock:
    def __init__(self) -> None:
        self.t = 1_700_000_000.0

    def now(self) -> float:
        self.t += 0.5
        return self.t

    def monotonic(self) -> float:
        return self.t


def _record(i: int, kind: str = "DECIDE") -> dict[str, str]:
    return {
        "kind": kind,
        "tool": f"tool_{i}",
        "trace_id": f"trace-{i}",
        "verdict": "ALLOW",
        "reason": "",
        "by": "monitor",
        "digest": hashlib.sha256(str(i).encode()).hexdigest(),
    }


def _write(path: Path, n: int) -> None:
    with Journal(path, clock=FakeClock()) as journal:
        for i in range(n):
            journal.append(_record(i))


def test_journal_implements_the_sink_protocol(tmp_path: Path) -> None:
    with Journal(tmp_path / "j.jsonl") as journal:
        assert isinstance(journal, JournalSink)
    assert isinstance(MemoryJournal(), JournalSink)


def test_rows_are_one_canonical_json_line_each_with_the_chain(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    with Journal(path, clock=FakeClock()) as journal:
        journal.append(_record(0))
        journal.append({**_record(1, "QUARANTINE"), "verdict": "QUARANTINE", "reason": "OVERSIZE"})
    lines = path.read_bytes().splitlines()
    first, second = (orjson.loads(line) for line in lines)
    assert list(first) == [
        "seq", "ts_unix_nano", "kind", "tool", "trace_id", "verdict", "by", "args_digest",
        "prev_hash", "hash",
    ]  # fmt: skip
    assert first["seq"] == 1 and first["prev_hash"] == ""
    assert first["ts_unix_nano"] == 1_700_000_000_500_000_000
    assert first["args_digest"] == hashlib.sha256(b"0").hexdigest()
    assert second["result_digest"] == hashlib.sha256(b"1").hexdigest()  # result-side kind
    assert "args_digest" not in second
    assert second["prev_hash"] == first["hash"] == row_hash(first)
    assert (second["verdict"], second["reason"]) == ("QUARANTINE", "OVERSIZE")
    assert set(first) <= set(FIELDS)


def test_verify_counts_rows_of_an_intact_journal(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    _write(path, 25)
    report = verify(path)
    assert (report.ok, report.rows, report.bad_row, report.torn) == (True, 25, 0, False)
    assert [row["seq"] for row in read_rows(path)] == list(range(1, 26))


def test_an_empty_journal_verifies_with_zero_rows(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    Journal(path).close()
    assert verify(path).ok and verify(path).rows == 0


def test_reopening_continues_the_chain(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    _write(path, 3)
    with Journal(path) as journal:
        assert journal.head.seq == 3
        journal.append(_record(3))
        assert journal.head.seq == 4
    report = verify(path)
    assert report.ok and report.rows == 4


def test_two_writers_share_one_chain(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    a, b = Journal(path), Journal(path)
    for i in range(6):
        (a if i % 2 else b).append(_record(i))
    a.close()
    b.close()
    report = verify(path)
    assert report.ok and report.rows == 6


def test_tail_keeps_recent_rows_in_memory(tmp_path: Path) -> None:
    with Journal(tmp_path / "j.jsonl", tail_rows=4) as journal:
        for i in range(10):
            journal.append(_record(i))
        assert [row["seq"] for row in journal.tail()] == [7, 8, 9, 10]
        assert [row["seq"] for row in journal.tail(2)] == [9, 10]


# --- what may not enter the journal -------------------------------------------------------------


@pytest.mark.parametrize(
    "record",
    [
        {"kind": "DECIDE", "digest": "the raw argument bytes"},
        {"kind": "DECIDE", "args_digest": "AKIAIOSFODNN7EXAMPLE"},
        {"kind": "DECIDE", "result_digest": "a" * 63},
        {"kind": "DECIDE", "payload": "bytes"},
        {"kind": "decide"},
        {"tool": "x"},
        {"kind": "DECIDE", "tool": 5},
    ],
)
def test_records_that_could_carry_content_are_refused_and_nothing_is_written(
    tmp_path: Path, record: dict[str, object]
) -> None:
    path = tmp_path / "j.jsonl"
    with Journal(path) as journal, pytest.raises(RowError):
        journal.append(record)
    assert path.read_bytes() == b""


def test_the_row_kinds_are_closed_and_spelled_as_on_disk(tmp_path: Path) -> None:
    assert [str(k) for k in JournalKind] == [
        "DECIDE",
        "DENY",
        "HOLD",
        "VDSO_HIT",
        "WITNESS_APPROVE",
        "WITNESS_REVOKE",
        "ADMIT",
        "PAGE_OUT",
        "PAGE_IN",
        "RESULT_DENY",
        "QUARANTINE",
        "QUARANTINE_SPAN",
        "MCP_SERVER_REQUEST",
        "MCP_TOOL",
        "MCP_TOOL_CHANGED",
        "TOMBSTONE",
        "KV_EVICT",
        "ROUTE",
    ]
    path = tmp_path / "j.jsonl"
    digest = hashlib.sha256(b"x").hexdigest()
    with Journal(path) as journal:
        with pytest.raises(RowError):
            journal.append({"kind": "NOT_A_KIND"})
        journal.append(journal_record(JournalKind.QUARANTINE, tool="t", digest=digest))
    row = next(read_rows(path))
    assert (row["kind"], row["tool"], row["result_digest"]) == ("QUARANTINE", "t", digest)
    assert "args_digest" not in row and "verdict" not in row


def test_long_names_are_truncated_not_refused(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    with Journal(path) as journal:
        journal.append({"kind": "DENY", "tool": "t" * 1000, "trace_id": "x" * 500})
    row = next(read_rows(path))
    assert (len(row["tool"]), len(row["trace_id"])) == (256, 128)


# --- torn tails ---------------------------------------------------------------------------------


def test_a_torn_final_line_is_reported_then_cut_on_reopen(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    _write(path, 5)
    whole = path.read_bytes()
    with path.open("ab") as handle:
        handle.write(b'{"seq":6,"ts_unix_nano":17000000')
    report = verify(path)
    assert (report.ok, report.rows, report.bad_row, report.torn) == (False, 5, 6, True)
    with Journal(path) as journal:
        assert journal.repaired_bytes == len(b'{"seq":6,"ts_unix_nano":17000000')
        assert journal.head.seq == 5
        journal.append(_record(5))
    assert path.read_bytes().startswith(whole)
    report = verify(path)
    assert report.ok and report.rows == 6


def test_a_complete_but_unterminated_final_row_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    _write(path, 3)
    path.write_bytes(path.read_bytes()[:-1])  # the crash lost only the newline
    assert verify(path).torn
    with Journal(path) as journal:
        assert journal.head.seq == 3
    assert verify(path).ok and verify(path).rows == 3


def test_a_file_that_is_not_a_journal_is_never_modified(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(b"my important notes, no newline at the end")
    with pytest.raises(JournalCorruptError, match="refusing"):
        Journal(path)
    assert path.read_bytes() == b"my important notes, no newline at the end"


def test_a_tampered_last_row_stops_the_journal_from_opening(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    _write(path, 3)
    path.write_bytes(path.read_bytes().replace(b'"tool_2"', b'"tool_X"'))
    with pytest.raises(JournalCorruptError, match="verify"):
        Journal(path)


def test_a_flipped_final_newline_is_tampering_not_a_torn_write(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    _write(path, 3)
    data = bytearray(path.read_bytes())
    data[-1] = ord("X")
    path.write_bytes(bytes(data))
    assert verify(path).bad_row == 3
    with pytest.raises(JournalCorruptError):
        Journal(path)
    assert path.read_bytes() == bytes(data)


# --- tamper evidence ----------------------------------------------------------------------------


def _rows_of(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def test_a_deleted_row_fails_at_that_row(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    _write(path, 8)
    rows = _rows_of(path)
    del rows[3]
    path.write_bytes(b"".join(rows))
    report = verify(path)
    assert (report.ok, report.bad_row, report.rows) == (False, 4, 3)
    assert "sequence gap" in report.error


def test_a_reordered_row_fails_at_the_first_moved_row(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    _write(path, 8)
    rows = _rows_of(path)
    rows[4], rows[5] = rows[5], rows[4]
    path.write_bytes(b"".join(rows))
    report = verify(path)
    assert (report.ok, report.bad_row) == (False, 5)


def test_a_renumbered_deletion_still_fails_on_the_chain(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    _write(path, 5)
    rows = [orjson.loads(r) for r in _rows_of(path)]
    del rows[1]
    for i, row in enumerate(rows, start=1):
        row["seq"] = i
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    report = verify(path)
    assert (report.ok, report.bad_row) == (False, 2)  # row 2 was renumbered: its hash breaks


def test_rehashing_one_row_breaks_the_next_link(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    _write(path, 5)
    rows = [orjson.loads(r) for r in _rows_of(path)]
    rows[2]["verdict"] = "DENY"
    rows[2]["hash"] = row_hash(rows[2])
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    report = verify(path)
    assert (report.ok, report.bad_row) == (False, 4)
    assert "broken chain" in report.error


_CLOCK_RECORDS = st.lists(
    st.fixed_dictionaries(
        {
            "kind": st.sampled_from(["DECIDE", "DENY", "QUARANTINE", "VDSO_HIT"]),
            "tool": st.text(max_size=20),
            "trace_id": st.text(alphabet="abcdef0123456789-", max_size=16),
            "verdict": st.sampled_from(["ALLOW", "DENY", "QUARANTINE", "TRANSFORM"]),
            "reason": st.sampled_from(["", "DEFAULT_DENY", "SECRET_EXFIL"]),
            "by": st.sampled_from(["monitor", "ctxmmu", "vdso"]),
            "digest": st.just(DIGEST),
        }
    ),
    min_size=1,
    max_size=6,
)


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(_CLOCK_RECORDS, st.data())
def test_law_any_flipped_byte_fails_verify_at_its_row(
    tmp_path: Path, records: list[dict[str, str]], data: st.DataObject
) -> None:
    journal = MemoryJournal(clock=FakeClock())
    for record in records:
        journal.append(record)
    blob = journal.lines()
    path = tmp_path / "flip.jsonl"
    path.write_bytes(blob)
    assert verify(path).ok and verify(path).rows == len(records)
    at = data.draw(st.integers(0, len(blob) - 1), label="offset")
    mask = data.draw(st.integers(1, 255), label="xor")
    flipped = bytearray(blob)
    flipped[at] ^= mask
    path.write_bytes(bytes(flipped))
    row_of_byte = blob.count(b"\n", 0, at) + 1
    report = verify(path)
    assert not report.ok
    assert report.bad_row == row_of_byte


def test_memory_journal_matches_the_file_journal(tmp_path: Path) -> None:
    mem = MemoryJournal(clock=FakeClock())
    for i in range(4):
        mem.append(_record(i))
    path = tmp_path / "j.jsonl"
    _write(path, 4)
    assert path.read_bytes() == mem.lines()
