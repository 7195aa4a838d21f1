"""The one kernel boundary every wire passes through (tier T3).

``admit_inbound`` screens every inbound tool result with the kernel before a planner may see
it (QUARANTINE / TRANSFORM forward the stub or pointer; a result that cannot be admitted is held
out with an ADMIT_ERROR stub). The request context says whether the client can page a pointer
back in (``RequestContext.pageout``); when it cannot, the kernel's one admission keeps benign
results whole instead of paging them out by size. ``adjudicate`` decides every proposed call:
ALLOW and TRANSFORM (with rewritten arguments) survive, everything else is dropped.
``outcome`` assembles what the wire renders: surviving calls, deny summary, ``fak`` extension,
``[fak]`` note. Each operation is counted and access-logged by name and verdict only; bytes
never leave through here.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

import orjson

from fak.abi import (
    Context,
    FinishReason,
    Message,
    PlannerTurn,
    ProposedCall,
    Role,
    ToolCall,
    ToolResult,
    Verdict,
    VerdictKind,
)
from fak.gateway.accesslog import AccessLog
from fak.gateway.clientroot import client_root
from fak.gateway.metrics import Metrics
from fak.kernel import Kernel
from fak.kernel.quarantine import PAGEOUT_META, PAGEOUT_OFF
from fak.policy import ROOT_META, args_digest
from fak.wire import (
    Adjudication,
    FakExtension,
    ParsedRequest,
    ResultAdmission,
    TurnOutcome,
    WireVerdict,
    anthropic_note,
    deny_summary,
)

__all__ = ["ADMIT_ERROR_STUB", "Boundary", "KernelPort", "RequestContext"]

_log = logging.getLogger(__name__)

ADMIT_ERROR_STUB = '{"_quarantined":true,"boundary":"proxy","reason":"ADMIT_ERROR"}'
_NO_PAGEOUT: Mapping[str, str] = MappingProxyType({PAGEOUT_META: PAGEOUT_OFF})
_NO_META: Mapping[str, str] = MappingProxyType({})
_MALFORMED = WireVerdict("DENY", by="gateway", reason="MALFORMED", disposition="RETRYABLE")


KernelPort = Kernel
"""What the gateway holds: the kernel itself (T2 below T3), typed, so a renamed or removed kernel
member fails the type check instead of switching a gateway feature off."""


@dataclass(frozen=True, slots=True)
class RequestContext:
    trace_id: str
    principal: str = ""
    session: str = ""  # the x-fak-session header: the recall session (else the trace id)
    # the client can page a paged-out pointer back in (fak-native routes, x-fak-pageout: on,
    # fak serve --pageout); False: benign results reach it whole, whatever their size
    pageout: bool = False


def _is_object(arguments: str) -> bool:
    text = arguments.strip()
    if not text:
        return True
    try:
        return isinstance(orjson.loads(text), dict)
    except orjson.JSONDecodeError:
        return False


class Boundary:
    def __init__(self, kernel: KernelPort, metrics: Metrics, log: AccessLog) -> None:
        self._kernel = kernel
        self._metrics = metrics
        self._log = log
        # (session id, tool, original bytes, verdict): records each admitted result (recall)
        self.recorder: Callable[[str, str, bytes, Verdict | None], None] | None = None

    def batch(self) -> contextlib.AbstractContextManager[Any]:
        """One journal group commit for the decisions made inside (see ``Kernel.batch``)."""
        return self._kernel.batch()

    def record(
        self,
        op: str,
        tool: str,
        ctx: RequestContext,
        v: WireVerdict | None,
        t0: float,
        err: str = "",
    ) -> None:
        seconds = time.perf_counter() - t0
        if v is None:
            self._metrics.operation(op, "ERROR", "", "", seconds)
        else:
            self._metrics.operation(op, v.kind, v.reason, v.disposition, seconds)
        self._log.operation(
            operation=op, tool=tool, trace_id=ctx.trace_id, verdict=v, seconds=seconds, error=err
        )

    # -- inbound results ----------------------------------------------------------------
    def admit_one(
        self, tool: str, payload: bytes, call_id: str, ctx: RequestContext
    ) -> tuple[WireVerdict, bytes, str]:
        """Screen one result → (verdict, bytes that may enter context, quarantine id)."""
        t0 = time.perf_counter()
        try:
            adm = self._kernel.admit_result(
                ToolResult(
                    tool=tool,
                    payload=payload,
                    call_id=call_id,
                    trace_id=ctx.trace_id,
                    meta={} if ctx.pageout else _NO_PAGEOUT,
                )
            )
            wv = WireVerdict.of(adm.verdict)
            out = payload if wv.kind == VerdictKind.ALLOW else adm.payload
            qid = adm.quarantine_id
            if self.recorder is not None:
                self.recorder(ctx.session or ctx.trace_id, tool, payload, adm.verdict)
        except Exception as exc:  # fail closed: an unadmittable result is held out
            _log.warning("result admission failed (%s); holding the result out", type(exc).__name__)
            wv, out, qid = WireVerdict.admit_error(), ADMIT_ERROR_STUB.encode(), ""
        if wv.kind not in (VerdictKind.ALLOW, VerdictKind.TRANSFORM):
            self._metrics.pollutions_blocked.inc()
        self.record("proxy_admit", tool, ctx, wv, t0)
        return wv, out, qid

    def admit_inbound(
        self, parsed: ParsedRequest, ctx: RequestContext
    ) -> tuple[ParsedRequest, tuple[ResultAdmission, ...], bool]:
        """Screen every TOOL message; returns the request the planner may see, the admissions,
        and whether any content was replaced."""
        messages = parsed.turn.messages
        if not any(m.role is Role.TOOL for m in messages):
            return parsed, (), False
        out: list[Message] = []
        admissions: list[ResultAdmission] = []
        changed = False
        for m in messages:
            if m.role is not Role.TOOL:
                out.append(m)
                continue
            tool = m.name or "tool_result"
            wv, payload, _ = self.admit_one(tool, m.content.encode(), m.tool_call_id, ctx)
            admissions.append(ResultAdmission(m.tool_call_id, tool, wv))
            if wv.kind == VerdictKind.ALLOW:
                out.append(m)
            else:
                changed = True
                out.append(replace(m, content=payload.decode("utf-8", errors="replace")))
        turn = replace(parsed.turn, messages=tuple(out)) if changed else parsed.turn
        return ParsedRequest(turn, parsed.options), tuple(admissions), changed

    # -- proposed calls -----------------------------------------------------------------
    def decide_one(
        self,
        tool: str,
        arguments: Any,
        call_id: str,
        ctx: RequestContext,
        *,
        op: str = "adjudicate",
        provenance: Context | None = None,
        meta: Mapping[str, str] | None = None,
    ) -> tuple[WireVerdict, Verdict | None]:
        t0 = time.perf_counter()
        try:
            verdict = self._kernel.decide(
                ToolCall(
                    tool=tool,
                    args=arguments,
                    caller=ctx.principal,
                    trace_id=ctx.trace_id,
                    call_id=call_id,
                    meta=meta or _NO_META,
                    context=provenance,
                )
            )
            wv = WireVerdict.of(verdict)
        except Exception as exc:  # the kernel's fold is total; a fault here still denies
            _log.warning("adjudication failed (%s); denying", type(exc).__name__)
            self.record(op, tool, ctx, _MALFORMED, t0, err=type(exc).__name__)
            return _MALFORMED, None
        self.record(op, tool, ctx, wv, t0)
        return wv, verdict

    def provenance(self, history: tuple[Message, ...]) -> Context | None:
        """The run's provenance, rebuilt from the conversation the planner was given (system and
        user messages trusted; tool results untrusted, as admitted — a held result counts as its
        stub). None when the policy names no sinks (nothing would read it)."""
        if self._kernel.policy.provenance is None:
            return None
        ctx = Context()
        for m in history:
            if m.role is Role.SYSTEM or m.role is Role.USER:
                ctx.user(m.content)
            elif m.role is Role.TOOL:
                ctx.result(m.name or "tool_result", m.tool_call_id, m.content)
        return ctx

    @property
    def annotates_answers(self) -> bool:
        return self._kernel.annotates_answers

    def answer_note(self, text: str, history: tuple[Message, ...]) -> str:
        """The kernel's ``[fak]`` lines on the model's text (``"answer": "annotate"``), with the
        run's provenance rebuilt from the conversation; empty when the policy does not ask."""
        if not text or not self._kernel.annotates_answers:
            return ""
        return self._kernel.answer_note(text, self.provenance(history))

    def adjudicate(
        self, turn: PlannerTurn, ctx: RequestContext, history: tuple[Message, ...] = ()
    ) -> tuple[tuple[ProposedCall, ...], tuple[Adjudication, ...]]:
        kept: list[ProposedCall] = []
        adjudications: list[Adjudication] = []
        provenance = self.provenance(history) if turn.tool_calls else None
        stated = client_root(history) if turn.tool_calls else ""  # path rules may narrow to it
        meta = {ROOT_META: stated} if stated else None
        for call in turn.tool_calls:
            wv, verdict = self.decide_one(
                call.name, call.arguments, call.id, ctx, provenance=provenance, meta=meta
            )
            arguments = call.arguments
            repaired: dict[str, Any] | None = None
            if (
                verdict is not None
                and verdict.kind == VerdictKind.TRANSFORM
                and verdict.new_args is not None
            ):
                repaired = dict(verdict.new_args)
                arguments = orjson.dumps(repaired).decode()
            if wv.admits and not _is_object(arguments):
                wv, repaired = _MALFORMED, None
            adjudications.append(
                Adjudication(
                    call.id, call.name, "sha256:" + args_digest(call.arguments), wv, repaired
                )
            )
            if wv.admits:
                kept.append(ProposedCall(call.id, call.name, arguments))
        return tuple(kept), tuple(adjudications)

    # -- outcome ------------------------------------------------------------------------
    @staticmethod
    def outcome(
        *,
        id: str,
        created: int,
        model: str,
        turn: PlannerTurn,
        kept: tuple[ProposedCall, ...],
        adjudications: tuple[Adjudication, ...],
        admissions: tuple[ResultAdmission, ...],
        usage_extra: Mapping[str, int] | None = None,
        with_note: bool = False,
        tool_kinds: Mapping[str, str] | None = None,
    ) -> TurnOutcome:
        text = turn.text
        if kept:
            finish = FinishReason.TOOL_CALLS
        else:
            finish = (
                FinishReason.STOP
                if turn.finish_reason is FinishReason.TOOL_CALLS
                else turn.finish_reason
            )
            if adjudications and not text:
                text = deny_summary(adjudications)
        ext = FakExtension(adjudications, admissions)
        return TurnOutcome(
            id=id,
            model=model,
            created=created,
            text=text,
            tool_calls=kept,
            finish_reason=finish,
            usage=turn.usage,
            extension=None if ext.empty else ext,
            note=anthropic_note(ext) if with_note and not ext.empty else "",
            usage_extra=dict(usage_extra or {}),
            tool_kinds=dict(tool_kinds or {}),
        )
