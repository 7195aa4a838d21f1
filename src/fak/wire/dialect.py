"""How fak speaks each wire as an upstream's client (tier T1, pure, no I/O).

A ``Dialect`` is one frozen value per wire: where the turn endpoint sits under a base URL, which
header carries the key, the fixed headers, whether the client's own request bytes and headers may
travel unchanged, how to render a request, parse a reply and read a stream (``UpstreamStream``:
SSE events in, text deltas out, then the turn and its usage counters). The proxy planner holds
one (``dialect_for(name)``) and never compares wire names. Nothing here opens a socket.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, assert_never

import orjson

from fak.abi import PlannerTurn
from fak.wire.anthropic import client as messages
from fak.wire.errors import WireError
from fak.wire.names import WireName
from fak.wire.openai_chat import client as chat
from fak.wire.openai_responses import client as responses
from fak.wire.outcome import ParsedRequest
from fak.wire.sse import SSEEvent

__all__ = [
    "ANTHROPIC",
    "OPENAI_CHAT",
    "OPENAI_RESPONSES",
    "Dialect",
    "UpstreamStream",
    "dialect_for",
]


class UpstreamStream(Protocol):
    """Reads one upstream stream: ``feed`` returns the text an event carried (``""`` if none),
    ``finish`` the turn and its wire-specific usage counters; both raise ``WireError``."""

    def feed(self, event: SSEEvent) -> str: ...

    def finish(self) -> tuple[PlannerTurn, dict[str, int]]: ...


@dataclass(frozen=True, slots=True)
class Dialect:
    """What the proxy needs to speak one wire to an upstream."""

    name: WireName
    path: str  # the turn endpoint, appended to the base URL
    versioned: bool  # ``path`` starts with /v1: a base URL that ends in /v1 loses it first
    auth_header: str  # where the API key goes
    auth_prefix: str  # what precedes it there
    headers: tuple[tuple[str, str], ...]  # sent with every request
    passthrough: bool  # the client's own request bytes and headers may travel
    render: Callable[[ParsedRequest, bool], dict[str, Any]]  # (parsed, stream) -> body
    parse: Callable[[Any], tuple[PlannerTurn, dict[str, int]]]  # decoded reply -> turn, usage
    stream: Callable[[], UpstreamStream]  # a reader for one streamed reply

    def url(self, base: str) -> str:
        """The turn endpoint under ``base`` (given without a trailing slash)."""
        root = base[:-3] if self.versioned and base.endswith("/v1") else base
        return root + self.path


def _json(data: str) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise WireError("upstream_bad_response", "stream event is not JSON") from exc


# -- Chat Completions -------------------------------------------------------------------------
def _chat_request(parsed: ParsedRequest, stream: bool) -> dict[str, Any]:
    return chat.render_request(parsed, stream=stream)


def _chat_reply(body: Any) -> tuple[PlannerTurn, dict[str, int]]:
    return chat.parse_response(body), {}


class _ChatStream:
    __slots__ = ("_acc",)

    def __init__(self) -> None:
        self._acc = chat.ChatStreamAccumulator()

    def feed(self, event: SSEEvent) -> str:
        if event.data == "[DONE]":
            self._acc.mark_done()
            return ""
        return self._acc.feed(_json(event.data))

    def finish(self) -> tuple[PlannerTurn, dict[str, int]]:
        return self._acc.finish(), {}


# -- Responses --------------------------------------------------------------------------------
def _responses_request(parsed: ParsedRequest, stream: bool) -> dict[str, Any]:
    body = responses.render_request(parsed)
    body["stream"] = stream
    return body


def _responses_reply(body: Any) -> tuple[PlannerTurn, dict[str, int]]:
    return responses.parse_response(body), {}


class _ResponsesStream:
    __slots__ = ("_acc",)

    def __init__(self) -> None:
        self._acc = responses.ResponsesStreamAccumulator()

    def feed(self, event: SSEEvent) -> str:
        return self._acc.feed(event.event, _json(event.data))

    def finish(self) -> tuple[PlannerTurn, dict[str, int]]:
        return self._acc.finish(), {}


# -- Anthropic Messages -----------------------------------------------------------------------
def _messages_request(parsed: ParsedRequest, stream: bool) -> dict[str, Any]:
    return messages.render_request(parsed, stream=stream)


def _messages_reply(body: Any) -> tuple[PlannerTurn, dict[str, int]]:
    turn = messages.parse_response(body)
    return turn, messages.usage_extra(body.get("usage"))


class _MessagesStream:
    __slots__ = ("_acc",)

    def __init__(self) -> None:
        self._acc = messages.MessagesStreamAccumulator()

    def feed(self, event: SSEEvent) -> str:
        return self._acc.feed(event.event, _json(event.data))

    def finish(self) -> tuple[PlannerTurn, dict[str, int]]:
        return self._acc.finish()


OPENAI_CHAT = Dialect(
    name=WireName.OPENAI_CHAT,
    path="/chat/completions",
    versioned=False,
    auth_header="authorization",
    auth_prefix="Bearer ",
    headers=(),
    passthrough=False,
    render=_chat_request,
    parse=_chat_reply,
    stream=_ChatStream,
)
OPENAI_RESPONSES = Dialect(
    name=WireName.OPENAI_RESPONSES,
    path="/responses",
    versioned=False,
    auth_header="authorization",
    auth_prefix="Bearer ",
    headers=(),
    passthrough=False,
    render=_responses_request,
    parse=_responses_reply,
    stream=_ResponsesStream,
)
ANTHROPIC = Dialect(
    name=WireName.ANTHROPIC,
    path="/v1/messages",
    versioned=True,
    auth_header="x-api-key",
    auth_prefix="",
    headers=(("anthropic-version", messages.ANTHROPIC_VERSION),),
    passthrough=True,
    render=_messages_request,
    parse=_messages_reply,
    stream=_MessagesStream,
)


def dialect_for(name: WireName) -> Dialect:
    """The dialect of wire ``name``."""
    match name:
        case WireName.OPENAI_CHAT:
            return OPENAI_CHAT
        case WireName.OPENAI_RESPONSES:
            return OPENAI_RESPONSES
        case WireName.ANTHROPIC:
            return ANTHROPIC
        case _:
            assert_never(name)
