"""Anthropic Messages ⇄ canonical turn IR (tier T1, pure, no I/O).

Client direction: ``parse_request``, ``render_response`` and ``MessageEvents`` (the SSE sequence
message_start … message_stop). Upstream direction: ``render_request``, ``parse_response`` and
``MessagesStreamAccumulator``. ``tool_result`` blocks become TOOL messages (their tool name is
recovered from the ``tool_use`` they answer); consecutive TOOL messages render back as one user
message. Text, tool_use and tool_result blocks are carried; thinking blocks (model-signed and
opaque, never tool output) ride beside their assistant turn and are put back, unchanged, when a
request is rebuilt; image and document blocks have no text to screen and travel only in a
byte-for-byte passthrough.
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
    TurnRequest,
    Usage,
)
from fak.wire.errors import WireError
from fak.wire.fields import (
    INVALID,
    arguments_text,
    as_object,
    opt_bool,
    opt_float,
    opt_int,
    opt_str,
    req_list,
    req_str,
    stop_list,
)
from fak.wire.outcome import ParsedRequest, TurnOutcome, split_after_spaces

__all__ = [
    "MessageEvents",
    "MessagesStreamAccumulator",
    "forwardable_as_is",
    "parse_request",
    "parse_response",
    "render_request",
    "render_response",
]

BAD_UPSTREAM = "upstream_bad_response"
BAD_TOOL_CALLS = "upstream_bad_tool_calls"
_THINKING_BLOCKS = frozenset({"thinking", "redacted_thinking"})
# Blocks without text (a screenshot Claude Code read, a PDF): forwarded only inside the client's
# own bytes; a rebuilt request carries the text around them, not them.
_MEDIA_BLOCKS = frozenset({"image", "document"})
_STOP_OUT = {
    FinishReason.STOP: "end_turn",
    FinishReason.LENGTH: "max_tokens",
    FinishReason.TOOL_CALLS: "tool_use",
}
_STOP_IN = {
    "end_turn": FinishReason.STOP,
    "stop_sequence": FinishReason.STOP,
    "max_tokens": FinishReason.LENGTH,
    "tool_use": FinishReason.TOOL_CALLS,
}
_USAGE_EXTRA = ("cache_read_input_tokens", "cache_creation_input_tokens")


# -- client request -------------------------------------------------------------------------
def _unsupported(kind: Any, where: str) -> WireError:
    return WireError(
        "unsupported_content",
        f"{where} has type {kind!r}; fak serve carries text, tool_use and tool_result blocks",
        f"{where}.type",
    )


def _text_blocks(value: Any, where: str) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if not isinstance(value, list):
        raise WireError(INVALID, f"{where} must be a string or an array of blocks", where)
    texts: list[str] = []
    for i, raw in enumerate(value):
        b = as_object(raw, f"{where}[{i}]")
        kind = b.get("type")
        if kind in _MEDIA_BLOCKS:
            continue  # no text to screen; travels only with the client's own bytes
        if kind != "text":
            raise _unsupported(kind, f"{where}[{i}]")
        texts.append(req_str(b, "text", f"{where}[{i}]"))
    return "\n\n".join(texts)


def _user(content: Any, at: str, names: dict[str, str]) -> list[Message]:
    if isinstance(content, str):
        return [Message(Role.USER, content)]
    if not isinstance(content, list):
        raise WireError(INVALID, f"{at}.content must be a string or an array", f"{at}.content")
    out: list[Message] = []
    texts: list[str] = []
    for i, raw in enumerate(content):
        where = f"{at}.content[{i}]"
        b = as_object(raw, where)
        kind = b.get("type")
        if kind == "text":
            texts.append(req_str(b, "text", where))
            continue
        if kind in _MEDIA_BLOCKS:
            continue  # an image or document the user attached: no text to screen
        if kind != "tool_result":
            raise _unsupported(kind, where)
        if texts:
            out.append(Message(Role.USER, "\n\n".join(texts)))
            texts = []
        call_id = req_str(b, "tool_use_id", where)
        out.append(
            Message(
                Role.TOOL,
                _text_blocks(b.get("content"), f"{where}.content"),
                tool_call_id=call_id,
                name=names.get(call_id, "tool_result"),
            )
        )
    if texts or not out:
        out.append(Message(Role.USER, "\n\n".join(texts)))
    return out


def _thinking_block(b: Mapping[str, Any]) -> dict[str, Any] | None:
    """A thinking block as the upstream signed it (only its own keys), or None if malformed."""
    fields = ("thinking", "signature") if b.get("type") == "thinking" else ("data",)
    if not all(isinstance(b.get(f), str) for f in fields):
        return None
    return {"type": b["type"], **{f: b[f] for f in fields}}


def _assistant(
    content: Any, at: str, names: dict[str, str], thinking: list[dict[str, Any]]
) -> Message:
    """An assistant turn; its thinking blocks (model-signed, opaque) go to ``thinking``."""
    if isinstance(content, str):
        return Message(Role.ASSISTANT, content)
    if not isinstance(content, list):
        raise WireError(INVALID, f"{at}.content must be a string or an array", f"{at}.content")
    texts: list[str] = []
    calls: list[ProposedCall] = []
    for i, raw in enumerate(content):
        where = f"{at}.content[{i}]"
        b = as_object(raw, where)
        kind = b.get("type")
        if kind == "text":
            texts.append(req_str(b, "text", where))
        elif kind == "tool_use":
            call = ProposedCall(
                id=req_str(b, "id", where),
                name=req_str(b, "name", where),
                arguments=arguments_text(b.get("input"), f"{where}.input"),
            )
            names[call.id] = call.name
            calls.append(call)
        elif kind in _THINKING_BLOCKS:
            block = _thinking_block(b)
            if block is not None:
                thinking.append(block)
        else:
            raise _unsupported(kind, where)
    return Message(Role.ASSISTANT, "".join(texts), tool_calls=tuple(calls))


def _tools(value: Any) -> tuple[ToolSpec, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise WireError(INVALID, "tools must be an array", "tools")
    specs: list[ToolSpec] = []
    for i, raw in enumerate(value):
        t = as_object(raw, f"tools[{i}]")
        if t.get("type") not in (None, "custom"):
            continue  # a server tool would run where the kernel never sees it: not forwarded
        schema = t.get("input_schema")
        specs.append(
            ToolSpec(
                name=req_str(t, "name", f"tools[{i}]"),
                description=opt_str(t, "description", f"tools[{i}]"),
                parameters=as_object(schema, f"tools[{i}].input_schema")
                if schema is not None
                else {},
            )
        )
    return tuple(specs)


def _tool_choice(value: Any) -> str | None:
    if value is None:
        return None
    choice = as_object(value, "tool_choice")
    kind = choice.get("type")
    if kind == "auto" or kind == "none":
        return str(kind)
    if kind == "any":
        return "required"
    if kind == "tool" and isinstance(choice.get("name"), str):
        return "tool:" + str(choice["name"])
    raise WireError(INVALID, "tool_choice.type must be auto, any, tool or none", "tool_choice")


def parse_request(body: Any) -> ParsedRequest:
    """A decoded Messages request → canonical form. Raises ``WireError``."""
    obj = as_object(body, "body")
    max_tokens = opt_int(obj, "max_tokens", lo=1)
    if max_tokens is None:
        raise WireError(INVALID, "max_tokens is required on the Messages wire", "max_tokens")
    raw_messages = req_list(obj, "messages", "body")
    if not raw_messages:
        raise WireError(INVALID, "messages must not be empty", "messages")
    messages: list[Message] = []
    system = _text_blocks(obj.get("system"), "system")
    if system:
        messages.append(Message(Role.SYSTEM, system))
    names: dict[str, str] = {}
    thinking: dict[int, tuple[dict[str, Any], ...]] = {}
    assistant_turns = 0
    for i, raw in enumerate(raw_messages):
        at = f"messages[{i}]"
        m = as_object(raw, at)
        role = m.get("role")
        if role == "user":
            messages.extend(_user(m.get("content"), at, names))
        elif role == "assistant":
            blocks: list[dict[str, Any]] = []
            messages.append(_assistant(m.get("content"), at, names, blocks))
            if blocks:
                thinking[assistant_turns] = tuple(blocks)
            assistant_turns += 1
        elif role == "system":  # trusted system text mid-conversation (Claude Code sends it)
            messages.append(Message(Role.SYSTEM, _text_blocks(m.get("content"), f"{at}.content")))
        else:
            raise WireError(INVALID, f"{at}.role must be user, assistant or system", f"{at}.role")
    metadata = obj.get("metadata")
    session = metadata.get("user_id") if isinstance(metadata, Mapping) else None
    turn = TurnRequest(
        model=opt_str(obj, "model", "body"),
        messages=tuple(messages),
        tools=_tools(obj.get("tools")),
        max_tokens=max_tokens,
        temperature=opt_float(obj, "temperature", 0.0, 1.0),
        stream=bool(opt_bool(obj, "stream")),
        session=session if isinstance(session, str) else "",
    )
    options: dict[str, Any] = {}
    top_p = opt_float(obj, "top_p", 0.0, 1.0)
    if top_p is not None:
        options["top_p"] = top_p
    stop = stop_list(obj.get("stop_sequences"), "stop_sequences")
    if stop:
        options["stop"] = stop
    choice = _tool_choice(obj.get("tool_choice"))
    if choice is not None:
        options["tool_choice"] = choice
    stripped = [k for k in _BYPASS_KEYS if k in obj]
    stripped += [
        f"tools[{i}] ({t.get('type')})"
        for i, t in enumerate(obj.get("tools") or ())
        if isinstance(t, Mapping) and t.get("type") not in (None, "custom")
    ]
    if stripped:
        options["stripped"] = tuple(stripped)
    extra = {k: v for k, v in obj.items() if k not in _READ_KEYS and k not in _BYPASS_KEYS}
    if extra:
        options["anthropic_extra"] = extra
    if thinking:
        options["anthropic_thinking"] = thinking
    return ParsedRequest(turn, options)


# -- passthrough: which requests may be forwarded byte for byte ------------------------------
# Top-level keys fak reads itself (everything else carries no content the model reads as a
# message or a tool result: sampling, thinking, context management, output settings, metadata,
# fields from newer API versions; those travel unchanged, also when the request is rebuilt).
_READ_KEYS = frozenset(
    {
        "model",
        "max_tokens",
        "messages",
        "system",
        "tools",
        "tool_choice",
        "temperature",
        "top_p",
        "stop_sequences",
        "stream",
        "metadata",
    }
)
# Keys that would run tools where the kernel never sees them: never forwarded.
_BYPASS_KEYS = ("mcp_servers", "container")
_BLOCK_KEYS = {
    "text": frozenset({"type", "text", "cache_control", "citations"}),
    "tool_use": frozenset({"type", "id", "name", "input", "cache_control", "caller"}),
    "tool_result": frozenset({"type", "tool_use_id", "content", "is_error", "cache_control"}),
    "thinking": frozenset({"type", "thinking", "signature"}),
    "redacted_thinking": frozenset({"type", "data"}),
    "image": frozenset({"type", "source", "cache_control"}),
    "document": frozenset({"type", "source", "cache_control", "title", "context", "citations"}),
}
_TEXT_ONLY = frozenset({"text"})
_TEXT_OR_MEDIA = frozenset({"text", "image", "document"})
# per-message keys besides role and content: per-turn settings, no content (Claude Code 2.1)
_MESSAGE_KEYS = frozenset({"role", "content", "output_config"})


def _blocks_known(value: Any, allowed: frozenset[str] | None = None) -> bool:
    if isinstance(value, str) or value is None:
        return True
    if not isinstance(value, list):
        return False
    for block in value:
        if not isinstance(block, Mapping):
            return False
        kind = block.get("type")
        keys = _BLOCK_KEYS.get(kind) if isinstance(kind, str) else None
        if keys is None or (allowed is not None and kind not in allowed):
            return False
        if not keys.issuperset(block):
            return False
        if kind == "tool_result" and not _blocks_known(block.get("content"), _TEXT_OR_MEDIA):
            return False
    return True


def forwardable_as_is(body: Any) -> bool:
    """True when the client's exact bytes may go upstream: every message and block holds only
    keys fak reads (an extra key in a block could carry bytes the screen never saw), there is
    no server tool and no ``mcp_servers``. Otherwise the gateway rebuilds the request from what
    it parsed and screened."""
    if not isinstance(body, Mapping) or any(k in body for k in _BYPASS_KEYS):
        return False
    if not _blocks_known(body.get("system"), _TEXT_ONLY):
        return False
    messages = body.get("messages")
    if not isinstance(messages, list):
        return False
    for m in messages:
        if not isinstance(m, Mapping) or not _MESSAGE_KEYS.issuperset(m):
            return False
        allowed = _TEXT_ONLY if m.get("role") == "system" else None
        if not _blocks_known(m.get("content"), allowed):
            return False
    tools = body.get("tools")
    if tools is not None:
        if not isinstance(tools, list):
            return False
        for t in tools:  # client tool definitions are the client's own: any keys travel
            if not isinstance(t, Mapping) or t.get("type") not in (None, "custom"):
                return False
    return True


# -- upstream request -----------------------------------------------------------------------
def _input_object(call: ProposedCall) -> Any:
    try:
        value = orjson.loads(call.arguments or "{}")
    except orjson.JSONDecodeError:
        value = None
    if not isinstance(value, dict):
        raise WireError(
            INVALID,
            f"tool call {call.id!r} has arguments that are not a JSON object; "
            "the Messages wire carries tool input as an object",
            "messages",
        )
    return value


def _assistant_json(m: Message, thinking: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    if not m.tool_calls and not thinking:
        return {"role": "assistant", "content": m.content}
    blocks: list[dict[str, Any]] = [dict(b) for b in thinking]  # first, as the model wrote them
    if m.content:
        blocks.append({"type": "text", "text": m.content})
    blocks.extend(
        {"type": "tool_use", "id": c.id, "name": c.name, "input": _input_object(c)}
        for c in m.tool_calls
    )
    return {"role": "assistant", "content": blocks}


def render_request(parsed: ParsedRequest, *, stream: bool = False) -> dict[str, Any]:
    """Canonical form → a Messages request body for an Anthropic upstream."""
    turn, opts = parsed.turn, parsed.options
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
            out.append({"role": "user", "content": m.content})
        elif m.role is Role.ASSISTANT:
            out.append(_assistant_json(m, thinking.get(assistant_turns, ())))
            assistant_turns += 1
    if results:
        out.append({"role": "user", "content": results})
    body: dict[str, Any] = {
        "model": turn.model,
        "max_tokens": turn.max_tokens if turn.max_tokens is not None else 4096,
        "messages": out,
    }
    if system:
        body["system"] = "\n\n".join(system)
    if turn.tools:
        body["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": dict(t.parameters)}
            for t in turn.tools
        ]
    if turn.temperature is not None:
        body["temperature"] = min(turn.temperature, 1.0)
    if turn.session:
        body["metadata"] = {"user_id": turn.session}
    if "top_p" in opts:
        body["top_p"] = opts["top_p"]
    if opts.get("stop"):
        body["stop_sequences"] = list(opts["stop"])
    choice = opts.get("tool_choice")
    if isinstance(choice, str):
        if choice.startswith("tool:"):
            body["tool_choice"] = {"type": "tool", "name": choice[5:]}
        else:
            body["tool_choice"] = {"type": {"required": "any"}.get(choice, choice)}
    for key, value in (opts.get("anthropic_extra") or {}).items():
        if key not in body:  # thinking settings too: the thinking blocks travel with them
            body[key] = value
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


# -- client response ------------------------------------------------------------------------
def _content(o: TurnOutcome) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if o.note:
        blocks.append({"type": "text", "text": o.note})
    if o.text:
        blocks.append({"type": "text", "text": o.text})
    blocks.extend(
        {"type": "tool_use", "id": c.id, "name": c.name, "input": _input_object(c)}
        for c in o.tool_calls
    )
    return blocks


def _usage_json(o: TurnOutcome, *, output: bool = True) -> dict[str, int]:
    usage = {"input_tokens": o.usage.prompt_tokens}
    usage["output_tokens"] = o.usage.completion_tokens if output else 0
    usage.update(o.usage_extra)
    return usage


def render_response(o: TurnOutcome) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": o.id,
        "type": "message",
        "role": "assistant",
        "model": o.model,
        "content": _content(o),
        "stop_reason": _STOP_OUT[o.finish_reason],
        "stop_sequence": None,
        "usage": _usage_json(o),
    }
    if o.extension is not None and not o.extension.empty:
        body["fak"] = o.extension.to_json()
    return body


def _event(name: str, data: Mapping[str, Any]) -> bytes:
    return b"event: " + name.encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n"


class MessageEvents:
    """Builds the SSE events of a synthesized Messages stream."""

    __slots__ = ("_id", "_model")

    def __init__(self, id: str, model: str) -> None:
        self._id, self._model = id, model

    def start(self, input_tokens: int) -> bytes:
        message: dict[str, Any] = {
            "id": self._id,
            "type": "message",
            "role": "assistant",
            "model": self._model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": 0},
        }
        return _event("message_start", {"type": "message_start", "message": message})

    @staticmethod
    def ping() -> bytes:
        return _event("ping", {"type": "ping"})

    def body(self, o: TurnOutcome) -> list[bytes]:
        """Every content block (start, deltas, stop), then message_delta and message_stop."""
        frames: list[bytes] = []
        for index, block in enumerate(_content(o)):
            if block["type"] == "text":
                frames.append(
                    _event(
                        "content_block_start",
                        {
                            "type": "content_block_start",
                            "index": index,
                            "content_block": {"type": "text", "text": ""},
                        },
                    )
                )
                frames.extend(
                    _event(
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": index,
                            "delta": {"type": "text_delta", "text": piece},
                        },
                    )
                    for piece in split_after_spaces(block["text"])
                )
            else:
                start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
                frames.append(
                    _event(
                        "content_block_start",
                        {"type": "content_block_start", "index": index, "content_block": start},
                    )
                )
                partial = orjson.dumps(block["input"]).decode()
                frames.append(
                    _event(
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": index,
                            "delta": {"type": "input_json_delta", "partial_json": partial},
                        },
                    )
                )
            frames.append(
                _event("content_block_stop", {"type": "content_block_stop", "index": index})
            )
        delta: dict[str, Any] = {
            "type": "message_delta",
            "delta": {"stop_reason": _STOP_OUT[o.finish_reason], "stop_sequence": None},
            "usage": _usage_json(o),
        }
        if o.extension is not None and not o.extension.empty:
            delta["fak"] = o.extension.to_json()
        frames.append(_event("message_delta", delta))
        frames.append(_event("message_stop", {"type": "message_stop"}))
        return frames

    @staticmethod
    def error(message: str, kind: str = "api_error") -> bytes:
        return _event("error", {"type": "error", "error": {"type": kind, "message": message}})
