"""Tool-lock middleware: the kernel's admission decision in front of an async tool pipeline (T2).

``create_tool_lock(kernel_or_policy, ...)`` returns ``stage(request, next)``. Admit: ``next()`` is
awaited exactly once and its result (or exception) propagates unchanged. Deny: ``next()`` is never
called; a frozen ``AdmissionAuditEvent`` (per-instance counter from 1) goes to ``on_event``, then
the reason to ``on_deny`` (listener exceptions are swallowed), then the stage raises
``ToolAdmissionDeniedError`` (``http_status`` 403) carrying the verdict. A ``rule_version`` pin
that differs from the policy's content hash is a deny. The only place a refusal is an exception.
"""

from __future__ import annotations

import contextvars
import enum
import itertools
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

import orjson

from fak.abi import Context, Reason, ToolCall, Verdict, VerdictKind
from fak.kernel.kernel import Kernel
from fak.policy import Policy

__all__ = [
    "AdmissionAuditEvent",
    "DenialKind",
    "DenialReason",
    "MiddlewareRequest",
    "MiddlewareStage",
    "ToolAdmissionDeniedError",
    "admitted_args",
    "create_tool_lock",
]

logger = logging.getLogger(__name__)

_BY: Final = "tool-lock"
_admitted: contextvars.ContextVar[Mapping[str, Any] | None] = contextvars.ContextVar(
    "fak_tool_lock_admitted_args", default=None
)


class DenialKind(enum.StrEnum):
    POLICY = "policy_denied"
    RULE_VERSION_MISMATCH = "rule_version_mismatch"
    RULE_REJECTED = "rule_rejected"


@dataclass(frozen=True, slots=True)
class DenialReason:
    """Why the lock refused: the kernel verdict plus how it came about."""

    kind: DenialKind
    verdict: Verdict
    rule_version: str
    detail: str = ""

    @property
    def reason(self) -> Reason:
        return self.verdict.reason

    def render(self) -> str:
        """Operator-readable, deterministic, with no argument values."""
        text = f"{self.kind}: {self.verdict.reason.name} by {self.verdict.by}"
        return f"{text} ({self.detail})" if self.detail else text


@dataclass(frozen=True, slots=True)
class MiddlewareRequest:
    """What a stage sees. ``rule_version`` pins the policy the caller attested to."""

    caller: str
    tool: str
    args: Any = None
    mode: str | None = None
    rep_snapshot: Any = None
    rule_version: str | None = None
    context: Context | None = None
    """Where this run's text came from (sink rules); the stage's own context when None."""


@dataclass(frozen=True, slots=True)
class AdmissionAuditEvent:
    """Handed to ``on_event`` once per deny, before ``on_deny``. ``at`` counts from 1."""

    type: Literal["admission_deny"]
    caller: str
    tool: str
    reason: DenialReason
    at: int


class ToolAdmissionDeniedError(PermissionError):
    """Raised by the stage on every denial; carries the typed reason and the verdict."""

    http_status: Final = 403

    def __init__(self, reason: DenialReason, caller: str, tool: str) -> None:
        super().__init__(f"tool {tool!r} refused for {caller or 'caller'}: {reason.render()}")
        self.reason = reason
        self.caller = caller
        self.tool = tool

    @property
    def verdict(self) -> Verdict:
        return self.reason.verdict


Next = Callable[[], Awaitable[Any]]
MiddlewareStage = Callable[[MiddlewareRequest, Next], Awaitable[Any]]


def admitted_args() -> Mapping[str, Any] | None:
    """Inside ``next()``: the rewritten arguments of a TRANSFORM the lock admitted, else None."""
    return _admitted.get()


def _call_args(args: Any) -> Any:
    if args is None or isinstance(args, Mapping | str | bytes):
        return args
    # not an object: hand the ladder its JSON text so rung-0 refuses it as MALFORMED
    return orjson.dumps(args, default=repr).decode("utf-8")


def create_tool_lock(
    target: Kernel | Policy,
    *,
    on_deny: Callable[[DenialReason], None] | None = None,
    on_event: Callable[[AdmissionAuditEvent], None] | None = None,
    default_mode: str = "normal",
    allow_transform: bool = False,
    context: Context | None = None,
) -> MiddlewareStage:
    """Build a stage bound to a kernel (or a fresh kernel for a policy); no side effects here.

    A TRANSFORM verdict is refused unless ``allow_transform`` is set, because ``next()`` takes
    no arguments: set it only when the pipeline reads ``admitted_args()`` and dispatches those.
    ``context`` is the run's provenance record (``kernel.context(user=...)``) handed to every
    decision whose request carries none; the pipeline appends tool results to it.
    """
    kernel = target if isinstance(target, Kernel) else Kernel(target)
    counter = itertools.count(1)

    def evaluate(request: MiddlewareRequest) -> tuple[Verdict, DenialKind, str]:
        current = kernel.policy_version  # read at most once per stage call
        pinned = request.rule_version
        if pinned is not None and pinned != current:
            claim = "rule_version does not match the policy in force"
            verdict = Verdict.deny(Reason.POLICY_BLOCK, _BY, claim=claim)
            return verdict, DenialKind.RULE_VERSION_MISMATCH, current
        mode = request.mode or default_mode
        call = ToolCall(
            request.tool,
            _call_args(request.args),
            caller=request.caller,
            meta={"mode": mode},
            context=request.context if request.context is not None else context,
        )
        return kernel.decide(call), DenialKind.POLICY, current

    def deny(request: MiddlewareRequest, reason: DenialReason) -> ToolAdmissionDeniedError:
        event = AdmissionAuditEvent(
            "admission_deny", request.caller, request.tool, reason, next(counter)
        )
        if on_event is not None:
            try:
                on_event(event)
            except Exception as exc:  # listener isolation: the deny path continues
                logger.warning("tool-lock on_event raised %s (ignored)", type(exc).__name__)
        if on_deny is not None:
            try:
                on_deny(reason)
            except Exception as exc:
                logger.warning("tool-lock on_deny raised %s (ignored)", type(exc).__name__)
        return ToolAdmissionDeniedError(reason, request.caller, request.tool)

    async def stage(request: MiddlewareRequest, next: Next) -> Any:
        try:
            verdict, kind, version = evaluate(request)
        except Exception as exc:  # defensive: the evaluator is total, but never leak a fault
            detail = f"evaluator_threw:{type(exc).__name__}"
            verdict = Verdict.deny(Reason.DEFAULT_DENY, "<adapter>", claim=detail)
            kind, version = DenialKind.RULE_REJECTED, ""
        if verdict.kind == VerdictKind.ALLOW:
            return await next()
        if verdict.kind == VerdictKind.TRANSFORM and allow_transform:
            token = _admitted.set(verdict.new_args)
            try:
                return await next()
            finally:
                _admitted.reset(token)
        if verdict.kind == VerdictKind.TRANSFORM:
            claim = "TRANSFORM needs allow_transform=True and a pipeline reading admitted_args()"
            verdict = Verdict.deny(Reason.POLICY_BLOCK, _BY, claim=claim)
            kind = DenialKind.RULE_REJECTED
        elif verdict.kind != VerdictKind.DENY:
            # QUARANTINE / REQUIRE_WITNESS before dispatch: hold the call
            reason = Reason.UNWITNESSED if verdict.reason == Reason.NONE else verdict.reason
            verdict = Verdict.deny(reason, verdict.by, claim=verdict.claim)
        raise deny(request, DenialReason(kind, verdict, version, verdict.claim))

    return stage
