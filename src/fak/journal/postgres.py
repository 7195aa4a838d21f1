"""The decision journal on PostgreSQL (``FAK_JOURNAL_URL=postgresql://…``): one chain, N workers.

Rows are the file journal's rows, byte for byte: table ``fak_journal`` holds ``(seq, line)``
where ``line`` is the canonical JSON the file would carry, so one verifier checks both
(``verify_dsn`` runs ``fak.journal.verify_lines`` over the table). Appends from every worker
are serialised on the single row of ``fak_journal_head`` (``SELECT … FOR UPDATE``): the next
row is built from the head, inserted and the head moved, in one transaction, so the fleet never
forks the chain and ``append`` returns only after the commit (durable by PostgreSQL's
``synchronous_commit``). The head row is also the anchor ``verify_dsn`` compares the last row
with, so dropped trailing rows are seen.

A database that cannot be reached raises ``JournalUnavailable`` (a ``ConnectionError``) from
``append``: the kernel then refuses the decision it could not journal (fail closed). The first
such failure opens a circuit breaker (``fak.journal.breaker``): while it is open every append
and ``ping`` is refused at once with code ``journal_unavailable`` (no connect, no pool wait),
and one caller probes the database after a back-off (0.25 s doubling to 4 s); a probe that
connects replaces the pool and closes the breaker.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager
from typing import Any, Final

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from fak.abi import Clock
from fak.journal.breaker import Breaker, BreakerState
from fak.journal.filejournal import JournalHead
from fak.journal.record import build_row, check_line, row_line
from fak.journal.verify import VerifyReport, verify_lines

__all__ = [
    "JournalUnavailable",
    "PostgresJournal",
    "is_postgres_url",
    "verify_dsn",
]

_log = logging.getLogger(__name__)

_SCHEMA_LOCK: Final = 0x66616B4A  # "fakJ": serialises schema creation across workers
_SCHEMA: Final = (
    "CREATE TABLE IF NOT EXISTS fak_journal (seq BIGINT PRIMARY KEY, line TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS fak_journal_head ("
    " id SMALLINT PRIMARY KEY CHECK (id = 1), seq BIGINT NOT NULL, hash TEXT NOT NULL)",
    "INSERT INTO fak_journal_head (id, seq, hash) VALUES (1, 0, '') ON CONFLICT (id) DO NOTHING",
)
_HEAD_FOR_UPDATE: Final = "SELECT seq, hash FROM fak_journal_head WHERE id = 1 FOR UPDATE"
_APPEND: Final = (
    "WITH ins AS (INSERT INTO fak_journal (seq, line) VALUES (%(seq)s, %(line)s)) "
    "UPDATE fak_journal_head SET seq = %(seq)s, hash = %(hash)s WHERE id = 1"
)


class JournalUnavailable(ConnectionError):
    """The journal database cannot be reached; nothing was appended. ``code`` is stable:
    ``journal_unavailable``."""

    code: Final = "journal_unavailable"


class _Down(JournalUnavailable):
    """The database did not answer (as opposed to a statement it refused): trips the breaker."""


_OPEN_MSG: Final = (
    "the journal database is unavailable (journal_unavailable): refused without trying while "
    "the circuit is open; the next probe is in {:.2f} s"
)


def is_postgres_url(value: str) -> bool:
    return value.startswith(("postgresql://", "postgres://"))


def _redact(dsn: str) -> str:
    scheme, sep, rest = dsn.partition("://")
    if not sep or "@" not in rest:
        return dsn
    creds, _, host = rest.rpartition("@")
    return f"{scheme}://{creds.split(':', 1)[0]}@{host}"


class PostgresJournal:
    """A hash-chained journal in PostgreSQL shared by every worker; an ``AuditJournal``."""

    def __init__(
        self,
        dsn: str,
        *,
        clock: Clock | None = None,
        max_connections: int = 8,
        timeout_s: float = 2.0,
        breaker: Breaker | None = None,
    ) -> None:
        if not is_postgres_url(dsn):
            msg = f"not a PostgreSQL URL (postgresql://USER@HOST:PORT/DB): {_redact(dsn)[:80]}"
            raise ValueError(msg)
        self._dsn = dsn
        self._clock = clock
        self._timeout = timeout_s
        self._max_connections = max(1, max_connections)
        self._swap_lock = threading.Lock()
        self._healed_at = 0.0
        self.breaker = breaker if breaker is not None else Breaker()
        self._pool = self._new_pool()
        try:
            self._pool.open(wait=True, timeout=max(timeout_s, 5.0))
            self._create_schema()
        except Exception as exc:
            self._pool.close()
            msg = f"cannot open the journal at {_redact(dsn)}: {type(exc).__name__}: {exc}"
            raise JournalUnavailable(msg) from exc

    def _new_pool(self) -> ConnectionPool:
        return ConnectionPool(
            self._dsn,
            min_size=1,
            max_size=self._max_connections,
            timeout=self._timeout,
            open=False,
            name="fak-journal",
            kwargs={
                "connect_timeout": max(1, int(self._timeout)),
                "options": f"-c statement_timeout={int(self._timeout * 1000) + 3000}",
            },
        )

    def _heal(self, failed: ConnectionPool) -> bool:
        """After a failure on ``failed``: True when a fresh pool is ready to retry on.

        The pool retries a lost database with a growing back-off (1 s, 2 s, 4 s, …), so after a
        long outage it would come back slowly; instead, once the database accepts a direct
        connection again, the pool is replaced and every later append uses the fresh one. A
        direct attempt is made at most twice a second per journal.
        """
        with self._swap_lock:
            if self._pool is not failed:
                return True  # another thread already replaced it
            now = time.monotonic()
            if now - self._healed_at < 0.5:
                return False
            self._healed_at = now
        return self._replace_pool(failed)

    def _replace_pool(self, failed: ConnectionPool) -> bool:
        """A direct connection to the database; when it answers, a fresh pool replaces
        ``failed`` (True). False while the database is still down."""
        try:
            with psycopg.connect(self._dsn, connect_timeout=max(1, int(self._timeout))):
                pass
        except psycopg.Error:
            return False  # still down: fail closed
        with self._swap_lock:
            if self._pool is not failed:
                return True  # another thread already replaced it
            fresh = self._new_pool()
            fresh.open(wait=False)
            self._pool = fresh
        failed.close(timeout=0)
        _log.warning("journal database reachable again: connection pool replaced")
        return True

    def _gate(self) -> None:
        """Refuse at once while the breaker is open; as the probe, reconnect first."""
        match self.breaker.admit():
            case BreakerState.CLOSED:
                return
            case BreakerState.PROBING:
                if not self._replace_pool(self._pool):
                    self.breaker.failure()
                    raise JournalUnavailable(_OPEN_MSG.format(self.breaker.retry_in))
            case BreakerState.OPEN:
                raise JournalUnavailable(_OPEN_MSG.format(self.breaker.retry_in))

    @property
    def url(self) -> str:
        """The DSN without its password."""
        return _redact(self._dsn)

    def _create_schema(self) -> None:
        with self._pool.connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
            for statement in _SCHEMA:
                conn.execute(statement)

    def _now(self) -> int:
        if self._clock is None:
            return time.time_ns()
        return int(self._clock.now() * 1_000_000_000)

    # -- writing ----------------------------------------------------------------------------
    def append(self, record: Mapping[str, Any]) -> None:
        """Chain and commit one row; returns only once PostgreSQL has committed it.

        ``RowError`` for an unacceptable record (nothing written); ``JournalUnavailable`` when
        the database cannot be reached or the commit fails (nothing written, or — if the
        connection died during the commit — possibly written: the chain stays valid either way).
        """
        build_row(record, seq=1, ts_unix_nano=0, prev="")  # refuse a bad record before any I/O
        self._gate()
        try:
            self._append(record)
        except _Down:
            self.breaker.failure()
            raise
        except Exception:
            self.breaker.success()  # the database answered (and refused the statement)
            raise
        self.breaker.success()

    def _append(self, record: Mapping[str, Any]) -> None:
        for attempt in (1, 2):
            written = False
            pool = self._pool
            try:
                with pool.connection() as conn, conn.transaction():
                    head = conn.execute(_HEAD_FOR_UPDATE).fetchone()
                    if head is None:
                        raise JournalUnavailable("the journal head row is missing")
                    row = build_row(
                        record, seq=int(head[0]) + 1, ts_unix_nano=self._now(), prev=str(head[1])
                    )
                    line = row_line(row)[:-1].decode()
                    written = True
                    conn.execute(_APPEND, {"seq": row["seq"], "line": line, "hash": row["hash"]})
                return
            except (psycopg.OperationalError, psycopg.InterfaceError, PoolTimeout) as exc:
                # a connection lost while idle (a restarted database) fails before anything is
                # written: once the database answers again, one attempt on a fresh pool is
                # safe; after a write began, or while it is down, report it
                if attempt == 1 and not written and self._heal(pool):
                    continue
                msg = f"the journal database is unavailable ({type(exc).__name__})"
                raise _Down(msg) from exc
            except psycopg.Error as exc:
                msg = f"the journal append failed ({type(exc).__name__})"
                raise JournalUnavailable(msg) from exc

    # -- reading ----------------------------------------------------------------------------
    @property
    def head(self) -> JournalHead:
        try:
            with self._pool.connection() as conn:
                got = conn.execute("SELECT seq, hash FROM fak_journal_head WHERE id = 1").fetchone()
        except (psycopg.Error, PoolTimeout) as exc:
            raise JournalUnavailable("the journal database is unavailable") from exc
        return JournalHead(0, "") if got is None else JournalHead(int(got[0]), str(got[1]))

    def tail(self, limit: int | None = None) -> list[dict[str, Any]]:
        """The last ``limit`` rows (oldest first), each checked against itself."""
        if limit is not None and limit <= 0:
            return []
        sql = "SELECT line FROM fak_journal ORDER BY seq DESC"
        with self._pool.connection() as conn:
            if limit is None:
                got = conn.execute(sql).fetchall()
            else:
                got = conn.execute(sql + " LIMIT %s", (limit,)).fetchall()
        return [check_line(r[0].encode(), seq=None, prev=None) for r in reversed(got)]

    def rows_after(self, since: int, limit: int) -> list[dict[str, Any]]:
        """Up to ``limit`` rows with ``seq > since`` (the events feed's cursor), checked as a
        chain among themselves and against the row at ``since``; ``RowError`` on a bad row."""
        since = max(0, int(since))
        with self._pool.connection() as conn:
            got = conn.execute(
                "SELECT seq, line FROM fak_journal WHERE seq >= %s ORDER BY seq LIMIT %s",
                (since, max(0, limit) + 1),
            ).fetchall()
        prev: str | None = None
        rows: list[dict[str, Any]] = []
        expected = since + 1
        for seq, line in got:
            if seq == since:
                prev = check_line(line.encode(), seq=since, prev=None)["hash"]
                continue
            if len(rows) >= limit:
                break
            row = check_line(line.encode(), seq=expected, prev=prev)
            rows.append(row)
            prev, expected = row["hash"], expected + 1
        return rows

    def lines(self) -> bytes:
        """Every row as the file journal would have written it."""
        with self._pool.connection() as conn:
            got = conn.execute("SELECT line FROM fak_journal ORDER BY seq").fetchall()
        return b"".join(r[0].encode() + b"\n" for r in got)

    def group(self) -> AbstractContextManager[None]:
        """Each append is its own committed transaction: nothing to group."""
        return contextlib.nullcontext()

    @property
    def shared(self) -> bool:
        """One chain for the fleet, in a database that can be unreachable."""
        return True

    def ping(self) -> bool:
        """True when the database answers (for ``/healthz``); False at once while the breaker
        is open (a due probe is made here too)."""
        try:
            self._gate()
        except JournalUnavailable:
            return False
        if self.breaker.state is BreakerState.PROBING:
            self.breaker.success()  # the probe connected and the pool was replaced
            return True
        for attempt in (1, 2):
            pool = self._pool
            try:
                with pool.connection(timeout=self._timeout) as conn:
                    conn.execute("SELECT 1")
                return True
            except Exception:
                if attempt == 2 or not self._heal(pool):
                    break
        self.breaker.failure()
        return False

    # -- lifecycle --------------------------------------------------------------------------
    def close(self) -> None:
        self._pool.close()

    def __enter__(self) -> PostgresJournal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _stored_lines(conn: psycopg.Connection[Any]) -> Iterator[tuple[bytes, bool]]:
    with conn.cursor(name="fak_journal_verify") as cur:
        cur.itersize = 2000
        cur.execute("SELECT line FROM fak_journal ORDER BY seq")
        for (line,) in cur:
            yield line.encode(), True


def verify_dsn(dsn: str, *, timeout_s: float = 5.0) -> VerifyReport:
    """Check every row of the journal in the database at ``dsn`` (the file verifier's checks)
    and that the head row names the last row (so removed trailing rows are caught).

    ``JournalUnavailable`` when the database cannot be read.
    """
    try:
        with (
            psycopg.connect(dsn, connect_timeout=max(1, int(timeout_s))) as conn,
            conn.transaction(),
        ):
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            report = verify_lines(_stored_lines(conn))
            head = conn.execute("SELECT seq, hash FROM fak_journal_head WHERE id = 1").fetchone()
    except psycopg.errors.UndefinedTable as exc:
        msg = f"{_redact(dsn)} holds no fak journal (table fak_journal is missing)"
        raise JournalUnavailable(msg) from exc
    except psycopg.Error as exc:
        msg = f"cannot read the journal at {_redact(dsn)}: {type(exc).__name__}"
        raise JournalUnavailable(msg) from exc
    if (
        report.ok
        and head is not None
        and (int(head[0]), str(head[1]))
        != (
            report.rows,
            report.head_hash,
        )
    ):
        return VerifyReport(
            False,
            report.rows,
            report.rows + 1 if int(head[0]) > report.rows else report.rows,
            f"the head row says seq {int(head[0])}; the table ends at seq {report.rows} "
            "(rows were removed or replaced)",
            head_hash=report.head_hash,
        )
    return report
