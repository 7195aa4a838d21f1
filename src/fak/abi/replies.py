"""The reply system: how one outcome is reported across a tool-facing boundary (tier T0).

Owns the four reply types (S/I/D/E), reply codes ``LAYER-AREA-TYPE-NNN`` and their validation,
the one registry of codes, the one ``ReplyBuilder`` (terminal replies freeze it), the transport
envelope and the safety wrapper that turns any crash into an Error reply. It maps every refusal
reason and verdict kind onto exactly one reply. Stdlib only; the only side effect is a log line
naming a crashed tool's trace id and exception type (never its arguments or message).
"""

from __future__ import annotations

import enum
import functools
import inspect
import logging
import re
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final, ParamSpec, TypeVar, cast, overload

from fak.abi.reasons import Reason, reason_name
from fak.abi.verdicts import Verdict, VerdictKind

__all__ = [
    "ALLOWED_TYPES",
    "REASON_REPLY_CODES",
    "REGISTRY",
    "Area",
    "Layer",
    "Reply",
    "ReplyBuilder",
    "ReplyBuilderFrozen",
    "ReplyCodeError",
    "ReplyEnvelope",
    "ReplyRegistry",
    "ReplySpec",
    "ReplyType",
    "envelope",
    "new_trace_id",
    "parse_code",
    "reply_for_reason",
    "reply_for_verdict",
    "safe_call",
    "safe_tool",
]

logger = logging.getLogger(__name__)


class ReplyType(enum.StrEnum):
    """What an outcome means to the agent: proceed, self-correct, escalate, or stop."""

    S = "S"  # success: proceed
    I = "I"  # invalid: the agent made a mistake; fix the request and retry  # noqa: E741
    D = "D"  # denied: governance refused a valid request; escalate or change scope
    E = "E"  # error: the system broke; stop and report the trace id


class Layer(enum.StrEnum):
    """Who decided the outcome. Closed: a new layer is an architecture change."""

    WA = "WA"  # world structure: resolution, parsing, interpretation of a call
    EN = "EN"  # enforcement: governance, authorization, policy
    CT = "CT"  # contract lifecycle validity
    MCP = "MCP"  # infrastructure, transport, ungoverned system operations


class Area(enum.StrEnum):
    """What domain the operation concerns. Never a tool name."""

    SYS = "SYS"
    RES = "RES"
    VIS = "VIS"
    IO = "IO"
    READ = "READ"
    WRITE = "WRITE"
    EXEC = "EXEC"
    DB = "DB"
    PARSE = "PARSE"
    VAL = "VAL"
    GATE = "GATE"
    LOG = "LOG"
    CFG = "CFG"


ALLOWED_TYPES: Final[Mapping[Layer, frozenset[ReplyType]]] = MappingProxyType(
    {
        Layer.WA: frozenset({ReplyType.S, ReplyType.I, ReplyType.E}),
        Layer.EN: frozenset({ReplyType.S, ReplyType.D, ReplyType.E}),
        Layer.CT: frozenset({ReplyType.S, ReplyType.I, ReplyType.E}),
        Layer.MCP: frozenset({ReplyType.S, ReplyType.I, ReplyType.E}),
    }
)
"""Denied comes only from EN; EN never answers Invalid."""

_CODE_RE = re.compile(r"^([A-Z]+)-([A-Z]+)-([A-Z])-([0-9]{3})$")


class ReplyCodeError(ValueError):
    """A reply code that is malformed, breaks a layer rule, or is not in the registry."""


def parse_code(code: str) -> tuple[Layer, Area, ReplyType, int]:
    """Split and validate ``LAYER-AREA-TYPE-NNN``; raises ReplyCodeError naming what is wrong."""
    match = _CODE_RE.match(code)
    if match is None:
        msg = f"reply code {code!r} is not LAYER-AREA-TYPE-NNN (e.g. EN-GATE-D-001)"
        raise ReplyCodeError(msg)
    raw_layer, raw_area, raw_type, raw_num = match.groups()
    try:
        layer = Layer(raw_layer)
    except ValueError:
        msg = f"reply code {code!r}: unknown layer {raw_layer!r} (allowed: WA, EN, CT, MCP)"
        raise ReplyCodeError(msg) from None
    try:
        area = Area(raw_area)
    except ValueError:
        known = ", ".join(a.value for a in Area)
        msg = f"reply code {code!r}: unknown area {raw_area!r} (allowed: {known})"
        raise ReplyCodeError(msg) from None
    try:
        rtype = ReplyType(raw_type)
    except ValueError:
        msg = f"reply code {code!r}: unknown type {raw_type!r} (allowed: S, I, D, E)"
        raise ReplyCodeError(msg) from None
    number = int(raw_num)
    if number == 0:
        msg = f"reply code {code!r}: the number runs 001-999"
        raise ReplyCodeError(msg)
    if rtype not in ALLOWED_TYPES[layer]:
        allowed = "/".join(sorted(t.value for t in ALLOWED_TYPES[layer]))
        msg = f"reply code {code!r}: layer {layer} may only answer {allowed}"
        raise ReplyCodeError(msg)
    return layer, area, rtype, number


@dataclass(frozen=True, slots=True)
class ReplySpec:
    """One registered code: its stable key and the human message derived from it."""

    code: str
    key: str
    message: str
    layer: Layer
    area: Area
    reply_type: ReplyType


class ReplyRegistry:
    """The one table of reply codes. A second instance is a forbidden state and raises."""

    __slots__ = ("_specs",)
    _instances = 0

    def __init__(self, entries: tuple[tuple[str, str, str], ...]) -> None:
        if ReplyRegistry._instances:
            msg = "there is exactly one reply registry: use fak.abi.replies.REGISTRY"
            raise RuntimeError(msg)
        specs: dict[str, ReplySpec] = {}
        keys: set[str] = set()
        for code, key, message in entries:
            layer, area, rtype, _ = parse_code(code)
            if code in specs or key in keys:
                msg = f"reply code {code!r} or key {key!r} registered twice"
                raise ReplyCodeError(msg)
            specs[code] = ReplySpec(code, key, message, layer, area, rtype)
            keys.add(key)
        self._specs: Mapping[str, ReplySpec] = MappingProxyType(specs)
        ReplyRegistry._instances += 1

    def __contains__(self, code: object) -> bool:
        return code in self._specs

    def __iter__(self) -> Iterator[ReplySpec]:
        return iter(self._specs.values())

    def __len__(self) -> int:
        return len(self._specs)

    def spec(self, code: str) -> ReplySpec:
        """The registered spec for a code; ReplyCodeError if the code is unknown."""
        found = self._specs.get(code)
        if found is None:
            parse_code(code)  # a malformed code gets the more precise message
            msg = f"reply code {code!r} is well-formed but not registered"
            raise ReplyCodeError(msg)
        return found


REGISTRY: Final = ReplyRegistry(
    (
        # -- success ------------------------------------------------------------------------
        ("EN-GATE-S-001", "CALL_ADMITTED", "The kernel admitted the call."),
        (
            "EN-GATE-S-002",
            "CALL_REWRITTEN",
            "The call was admitted with rewritten arguments.",
        ),
        ("MCP-EXEC-S-001", "TOOL_COMPLETED", "The tool completed."),
        ("MCP-SYS-S-001", "SYSTEM_OK", "The system operation completed."),
        # -- invalid: the agent's request is wrong; fix it and retry ------------------------
        (
            "WA-PARSE-I-001",
            "ARGS_MALFORMED",
            "The arguments are not a well-formed call.",
        ),
        ("WA-RES-I-001", "CALL_MISROUTED", "The call does not match the tool's grammar."),
        ("WA-RES-I-002", "TOOL_UNKNOWN", "No tool of that name is registered."),
        ("MCP-VAL-I-001", "REQUEST_MALFORMED", "The request to the tool boundary is malformed."),
        # -- denied: governance refused a valid request --------------------------------------
        ("EN-GATE-D-001", "DEFAULT_DENY", "The tool is not on the allow-list."),
        ("EN-GATE-D-002", "POLICY_BLOCK", "An explicit policy rule refused the call."),
        ("EN-WRITE-D-001", "SELF_MODIFY", "The call would write to a guarded path."),
        ("EN-GATE-D-003", "LEASE_HELD", "Another holder leases the resource; wait and retry."),
        (
            "EN-GATE-D-004",
            "TRUST_VIOLATION",
            "Untrusted data would reach a guarded sink.",
        ),
        ("EN-GATE-D-005", "RATE_LIMITED", "The rate limit is reached; wait before retrying."),
        ("EN-IO-D-001", "SECRET_EXFIL", "The call or result carries secret-shaped data."),
        ("EN-GATE-D-006", "UNWITNESSED", "The call needs a witness that was not provided."),
        ("EN-IO-D-002", "OVERSIZE", "The payload exceeds the permitted size."),
        ("EN-READ-D-001", "RESULT_QUARANTINED", "The tool result is held out of context."),
        ("EN-GATE-D-099", "UNKNOWN_REASON", "Refused with a reason this build does not know."),
        # -- error: the system broke; stop and report the trace id ---------------------------
        ("MCP-SYS-E-001", "SYSTEM_CRASH", "Unhandled failure at the tool boundary."),
        ("MCP-SYS-E-002", "NOT_A_REPLY", "The tool returned something that is not a Reply."),
        ("MCP-EXEC-E-001", "TOOL_FAILED", "The tool raised while running."),
        ("EN-GATE-E-001", "DECISION_FAULT", "The kernel could not reach a decision."),
    )
)

REASON_REPLY_CODES: Final[Mapping[Reason, str]] = MappingProxyType(
    {
        Reason.DEFAULT_DENY: "EN-GATE-D-001",
        Reason.POLICY_BLOCK: "EN-GATE-D-002",
        Reason.SELF_MODIFY: "EN-WRITE-D-001",
        Reason.LEASE_HELD: "EN-GATE-D-003",
        Reason.TRUST_VIOLATION: "EN-GATE-D-004",
        Reason.MALFORMED: "WA-PARSE-I-001",
        Reason.MISROUTE: "WA-RES-I-001",
        Reason.RATE_LIMITED: "EN-GATE-D-005",
        Reason.SECRET_EXFIL: "EN-IO-D-001",
        Reason.UNWITNESSED: "EN-GATE-D-006",
        Reason.OVERSIZE: "EN-IO-D-002",
        Reason.UNKNOWN_TOOL: "WA-RES-I-002",
    }
)
"""Each refusal reason answers with exactly one code (and so one reply type)."""

_UNKNOWN_REASON_CODE: Final = "EN-GATE-D-099"
_QUARANTINE_CODE: Final = "EN-READ-D-001"
_SEAL: Final = object()
_EMPTY: Final[Mapping[str, Any]] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Reply:
    """One semantic outcome. Built only by ``ReplyBuilder``; carries no timing or trace data."""

    reply_type: ReplyType
    code: str
    data: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)
    _seal: object = field(default=None, repr=False, compare=False, kw_only=True)

    def __post_init__(self) -> None:
        if self._seal is not _SEAL:
            msg = "replies are built only by ReplyBuilder (success/invalid/denied/error)"
            raise TypeError(msg)
        spec = REGISTRY.spec(self.code)
        if spec.reply_type != self.reply_type:
            msg = f"reply code {self.code} is type {spec.reply_type}, not {self.reply_type}"
            raise ReplyCodeError(msg)

    @property
    def spec(self) -> ReplySpec:
        return REGISTRY.spec(self.code)

    @property
    def message(self) -> str:
        """Derived from the registry; convenience only, never branch on it."""
        return self.spec.message

    @property
    def terminal(self) -> bool:
        return self.reply_type != ReplyType.S


class ReplyBuilderFrozen(RuntimeError):
    """A builder was used after it produced a terminal (I/D/E) reply."""


class ReplyBuilder:
    """The one constructor of replies. After an I, D or E reply it is frozen for good."""

    __slots__ = ("_frozen", "_success_code")

    def __init__(self, success_code: str = "MCP-EXEC-S-001") -> None:
        if REGISTRY.spec(success_code).reply_type != ReplyType.S:
            msg = f"success code {success_code!r} is not a success (S) code"
            raise ReplyCodeError(msg)
        self._success_code = success_code
        self._frozen = False

    @property
    def frozen(self) -> bool:
        return self._frozen

    def success(self, data: Mapping[str, Any] | None = None, *, code: str | None = None) -> Reply:
        """A success; informational outcomes are successes with structured data."""
        return self._build(ReplyType.S, code or self._success_code, data)

    def invalid(self, code: str, data: Mapping[str, Any] | None = None) -> Reply:
        return self._build(ReplyType.I, code, data)

    def denied(self, code: str, data: Mapping[str, Any] | None = None) -> Reply:
        return self._build(ReplyType.D, code, data)

    def error(self, code: str, data: Mapping[str, Any] | None = None) -> Reply:
        return self._build(ReplyType.E, code, data)

    def _build(self, rtype: ReplyType, code: str, data: Mapping[str, Any] | None) -> Reply:
        if self._frozen:
            msg = "this ReplyBuilder already returned a terminal reply; return it, build no more"
            raise ReplyBuilderFrozen(msg)
        spec = REGISTRY.spec(code)
        if spec.reply_type != rtype:
            msg = f"{code} is a {spec.reply_type} code; it cannot build a {rtype} reply"
            raise ReplyCodeError(msg)
        frozen_data = MappingProxyType(dict(data)) if data else _EMPTY
        reply = Reply(rtype, code, frozen_data, _seal=_SEAL)
        if rtype != ReplyType.S:
            self._frozen = True
        return reply


def reply_for_reason(reason: int, data: Mapping[str, Any] | None = None) -> Reply:
    """The reply for a refusal reason; an unknown code becomes a generic EN denial."""
    if reason == Reason.NONE:
        msg = "NONE is not a refusal; report an admitted call with reply_for_verdict"
        raise ValueError(msg)
    known = reason in REASON_REPLY_CODES
    code = REASON_REPLY_CODES[Reason(reason)] if known else _UNKNOWN_REASON_CODE
    payload = {"reason": reason_name(reason), **(data or {})}
    builder = ReplyBuilder()
    if REGISTRY.spec(code).reply_type == ReplyType.I:
        return builder.invalid(code, payload)
    return builder.denied(code, payload)


def reply_for_verdict(verdict: Verdict, data: Mapping[str, Any] | None = None) -> Reply:
    """Report a kernel verdict: admitted → S; refused → the reason's reply; anything else → D."""
    extra = dict(data or {})
    extra.setdefault("verdict", verdict.to_wire())
    builder = ReplyBuilder()
    match verdict.kind:
        case VerdictKind.ALLOW:
            return builder.success(extra, code="EN-GATE-S-001")
        case VerdictKind.TRANSFORM:
            return builder.success(extra, code="EN-GATE-S-002")
        case VerdictKind.DENY:
            return reply_for_reason(verdict.reason, extra)
        case VerdictKind.QUARANTINE:
            extra.setdefault("reason", verdict.reason.name)
            return builder.denied(_QUARANTINE_CODE, extra)
        case VerdictKind.REQUIRE_WITNESS:
            return reply_for_reason(Reason.UNWITNESSED, extra)
        case VerdictKind.DEFER:
            # a lone DEFER is no decision: fail closed
            return reply_for_reason(Reason.DEFAULT_DENY, extra)
    return reply_for_reason(Reason.DEFAULT_DENY, extra)  # pragma: no cover - closed enum


_STATUS: Final[Mapping[ReplyType, str]] = MappingProxyType(
    {
        ReplyType.S: "success",
        ReplyType.I: "invalid",
        ReplyType.D: "denied",
        ReplyType.E: "error",
    }
)


@dataclass(frozen=True, slots=True)
class ReplyEnvelope:
    """The wire form of a reply: only transport wrappers build it."""

    reply: Reply
    trace_id: str
    duration_ms: float

    @property
    def status(self) -> str:
        return _STATUS[self.reply.reply_type]

    def to_wire(self) -> dict[str, Any]:
        """``{status, reply_type, code, data, meta{trace_id, duration_ms}, error}``."""
        reply = self.reply
        error = None
        if reply.terminal:
            error = {"code": reply.code, "message": reply.message}
        return {
            "status": self.status,
            "reply_type": reply.reply_type.value,
            "code": reply.code,
            "data": dict(reply.data),
            "meta": {"trace_id": self.trace_id, "duration_ms": round(self.duration_ms, 3)},
            "error": error,
        }


def envelope(reply: Reply, *, trace_id: str, duration_ms: float) -> ReplyEnvelope:
    return ReplyEnvelope(reply, trace_id, max(0.0, duration_ms))


def new_trace_id() -> str:
    """A fresh random trace id (32 hex digits)."""
    return uuid.uuid4().hex


def _crash_reply(trace_id: str, exc: Exception) -> Reply:
    # Log the exception's type only: its message may carry arguments or result bytes.
    logger.error("tool crashed trace_id=%s exception=%s", trace_id, type(exc).__name__)
    data = {"trace_id": trace_id, "exception": type(exc).__name__}
    return ReplyBuilder().error("MCP-SYS-E-001", data)


def _checked(value: object, trace_id: str) -> Reply:
    if isinstance(value, Reply):
        return value
    logger.error("tool returned %s, not a Reply trace_id=%s", type(value).__name__, trace_id)
    data = {"trace_id": trace_id, "returned": type(value).__name__}
    return ReplyBuilder().error("MCP-SYS-E-002", data)


def _run_sync(
    fn: Callable[..., object],
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any],
    trace_ids: Callable[[], str],
    clock: Callable[[], float],
) -> ReplyEnvelope:
    trace_id = trace_ids()
    start = clock()
    try:
        reply = _checked(fn(*args, **kwargs), trace_id)
    except Exception as exc:  # the safety net: every crash is an Error reply
        reply = _crash_reply(trace_id, exc)
    return envelope(reply, trace_id=trace_id, duration_ms=(clock() - start) * 1000.0)


def safe_call(
    fn: Callable[..., object],
    args: tuple[Any, ...] = (),
    kwargs: Mapping[str, Any] | None = None,
    *,
    trace_ids: Callable[[], str] = new_trace_id,
    clock: Callable[[], float] = time.perf_counter,
) -> ReplyEnvelope:
    """Run ``fn(*args, **kwargs)`` and envelope its Reply; any exception becomes E, never I."""
    return _run_sync(fn, args, kwargs or {}, trace_ids, clock)


P = ParamSpec("P")
R = TypeVar("R")


@overload
def safe_tool(
    fn: Callable[P, Awaitable[Reply]],
    *,
    trace_ids: Callable[[], str] = ...,
    clock: Callable[[], float] = ...,
) -> Callable[P, Awaitable[ReplyEnvelope]]: ...


@overload
def safe_tool(
    fn: Callable[P, Reply],
    *,
    trace_ids: Callable[[], str] = ...,
    clock: Callable[[], float] = ...,
) -> Callable[P, ReplyEnvelope]: ...


def safe_tool(
    fn: Callable[P, Any],
    *,
    trace_ids: Callable[[], str] = new_trace_id,
    clock: Callable[[], float] = time.perf_counter,
) -> Callable[P, Any]:
    """Decorate a tool that returns a Reply (sync or async) so callers always get an envelope."""
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def run_async(*args: P.args, **kwargs: P.kwargs) -> ReplyEnvelope:
            trace_id = trace_ids()
            start = clock()
            try:
                reply = _checked(await fn(*args, **kwargs), trace_id)
            except Exception as exc:
                reply = _crash_reply(trace_id, exc)
            return envelope(reply, trace_id=trace_id, duration_ms=(clock() - start) * 1000.0)

        return run_async

    @functools.wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> ReplyEnvelope:
        return _run_sync(fn, args, kwargs, trace_ids, clock)

    return cast(Callable[P, Any], run)
