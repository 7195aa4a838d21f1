"""What a witness hold was opened on: the evidence an approver reads (tier T2).

When the kernel holds a call (REQUIRE_WITNESS), the hold itself binds only the tool, the
argument digest and an expiry. ``HoldEvidence`` keeps, beside it and in this process's memory,
what a person needs to judge it: the call's arguments with the manifest's ``redact_fields``
replaced as the monitor replaces them and every credential the secret screen finds masked (in
the texts too), the rule's claim, the user's own messages of that run and the tool results the
model had been shown (after the wall: a quarantined result is its stub).
Bounded (oldest first out) and truncated per text; never logged or journaled. A hold opened by
another worker of a shared book has no evidence here (``None``): the console says so.
``QuarantineNote`` is the same for a held result: its id, tool, reason, detector, the spans cut
out (offsets, no bytes) and the stub the model saw instead; the newest few hundred are kept.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import orjson

from fak.abi import Piece, PieceKind, ToolCall, ToolResult
from fak.kernel.quarantine import Admission
from fak.policy.monitor import REDACTED
from fak.screen.secrets import find_secrets

__all__ = [
    "EvidenceBook",
    "HoldEvidence",
    "QuarantineNote",
    "ResultSeen",
    "gather",
    "masked",
    "note_of",
]

MAX_STUB: Final = 4096  # characters kept of what the model saw instead of a held result
MAX_TEXT: Final = 16_384  # characters kept of one user message or tool result
MAX_PIECES: Final = 16  # the newest user messages and results kept (each)
DEFAULT_CAPACITY: Final = 1024
NOTES: Final = 256  # quarantine notes kept


@dataclass(frozen=True, slots=True)
class ResultSeen:
    """One tool result as the model was shown it."""

    tool: str
    call_id: str
    text: str
    truncated: bool = False


@dataclass(frozen=True, slots=True)
class HoldEvidence:
    hold_id: str
    tool: str
    trace_id: str
    arguments: Mapping[str, Any]  # redacted; a non-object is kept under "_raw"
    claim: str
    by: str
    user: tuple[str, ...]
    results: tuple[ResultSeen, ...]
    context: bool  # False: the door passed no run context (judged as the worst case)

    def to_json(self) -> dict[str, Any]:
        return {
            "hold_id": self.hold_id,
            "tool": self.tool,
            "trace_id": self.trace_id,
            "arguments": dict(self.arguments),
            "claim": self.claim,
            "by": self.by,
            "user": list(self.user),
            "results": [
                {"tool": r.tool, "call_id": r.call_id, "text": r.text, "truncated": r.truncated}
                for r in self.results
            ],
            "context": self.context,
        }


@dataclass(frozen=True, slots=True)
class QuarantineNote:
    """One result held out of the model's context, as an operator may see it (no held bytes)."""

    qid: str
    tool: str
    call_id: str
    trace_id: str
    kind: str  # the verdict: QUARANTINE or DENY
    reason: str
    detector: str
    length: int  # bytes held
    digest: str
    spans: tuple[tuple[str, int, int, str], ...]  # (span id, start, end, reason)
    stub: str  # what the model saw instead (a stub, or the result with its spans cut out)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.qid,
            "tool": self.tool,
            "call_id": self.call_id,
            "trace_id": self.trace_id,
            "kind": self.kind,
            "reason": self.reason,
            "detector": self.detector,
            "length": self.length,
            "digest": self.digest,
            "spans": [
                {"id": i, "start": start, "end": end, "reason": why}
                for i, start, end, why in self.spans
            ],
            "stub": self.stub,
        }


def note_of(result: ToolResult, admission: Admission) -> QuarantineNote:
    verdict = admission.verdict
    return QuarantineNote(
        qid=admission.quarantine_id,
        tool=result.tool,
        call_id=result.call_id,
        trace_id=result.trace_id,
        kind=str(verdict.kind),
        reason=verdict.reason.name,
        detector=verdict.meta.get("detector", "") or verdict.by,
        length=admission.ref.length if admission.ref is not None else 0,
        digest=admission.digest,
        spans=tuple((s.id, s.start, s.end, s.reason.name) for s in admission.spans),
        stub=bytes(admission.payload[: MAX_STUB * 4]).decode("utf-8", "replace")[:MAX_STUB],
    )


def masked(text: str) -> str:
    """``text`` with every credential the secret screen validates replaced by
    ``[SECRET:<kind>]`` (an approver needs to see that a key is sent, not the key)."""
    if not text:
        return text
    raw = text.encode("utf-8", "surrogatepass")
    hits = find_secrets(raw)
    if not hits:
        return text
    parts: list[bytes] = []
    at = 0
    for hit in sorted(hits, key=lambda h: h.start):
        if hit.start < at:
            continue
        parts += [raw[at : hit.start], f"[SECRET:{hit.kind}]".encode()]
        at = hit.end
    parts.append(raw[at:])
    return b"".join(parts).decode("utf-8", "replace")


def _redact(value: Any, hidden: frozenset[str]) -> Any:
    if isinstance(value, Mapping):
        return {
            k: (REDACTED if isinstance(k, str) and k.lower() in hidden else _redact(v, hidden))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_redact(v, hidden) for v in value]
    if isinstance(value, str):
        return masked(value)
    return value


def _arguments(
    args: Mapping[str, Any] | str | bytes | None, hidden: frozenset[str]
) -> Mapping[str, Any]:
    parsed: Any = args
    if isinstance(args, bytes):
        args = args.decode("utf-8", "replace")
    if args is None:
        parsed = {}
    elif isinstance(args, str):
        try:
            parsed = orjson.loads(args) if args.strip() else {}
        except orjson.JSONDecodeError:
            parsed = None
    if not isinstance(parsed, Mapping):
        return {"_raw": str(args)[:MAX_TEXT]}
    redacted: Mapping[str, Any] = _redact(parsed, hidden)
    return redacted


def gather(
    hold_id: str, call: ToolCall, claim: str, by: str, redact_fields: frozenset[str]
) -> HoldEvidence:
    """The evidence for one hold, from the call and its run context."""
    users: list[str] = []
    results: list[Piece] = []
    ctx = call.context
    for piece in ctx.pieces if ctx is not None else ():
        if piece.kind is PieceKind.USER:
            users.append(piece.text)
        elif piece.kind is PieceKind.RESULT:
            results.append(piece)
    kept = results[-MAX_PIECES:]
    seen = tuple(
        ResultSeen(p.tool, p.call_id, masked(p.text[:MAX_TEXT]), len(p.text) > MAX_TEXT)
        for p in kept
    )
    return HoldEvidence(
        hold_id=hold_id,
        tool=call.tool,
        trace_id=call.trace_id,
        arguments=_arguments(call.args, redact_fields),
        claim=claim,
        by=by,
        user=tuple(masked(u[:MAX_TEXT]) for u in users[-MAX_PIECES:]),
        results=seen,
        context=ctx is not None,
    )


class EvidenceBook:
    """The evidence of this process's holds, by hold id; the newest ``capacity`` kept."""

    __slots__ = ("_capacity", "_entries", "_lock")

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self._capacity = max(1, capacity)
        self._entries: OrderedDict[str, HoldEvidence] = OrderedDict()
        self._lock = threading.Lock()

    def put(self, evidence: HoldEvidence) -> None:
        """Record (or refresh: a re-proposal of a held call carries the newer run)."""
        with self._lock:
            self._entries[evidence.hold_id] = evidence
            self._entries.move_to_end(evidence.hold_id)
            while len(self._entries) > self._capacity:
                self._entries.popitem(last=False)

    def get(self, hold_id: str) -> HoldEvidence | None:
        with self._lock:
            return self._entries.get(hold_id)
