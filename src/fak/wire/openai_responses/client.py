"""OpenAI Responses API, we are the client (tier T1, pure, no I/O).

``render_request``/``parse_response``/``ResponsesStreamAccumulator`` speak to a Responses
upstream (``fak serve --provider openai-responses``) and keep this wire's own shapes: tools,
calls and results of a request that came in on this wire keep their namespaces, custom and
shell forms, and its fields fak does not read are carried over.
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
    ToolSpec,
    Usage,
)
from fak.wire.carry import carry
from fak.wire.errors import WireError
from fak.wire.fields import as_object, req_str
from fak.wire.media import render_part
from fak.wire.names import WireName
from fak.wire.openai_responses.items import SKIPPED_ITEMS, call_item, read_text, shell_arguments
from fak.wire.outcome import ParsedRequest

RESPONSES = WireName.OPENAI_RESPONSES

__all__ = [
    "ResponsesStreamAccumulator",
    "parse_response",
    "render_request",
]


def _output_item(m: Message, kind: str) -> dict[str, Any]:
    """A tool result as the input item its call's kind takes."""
    if kind == "custom":
        return {"type": "custom_tool_call_output", "call_id": m.tool_call_id, "output": m.content}
    if kind == "local_shell":
        return {"type": "local_shell_call_output", "id": m.tool_call_id, "output": m.content}
    if kind == "shell":
        chunk = {"stdout": m.content, "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}
        return {"type": "shell_call_output", "call_id": m.tool_call_id, "output": [chunk]}
    return {"type": "function_call_output", "call_id": m.tool_call_id, "output": m.content}


def _native_tools(kept: Any, names: set[str]) -> list[dict[str, Any]]:
    """The client's own tool objects, limited to the tools still offered (a namespace keeps
    only its offered members)."""
    out: list[dict[str, Any]] = []
    for tool in kept:
        kind = tool.get("type")
        if kind == "namespace":
            ns = tool.get("name")
            members = [
                fn
                for fn in tool.get("tools") or []
                if isinstance(fn, Mapping) and f"{ns}.{fn.get('name')}" in names
            ]
            if members:
                out.append({**tool, "tools": members})
        elif (tool.get("name") if kind in ("function", "custom") else kind) in names:
            out.append(tool)
    return out


def _message_item(m: Message) -> dict[str, Any]:
    content: str | list[dict[str, Any]] = m.content
    if m.parts:
        content = [
            {"type": "input_text", "text": p} if isinstance(p, str) else render_part(p, RESPONSES)
            for p in m.parts
        ]
    return {"type": "message", "role": str(m.role), "content": content}


def _tool(t: ToolSpec) -> dict[str, Any]:
    tool: dict[str, Any] = {
        "type": "function",
        "name": t.name,
        "description": t.description,
        "parameters": dict(t.parameters),
    }
    if t.strict is not None:
        tool["strict"] = t.strict
    return tool


def _legacy(turn: Any, opts: Mapping[str, Any], body: dict[str, Any]) -> None:
    """The sampling settings of a request no wire parsed (a native route's turn)."""
    if turn.max_tokens is not None:
        body["max_output_tokens"] = turn.max_tokens
    if turn.temperature is not None:
        body["temperature"] = turn.temperature
    if turn.session:
        body["user"] = turn.session
    if "top_p" in opts:
        body["top_p"] = opts["top_p"]
    if "parallel_tool_calls" in opts:
        body["parallel_tool_calls"] = opts["parallel_tool_calls"]


def render_request(parsed: ParsedRequest) -> dict[str, Any]:
    """Canonical form → a Responses request (every message as an input item). Tools, calls
    and results of a request that came in on this wire keep their own shapes (namespaces,
    custom and shell tools); every field fak does not govern is carried by
    ``fak.wire.carry`` (unchanged from a Responses client, mapped or refused otherwise)."""
    turn = parsed.turn
    opts = parsed.options
    source = opts.get("wire")
    kinds: Mapping[str, str] = opts.get("tool_kinds") or {}
    items: list[dict[str, Any]] = []
    for m in turn.messages:
        if m.role is Role.TOOL:
            items.append(_output_item(m, kinds.get(m.name or "", "")))
            continue
        if m.role is not Role.ASSISTANT or m.content or not m.tool_calls:
            items.append(_message_item(m))
        items.extend(call_item(c, "", kinds=kinds) for c in m.tool_calls)
    body: dict[str, Any] = {"model": turn.model, "input": items}
    if turn.tools:
        names = {t.name for t in turn.tools}
        kept = opts.get("responses_tools") if source == RESPONSES else None
        if kept:
            body["tools"] = _native_tools(kept, names)
        else:
            body["tools"] = [_tool(t) for t in turn.tools]
    choice = opts.get("tool_choice")
    if isinstance(choice, str):
        body["tool_choice"] = (
            {"type": "function", "name": choice[5:]} if choice.startswith("tool:") else choice
        )
    if source is None:
        _legacy(turn, opts, body)
    else:
        carry(opts.get("extra") or {}, source, RESPONSES, body)
        if source == WireName.ANTHROPIC and opts.get("parallel_tool_calls") is False:
            body["parallel_tool_calls"] = False  # Messages' tool_choice.disable_parallel_tool_use
    if turn.stream:
        body["stream"] = True
    return body


# -- upstream response ----------------------------------------------------------------------
def parse_response(body: Any) -> PlannerTurn:
    """A ``response`` object → ``PlannerTurn`` (the inverse of ``render_response``)."""
    obj = as_object(body, "response")
    texts: list[str] = []
    calls: list[ProposedCall] = []
    for raw in obj.get("output") or []:
        item = as_object(raw, "output[]")
        kind = item.get("type")
        if kind == "message":
            texts.append(read_text(item.get("content") or [], "output[].content"))
        elif kind in ("function_call", "custom_tool_call"):
            name = req_str(item, "name", "output[]")
            ns = item.get("namespace")
            if isinstance(ns, str) and ns:
                name = f"{ns}.{name}"
            if kind == "custom_tool_call":
                raw_input = item.get("input")
                arguments = orjson.dumps(
                    {"input": raw_input if isinstance(raw_input, str) else ""}
                ).decode()
            else:
                arguments = req_str(item, "arguments", "output[]")
            calls.append(ProposedCall(req_str(item, "call_id", "output[]"), name, arguments))
        elif kind in ("local_shell_call", "shell_call"):
            name = "local_shell" if kind == "local_shell_call" else "shell"
            action = as_object(item.get("action"), "output[].action")
            calls.append(
                ProposedCall(
                    req_str(item, "call_id", "output[]"),
                    name,
                    shell_arguments(name, action, "output[].action"),
                )
            )
        elif kind not in SKIPPED_ITEMS and kind != "reasoning":
            raise WireError(
                "upstream_bad_tool_calls",
                f"the upstream answered an output item of type {kind!r} fak cannot adjudicate",
            )
    usage = obj.get("usage") if isinstance(obj.get("usage"), Mapping) else {}
    assert isinstance(usage, Mapping)
    finish = FinishReason.TOOL_CALLS if calls else FinishReason.STOP
    if obj.get("status") == "incomplete":
        finish = FinishReason.LENGTH
    model = obj.get("model")
    return PlannerTurn(
        text="".join(texts),
        tool_calls=tuple(calls),
        finish_reason=finish,
        usage=Usage(int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)),
        model=model if isinstance(model, str) else "",
    )


class ResponsesStreamAccumulator:
    """Reads a Responses upstream's stream: text deltas as they arrive, and the turn from the
    final ``response`` object. A stream that fails or ends before it is a bad response."""

    __slots__ = ("_final",)

    def __init__(self) -> None:
        self._final: Any = None

    def feed(self, event: str | None, data: Any) -> str:
        obj = as_object(data, "event")
        kind = obj.get("type") or event
        if kind == "response.output_text.delta":
            delta = obj.get("delta")
            return delta if isinstance(delta, str) else ""
        if kind in ("response.completed", "response.incomplete"):
            self._final = obj.get("response")
        elif kind in ("response.failed", "error"):
            raise WireError("upstream_bad_response", "the upstream's response failed")
        return ""

    def finish(self) -> PlannerTurn:
        if self._final is None:
            raise WireError(
                "upstream_bad_response", "the upstream's stream ended before response.completed"
            )
        return parse_response(self._final)
