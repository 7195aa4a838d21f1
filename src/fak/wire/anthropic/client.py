"""Anthropic Messages, we are the client (tier T1, pure, no I/O).

``render_request`` (canonical form → a Messages request for an Anthropic upstream; consecutive
TOOL messages render as one user message, thinking blocks are put back unchanged before their
assistant turn), ``parse_response``, ``usage_extra`` (the cache counters) and
``MessagesStreamAccumulator`` (an upstream's event stream → ``PlannerTurn``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from fak.abi import (
    FinishReason,
    Message,
    PlannerTurn,
    ProposedCall,
    Role,
    Usage,
)
from fak.wire.anthropic.blocks import input_object
from fak.wire.carry import carry
from fak.wire.errors import WireError
from fak.wire.fields import as_object, req_str
from fak.wire.media import render_part
from fak.wire.names import WireName
from fak.wire.outcome import ParsedRequest

__all__ = [
    "ANTHROPIC_VERSION",
    "MessagesStreamAccumulator",
    "parse_response",
    "render_request",
    "usage_extra",
]

MESSAGES = WireName.ANTHROPIC
ANTHROPIC_VERSION = "2023-06-01"  # the anthropic-version header fak sends upstream
BAD_UPSTREAM = "upstream_bad_response"
BAD_TOOL_CALLS = "upstream_bad_tool_calls"
_STOP_IN = {
    "end_turn": FinishReason.STOP,
    "stop_sequence": FinishReason.STOP,
    "max_tokens": FinishReason.LENGTH,
    "tool_use": FinishReason.TOOL_CALLS,
}
_USAGE_EXTRA = ("cache_read_input_tokens", "cache_creation_input_tokens")


def _assistant_json(m: Message, thinking: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    if not m.tool_calls and not thinking:
        return {"role": "assistant", "content": m.content}
    blocks: list[dict[str, Any]] = [dict(b) for b in thinking]  # first, as the model wrote them
    if m.content:
        blocks.append({"type": "text", "text": m.content})
    blocks.extend(
        {"type": "tool_use", "id": c.id, "name": c.name, "input": input_object(c)}
        for c in m.tool_calls
    )
    return {"role": "assistant", "content": blocks}


def _user_json(m: Message) -> dict[str, Any]:
    if not m.parts:
        return {"role": "user", "content": m.content}
    blocks = [
        {"type": "text", "text": p} if isinstance(p, str) else render_part(p, MESSAGES)
        for p in m.parts
    ]
    return {"role": "user", "content": blocks}


def _tools(parsed: ParsedRequest, same_wire: bool) -> list[dict[str, Any]]:
    """The tools still offered: a Messages client's own tool objects unchanged (cache_control
    and all), else each rendered from its spec."""
    offered = {t.name for t in parsed.turn.tools}
    raw = parsed.options.get("raw_tools") if same_wire else None
    if raw:
        return [dict(t) for t in raw if t.get("name") in offered]
    out: list[dict[str, Any]] = []
    for t in parsed.turn.tools:
        tool: dict[str, Any] = {
            "name": t.name,
            "description": t.description,
            "input_schema": dict(t.parameters),
        }
        if t.strict is not None:
            tool["strict"] = t.strict
        out.append(tool)
    return out


def _legacy(turn: Any, opts: Mapping[str, Any], body: dict[str, Any]) -> None:
    """The sampling settings of a request no wire parsed (a native route's turn)."""
    if turn.temperature is not None:
        body["temperature"] = min(turn.temperature, 1.0)
    if turn.session:
        body["metadata"] = {"user_id": turn.session}
    if "top_p" in opts:
        body["top_p"] = opts["top_p"]
    if opts.get("stop"):
        body["stop_sequences"] = list(opts["stop"])


def render_request(parsed: ParsedRequest, *, stream: bool = False) -> dict[str, Any]:
    """Canonical form → a Messages request body for an Anthropic upstream. Messages and tools
    come from what fak parsed and screened; every other field the client sent is carried by
    ``fak.wire.carry`` (unchanged from a Messages client, mapped or refused from another
    wire). ``max_tokens``, which this wire requires, defaults to 4096 when nothing set it."""
    turn, opts = parsed.turn, parsed.options
    source = opts.get("wire")
    system = [m.content for m in turn.messages if m.role is Role.SYSTEM]
    out: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    thinking: Mapping[int, tuple[dict[str, Any], ...]] = opts.get("anthropic_thinking") or {}
    assistant_turns = 0
    for m in turn.messages:
        if m.role is Role.TOOL:
            results.append(
                {"type": "tool_result", "tool_use_id": m.tool_call_id, "content": m.content}
            )
            continue
        if results:
            out.append({"role": "user", "content": results})
            results = []
        if m.role is Role.USER:
            out.append(_user_json(m))
        elif m.role is Role.ASSISTANT:
            out.append(_assistant_json(m, thinking.get(assistant_turns, ())))
            assistant_turns += 1
    if results:
        out.append({"role": "user", "content": results})
    body: dict[str, Any] = {"model": turn.model, "messages": out}
    if system:
        body["system"] = "\n\n".join(system)
    if turn.tools:
        body["tools"] = _tools(parsed, source == MESSAGES)
    choice = opts.get("tool_choice")
    if isinstance(choice, str):
        if choice.startswith("tool:"):
            body["tool_choice"] = {"type": "tool", "name": choice[5:]}
        else:
            body["tool_choice"] = {"type": {"required": "any"}.get(choice, choice)}
        if source == MESSAGES and opts.get("parallel_tool_calls") is False:
            body["tool_choice"]["disable_parallel_tool_use"] = True
    if source is None:
        _legacy(turn, opts, body)
    else:
        carry(opts.get("extra") or {}, source, MESSAGES, body)
    body.setdefault("max_tokens", turn.max_tokens if turn.max_tokens is not None else 4096)
    if stream:
        body["stream"] = True
    return body


# -- upstream response ----------------------------------------------------------------------
def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def usage_extra(usage: Any) -> dict[str, int]:
    """The cache counters of an Anthropic usage object, when present."""
    if not isinstance(usage, Mapping):
        return {}
    return {k: _int(usage[k]) for k in _USAGE_EXTRA if usage.get(k) is not None}


def parse_response(body: Any) -> PlannerTurn:
    """An upstream Messages response → ``PlannerTurn``. Raises ``WireError``."""
    if not isinstance(body, Mapping) or body.get("type") != "message":
        raise WireError(BAD_UPSTREAM, "upstream body is not a Messages response")
    content = body.get("content")
    if not isinstance(content, list):
        raise WireError(BAD_UPSTREAM, "upstream message has no content array")
    texts: list[str] = []
    calls: list[ProposedCall] = []
    for block in content:
        if not isinstance(block, Mapping):
            raise WireError(BAD_UPSTREAM, "upstream content block is not an object")
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif kind == "tool_use":
            try:
                calls.append(
                    ProposedCall(
                        id=req_str(block, "id", "tool_use"),
                        name=req_str(block, "name", "tool_use"),
                        arguments=orjson.dumps(as_object(block.get("input"), "input")).decode(),
                    )
                )
            except WireError as exc:
                raise WireError(BAD_TOOL_CALLS, "upstream tool_use block does not parse") from exc
    stop = body.get("stop_reason")
    if stop == "tool_use" and not calls:
        raise WireError(BAD_TOOL_CALLS, "upstream announced tool_use but sent no tool_use block")
    usage = body.get("usage") if isinstance(body.get("usage"), Mapping) else {}
    assert isinstance(usage, Mapping)
    model = body.get("model")
    return PlannerTurn(
        text="".join(texts),
        tool_calls=tuple(calls),
        finish_reason=FinishReason.TOOL_CALLS
        if calls
        else _STOP_IN.get(stop if isinstance(stop, str) else "", FinishReason.STOP),
        usage=Usage(_int(usage.get("input_tokens")), _int(usage.get("output_tokens"))),
        model=model if isinstance(model, str) else "",
    )


class MessagesStreamAccumulator:
    """Folds an upstream Messages event stream into the response it describes.

    ``feed(event_name, data)`` returns the text delta the event carried; ``finish()`` returns
    the ``PlannerTurn`` and the usage cache counters, validating like ``parse_response``.
    """

    __slots__ = ("_blocks", "_json", "_message", "_stopped")

    def __init__(self) -> None:
        self._stopped = False
        self._message: dict[str, Any] = {}
        self._blocks: dict[int, dict[str, Any]] = {}
        self._json: dict[int, list[str]] = {}

    def feed(self, event: str, data: Any) -> str:
        if not isinstance(data, Mapping):
            raise WireError(BAD_UPSTREAM, "upstream stream event is not an object")
        kind = data.get("type", event)
        if kind == "error":
            raise WireError(BAD_UPSTREAM, "upstream stream reported an error")
        if kind == "message_start":
            message = data.get("message")
            if not isinstance(message, Mapping):
                raise WireError(BAD_UPSTREAM, "message_start carries no message")
            self._message = dict(message)
            self._message["usage"] = dict(message.get("usage") or {})
        elif kind == "content_block_start":
            index, block = data.get("index"), data.get("content_block")
            if not isinstance(index, int) or not isinstance(block, Mapping):
                raise WireError(BAD_UPSTREAM, "content_block_start does not parse")
            self._blocks[index] = dict(block)
        elif kind == "content_block_delta":
            return self._delta(data)
        elif kind == "message_stop":
            self._stopped = True
        elif kind == "message_delta":
            delta = data.get("delta")
            if isinstance(delta, Mapping) and "stop_reason" in delta:
                self._message["stop_reason"] = delta["stop_reason"]
            usage = data.get("usage")
            if isinstance(usage, Mapping):
                self._message.setdefault("usage", {}).update(
                    {k: v for k, v in usage.items() if v is not None}
                )
        return ""

    def _delta(self, data: Mapping[str, Any]) -> str:
        index, delta = data.get("index"), data.get("delta")
        block = self._blocks.get(index) if isinstance(index, int) else None
        if block is None or not isinstance(delta, Mapping):
            raise WireError(BAD_UPSTREAM, "content_block_delta names no open block")
        if delta.get("type") == "text_delta" and isinstance(delta.get("text"), str):
            block["text"] = block.get("text", "") + delta["text"]
            return str(delta["text"]) if block.get("type") == "text" else ""
        if delta.get("type") == "input_json_delta" and isinstance(delta.get("partial_json"), str):
            self._json.setdefault(index, []).append(delta["partial_json"])  # type: ignore[arg-type]
        return ""

    def finish(self) -> tuple[PlannerTurn, dict[str, int]]:
        if not self._message:
            raise WireError(BAD_UPSTREAM, "upstream stream ended before message_start")
        if not self._stopped:  # cut off mid-turn: nothing in it may be admitted
            raise WireError(BAD_UPSTREAM, "the upstream stream ended before message_stop")
        content: list[dict[str, Any]] = []
        for index, block in sorted(self._blocks.items()):
            if block.get("type") == "tool_use" and index in self._json:
                try:
                    block["input"] = orjson.loads("".join(self._json[index]) or "{}")
                except orjson.JSONDecodeError as exc:
                    raise WireError(BAD_TOOL_CALLS, "upstream tool input does not parse") from exc
            content.append(block)
        body = {**self._message, "type": "message", "content": content}
        return parse_response(body), usage_extra(self._message.get("usage"))
