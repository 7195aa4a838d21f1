"""Anthropic Messages, we are the server (tier T1, pure, no I/O).

A client's Messages request → ``ParsedRequest`` (``parse_request``); whether its exact bytes may
go upstream (``forwardable_as_is``); a ``TurnOutcome`` → the message (``render_response``) or its
SSE sequence message_start … message_stop (``MessageEvents``). ``tool_result`` blocks become TOOL
messages (their tool name is recovered from the ``tool_use`` they answer). Text, tool_use and
tool_result blocks are carried; thinking blocks (model-signed and opaque, never tool output) ride
beside their assistant turn; a user's own image and document blocks are kept as ``Part`` values
for the upstream, while those inside a tool result are held out with a ``[fak]`` note. The other
direction is ``client``; ``blocks`` holds what both share.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from fak.abi import (
    FinishReason,
    Message,
    ProposedCall,
    Role,
    ToolSpec,
    TurnRequest,
)
from fak.abi.turn import Part
from fak.wire.anthropic.blocks import input_object
from fak.wire.carry import GOVERNED
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
    tool_spec,
)
from fak.wire.media import read_part
from fak.wire.names import WireName
from fak.wire.outcome import ParsedRequest, TurnOutcome, split_after_spaces

__all__ = [
    "MessageEvents",
    "forwardable_as_is",
    "parse_request",
    "render_response",
]

_THINKING_BLOCKS = frozenset({"thinking", "redacted_thinking"})
_CLIENT = (None, "custom")  # tool types the client runs (any other is a server tool)
# Blocks without text (a screenshot Claude Code read, a PDF): forwarded only inside the client's
# own bytes; a rebuilt request carries the text around them, not them.
_MEDIA_BLOCKS = frozenset({"image", "document"})
_STOP_OUT = {
    FinishReason.STOP: "end_turn",
    FinishReason.LENGTH: "max_tokens",
    FinishReason.TOOL_CALLS: "tool_use",
}


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
        if kind != "text":  # system text only: an image has no place there
            raise _unsupported(kind, f"{where}[{i}]")
        texts.append(req_str(b, "text", f"{where}[{i}]"))
    return "\n\n".join(texts)


def _document_text(b: Mapping[str, Any], where: str) -> str | None:
    """The text a document block puts before the model (title, context and a text or content
    source), or None when its source is not text (a PDF, a URL: nothing fak can screen)."""
    source = b.get("source")
    if not isinstance(source, Mapping):
        return None
    kind = source.get("type")
    if kind == "text" and isinstance(source.get("data"), str):
        body = source["data"]
    elif kind == "content":
        body = _tool_result_text(source.get("content"), f"{where}.source.content")
    else:
        return None
    extras = [b[k] for k in ("title", "context") if isinstance(b.get(k), str) and b[k]]
    return "\n\n".join([*extras, body])


def _held_note(kind: str) -> str:
    what = "an image" if kind == "image" else "a document"
    return f"[fak] {what} in this tool result was held out: fak cannot screen it"


def _tool_result_text(value: Any, where: str) -> str:
    """A tool result's content as the model reads it: text blocks with their citations' cited
    text, documents with text sources opened; an image or a binary document becomes a note
    (never forwarded unseen: a request holding one is rebuilt, not passed through)."""
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
        if kind == "text":
            texts.append(req_str(b, "text", f"{where}[{i}]"))
            for c in b.get("citations") or ():
                if isinstance(c, Mapping) and isinstance(c.get("cited_text"), str):
                    texts.append(c["cited_text"])
        elif kind == "document":
            opened = _document_text(b, f"{where}[{i}]")
            texts.append(opened if opened is not None else _held_note("document"))
        elif kind == "image":
            texts.append(_held_note("image"))
        else:
            raise _unsupported(kind, f"{where}[{i}]")
    return "\n\n".join(texts)


def _user_message(texts: list[str], parts: list[str | Part], media: bool) -> Message:
    return Message(Role.USER, "\n\n".join(texts), parts=tuple(parts) if media else ())


def _user(content: Any, at: str, names: dict[str, str]) -> list[Message]:
    """A user turn: its text, image and document blocks (the user's own: kept, in order, for
    the upstream) and its tool_result blocks (each a TOOL message)."""
    if isinstance(content, str):
        return [Message(Role.USER, content)]
    if not isinstance(content, list):
        raise WireError(INVALID, f"{at}.content must be a string or an array", f"{at}.content")
    out: list[Message] = []
    texts: list[str] = []
    parts: list[str | Part] = []
    media = False
    for i, raw in enumerate(content):
        where = f"{at}.content[{i}]"
        b = as_object(raw, where)
        kind = b.get("type")
        if kind == "text":
            text = req_str(b, "text", where)
            texts.append(text)
            parts.append(text)
            continue
        if kind in _MEDIA_BLOCKS:
            media = True
            parts.append(read_part(WireName.ANTHROPIC, b, where))
            continue
        if kind != "tool_result":
            raise _unsupported(kind, where)
        if texts or media:
            out.append(_user_message(texts, parts, media))
            texts, parts, media = [], [], False
        call_id = req_str(b, "tool_use_id", where)
        out.append(
            Message(
                Role.TOOL,
                _tool_result_text(b.get("content"), f"{where}.content"),
                tool_call_id=call_id,
                name=names.get(call_id, "tool_result"),
            )
        )
    if texts or media or not out:
        out.append(_user_message(texts, parts, media))
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
        if t.get("type") not in _CLIENT:
            continue  # a server tool would run where the kernel never sees it: not forwarded
        specs.append(tool_spec(t, f"tools[{i}]", "input_schema"))
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
        if obj["tool_choice"].get("disable_parallel_tool_use") is True:
            options["parallel_tool_calls"] = False  # said the OpenAI way round
    stripped = [k for k in _BYPASS_KEYS if k in obj]
    stripped += [
        f"tools[{i}] ({t.get('type')})"
        for i, t in enumerate(obj.get("tools") or ())
        if isinstance(t, Mapping) and t.get("type") not in (None, "custom")
    ]
    if stripped:
        options["stripped"] = tuple(stripped)
    options["wire"] = WireName.ANTHROPIC
    extra = {k: v for k, v in obj.items() if k not in GOVERNED[WireName.ANTHROPIC]}
    if extra:
        options["extra"] = extra
    raw_tools = [
        t for t in obj.get("tools") or () if isinstance(t, Mapping) and t.get("type") in _CLIENT
    ]
    if raw_tools:
        options["raw_tools"] = tuple(raw_tools)
    if thinking:
        options["anthropic_thinking"] = thinking
    return ParsedRequest(turn, options)


# -- passthrough: which requests may be forwarded byte for byte ------------------------------
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
        if kind == "tool_result" and not _plain_result(block.get("content")):
            return False
    return True


def _plain_result(content: Any) -> bool:
    """A tool result whose client bytes hold nothing the screen did not read as they are:
    text blocks without citations (a document, an image or a citation sends it rebuilt)."""
    if isinstance(content, str) or content is None:
        return True
    if not isinstance(content, list):
        return False
    return all(
        isinstance(b, Mapping)
        and b.get("type") == "text"
        and _BLOCK_KEYS["text"].issuperset(b)
        and not b.get("citations")
        for b in content
    )


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


# -- client response ------------------------------------------------------------------------
def _content(o: TurnOutcome) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if o.note:
        blocks.append({"type": "text", "text": o.note})
    if o.text:
        blocks.append({"type": "text", "text": o.text})
    blocks.extend(
        {"type": "tool_use", "id": c.id, "name": c.name, "input": input_object(c)}
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
