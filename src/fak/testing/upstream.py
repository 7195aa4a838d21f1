"""A recording mock of an OpenAI-compatible (Chat Completions and Responses) and an Anthropic
upstream (tier T4).

Shipped in the package so users can test their setup too. Every request body it receives is
kept (bounded) so a test can prove what did, and did not, reach the upstream. Replies come from
a script (a ``PlannerTurn`` per request, or a function of the parsed request) rendered in the
caller's wire, streamed or not; ``fail_with`` makes it answer an error status, ``garbage``
an unparseable body. ``fixed`` skips parsing and returns the same pre-rendered turn (the
benchmark's mode). ``structured`` answers like a real model asked for structured output: when a
request carries a JSON schema (chat ``response_format``, Responses ``text.format``, Messages
``output_config.format``), the reply's text is ``structured(schema)``; without one, the script
answers (plain text), so a gateway that drops the field is caught. Run it standalone:
``python -m fak.testing.upstream --port 9000``.
"""

from __future__ import annotations

import argparse
import itertools
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from fak.abi import FinishReason, PlannerTurn, ProposedCall, TurnRequest, Usage
from fak.testing.planner import default_rule
from fak.wire import (
    TurnOutcome,
    WireError,
    anthropic,
    openai_chat,
    openai_responses,
    split_after_spaces,
)

__all__ = ["MockUpstream", "Received", "asked_schema", "tool_call_turn"]

Script = Callable[[TurnRequest], PlannerTurn] | Sequence[PlannerTurn]
Structured = Callable[[Mapping[str, Any]], str]


def asked_schema(body: Any) -> Mapping[str, Any] | None:
    """The JSON schema a request asks the model's answer to follow, in any of the three
    wires' shapes, or None when it asks for none."""
    if not isinstance(body, Mapping):
        return None
    for outer, inner in (
        ("response_format", None),
        ("text", "format"),
        ("output_config", "format"),
    ):
        fmt = body.get(outer)
        if inner is not None:
            fmt = fmt.get(inner) if isinstance(fmt, Mapping) else None
        if not isinstance(fmt, Mapping) or fmt.get("type") != "json_schema":
            continue
        holder = fmt.get("json_schema") if outer == "response_format" else fmt
        schema = holder.get("schema") if isinstance(holder, Mapping) else None
        if isinstance(schema, Mapping):
            return schema
    return None


@dataclass(frozen=True, slots=True)
class Received:
    path: str
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)


def tool_call_turn(tool: str = "read_file", arguments: str = '{"path":"README.md"}') -> PlannerTurn:
    """A turn proposing one tool call (the benchmark's payload)."""
    return PlannerTurn(
        "",
        (ProposedCall("call_1", tool, arguments),),
        FinishReason.TOOL_CALLS,
        Usage(42, 9),
        "mock-upstream",
    )


def _outcome(
    turn: PlannerTurn, n: int, model: str, kinds: dict[str, str] | None = None
) -> TurnOutcome:
    return TurnOutcome(
        id=f"up_{n}",
        model=turn.model or model,
        created=1_700_000_000,
        text=turn.text,
        tool_calls=turn.tool_calls,
        finish_reason=turn.finish_reason,
        usage=turn.usage,
        tool_kinds=kinds or {},
    )


def _chat_frames(o: TurnOutcome) -> bytes:
    chunks = openai_chat.ChatChunks(o.id, o.created, o.model)
    frames = [chunks.role(), *(chunks.text(p) for p in split_after_spaces(o.text))]
    if o.tool_calls:
        frames.append(chunks.tool_calls(o.tool_calls))
    frames += [chunks.final(o), chunks.done()]
    return b"".join(frames)


class MockUpstream:
    """The upstream double. ``app`` is the ASGI app; ``received`` what it was sent."""

    def __init__(
        self,
        script: Script | None = None,
        *,
        fixed: PlannerTurn | None = None,
        keep: int = 256,
        structured: Structured | None = None,
    ) -> None:
        self.script = script
        self.structured = structured
        self.received: deque[Received] = deque(maxlen=keep)
        self.fail_with: int | None = None
        self.garbage = False
        self._n = itertools.count(1)
        self._step = 0
        self._fixed: dict[str, bytes] = {}
        if fixed is not None:
            o = _outcome(fixed, 0, "mock-upstream")
            self._fixed["chat"] = orjson.dumps(openai_chat.render_response(o))
            self._fixed["messages"] = orjson.dumps(anthropic.render_response(o))
            self._fixed["chat-stream"] = _chat_frames(o)
            ev = anthropic.MessageEvents(o.id, o.model)
            self._fixed["messages-stream"] = b"".join(
                [ev.start(o.usage.prompt_tokens), *ev.body(o)]
            )
        self.app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
                Route("/v1/messages", self._messages, methods=["POST"]),
                Route("/v1/responses", self._responses, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
                Route("/v1/embeddings", self._embeddings, methods=["POST"]),
                Route("/v1/moderations", self._moderations, methods=["POST"]),
            ]
        )

    @property
    def bodies(self) -> bytes:
        """Everything received, concatenated (for "this byte never arrived" assertions)."""
        return b"\n".join(r.body for r in self.received)

    def _turn(self, request: TurnRequest, body: bytes = b"") -> PlannerTurn:
        if self.structured is not None:
            schema = asked_schema(orjson.loads(body)) if body else None
            if schema is not None:
                return PlannerTurn(self.structured(schema), (), FinishReason.STOP, Usage(11, 7))
        script = self.script
        if script is None:
            return default_rule(request)
        if callable(script):
            return script(request)
        turn = script[min(self._step, len(script) - 1)]
        self._step += 1
        return turn

    async def _record(self, request: Request) -> bytes | Response:
        body = await request.body()
        keep = ("authorization", "x-api-key", "anthropic-version", "anthropic-beta")
        headers = {k: v for k, v in request.headers.items() if k in keep}
        self.received.append(Received(request.url.path, body, headers))
        if self.fail_with is not None:
            return Response(
                b'{"error":{"message":"UPSTREAM-SECRET-DETAIL"}}', status_code=self.fail_with
            )
        if self.garbage:
            return Response(b"<html>not json</html>", media_type="text/html")
        return body

    async def _chat(self, request: Request) -> Response:
        got = await self._record(request)
        if isinstance(got, Response):
            return got
        if self._fixed:
            if b'"stream":true' in got:
                return Response(self._fixed["chat-stream"], media_type="text/event-stream")
            return Response(self._fixed["chat"], media_type="application/json")
        try:
            parsed = openai_chat.parse_request(orjson.loads(got))
        except (WireError, orjson.JSONDecodeError) as exc:
            return Response(orjson.dumps({"error": {"message": str(exc)}}), status_code=400)
        o = _outcome(self._turn(parsed.turn, got), next(self._n), parsed.turn.model)
        if not parsed.turn.stream:
            return Response(
                orjson.dumps(openai_chat.render_response(o)), media_type="application/json"
            )
        return Response(_chat_frames(o), media_type="text/event-stream")

    async def _messages(self, request: Request) -> Response:
        got = await self._record(request)
        if isinstance(got, Response):
            return got
        if self._fixed:
            if b'"stream":true' in got:
                return Response(self._fixed["messages-stream"], media_type="text/event-stream")
            return Response(self._fixed["messages"], media_type="application/json")
        try:
            parsed = anthropic.parse_request(orjson.loads(got))
        except (WireError, orjson.JSONDecodeError) as exc:
            return Response(
                orjson.dumps({"type": "error", "error": {"message": str(exc)}}), status_code=400
            )
        o = _outcome(self._turn(parsed.turn, got), next(self._n), parsed.turn.model)
        body: dict[str, Any] = anthropic.render_response(o)
        body["usage"]["cache_read_input_tokens"] = 7
        if not parsed.turn.stream:
            return Response(orjson.dumps(body), media_type="application/json")
        events = anthropic.MessageEvents(o.id, o.model)
        return Response(
            b"".join([events.start(o.usage.prompt_tokens), *events.body(o)]),
            media_type="text/event-stream",
        )

    async def _responses(self, request: Request) -> Response:
        got = await self._record(request)
        if isinstance(got, Response):
            return got
        try:
            parsed = openai_responses.parse_request(orjson.loads(got))
        except (WireError, orjson.JSONDecodeError) as exc:
            return Response(orjson.dumps({"error": {"message": str(exc)}}), status_code=400)
        kinds = dict(parsed.options.get("tool_kinds") or {})
        o = _outcome(self._turn(parsed.turn, got), next(self._n), parsed.turn.model, kinds)
        if not parsed.turn.stream:
            return Response(
                orjson.dumps(openai_responses.render_response(o)), media_type="application/json"
            )
        events = openai_responses.ResponseEvents(o.id, o.model, o.created)
        frames = [*events.start()]
        for part in split_after_spaces(o.text):
            frames += events.text_delta(part)
        frames += events.finish(o)
        return Response(b"".join(frames), media_type="text/event-stream")

    async def _models(self, request: Request) -> Response:
        await self._record(request)
        return Response(
            b'{"object":"list","data":[{"id":"mock-upstream","object":"model","owned_by":"mock"}]}'
        )

    async def _embeddings(self, request: Request) -> Response:
        got = await self._record(request)
        if isinstance(got, Response):
            return got
        vec = {"object": "embedding", "index": 0, "embedding": [0.25, -0.5, 1.0]}
        return Response(orjson.dumps({"object": "list", "data": [vec], "model": "mock-embed"}))

    async def _moderations(self, request: Request) -> Response:
        got = await self._record(request)
        if isinstance(got, Response):
            return got
        return Response(b'{"id":"modr-1","model":"mock-mod","results":[{"flagged":false}]}')


def main(argv: Sequence[str] | None = None) -> None:
    from fak.gateway.server import serve

    ap = argparse.ArgumentParser(description="a recording mock OpenAI/Anthropic upstream")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=9000)
    ap.add_argument("--fixed-tool-call", action="store_true", help="always answer one tool call")
    args = ap.parse_args(argv)
    upstream = MockUpstream(fixed=tool_call_turn() if args.fixed_tool_call else None, keep=1)
    serve(upstream.app, host=args.host, port=args.port)


if __name__ == "__main__":
    main()
