"""The model-turn routes: OpenAI Chat, OpenAI Responses, Anthropic Messages (tier T3).

Each endpoint parses its wire into the canonical request (400 with the wire error's code on bad
input), runs one adjudicated turn through ``TurnRunner`` and renders the outcome in the same
wire. Streams: OpenAI Chat and Responses relay text as the planner produces it and emit tool
calls only after adjudication; the Messages stream is synthesized once the turn is decided,
with ``ping`` events every ``ping_interval_s`` while the planner is still working. A failure
before the first byte keeps its HTTP status; after it, the wire's own error event is sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable
from typing import Any, TypeVar

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from fak.abi import TextDelta
from fak.gateway.errors import GatewayError
from fak.gateway.http import EventStream, json_response
from fak.gateway.routes.inputs import context, gateway, read_body
from fak.gateway.state import GatewayState
from fak.gateway.upstream.planner import ANTHROPIC_VERSION, Passthrough
from fak.wire import (
    ParsedRequest,
    TurnOutcome,
    WireError,
    WireName,
    anthropic,
    openai_chat,
    openai_responses,
    split_after_spaces,
)

__all__ = ["ROUTES", "chat", "context", "count_tokens", "messages", "responses"]

_T = TypeVar("_T")
_SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}
_SSE = "text/event-stream"


async def _bounded(aw: Awaitable[_T], deadline: float | None) -> _T:
    if deadline is None:
        return await aw
    try:
        async with asyncio.timeout_at(
            asyncio.get_running_loop().time() + deadline - time.monotonic()
        ):
            return await aw
    except TimeoutError as exc:
        raise GatewayError(
            504, "gateway_timeout", "the turn did not finish within the write timeout"
        ) from exc


def _deadline(state: GatewayState) -> float | None:
    t = state.options.write_timeout_s
    return time.monotonic() + t if t > 0 else None


def _parse(fn: Any, body: Any, options: Any = None) -> ParsedRequest:
    try:
        parsed: ParsedRequest = fn(body)
    except WireError as exc:
        raise GatewayError(400, exc.code, exc.message, param=exc.param) from exc
    if options is not None:
        _within_caps(parsed, options.max_messages, options.max_tool_calls)
    return parsed


def _within_caps(parsed: ParsedRequest, max_messages: int, max_tool_calls: int) -> None:
    """413 before any screening or forwarding when one request carries too much to judge."""
    messages = parsed.turn.messages
    if len(messages) > max_messages:
        raise GatewayError(
            413,
            "too_many_messages",
            f"the request carries {len(messages)} messages; the limit is {max_messages} "
            "(FAK_MAX_MESSAGES)",
        )
    calls = sum(len(m.tool_calls) for m in messages)
    if calls > max_tool_calls:
        raise GatewayError(
            413,
            "too_many_tool_calls",
            f"the request carries {calls} tool calls; the limit is {max_tool_calls} "
            "(FAK_MAX_TOOL_CALLS)",
        )


# -- OpenAI Chat Completions -------------------------------------------------------------


async def chat(request: Request) -> Response | EventStream:
    state = gateway(request)
    runner = state.runner
    body, _ = await read_body(state, request)
    parsed = _parse(openai_chat.parse_request, body, state.options)
    ctx = context(request)
    deadline = _deadline(state)
    if not parsed.turn.stream:
        outcome = await _bounded(runner.complete(WireName.OPENAI_CHAT, parsed, ctx), deadline)
        return json_response(openai_chat.render_response(outcome))
    id = runner.new_id(WireName.OPENAI_CHAT)
    gen = runner.stream(WireName.OPENAI_CHAT, parsed, ctx, id=id)
    first = await _first(gen, deadline)
    chunks = openai_chat.ChatChunks(id, runner.now(), runner.model_for(parsed))
    return EventStream(_chat_frames(chunks, gen, first, deadline))


async def _chat_frames(
    chunks: openai_chat.ChatChunks,
    gen: AsyncGenerator[TextDelta | TurnOutcome, None],
    first: TextDelta | TurnOutcome,
    deadline: float | None,
) -> AsyncIterator[bytes]:
    yield chunks.role()
    item, sent = first, ""
    try:
        while isinstance(item, TextDelta):
            sent += item.text
            yield chunks.text(item.text)
            item = await _bounded(anext(gen), deadline)
        outcome: TurnOutcome = item
        tail = [chunks.text(p) for p in split_after_spaces(outcome.text[len(sent) :])]
        if outcome.tool_calls:
            tail.append(chunks.tool_calls(outcome.tool_calls, outcome.tool_kinds))
        tail += [chunks.final(outcome), chunks.done()]
        yield b"".join(tail)  # everything decided at once leaves in one write
    except GatewayError as exc:
        yield chunks.error(exc.message, exc.code) + chunks.done()
    finally:
        await gen.aclose()


# -- OpenAI Responses --------------------------------------------------------------------


async def responses(request: Request) -> Response | EventStream:
    state = gateway(request)
    runner = state.runner
    body, _ = await read_body(state, request)
    parsed = _parse(openai_responses.parse_request, body, state.options)
    ctx = context(request)
    deadline = _deadline(state)
    if not parsed.turn.stream:
        outcome = await _bounded(runner.complete(WireName.OPENAI_RESPONSES, parsed, ctx), deadline)
        return json_response(openai_responses.render_response(outcome))
    id = runner.new_id(WireName.OPENAI_RESPONSES)
    gen = runner.stream(WireName.OPENAI_RESPONSES, parsed, ctx, id=id)
    first = await _first(gen, deadline)
    events = openai_responses.ResponseEvents(id, runner.model_for(parsed), runner.now())
    return EventStream(_response_frames(events, gen, first, deadline))


async def _response_frames(
    events: openai_responses.ResponseEvents,
    gen: AsyncGenerator[TextDelta | TurnOutcome, None],
    first: TextDelta | TurnOutcome,
    deadline: float | None,
) -> AsyncIterator[bytes]:
    head = events.start()
    item = first
    try:
        while isinstance(item, TextDelta):
            yield b"".join([*head, *events.text_delta(item.text)])
            head = []
            item = await _bounded(anext(gen), deadline)
        yield b"".join([*head, *events.finish(item)])
    except GatewayError as exc:
        yield b"".join([*head, events.failed(exc.message, exc.code or "server_error")])
    finally:
        await gen.aclose()


# -- Anthropic Messages ------------------------------------------------------------------


def _passthrough(
    state: GatewayState, request: Request, body: Any, raw: bytes | None
) -> Passthrough | None:
    proxy = state.runner.proxy
    if proxy is None or proxy.provider is not WireName.ANTHROPIC:
        return None
    if not anthropic.forwardable_as_is(body):
        raw = None  # rebuild from what was parsed and screened; the headers still travel
    headers = {"anthropic-version": request.headers.get("anthropic-version", ANTHROPIC_VERSION)}
    beta = request.headers.get("anthropic-beta")
    if beta:
        headers["anthropic-beta"] = beta
    client_key = request.headers.get("x-api-key")
    if client_key and state.options.require_key is None:
        headers["x-api-key"] = client_key
    return Passthrough(raw, headers)


async def messages(request: Request) -> Response | EventStream:
    state = gateway(request)
    runner = state.runner
    body, raw = await read_body(state, request)
    parsed = _parse(anthropic.parse_request, body, state.options)
    ctx = context(request)
    deadline = _deadline(state)
    pt = _passthrough(state, request, body, raw)
    if not parsed.turn.stream:
        outcome = await _bounded(
            runner.complete(WireName.ANTHROPIC, parsed, ctx, passthrough=pt), deadline
        )
        return json_response(anthropic.render_response(outcome))
    id = runner.new_id(WireName.ANTHROPIC)
    events = anthropic.MessageEvents(id, runner.model_for(parsed))
    turn = _collect(runner.stream(WireName.ANTHROPIC, parsed, ctx, id=id, passthrough=pt))
    task = asyncio.ensure_future(_bounded(turn, deadline))
    interval = state.options.ping_interval_s
    if await _client_left(request, task, interval):
        return Response(b"", status_code=499)  # nobody to answer; the upstream is stopped
    if task.done():
        outcome = task.result()  # a failure here keeps its HTTP status
        frames = [events.start(outcome.usage.prompt_tokens), *events.body(outcome)]
        return Response(b"".join(frames), media_type=_SSE, headers=_SSE_HEADERS)
    estimate = max(1, len(raw) // 4)
    return EventStream(_message_frames(events, task, interval, estimate))


async def _collect(items: AsyncIterator[TextDelta | TurnOutcome]) -> TurnOutcome:
    async for item in items:
        if isinstance(item, TurnOutcome):
            return item
    raise GatewayError(502, "upstream_bad_response", "the planner ended without a turn")


async def _message_frames(
    events: anthropic.MessageEvents,
    task: asyncio.Future[TurnOutcome],
    interval: float,
    estimate: int,
) -> AsyncIterator[bytes]:
    """The Messages stream once the turn is in flight: ``ping`` every ``interval`` until it is
    decided, then the whole message (or the wire's error event)."""
    try:
        yield events.start(estimate) + events.ping()
        while True:
            await asyncio.wait({task}, timeout=interval)
            if task.done():
                break
            yield events.ping()
        try:
            outcome = task.result()
        except GatewayError as exc:
            yield events.error(exc.message)
            return
        yield b"".join(events.body(outcome))
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                await task


async def count_tokens(request: Request) -> Response:
    body, raw = await read_body(gateway(request), request)
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        raise GatewayError(
            400,
            "invalid_request",
            "messages is required and must be an array",
            param="messages",
        )
    return json_response({"input_tokens": max(1, len(raw) // 4)})


async def _client_left(request: Request, task: asyncio.Future[Any], timeout: float) -> bool:
    """Wait up to ``timeout`` for ``task``; if the client disconnects first, cancel the task
    (and with it the upstream request) and say so. Before the first byte of a response the
    event stream's own disconnect watch is not running yet, so this is the one that notices."""

    async def gone() -> None:
        while (await request.receive())["type"] != "http.disconnect":
            pass

    watch = asyncio.ensure_future(gone())
    try:
        await asyncio.wait({task, watch}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        left = watch.done() and not watch.cancelled() and watch.exception() is None
        watch.cancel()
    if left and not task.done():
        task.cancel()
        with contextlib.suppress(BaseException):
            await task
        return True
    return False


async def _first(gen: AsyncIterator[_T], deadline: float | None) -> _T:
    """The first stream item, before any byte is committed, so failures keep their status."""
    try:
        return await _bounded(anext(gen), deadline)
    except BaseException:
        if isinstance(gen, AsyncGenerator):
            with contextlib.suppress(BaseException):
                await gen.aclose()
        raise


ROUTES: list[Route] = [
    Route("/v1/chat/completions", chat, methods=["POST"]),
    Route("/v1/responses", responses, methods=["POST"]),
    Route("/v1/messages", messages, methods=["POST"]),
    Route("/v1/messages/count_tokens", count_tokens, methods=["POST"]),
]
"""The model-turn routes; ``build_app`` also dispatches these directly (the hot path)."""
