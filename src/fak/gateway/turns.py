"""One adjudicated turn, for any wire and any planner (tier T3).

``TurnRunner.complete`` and ``TurnRunner.stream`` run the same steps: screen inbound results,
ask the planner (the proxy planner also gets the forwarding options and, when nothing was
replaced, the Anthropic passthrough bytes), adjudicate every proposed call, build the outcome.
``stream`` yields ``TextDelta`` as the planner produces text and ends with the ``TurnOutcome``;
tool calls only exist in that final value, after their verdicts. Screening and adjudication are
each one journal group commit (one fsync, before the answer); a large batch of either runs on a
small worker pool so the event loop keeps answering other requests (``/healthz`` included).
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from fak.abi import (
    Message,
    Planner,
    PlannerEvent,
    PlannerInputError,
    PlannerTurn,
    ProposedCall,
    Role,
    TextDelta,
    TurnDone,
)
from fak.gateway.boundary import Boundary, RequestContext
from fak.gateway.errors import GatewayError
from fak.gateway.metrics import Metrics
from fak.gateway.upstream.planner import ForwardedDone, Forwarder, Passthrough
from fak.wire import (
    Adjudication,
    ParsedRequest,
    ResultAdmission,
    TurnOutcome,
    WireName,
    refusal_note,
)

__all__ = ["TurnRunner"]

_log = logging.getLogger(__name__)


# Past these, a request's screening / a turn's adjudication leaves the event loop for the pool.
_OFFLOAD_RESULTS = 8
_OFFLOAD_RESULT_BYTES = 64 * 1024
_OFFLOAD_CALLS = 8

_PREFIX = {
    WireName.OPENAI_CHAT: "chatcmpl-fak-",
    WireName.OPENAI_RESPONSES: "resp_fak_",
    WireName.ANTHROPIC: "msg_fak_",
}


def _token() -> str:
    # a response id names a turn, it guards nothing: a PRNG draw, not a getrandom(2) syscall
    return f"{random.getrandbits(96):024x}"


class TurnRunner:
    def __init__(
        self,
        boundary: Boundary,
        planner: Planner,
        metrics: Metrics,
        *,
        ids: Callable[[], str] = _token,
        clock: Callable[[], float] = time.time,
        max_tool_calls: int,
        workers: int = 2,
    ) -> None:
        self._boundary = boundary
        self._planner = planner
        self._metrics = metrics
        self.ids = ids
        self._clock = clock
        self._proxy = planner if isinstance(planner, Forwarder) else None
        self._max_tool_calls = max_tool_calls
        self._pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="fak-turn")

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    async def _admit(
        self, parsed: ParsedRequest, ctx: RequestContext
    ) -> tuple[ParsedRequest, tuple[ResultAdmission, ...], bool]:
        tools = [m for m in parsed.turn.messages if m.role is Role.TOOL]
        if not tools:
            return parsed, (), False
        heavy = len(tools) > _OFFLOAD_RESULTS or (
            sum(len(m.content) for m in tools) > _OFFLOAD_RESULT_BYTES
        )
        heavy = heavy or self._boundary.recorder is not None  # recall fsyncs: off the loop
        if heavy:
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(self._pool, self._admit_now, parsed, ctx)
        return self._admit_now(parsed, ctx)

    def _adjudicate_now(
        self, turn: PlannerTurn, ctx: RequestContext, history: tuple[Message, ...] = ()
    ) -> tuple[tuple[ProposedCall, ...], tuple[Adjudication, ...]]:
        with self._boundary.batch():
            return self._boundary.adjudicate(turn, ctx, history)

    def _admit_now(
        self, parsed: ParsedRequest, ctx: RequestContext
    ) -> tuple[ParsedRequest, tuple[ResultAdmission, ...], bool]:
        with self._boundary.batch():
            return self._boundary.admit_inbound(parsed, ctx)

    @property
    def planner(self) -> Planner:
        return self._planner

    @property
    def proxy(self) -> Forwarder | None:
        return self._proxy

    def new_id(self, wire: WireName) -> str:
        return _PREFIX[wire] + self.ids()

    def now(self) -> int:
        return int(self._clock())

    def model_for(self, parsed: ParsedRequest) -> str:
        return parsed.turn.model or self._planner.model

    async def _finish(
        self,
        wire: WireName,
        id: str,
        parsed: ParsedRequest,
        turn: PlannerTurn,
        admissions: tuple[ResultAdmission, ...],
        usage_extra: dict[str, int],
        ctx: RequestContext,
        history: tuple[Message, ...] = (),
    ) -> TurnOutcome:
        if len(turn.tool_calls) > self._max_tool_calls:
            raise GatewayError(
                502,
                "upstream_too_many_tool_calls",
                f"the upstream proposed {len(turn.tool_calls)} tool calls in one turn; fak "
                f"adjudicates at most {self._max_tool_calls} (FAK_MAX_TOOL_CALLS)",
            )
        if len(turn.tool_calls) > _OFFLOAD_CALLS:
            loop = asyncio.get_running_loop()
            judged = await loop.run_in_executor(
                self._pool, self._adjudicate_now, turn, ctx, history
            )
        else:
            judged = self._adjudicate_now(turn, ctx, history)
        kept, adjudications = judged
        self._metrics.turns.labels(wire.package, str(parsed.turn.stream).lower()).inc()
        outcome = Boundary.outcome(
            id=id,
            created=self.now(),
            model=turn.model or self.model_for(parsed),
            turn=turn,
            kept=kept,
            adjudications=adjudications,
            admissions=admissions,
            usage_extra=usage_extra,
            with_note=wire is WireName.ANTHROPIC,
            tool_kinds=parsed.options.get("tool_kinds"),
        )
        outcome = _with_refusal_note(wire, outcome, adjudications)
        if not turn.text or not self._boundary.annotates_answers:
            return outcome
        if sum(len(m.content) for m in history) > _OFFLOAD_RESULT_BYTES:  # indexing: off the loop
            loop = asyncio.get_running_loop()
            note = await loop.run_in_executor(
                self._pool, self._boundary.answer_note, turn.text, history
            )
        else:
            note = self._boundary.answer_note(turn.text, history)
        if not note:
            return outcome
        return replace(outcome, text=f"{outcome.text}\n\n{note}" if outcome.text else note)

    async def complete(
        self,
        wire: WireName,
        parsed: ParsedRequest,
        ctx: RequestContext,
        *,
        id: str = "",
        passthrough: Passthrough | None = None,
    ) -> TurnOutcome:
        admitted, admissions, changed = await self._admit(parsed, ctx)
        extra: dict[str, int] = {}
        if self._proxy is not None:
            sent = _rebuilt(passthrough) if changed else passthrough
            turn, extra = await self._proxy.forward(admitted, sent, trace_id=ctx.trace_id)
        else:
            try:
                turn = await self._planner.complete(admitted.turn)
            except PlannerInputError as exc:
                raise _refused(exc) from exc
        return await self._finish(
            wire,
            id or self.new_id(wire),
            parsed,
            turn,
            admissions,
            extra,
            ctx,
            admitted.turn.messages,
        )

    async def stream(
        self,
        wire: WireName,
        parsed: ParsedRequest,
        ctx: RequestContext,
        *,
        id: str,
        passthrough: Passthrough | None = None,
    ) -> AsyncGenerator[TextDelta | TurnOutcome, None]:
        admitted, admissions, changed = await self._admit(parsed, ctx)
        events: AsyncIterator[PlannerEvent]
        if self._proxy is not None:
            sent = _rebuilt(passthrough) if changed else passthrough
            events = self._proxy.forward_stream(admitted, sent, trace_id=ctx.trace_id)
        else:
            events = self._planner.stream(admitted.turn)
        streamed: list[str] = []
        done: TurnDone | None = None
        guarded = _client_fixable(events)
        try:
            async for ev in guarded:
                if isinstance(ev, TextDelta):
                    if ev.text:
                        streamed.append(ev.text)
                        yield ev
                elif isinstance(ev, TurnDone):
                    done = ev
                    break
        finally:
            await guarded.aclose()
            if isinstance(events, AsyncGenerator):
                await events.aclose()
        if done is None:
            raise GatewayError(502, "upstream_bad_response", "the planner ended without a turn")
        turn = done.turn
        text = "".join(streamed)
        if streamed and turn.text != text:
            _log.warning("planner text deltas disagree with its final turn; keeping what was sent")
            turn = replace(turn, text=text)
        extra = dict(done.usage_extra) if isinstance(done, ForwardedDone) else {}
        yield await self._finish(
            wire, id, parsed, turn, admissions, extra, ctx, admitted.turn.messages
        )


def _with_refusal_note(
    wire: WireName, outcome: TurnOutcome, adjudications: tuple[Adjudication, ...]
) -> TurnOutcome:
    """On the OpenAI wires a turn whose calls were only partly refused tells the model of the
    refusal after its text (where a stream can still put it): the surviving calls alone would
    leave it to retry the refused ones blindly. (Messages leads with its own ``[fak]`` block;
    a turn with no surviving call already carries the deny summary as its text.)"""
    if wire is WireName.ANTHROPIC or not outcome.tool_calls:
        return outcome
    note = refusal_note(adjudications)
    if not note:
        return outcome
    text = f"{outcome.text}\n\n{note}" if outcome.text else note
    return replace(outcome, text=text)


def _rebuilt(passthrough: Passthrough | None) -> Passthrough | None:
    """A screened result changed the request: its bytes are rebuilt, its headers still travel."""
    return None if passthrough is None else replace(passthrough, body=None)


async def _client_fixable(
    events: AsyncIterator[PlannerEvent],
) -> AsyncGenerator[PlannerEvent, None]:
    """Re-raise a planner's client-fixable refusal as a 400 with its stable code."""
    try:
        async for ev in events:
            yield ev
    except PlannerInputError as exc:
        raise _refused(exc) from exc


def _refused(exc: PlannerInputError) -> GatewayError:
    """A planner's refusal in HTTP terms: its status (400, or 429 when full) and retry hint."""
    headers = {"retry-after": str(exc.retry_after)} if exc.retry_after is not None else {}
    return GatewayError(exc.status, exc.code, exc.message, headers=headers)
