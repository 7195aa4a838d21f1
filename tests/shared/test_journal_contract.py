"""The journal contract, run against every backend: memory, file and PostgreSQL.

Each backend writes the same rows (one canonical JSON line per decision, chained by hash), so
one verifier (``fak.journal.verify_lines``) checks all of them, and the tamper laws hold for the
database as for the file: an edited, deleted or reordered row fails at that row.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner

from fak.abi import JournalSink
from fak.cli.main import cli
from fak.journal import Journal, MemoryJournal, RowError, verify_lines
from fak.journal.breaker import BreakerState
from fak.journal.postgres import JournalUnavailable, PostgresJournal, verify_dsn


def _record(i: int, kind: str = "DECIDE") -> dict[str, str]:
    return {
        "kind": kind,
        "tool": f"tool_{i}",
        "trace_id": f"trace-{i}",
        "verdict": "ALLOW",
        "by": "monitor",
        "digest": hashlib.sha256(str(i).encode()).hexdigest(),
    }


def _lines(journal: Any) -> bytes:
    if isinstance(journal, Journal):
        return journal.path.read_bytes()
    return bytes(journal.lines())


def _verify(journal: Any) -> Any:
    data = _lines(journal)
    return verify_lines((line, True) for line in data.splitlines())


@pytest.fixture(params=["memory", "file", "postgres"])
def journal(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "memory":
        yield MemoryJournal()
    elif request.param == "file":
        with Journal(tmp_path / "j.jsonl") as j:
            yield j
    else:
        with PostgresJournal(request.getfixturevalue("postgres_dsn")) as j:
            yield j


def test_every_backend_is_a_sink(journal: Any) -> None:
    assert isinstance(journal, JournalSink)


def test_rows_chain_and_verify_with_the_one_verifier(journal: Any) -> None:
    for i in range(25):
        journal.append(_record(i))
    report = _verify(journal)
    assert report.ok and report.rows == 25
    assert journal.head.seq == 25 and journal.head.hash == report.head_hash
    assert [r["seq"] for r in journal.tail(3)] == [23, 24, 25]


@pytest.mark.parametrize(
    "record",
    [
        {"kind": "DECIDE", "digest": "the raw argument bytes"},
        {"kind": "DECIDE", "result_digest": "a" * 63},
        {"kind": "DECIDE", "payload": "bytes"},
        {"tool": "x"},
    ],
)
def test_records_that_could_carry_content_are_refused_and_nothing_is_written(
    journal: Any, record: dict[str, object]
) -> None:
    with pytest.raises(RowError):
        journal.append(record)
    assert _lines(journal) == b""


def test_the_database_holds_the_file_journals_exact_bytes(
    postgres_dsn: str, tmp_path: Path
) -> None:
    class Clock:
        t = 1_700_000_000.0

        def now(self) -> float:
            self.t += 0.25
            return self.t

        def monotonic(self) -> float:
            return self.t

    with (
        Journal(tmp_path / "j.jsonl", clock=Clock()) as f,
        PostgresJournal(postgres_dsn, clock=Clock()) as p,
    ):
        for i in range(10):
            f.append(_record(i))
            p.append(_record(i))
        assert p.lines() == f.path.read_bytes()


# --- one chain for the fleet ----------------------------------------------------------------


def test_many_writers_in_many_threads_leave_one_chain(postgres_dsn: str) -> None:
    writers = [PostgresJournal(postgres_dsn, max_connections=4) for _ in range(3)]

    def work(j: PostgresJournal, base: int) -> None:
        for i in range(40):
            j.append(_record(base + i))

    threads = [threading.Thread(target=work, args=(writers[k % 3], k * 1000)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    report = verify_dsn(postgres_dsn)
    assert report.ok and report.rows == 240, report
    for j in writers:
        j.close()


def test_rows_after_reads_the_feed_by_cursor(postgres_dsn: str) -> None:
    with PostgresJournal(postgres_dsn) as j:
        for i in range(12):
            j.append(_record(i))
        assert [r["seq"] for r in j.rows_after(0, 5)] == [1, 2, 3, 4, 5]
        assert [r["seq"] for r in j.rows_after(10, 5)] == [11, 12]
        assert j.rows_after(12, 5) == []


# --- tamper laws on the database ------------------------------------------------------------


def _sql(dsn: str, statement: str, *args: object) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(statement, args or None)


@pytest.fixture
def filled(postgres_dsn: str) -> str:
    with PostgresJournal(postgres_dsn) as j:
        for i in range(8):
            j.append(_record(i))
    assert verify_dsn(postgres_dsn).ok
    return postgres_dsn


def test_an_edited_row_fails_at_that_row(filled: str) -> None:
    _sql(filled, "UPDATE fak_journal SET line = replace(line, 'tool_4', 'tool_X') WHERE seq = 5")
    report = verify_dsn(filled)
    assert not report.ok and report.bad_row == 5 and "tampered" in report.error


def test_a_deleted_row_fails_at_that_row(filled: str) -> None:
    _sql(filled, "DELETE FROM fak_journal WHERE seq = 3")
    report = verify_dsn(filled)
    assert not report.ok and report.bad_row == 3 and "sequence gap" in report.error


def test_swapped_rows_fail_at_the_first_moved_row(filled: str) -> None:
    _sql(
        filled,
        "UPDATE fak_journal SET seq = CASE seq WHEN 4 THEN 6 ELSE 4 END + 100 WHERE seq IN (4, 6)",
    )
    _sql(filled, "UPDATE fak_journal SET seq = seq - 100 WHERE seq > 100")
    report = verify_dsn(filled)
    assert not report.ok and report.bad_row == 4


def test_dropped_trailing_rows_are_caught_by_the_head_row(filled: str) -> None:
    _sql(filled, "DELETE FROM fak_journal WHERE seq > 6")
    report = verify_dsn(filled)
    assert not report.ok and report.rows == 6 and "head row" in report.error


def test_fak_journal_verify_takes_a_dsn(filled: str) -> None:
    runner = CliRunner()
    ok = runner.invoke(cli, ["journal", "verify", filled])
    assert ok.exit_code == 0, ok.output
    assert ok.output.startswith("ok: 8 rows verified")
    _sql(filled, "UPDATE fak_journal SET line = replace(line, 'tool_1', 'tool_Y') WHERE seq = 2")
    bad = runner.invoke(cli, ["journal", "verify", "--json", filled])
    assert bad.exit_code == 1 and '"bad_row":2' in bad.output


def test_an_unreachable_database_is_refused_with_unavailable(postgres_dsn: str) -> None:
    port = postgres_dsn.rsplit(":", 1)[1].split("/")[0]
    dead = postgres_dsn.replace(f":{port}/", ":1/")
    with pytest.raises(JournalUnavailable) as info:
        PostgresJournal(dead, timeout_s=0.5)
    assert "cannot open the journal" in str(info.value)
    runner = CliRunner()
    out = runner.invoke(cli, ["journal", "verify", dead])
    assert out.exit_code == 2 and "cannot read" in out.output


def test_a_restarted_database_is_used_again_on_the_first_append(private_postgres: Any) -> None:
    """No waiting out the pool's reconnect back-off: the first append after the database is
    back succeeds, and the chain continues from the head it left."""
    with PostgresJournal(private_postgres.dsn) as j:
        j.append(_record(1))
        private_postgres.kill()
        for i in range(3):  # the back-off would now be several seconds long
            with pytest.raises(JournalUnavailable):
                j.append(_record(2 + i))
        private_postgres.start()
        time.sleep(j.breaker.retry_in)  # the breaker's back-off (0.25 s), not the pool's
        j.append(_record(9))
        assert j.ping()
        assert [r["seq"] for r in j.tail()] == [1, 2]
    assert verify_dsn(private_postgres.dsn).ok


def test_D8_a_stopped_database_is_refused_at_once_and_probed_after_a_back_off(
    private_postgres: Any,
) -> None:
    """With the database down an append used to wait out the pool (2 s, more under load):
    now the first failure opens the breaker and every append after it is refused without
    trying, with the stable code, until a probe after the back-off finds the database back."""
    with PostgresJournal(private_postgres.dsn) as j:
        j.append(_record(1))
        private_postgres.stop()
        with pytest.raises(JournalUnavailable):
            j.append(_record(2))  # this one finds the database gone and trips the breaker
        assert (j.breaker.state, j.breaker.trips) == (BreakerState.OPEN, 1)
        started = time.monotonic()
        refused = []
        for i in range(50):
            with pytest.raises(JournalUnavailable) as info:
                j.append(_record(3 + i))
            refused.append(info.value.code)
        assert not j.ping()
        assert time.monotonic() - started < 2.0  # 50 refusals and a ping, none waited
        assert set(refused) == {"journal_unavailable"}
        time.sleep(j.breaker.retry_in)
        with pytest.raises(JournalUnavailable):
            j.append(_record(60))  # the probe: still down, the back-off doubles
        assert (j.breaker.state, j.breaker.retry_in > 0.25) == (BreakerState.OPEN, True)
        private_postgres.start()
        time.sleep(j.breaker.retry_in)
        j.append(_record(61))  # the probe connects, replaces the pool and closes the breaker
        assert (j.breaker.state, j.breaker.trips) == (BreakerState.CLOSED, 1)
        j.append(_record(62))
        assert [r["seq"] for r in j.tail()] == [1, 2, 3]
    assert verify_dsn(private_postgres.dsn).ok
