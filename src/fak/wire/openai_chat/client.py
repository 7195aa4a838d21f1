"""OpenAI Chat Completions, we are the client (tier T1, pure, no I/O).

``render_request`` (canonical form → a chat request for an OpenAI-compatible upstream),
``parse_response`` and ``ChatStreamAccumulator`` (its completion or stream → ``PlannerTurn``).
An upstream whose announced tool calls do not parse is a ``WireError``, never a skipped call.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fak.abi import (
    FinishReason,
    Message,
    PlannerTurn,
    Role,
    ToolSpec,
    Usage,
)
from fak.wire.carry import carry
from fak.wire.errors import WireError
from fak.wire.media import render_part
from fak.wire.names import WireName
from fak.wire.openai_chat.calls import read_tool_calls, render_call
from fak.wire.outcome import ParsedRequest

__all__ = [
    "ChatStreamAccumulator",
    "parse_response",
    "render_request",
]

_FINISH_IN = {
    "stop": FinishReason.STOP,
    "length": FinishReason.LENGTH,
    "tool_calls": FinishReason.TOOL_CALLS,
    "function_call": FinishReason.TOOL_CALLS,
}
CHAT = WireName.OPENAI_CHAT
BAD_UPSTREAM = "upstream_bad_response"
BAD_TOOL_CALLS = "upstream_bad_tool_calls"


def _content(m: Message) -> str | list[dict[str, Any]]:
    if not m.parts:
        return m.content
    return [
        {"type": "text", "text": p} if isinstance(p, str) else render_part(p, CHAT) for p in m.parts
    ]


def _render_message(m: Message, kinds: Mapping[str, str] | None = None) -> dict[str, Any]:
    if m.role is Role.TOOL:
        return {"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content}
    if m.role is Role.ASSISTANT and m.tool_calls:
        return {
            "role": "assistant",
            "content": m.content or None,
            "tool_calls": [render_call(c, kinds) for c in m.tool_calls],
        }
    return {"role": str(m.role), "content": _content(m)}


def _tool(t: ToolSpec) -> dict[str, Any]:
    fn: dict[str, Any] = {
        "name": t.name,
        "description": t.description,
        "parameters": dict(t.parameters),
    }
    if t.strict is not None:
        fn["strict"] = t.strict
    return {"type": "function", "function": fn}


def _tool_name(raw: Any) -> str | None:
    if not isinstance(raw, Mapping):
        return None
    inner = raw.get("custom") if raw.get("type") == "custom" else raw.get("function")
    name = inner.get("name") if isinstance(inner, Mapping) else None
    return name if isinstance(name, str) else None


def _tools(parsed: ParsedRequest, same_wire: bool) -> list[dict[str, Any]]:
    """The tools still offered: a chat client's own tool objects unchanged (strict, custom
    tools and all), else each rendered from its spec."""
    offered = {t.name for t in parsed.turn.tools}
    raw = parsed.options.get("raw_tools") if same_wire else None
    if raw:
        return [dict(t) for t in raw if _tool_name(t) in offered]
    return [_tool(t) for t in parsed.turn.tools]


def _legacy(turn: Any, opts: Mapping[str, Any], body: dict[str, Any]) -> None:
    """The sampling settings of a request no wire parsed (a native route's turn)."""
    if turn.max_tokens is not None:
        body["max_tokens"] = turn.max_tokens
    if turn.temperature is not None:
        body["temperature"] = turn.temperature
    if turn.session:
        body["user"] = turn.session
    if "top_p" in opts:
        body["top_p"] = opts["top_p"]
    if opts.get("stop"):
        body["stop"] = list(opts["stop"])
    if "seed" in opts:
        body["seed"] = opts["seed"]
    if "parallel_tool_calls" in opts:
        body["parallel_tool_calls"] = opts["parallel_tool_calls"]


def render_request(parsed: ParsedRequest, *, stream: bool = False) -> dict[str, Any]:
    """Canonical form → a chat-completions request body for an upstream. Messages and tools
    are rendered from what fak parsed and screened; every other field the client sent is
    carried by ``fak.wire.carry`` (unchanged from a chat client, mapped or refused from
    another wire)."""
    turn, opts = parsed.turn, parsed.options
    source = opts.get("wire")
    body: dict[str, Any] = {
        "model": turn.model,
        # a chat client's custom tools stay custom, in the history as in ``tools``
        "messages": [
            _render_message(m, opts.get("tool_kinds") if source == CHAT else None)
            for m in turn.messages
        ],
    }
    if turn.tools:
        body["tools"] = _tools(parsed, source == CHAT)
    choice = opts.get("tool_choice")
    if isinstance(choice, str):
        body["tool_choice"] = (
            {"type": "function", "function": {"name": choice[5:]}}
            if choice.startswith("tool:")
            else choice
        )
    if source is None:
        _legacy(turn, opts, body)
    else:
        carry(opts.get("extra") or {}, source, CHAT, body)
        if source == WireName.ANTHROPIC and opts.get("parallel_tool_calls") is False:
            body["parallel_tool_calls"] = False  # Messages' tool_choice.disable_parallel_tool_use
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return body


# -- upstream response ----------------------------------------------------------------------
def _usage(value: Any) -> Usage:
    if not isinstance(value, Mapping):
        return Usage()
    p, c = value.get("prompt_tokens"), value.get("completion_tokens")
    return Usage(
        prompt_tokens=p if isinstance(p, int) and not isinstance(p, bool) else 0,
        completion_tokens=c if isinstance(c, int) and not isinstance(c, bool) else 0,
    )


def parse_response(body: Any) -> PlannerTurn:
    """An upstream chat completion → ``PlannerTurn``.

    Raises ``WireError`` with ``upstream_bad_response`` for a body that is not a completion and
    ``upstream_bad_tool_calls`` when announced tool calls do not parse (never skip adjudication).
    """
    if not isinstance(body, Mapping):
        raise WireError(BAD_UPSTREAM, "upstream body is not a JSON object")
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        raise WireError(BAD_UPSTREAM, "upstream completion has no choices")
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, Mapping):
        raise WireError(BAD_UPSTREAM, "upstream choice has no message")
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        raise WireError(BAD_UPSTREAM, "upstream message content is not text")
    finish = choice.get("finish_reason")
    raw_calls = message.get("tool_calls")
    announced = finish in ("tool_calls", "function_call") or bool(raw_calls)
    try:
        calls = read_tool_calls(raw_calls, "tool_calls", {})
    except WireError as exc:
        raise WireError(BAD_TOOL_CALLS, "upstream tool calls do not parse") from exc
    if announced and not calls:
        raise WireError(BAD_TOOL_CALLS, "upstream announced tool calls but sent none")
    model = body.get("model")
    return PlannerTurn(
        text=content or "",
        tool_calls=calls,
        finish_reason=FinishReason.TOOL_CALLS
        if calls
        else _FINISH_IN.get(finish if isinstance(finish, str) else "", FinishReason.STOP),
        usage=_usage(body.get("usage")),
        model=model if isinstance(model, str) else "",
    )


class ChatStreamAccumulator:
    """Folds an upstream ``chat.completion.chunk`` stream into one ``PlannerTurn``.

    ``feed(chunk)`` returns the text delta the chunk carried (``""`` if none); ``finish()``
    validates the accumulated tool calls exactly like ``parse_response``.
    """

    __slots__ = ("_calls", "_done", "_finish", "_model", "_text", "_usage")

    def __init__(self) -> None:
        self._text: list[str] = []
        self._calls: dict[int, list[str]] = {}
        self._finish = ""
        self._done = False
        self._model = ""
        self._usage = Usage()

    def feed(self, chunk: Any) -> str:
        if not isinstance(chunk, Mapping) or "error" in chunk:
            raise WireError(BAD_UPSTREAM, "upstream stream carried an error or a non-object")
        if isinstance(chunk.get("model"), str):
            self._model = chunk["model"]
        if chunk.get("usage") is not None:
            self._usage = _usage(chunk["usage"])
        choices = chunk.get("choices")
        if not isinstance(choices, list) or not choices:
            return ""
        choice = choices[0]
        if not isinstance(choice, Mapping):
            raise WireError(BAD_UPSTREAM, "upstream stream choice is not an object")
        if isinstance(choice.get("finish_reason"), str):
            self._finish = choice["finish_reason"]
        delta = choice.get("delta")
        if not isinstance(delta, Mapping):
            return ""
        for tc in delta.get("tool_calls") or ():
            if not isinstance(tc, Mapping) or not isinstance(tc.get("index", 0), int):
                raise WireError(BAD_TOOL_CALLS, "upstream tool-call delta does not parse")
            slot = self._calls.setdefault(tc.get("index", 0), ["", "", ""])
            fn_raw = tc.get("function")
            fn: Mapping[str, Any] = fn_raw if isinstance(fn_raw, Mapping) else {}
            if isinstance(tc.get("id"), str):
                slot[0] = tc["id"]
            if isinstance(fn.get("name"), str):
                slot[1] += fn["name"]
            if isinstance(fn.get("arguments"), str):
                slot[2] += fn["arguments"]
        text = delta.get("content")
        if isinstance(text, str) and text:
            self._text.append(text)
            return text
        return ""

    def mark_done(self) -> None:
        """The stream's ``[DONE]`` sentinel arrived."""
        self._done = True

    def finish(self) -> PlannerTurn:
        if not (self._finish or self._done):  # cut off mid-turn: nothing in it may be admitted
            raise WireError(
                BAD_UPSTREAM, "the upstream stream ended before the turn did (no finish_reason)"
            )
        message: dict[str, Any] = {"content": "".join(self._text)}
        if self._calls:
            message["tool_calls"] = [
                {"id": s[0], "type": "function", "function": {"name": s[1], "arguments": s[2]}}
                for _, s in sorted(self._calls.items())
            ]
        body = {
            "model": self._model,
            "choices": [{"message": message, "finish_reason": self._finish or "stop"}],
            "usage": {
                "prompt_tokens": self._usage.prompt_tokens,
                "completion_tokens": self._usage.completion_tokens,
            },
        }
        return parse_response(body)
