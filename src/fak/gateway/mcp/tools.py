"""The bodies of fak's MCP tools (tier T3): input checks, one kernel call, one Reply.

``McpTools(kernel).call(name, arguments)`` validates the tool's input strictly (unknown keys are
refused, so a misspelt ``args`` never silently becomes "no arguments"), makes exactly one kernel
call (decide / syscall / admit_result / page_in, journaled by the kernel) and answers a
``ToolAnswer``: the Reply, its trace id and timing. It never raises, never echoes held bytes
(quarantine answers carry the stub and id only) and never logs arguments or results. No SDK
types here: ``fak.gateway.mcp.server`` wraps answers for the wire.
"""

from __future__ import annotations

import hmac
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

from fak.abi import ToolCall, Verdict, VerdictKind
from fak.abi.replies import (
    Reply,
    ReplyBuilder,
    ReplyType,
    envelope,
    new_trace_id,
    reply_for_verdict,
)
from fak.gateway.accesslog import FIELD_LIMIT
from fak.kernel import Admission, Kernel, PageInRefused, WitnessError, outcome_reply
from fak.recall import CoherencePlane, RecallError

__all__ = ["TOOL_SPECS", "TRACE_ID_MAX", "McpTools", "ToolAnswer", "ToolSpec"]

_log = logging.getLogger(__name__)

TRACE_ID_MAX: Final = 128
_REQUEST_MALFORMED: Final = "MCP-VAL-I-001"
_ARGS_MALFORMED: Final = "WA-PARSE-I-001"
_DECISION_FAULT: Final = "EN-GATE-E-001"
_SYSTEM_CRASH: Final = "MCP-SYS-E-001"
_SYSTEM_OK: Final = "MCP-SYS-S-001"
_HELD: Final = "EN-READ-D-001"


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One MCP tool as listed: name, title, description, JSON Schema of its input."""

    name: str
    title: str
    description: str
    input_schema: Mapping[str, Any]
    read_only: bool


def _schema(props: dict[str, Any], required: tuple[str, ...]) -> Mapping[str, Any]:
    props = {
        **props,
        "trace_id": {
            "type": "string",
            "maxLength": TRACE_ID_MAX,
            "description": "Correlates this answer with your request; minted when absent.",
        },
    }
    doc = {"type": "object", "properties": props, "required": list(required)}
    return MappingProxyType({**doc, "additionalProperties": False})


_TOOL: Final = {"type": "string", "minLength": 1, "description": "Name of the tool."}
_CALL_SCHEMA: Final = _schema(
    {
        "tool": _TOOL,
        "arguments": {
            "type": ["object", "string"],
            "description": "The call's arguments: a JSON object, or its JSON text.",
        },
    },
    ("tool",),
)

TOOL_SPECS: Final = (
    ToolSpec(
        "fak_adjudicate",
        "Adjudicate a tool call",
        "Ask the kernel whether a tool call may run; nothing is executed. The reply is a "
        "success (S) with the verdict (ALLOW, or TRANSFORM with dispatched_args to run "
        "instead) or a denial (D) naming reason, disposition and who decided. Run the call "
        "yourself only on S.",
        _CALL_SCHEMA,
        True,
    ),
    ToolSpec(
        "fak_syscall",
        "Run a tool through the kernel",
        "Adjudicate a call and, if admitted, run the tool registered on the kernel under that "
        "name; its result is screened before it is returned (a held result comes back as a "
        "stub with a quarantine id). A refusal is a denial (D), not an error.",
        _CALL_SCHEMA,
        False,
    ),
    ToolSpec(
        "fak_admit",
        "Screen a tool result",
        "Screen the result of a tool you ran before it enters the model's context. Use only "
        "the reply's `content`: the result itself, a pointer stub for a large result, or a "
        "quarantine stub (D) whose bytes never leave the kernel.",
        _schema(
            {
                "tool": _TOOL,
                "result": {"type": "string", "description": "The tool's output, verbatim."},
            },
            ("tool", "result"),
        ),
        True,
    ),
    ToolSpec(
        "fak_page_in",
        "Page a result back in",
        "Fetch the bytes behind a paged-out pointer (ref digest) or a quarantine id. Bytes are "
        "re-screened first; a held result needs a witness clearance by the operator.",
        _schema({"id": {"type": "string", "minLength": 1, "description": "ref or id."}}, ("id",)),
        True,
    ),
    ToolSpec(
        "fak_context_change",
        "Tombstone a recalled page",
        "Suppress one page of a recorded session from every future page-in, recall and ranking "
        "(negative-only: the bytes and the page row stay as evidence). Idempotent: `applied` is "
        "false when the page was already tombstoned. Needs a gateway started with --recall-dir.",
        _schema(
            {
                "session_id": {"type": "string", "minLength": 1, "maxLength": 256},
                "action": {"type": "string", "enum": ["tombstone_page", "tombstone", ""]},
                "step": {"type": "integer", "minimum": 0},
                "digest": {"type": "string", "description": "Refuse unless the page has it."},
                "reason": {"type": "string", "minLength": 1, "maxLength": 256},
                "requested_by": {"type": "string", "maxLength": 256},
                "witness": {"type": "string", "maxLength": 256},
            },
            ("session_id", "step", "reason"),
        ),
        False,
    ),
    ToolSpec(
        "fak_changes",
        "Read the change feed",
        "Events since a cursor: world-version bumps, witness revocations, tombstones, policy "
        "reloads and trace resets. Poll again with the returned cursor; `truncated` means "
        "events were dropped and cached answers should be revalidated.",
        _schema({"since": {"type": "integer", "minimum": 0}}, ()),
        True,
    ),
    ToolSpec(
        "fak_witness",
        "Approve a held call",
        "Operator only: approve a call the kernel held for a witness (REQUIRE_WITNESS) by its "
        "id; its next identical proposal is admitted once. Needs the witness key the server "
        "was started with; without one configured, approvals over MCP are refused.",
        _schema(
            {
                "id": {"type": "string", "minLength": 1, "description": "The witness id."},
                "key": {"type": "string", "minLength": 1, "description": "The witness key."},
            },
            ("id", "key"),
        ),
        False,
    ),
    ToolSpec(
        "fak_revoke",
        "Revoke a witness",
        "Operator only: retire a witness id: cached answers admitted under it are evicted, "
        "clearances it gave (and recall pages cleared under it) are taken back, calls presenting "
        "it are refused, and the trust epoch moves on. Needs the witness key, as fak_witness.",
        _schema(
            {
                "witness": {"type": "string", "minLength": 1, "description": "The witness id."},
                "key": {"type": "string", "minLength": 1, "description": "The witness key."},
            },
            ("witness", "key"),
        ),
        False,
    ),
)

_FIELDS: Final = {s.name: frozenset(s.input_schema["properties"]) for s in TOOL_SPECS}


@dataclass(frozen=True, slots=True)
class ToolAnswer:
    """A Reply as a tool result: ``is_error`` is set only when no decision was reached."""

    reply: Reply
    trace_id: str
    duration_ms: float
    is_error: bool = field(default=False)

    def wire(self) -> dict[str, Any]:
        return envelope(self.reply, trace_id=self.trace_id, duration_ms=self.duration_ms).to_wire()


class _BadInput(Exception):
    """Input this layer refuses before the kernel sees it; becomes a reply of type I."""

    def __init__(self, code: str, field_name: str, problem: str) -> None:
        super().__init__(f"{field_name}: {problem}")
        self.code = code
        self.field_name = field_name
        self.problem = problem


def _string(arguments: Mapping[str, Any], key: str, *, required: bool) -> str:
    value = arguments.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or not value:
        raise _BadInput(_REQUEST_MALFORMED, key, f"{key} is required: a non-empty string")
    return value


def _trace_id(arguments: Mapping[str, Any]) -> str:
    value = arguments.get("trace_id")
    if value is None or value == "":
        return new_trace_id()
    if not isinstance(value, str) or len(value) > TRACE_ID_MAX or not value.isprintable():
        problem = f"trace_id must be printable text of at most {TRACE_ID_MAX} characters"
        raise _BadInput(_REQUEST_MALFORMED, "trace_id", problem)
    return value


def _call_arguments(arguments: Mapping[str, Any]) -> Mapping[str, Any] | str:
    value = arguments.get("arguments")
    if value is None:
        return {}
    if isinstance(value, Mapping | str):
        return value  # JSON text goes to the kernel raw: its first rung refuses a non-object
    problem = f"arguments must be a JSON object or its JSON text, not {type(value).__name__}"
    raise _BadInput(_ARGS_MALFORMED, "arguments", problem)


def _text(payload: bytes) -> str:
    return payload.decode("utf-8", errors="replace")


def _verdict_reply(verdict: Verdict, tool: str) -> Reply:
    """The reply for a kernel verdict, with the refusal fields flat in ``data``."""
    data: dict[str, Any] = {"tool": tool, "by": verdict.by}
    if verdict.disposition is not None:
        data["disposition"] = str(verdict.disposition)
    if verdict.claim:
        data["claim"] = verdict.claim
    if verdict.kind == VerdictKind.TRANSFORM and verdict.new_args is not None:
        data["dispatched_args"] = dict(verdict.new_args)
    return reply_for_verdict(verdict, data)


def _admission_reply(admission: Admission, tool: str) -> Reply:
    """S with the admitted bytes or a pointer stub; D with the stub and id for a held result."""
    data: dict[str, Any] = {"tool": tool, "content": _text(admission.payload)}
    if admission.quarantine_id:
        data["quarantine_id"] = admission.quarantine_id
        data["len"] = admission.ref.length if admission.ref is not None else 0
    elif admission.verdict.kind == VerdictKind.TRANSFORM and admission.ref is not None:
        data["paged"] = True
        data["ref"] = admission.ref.digest
        data["len"] = admission.ref.length
    return reply_for_verdict(admission.verdict, data)


class McpTools:
    """Answers fak's MCP tools from one kernel. Thread-safe as far as the kernel is."""

    def __init__(
        self,
        kernel: Kernel,
        *,
        clock: Callable[[], float] = time.perf_counter,
        witness_key: str | None = None,
        plane: CoherencePlane | None = None,
    ) -> None:
        self._kernel = kernel
        self._clock = clock
        self._witness_key = witness_key or None  # None: fak_witness and fak_revoke refuse
        self._plane = plane if plane is not None else CoherencePlane(kernel)
        self._bodies: Mapping[str, Callable[[Mapping[str, Any], str], Reply]] = {
            "fak_adjudicate": self._adjudicate,
            "fak_syscall": self._syscall,
            "fak_admit": self._admit,
            "fak_page_in": self._page_in,
            "fak_witness": self._witness,
            "fak_revoke": self._revoke,
            "fak_context_change": self._context_change,
            "fak_changes": self._changes,
        }

    def call(self, name: str, arguments: Mapping[str, Any]) -> ToolAnswer:
        """Answer one tool call; never raises (a fault is an E reply naming the type only)."""
        start = self._clock()
        trace_id = ""
        is_error = False
        try:
            body = self._bodies.get(name)
            if body is None:
                raise _BadInput(_REQUEST_MALFORMED, "name", f"no fak tool named {name!r}")
            unknown = sorted(set(arguments) - _FIELDS[name])
            trace_id = _trace_id(arguments)
            if unknown:
                allowed = ", ".join(sorted(_FIELDS[name]))
                problem = f"unknown field {unknown[0]!r}; {name} takes {allowed}"
                raise _BadInput(_REQUEST_MALFORMED, unknown[0], problem)
            reply = body(arguments, trace_id)
        except _BadInput as bad:
            is_error = True
            data = {"field": bad.field_name, "problem": bad.problem}
            reply = ReplyBuilder().invalid(bad.code, data)
        except Exception as exc:  # the safety net: a fault is a value too, never a traceback
            _log.error(
                "mcp tool %s failed: %s trace_id=%s",
                name[:FIELD_LIMIT],
                type(exc).__name__,
                trace_id[:FIELD_LIMIT],
            )
            is_error = True
            code = _DECISION_FAULT if name in ("fak_adjudicate", "fak_syscall") else _SYSTEM_CRASH
            reply = ReplyBuilder().error(code, {"exception": type(exc).__name__})
        if reply.reply_type == ReplyType.E:
            is_error = True
        trace_id = trace_id or new_trace_id()
        elapsed = (self._clock() - start) * 1000.0
        _log.debug(
            "mcp %s -> %s trace_id=%s", name[:FIELD_LIMIT], reply.code, trace_id[:FIELD_LIMIT]
        )
        return ToolAnswer(reply, trace_id, elapsed, is_error)

    # -- tool bodies -----------------------------------------------------------------------
    def _adjudicate(self, arguments: Mapping[str, Any], trace_id: str) -> Reply:
        tool = _string(arguments, "tool", required=True)
        call = ToolCall(tool, _call_arguments(arguments), trace_id=trace_id)
        return _verdict_reply(self._kernel.decide(call), tool)

    def _syscall(self, arguments: Mapping[str, Any], trace_id: str) -> Reply:
        tool = _string(arguments, "tool", required=True)
        call = ToolCall(tool, _call_arguments(arguments), trace_id=trace_id)
        outcome = self._kernel.syscall(call)
        self._plane.observe_syscall(tool, outcome.served_by)
        if not outcome.served_by:  # refused before dispatch: the verdict is the answer
            return _verdict_reply(outcome.verdict, tool)
        return outcome_reply(outcome, tool)

    def _admit(self, arguments: Mapping[str, Any], trace_id: str) -> Reply:
        tool = _string(arguments, "tool", required=True)
        value = arguments.get("result")
        if value is None:
            raise _BadInput(_REQUEST_MALFORMED, "result", "result is required: the tool's output")
        # a structured result is screened as its JSON text and as its decoded keys and leaves
        admission = self._kernel.admit_value(tool, value, trace_id=trace_id)
        return _admission_reply(admission, tool)

    def _unkeyed(self, arguments: Mapping[str, Any]) -> str:
        """Why the call's witness key does not open approvals and revocations ('' if it does)."""
        key = _string(arguments, "key", required=True)
        expected = self._witness_key
        if not expected:
            return "no witness key configured"
        if not hmac.compare_digest(key.encode(), expected.encode()):
            return "wrong witness key"
        return ""

    def _witness(self, arguments: Mapping[str, Any], trace_id: str) -> Reply:
        ident = _string(arguments, "id", required=True)
        why = self._unkeyed(arguments)
        if why:
            return ReplyBuilder().denied(_HELD, {"id": ident, "reason": "UNWITNESSED", "why": why})
        try:
            hold = self._kernel.approve_witness(ident, "mcp")
        except WitnessError as exc:
            return ReplyBuilder().denied(_HELD, {"id": ident, "reason": exc.code})
        return ReplyBuilder().success({"approved": True, **hold.to_json()}, code=_SYSTEM_OK)

    def _revoke(self, arguments: Mapping[str, Any], trace_id: str) -> Reply:
        ident = _string(arguments, "witness", required=True)
        why = self._unkeyed(arguments)  # the id is in model-visible text: the key is the guard
        if why:
            data = {"witness": ident, "reason": "UNWITNESSED", "why": why}
            return ReplyBuilder().denied(_HELD, data)
        try:
            report = self._kernel.revoke_witness(ident)
        except WitnessError as exc:
            return ReplyBuilder().denied(_HELD, {"witness": ident, "reason": exc.code})
        report["sealed_pages"] = self._plane.revoked(ident, report["evicted"])
        return ReplyBuilder().success(report, code=_SYSTEM_OK)

    def _context_change(self, arguments: Mapping[str, Any], trace_id: str) -> Reply:
        from fak.gateway.routes.recall import change_request

        body = {k: v for k, v in arguments.items() if k != "trace_id"}
        try:
            out = change_request(self._plane, body)
        except LookupError as exc:
            problem = "this server records no sessions: start it with --recall-dir DIR"
            raise _BadInput(_REQUEST_MALFORMED, "session_id", problem) from exc
        except RecallError as err:
            raise _BadInput(_REQUEST_MALFORMED, "step", str(err)) from err
        return ReplyBuilder().success(out, code=_SYSTEM_OK)

    def _changes(self, arguments: Mapping[str, Any], trace_id: str) -> Reply:
        since = arguments.get("since", 0)
        if isinstance(since, bool) or not isinstance(since, int) or since < 0:
            raise _BadInput(_REQUEST_MALFORMED, "since", "since must be a non-negative integer")
        try:
            page = self._plane.feed.since(since)
        except ConnectionError:  # the fleet's shared feed is down: say so, never a stale page
            return ReplyBuilder().error(_SYSTEM_CRASH, {"reason": "change_feed_unavailable"})
        out = {"events": page.events, "cursor": page.cursor, "truncated": page.truncated}
        return ReplyBuilder().success(out, code=_SYSTEM_OK)

    def _page_in(self, arguments: Mapping[str, Any], trace_id: str) -> Reply:
        ident = _string(arguments, "id", required=True)
        try:
            data = self._kernel.page_in(ident)
        except PageInRefused as refused:
            fields = {"id": ident, "reason": "RESULT_QUARANTINED", "refused": refused.why}
            return ReplyBuilder().denied(_HELD, fields)
        content = {"id": ident, "content": _text(data), "len": len(data)}
        return ReplyBuilder().success(content, code=_SYSTEM_OK)
