"""OpenAI Chat Completions, we are the server (tier T1, pure, no I/O).

A client's chat request → ``ParsedRequest`` (``parse_request``); a ``TurnOutcome`` → the
completion (``render_response``) or its SSE chunks (``ChatChunks``). Tool-result messages carry
no name on this wire; parsing recovers it from the assistant call that the id answers. The other
direction (fak as an upstream's client) is ``client``; the tool-call shape both use is ``calls``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from fak.abi import (
    Message,
    ProposedCall,
    Role,
    ToolSpec,
    TurnRequest,
    Usage,
)
from fak.abi.turn import Part
from fak.wire.carry import GOVERNED
from fak.wire.errors import WireError
from fak.wire.fields import (
    INVALID,
    as_object,
    opt_bool,
    opt_float,
    opt_int,
    opt_str,
    req_list,
    req_str,
    stop_list,
    tool_spec,
)
from fak.wire.media import read_part
from fak.wire.names import WireName
from fak.wire.openai_chat.calls import read_tool_calls, render_call
from fak.wire.outcome import ParsedRequest, TurnOutcome

__all__ = [
    "ChatChunks",
    "parse_request",
    "render_response",
]

_ROLES = {
    "system": Role.SYSTEM,
    "developer": Role.SYSTEM,
    "user": Role.USER,
    "assistant": Role.ASSISTANT,
    "tool": Role.TOOL,
}
_MEDIA_PARTS = frozenset({"image_url", "input_audio", "file"})
_CUSTOM_INPUT = {
    "type": "object",
    "properties": {"input": {"type": "string", "description": "the tool's free-form input"}},
    "required": ["input"],
}


# -- client request -------------------------------------------------------------------------
_HELD = "[fak] {what} in this tool result was held out: fak cannot screen it"


def _content(value: Any, where: str, role: Role) -> tuple[str, tuple[str | Part, ...]]:
    """A message's text (what screens read) and, for a user message with media, its parts in
    order. Media in a tool result is held out with a note; elsewhere it is refused."""
    if value is None:
        return "", ()
    if isinstance(value, str):
        return value, ()
    if not isinstance(value, list):
        raise WireError(INVALID, f"{where} must be a string, null or an array of parts", where)
    texts: list[str] = []
    parts: list[str | Part] = []
    media = False
    for i, part in enumerate(value):
        at = f"{where}[{i}]"
        p = as_object(part, at)
        kind = p.get("type")
        if kind in ("text", "refusal", "input_text", "output_text"):
            text = req_str(p, "refusal" if kind == "refusal" else "text", at)
            texts.append(text)
            parts.append(text)
        elif kind in _MEDIA_PARTS and role is Role.USER:
            media = True
            parts.append(read_part(WireName.OPENAI_CHAT, p, at))
        elif kind in _MEDIA_PARTS and role is Role.TOOL:
            note = _HELD.format(what="an image" if kind == "image_url" else "a file")
            texts.append(note)
            parts.append(note)
        else:
            raise WireError(
                "unsupported_content",
                f"{at} has type {kind!r}; fak serve carries text parts here "
                "(and a user's image, file and audio parts)",
                f"{at}.type",
            )
    return "".join(texts), tuple(parts) if media else ()


def _message(raw: Any, i: int, names: dict[str, str]) -> Message:
    at = f"messages[{i}]"
    m = as_object(raw, at)
    role_name = m.get("role")
    role = _ROLES.get(role_name) if isinstance(role_name, str) else None
    if role is None:
        raise WireError(
            INVALID, f"{at}.role must be system, developer, user, assistant or tool", f"{at}.role"
        )
    content, parts = _content(m.get("content"), f"{at}.content", role)
    if role is Role.ASSISTANT:
        calls = read_tool_calls(m.get("tool_calls"), f"{at}.tool_calls", names)
        return Message(Role.ASSISTANT, content, tool_calls=calls)
    if role is Role.TOOL:
        call_id = req_str(m, "tool_call_id", at)
        name = names.get(call_id) or opt_str(m, "name", at) or "tool"
        return Message(Role.TOOL, content, tool_call_id=call_id, name=name)
    return Message(role, content, parts=parts)


def _tools(value: Any) -> tuple[ToolSpec, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise WireError(INVALID, "tools must be an array", "tools")
    specs: list[ToolSpec] = []
    for i, raw in enumerate(value):
        t = as_object(raw, f"tools[{i}]")
        kind = t.get("type", "function")
        if kind == "custom":
            custom = as_object(t.get("custom"), f"tools[{i}].custom")
            name = req_str(custom, "name", f"tools[{i}].custom")
            desc = opt_str(custom, "description", f"tools[{i}].custom")
            specs.append(ToolSpec(name, desc, _CUSTOM_INPUT))
            continue
        if kind != "function":
            raise WireError(
                "unsupported_parameter",
                f"tools[{i}].type must be function or custom",
                f"tools[{i}].type",
            )
        fn = as_object(t.get("function"), f"tools[{i}].function")
        specs.append(tool_spec(fn, f"tools[{i}].function", "parameters"))
    return tuple(specs)


def _tool_choice(value: Any) -> str | None:
    if value is None:
        return None
    if value in ("auto", "none", "required"):
        return str(value)
    if isinstance(value, Mapping):
        fn = value.get("function")
        if isinstance(fn, Mapping) and isinstance(fn.get("name"), str):
            return "tool:" + str(fn["name"])
    raise WireError(
        INVALID, "tool_choice must be auto, none, required or a function", "tool_choice"
    )


def _refused(obj: Mapping[str, Any]) -> None:
    """Governed fields fak refuses rather than forward: they would escape adjudication."""
    for key, why in (
        ("functions", "declare tools in tools, where fak adjudicates their calls"),
        ("function_call", "choose a tool with tool_choice"),
        ("web_search_options", "the provider would search out of the kernel's sight"),
    ):
        if obj.get(key) is not None:
            raise WireError("unsupported_parameter", f"{key} is not forwarded: {why}", key)
    n = obj.get("n")
    if n is not None and n != 1:
        raise WireError(
            "unsupported_parameter",
            "n must be 1 through fak: it adjudicates the calls of one choice",
            "n",
        )


def parse_request(body: Any) -> ParsedRequest:
    """A decoded chat-completions request → canonical form. Raises ``WireError``.

    ``options["extra"]`` keeps every field fak does not govern exactly as the client sent it
    (``fak.wire.carry`` decides how it reaches an upstream), ``options["wire"]`` names this
    wire, ``options["raw_tools"]`` the client's own tool objects."""
    obj = as_object(body, "body")
    _refused(obj)
    raw_messages = req_list(obj, "messages", "body")
    if not raw_messages:
        raise WireError(INVALID, "messages must not be empty", "messages")
    names: dict[str, str] = {}
    messages = tuple(_message(m, i, names) for i, m in enumerate(raw_messages))
    max_tokens = opt_int(obj, "max_completion_tokens")
    if max_tokens is None:
        max_tokens = opt_int(obj, "max_tokens")
    turn = TurnRequest(
        model=opt_str(obj, "model", "body"),
        messages=messages,
        tools=_tools(obj.get("tools")),
        max_tokens=max_tokens,
        temperature=opt_float(obj, "temperature", 0.0, 2.0),
        stream=bool(opt_bool(obj, "stream")),
        session=opt_str(obj, "user", "body"),
    )
    options: dict[str, Any] = {}
    top_p = opt_float(obj, "top_p", 0.0, 1.0)
    if top_p is not None:
        options["top_p"] = top_p
    stop = stop_list(obj.get("stop"), "stop")
    if stop:
        options["stop"] = stop
    choice = _tool_choice(obj.get("tool_choice"))
    if choice is not None:
        options["tool_choice"] = choice
    seed = opt_int(obj, "seed", lo=-(2**63))
    if seed is not None:
        options["seed"] = seed
    parallel = opt_bool(obj, "parallel_tool_calls")
    if parallel is not None:
        options["parallel_tool_calls"] = parallel
    stream_options = obj.get("stream_options")
    if isinstance(stream_options, Mapping) and stream_options.get("include_usage") is True:
        options["include_usage"] = True
    kinds = _custom_kinds(obj.get("tools"))
    if kinds:
        options["tool_kinds"] = kinds
    options["wire"] = WireName.OPENAI_CHAT
    extra = {k: v for k, v in obj.items() if k not in GOVERNED[WireName.OPENAI_CHAT]}
    if extra:
        options["extra"] = extra
    if isinstance(obj.get("tools"), list) and obj["tools"]:
        options["raw_tools"] = tuple(obj["tools"])
    return ParsedRequest(turn, options)


def _custom_kinds(value: Any) -> dict[str, str]:
    if not isinstance(value, list):
        return {}
    out: dict[str, str] = {}
    for t in value:
        custom = t.get("custom") if isinstance(t, Mapping) and t.get("type") == "custom" else None
        if isinstance(custom, Mapping) and isinstance(custom.get("name"), str):
            out[custom["name"]] = "custom"
    return out


# -- client response ------------------------------------------------------------------------
def _usage_json(u: Usage) -> dict[str, int]:
    return {
        "prompt_tokens": u.prompt_tokens,
        "completion_tokens": u.completion_tokens,
        "total_tokens": u.prompt_tokens + u.completion_tokens,
    }


def render_response(o: TurnOutcome) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "assistant",
        "content": o.text if (o.text or not o.tool_calls) else None,
        "refusal": None,
    }
    if o.tool_calls:
        message["tool_calls"] = [render_call(c, o.tool_kinds) for c in o.tool_calls]
    body: dict[str, Any] = {
        "id": o.id,
        "object": "chat.completion",
        "created": o.created,
        "model": o.model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": str(o.finish_reason),
                "logprobs": None,
            }
        ],
        "usage": _usage_json(o.usage),
    }
    if o.extension is not None and not o.extension.empty:
        body["fak"] = o.extension.to_json()
    return body


class ChatChunks:
    """Builds the ``data:`` frames of a synthesized ``chat.completion.chunk`` stream."""

    __slots__ = ("_head",)

    def __init__(self, id: str, created: int, model: str) -> None:
        self._head = {
            "id": id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
        }

    def _frame(self, delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
        chunk = {
            **self._head,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
            **extra,
        }
        return b"data: " + orjson.dumps(chunk) + b"\n\n"

    def role(self) -> bytes:
        return self._frame({"role": "assistant", "content": ""})

    def text(self, delta: str) -> bytes:
        return self._frame({"content": delta})

    def tool_calls(
        self, calls: tuple[ProposedCall, ...], kinds: Mapping[str, str] | None = None
    ) -> bytes:
        return self._frame(
            {"tool_calls": [{"index": i, **render_call(c, kinds)} for i, c in enumerate(calls)]}
        )

    def final(self, o: TurnOutcome) -> bytes:
        extra: dict[str, Any] = {"usage": _usage_json(o.usage)}
        if o.extension is not None and not o.extension.empty:
            extra["fak"] = o.extension.to_json()
        return self._frame({}, str(o.finish_reason), **extra)

    def error(self, message: str, code: str | None = None) -> bytes:
        err = {"error": {"message": message, "type": "server_error", "code": code, "param": None}}
        return b"data: " + orjson.dumps(err) + b"\n\n"

    @staticmethod
    def done() -> bytes:
        return b"data: [DONE]\n\n"
