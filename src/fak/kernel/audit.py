"""The kernel's audit writer: the one place the kernel builds journal rows (tier T2).

Every row the kernel appends (a decision, a result admission, a held span, a witness change)
is built here from typed values with a closed ``JournalKind``; names, verdicts and digests only,
never argument or result bytes. A row that cannot be appended is counted as a journal fault and
reported to the caller (which refuses what it cannot audit); it is never retried here.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from fak.abi import JournalSink, Reason, ToolCall, ToolResult, Verdict, VerdictKind
from fak.journal import JournalKind, journal_record
from fak.policy import args_digest

__all__ = ["AuditWriter", "reason_name"]

_log = logging.getLogger(__name__)


def reason_name(verdict: Verdict) -> str:
    """The reason as journaled: its name, or empty for ``Reason.NONE``."""
    return verdict.reason.name if verdict.reason != Reason.NONE else ""


class AuditWriter:
    """Appends the kernel's rows to ``journal`` (None: journaling is off, every append is a
    no-op that succeeds). ``on_fault`` is called once for each row that could not be appended."""

    __slots__ = ("_journal", "_on_fault")

    def __init__(self, journal: JournalSink | None, on_fault: Callable[[], None]) -> None:
        self._journal = journal
        self._on_fault = on_fault

    @property
    def journal(self) -> JournalSink | None:
        return self._journal

    def _append(self, record: dict[str, str], what: str) -> bool:
        journal = self._journal
        if journal is None:
            return True
        try:
            journal.append(record)
        except Exception as exc:
            _log.error("journal append failed (%s) %s", type(exc).__name__, what)
            self._on_fault()
            return False
        return True

    def call(
        self, kind: JournalKind, call: ToolCall, verdict: Verdict, policy: str, by: str = ""
    ) -> bool:
        """A decision about a proposed call (its argument digest, the policy in force)."""
        if self._journal is None:
            return True
        record = journal_record(
            kind,
            tool=call.tool,
            trace_id=call.trace_id,
            verdict=str(verdict.kind),
            reason=reason_name(verdict),
            by=(by or verdict.by)[:64],
            digest=args_digest(call.args),
            policy=policy,
        )
        return self._append(record, f"tool={call.tool}")

    def result(self, kind: JournalKind, result: ToolResult, verdict: Verdict, digest: str) -> bool:
        """A tool result's admission (the digest of its original bytes)."""
        if self._journal is None:
            return True
        record = journal_record(
            kind,
            tool=result.tool,
            trace_id=result.trace_id,
            verdict=str(verdict.kind),
            reason=reason_name(verdict),
            by=verdict.by,
            result_digest=digest,
        )
        return self._append(record, f"tool={result.tool}")

    def span(self, result: ToolResult, reason: Reason, digest: str) -> bool:
        """One span held out of a partly admitted result (its own digest)."""
        if self._journal is None:
            return True
        record = journal_record(
            JournalKind.QUARANTINE_SPAN,
            tool=result.tool,
            trace_id=result.trace_id,
            verdict=str(VerdictKind.QUARANTINE),
            reason=reason.name,
            by="ctxmmu",
            result_digest=digest,
        )
        return self._append(record, f"tool={result.tool}")

    def witness(
        self,
        kind: JournalKind,
        tool: str,
        hold_id: str,
        state: str,
        digest: str,
        policy: str,
        operator: str = "",
    ) -> bool:
        """A witness approval or revocation (the hold's argument digest). The row format has
        no principal column and a witness change has no trace of its own, so the operator who
        made it (``operator``, e.g. ``witness-key:alice``) is written as ``op:<operator>`` in
        ``trace_id``."""
        if self._journal is None:
            return True
        record = journal_record(
            kind,
            tool=tool,
            trace_id=f"op:{operator}"[:128] if operator else "",
            by=f"witness:{hold_id}"[:64],
            verdict=state.upper(),
            digest=digest,
            policy=policy,
        )
        return self._append(record, f"kind={kind}")

    def page_in(self, ident: str, verdict: str, digest: str, operator: str) -> bool:
        """An operator's page-in of a held result (``ident``: its quarantine id), allowed or
        refused by the re-screen; the operator in ``trace_id`` as for a witness change."""
        if self._journal is None:
            return True
        record = journal_record(
            JournalKind.PAGE_IN,
            trace_id=f"op:{operator}"[:128],
            verdict=verdict,
            by=f"quarantine:{ident}"[:64],
            result_digest=digest,
        )
        return self._append(record, "kind=PAGE_IN")
