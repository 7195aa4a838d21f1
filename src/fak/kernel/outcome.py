"""What a syscall returns: ``CallOutcome``, the deny-as-value payload, and its Reply (tier T2).

A refusal is a value: ``status="error"`` with the verdict, and a JSON payload carrying the
verdict kind, reason, disposition, who decided and a bounded witness naming only the offending
rule. A tool that ran returns ``status="ok"`` with the admitted bytes (which may be a pointer or
quarantine stub, see ``admission``); a tool that raised returns ``status="error"`` naming only
the exception type. ``outcome_reply`` reports any outcome through the one ReplyBuilder.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import orjson

from fak.abi import Reason, Verdict, VerdictKind
from fak.abi.replies import Reply, ReplyBuilder, reply_for_verdict
from fak.kernel.quarantine import Admission, admission_reply

__all__ = ["CallOutcome", "deny_value", "held_as_deny", "outcome_reply"]

OK: Final = "ok"
ERROR: Final = "error"


@dataclass(frozen=True, slots=True)
class CallOutcome:
    """The result of ``Kernel.syscall``.

    ``payload`` is the admitted result bytes, or for a refusal the JSON deny value, or for a tool
    fault a JSON error naming the exception type. ``served_by`` is ``vdso``, ``tool`` or ``""``
    (refused before dispatch).
    """

    status: str
    verdict: Verdict
    payload: bytes
    admission: Admission | None = None
    served_by: str = ""
    duration_ms: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == OK

    def json(self) -> Any:
        """The payload decoded as JSON, or as text when it is not JSON."""
        try:
            return orjson.loads(self.payload)
        except orjson.JSONDecodeError:
            return self.payload.decode("utf-8", "replace")


def held_as_deny(verdict: Verdict) -> Verdict:
    """A non-admitting fold result as the DENY that holds the call (a held call keeps its
    ``witness_id`` in the meta, so the refusal can say what an operator would approve)."""
    match verdict.kind:
        case VerdictKind.DENY:
            return verdict
        case VerdictKind.REQUIRE_WITNESS:
            meta = {**verdict.meta, "witness": "unwitnessed"}
            return Verdict.deny(Reason.UNWITNESSED, verdict.by, claim=verdict.claim, meta=meta)
        case VerdictKind.QUARANTINE:
            return Verdict.deny(verdict.reason, verdict.by, claim=verdict.claim, meta=verdict.meta)
    return Verdict.deny(Reason.DEFAULT_DENY, verdict.by, claim=verdict.claim, meta=verdict.meta)


def deny_value(verdict: Verdict, tool: str) -> dict[str, Any]:
    """The in-band refusal a loop consumes (``status``, ``verdict``, ``reason``, ...)."""
    out: dict[str, Any] = {
        "status": ERROR,
        "verdict": str(verdict.kind),
        "reason": verdict.reason.name,
        "disposition": str(verdict.disposition or ""),
        "by": verdict.by,
        "tool": tool,
    }
    if verdict.claim:
        out["witness"] = verdict.claim
    hold = verdict.meta.get("witness_id")
    if hold:
        out["witness_id"] = hold
        out["approve"] = f"fak witness approve {hold}"
    return out


def encode(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def outcome_reply(outcome: CallOutcome, tool: str = "") -> Reply:
    """S for a result that may enter context, D/I for a refusal or held result, E for a fault."""
    if not outcome.served_by:  # refused before dispatch
        return reply_for_verdict(outcome.verdict, {"tool": tool} if tool else None)
    if not outcome.ok:  # the tool ran and raised
        fault = {"tool": tool, **_error_fields(outcome.payload)}
        return ReplyBuilder().error("MCP-EXEC-E-001", fault)
    admission = outcome.admission
    if admission is not None and admission.quarantine_id:
        return admission_reply(admission)
    data: dict[str, Any] = {"result": outcome.json(), "served_by": outcome.served_by}
    if admission is not None and admission.verdict.kind == VerdictKind.TRANSFORM:
        data["paged"] = True
        if admission.ref is not None:
            data["ref"] = admission.ref.digest
            data["len"] = admission.ref.length
    if outcome.verdict.kind == VerdictKind.TRANSFORM and outcome.verdict.new_args is not None:
        data["dispatched_args"] = dict(outcome.verdict.new_args)
    return ReplyBuilder().success(data)


def _error_fields(payload: bytes) -> dict[str, Any]:
    try:
        value = orjson.loads(payload)
    except orjson.JSONDecodeError:
        return {}
    if not isinstance(value, dict):
        return {}
    return {k: value[k] for k in ("exception", "trace_id") if k in value}
