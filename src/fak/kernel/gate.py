"""The result gate: the kernel's one admission of a tool result (tier T2).

Every door (a registered handler's result, the gateway's tool-role messages, the hook, the MCP
proxy, recall) reaches the wall through ``ResultGate.admit``: a text result that is JSON with
escapes is screened decoded as well (``fak.kernel.views``), the quarantine ledger decides,
and the decision is counted and journaled (digests only). A result the journal cannot record
does not enter the model's context: its bytes are withheld behind a stub. Held results leave a
note (no bytes) for the operator's console. Page-ins by an operator are journaled as well.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections import deque
from collections.abc import Callable
from typing import Final

import orjson

from fak.abi import Reason, ToolResult, Verdict, VerdictKind
from fak.journal import JournalKind
from fak.kernel.audit import AuditWriter
from fak.kernel.evidence import NOTES, QuarantineNote, note_of
from fak.kernel.quarantine import Admission, PageInRefused, QuarantineLedger
from fak.kernel.views import decoded_view, json_text_view, serialized

__all__ = ["UNAUDITED", "ResultGate", "as_read", "result_of"]

UNAUDITED: Final = Verdict.deny(Reason.DEFAULT_DENY, "journal", claim="audit journal unavailable")
"""The refusal of whatever the journal could not record: a call, or a result's bytes."""


class ResultGate:
    """Admits results through ``ledger``, journals each admission with ``audit`` and counts it
    with ``count`` (the kernel's counter names: admitted, paged, quarantined, result_denies,
    paged_in)."""

    __slots__ = ("_audit", "_count", "_ledger", "_notes")

    def __init__(
        self, ledger: QuarantineLedger, audit: AuditWriter, count: Callable[[str], None]
    ) -> None:
        self._ledger = ledger
        self._audit = audit
        self._count = count
        self._notes: deque[QuarantineNote] = deque(maxlen=NOTES)  # the newest held results

    def admit(self, result: ToolResult) -> Admission:
        """Screen a tool result before it may enter a model's context (the wall)."""
        result = as_read(result)
        admission = self._ledger.admit(result)
        verdict, digest = admission.verdict, admission.digest
        match verdict.kind:
            case VerdictKind.ALLOW:
                self._count("admitted")
                if not self._audit.result(JournalKind.ADMIT, result, verdict, digest):
                    return _withheld(admission)
            case VerdictKind.TRANSFORM:
                self._count("paged")
                if not self._audit.result(JournalKind.PAGE_OUT, result, verdict, digest):
                    return _withheld(admission)
            case VerdictKind.DENY:
                self._count("result_denies")
                self._audit.result(JournalKind.RESULT_DENY, result, verdict, digest)
                self._notes.append(note_of(result, admission))
            case _:
                self._count("quarantined")
                self._audit.result(JournalKind.QUARANTINE, result, verdict, digest)
                for span in admission.spans:  # a span hold: one row per span, its own digest
                    self._audit.span(result, span.reason, span.digest)
                self._notes.append(note_of(result, admission))
        return admission

    def notes(self) -> list[QuarantineNote]:
        """The results held out most recently, oldest first (no held bytes)."""
        return list(self._notes)

    def page_in(self, qid_or_ref: str, operator: str = "") -> bytes:
        """The original bytes of a cleared or paged-out result, re-screened first. An
        ``operator``'s page-in is journaled as PAGE_IN, allowed or refused."""
        try:
            data = self._ledger.page_in(qid_or_ref)
        except PageInRefused:
            if operator:
                self._audit.page_in(qid_or_ref, "REFUSED", "", operator)
            raise
        self._count("paged_in")
        if operator:
            digest = hashlib.sha256(data).hexdigest()
            self._audit.page_in(qid_or_ref, str(VerdictKind.ALLOW), digest, operator)
        return data


def as_read(result: ToolResult) -> ToolResult:
    """``result`` with what the model reads of it: a text result that is JSON with escapes gets
    its decoded text as its view (``json_text_view``), screened too; any other result as is."""
    if result.view is None:
        view = json_text_view(bytes(result.payload))
        if view is not None:
            return dataclasses.replace(result, view=view)
    return result


def result_of(tool: str, value: object, *, call_id: str = "", trace_id: str = "") -> ToolResult:
    """A result of any shape as the gate reads it: text, bytes or a JSON value. A JSON value
    travels as its canonical serialization and is screened as that and as what the model reads
    of it (every key and string leaf decoded, base64 text leaves opened)."""
    if isinstance(value, bytes | bytearray | memoryview):
        payload, view = bytes(value), None
    elif isinstance(value, str):
        payload, view = value.encode("utf-8", "replace"), None
    else:
        payload = serialized(value)
        view = decoded_view(value).encode("utf-8", "replace")
    return ToolResult(tool, payload, call_id, trace_id, view=view)


def _withheld(admission: Admission) -> Admission:
    """The stub that stands for a result the journal could not record: the audit trail must
    know everything the model was shown, so the stub carries no byte of it."""
    stub = orjson.dumps(
        {"_withheld": True, "reason": "audit journal unavailable", "len": len(admission.payload)},
        option=orjson.OPT_SORT_KEYS,
    )
    return Admission(UNAUDITED, stub, digest=admission.digest)
