"""What happens to each request field fak does not govern, per wire pair (tier T1, pure).

Passthrough by default, governance by exception. Every top-level request field is one of:
governed (``GOVERNED``: fak parses, screens or adjudicates it and renders it again: messages,
input, tools, tool_choice, the stream switch), forwarded (same wire: the client's value travels
unchanged), mapped (across wires: a stated translation in ``MAPPED``), or refused (a 400
``unsupported_parameter`` that names the field: it cannot cross this translation, or it would
bring in state or tools the kernel never sees). ``carry`` applies the table to the fields a
parser kept (``options["extra"]``) and writes them into the upstream body a renderer built.
Nothing is dropped in silence; a ``null`` value counts as absent.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from fak.wire.errors import WireError
from fak.wire.names import WireName

__all__ = ["GOVERNED", "MAPPED", "carry", "refuse"]

CHAT, RESPONSES, MESSAGES = WireName.OPENAI_CHAT, WireName.OPENAI_RESPONSES, WireName.ANTHROPIC

# Fields each wire's parser reads and its renderer writes again (or refuses, as named).
GOVERNED: Mapping[WireName, frozenset[str]] = {
    CHAT: frozenset(
        {
            "model",
            "messages",
            "tools",
            "tool_choice",
            "stream",
            "stream_options",
            "functions",  # refused: declare tools in ``tools``, where they are adjudicated
            "function_call",  # refused with ``functions``
            "web_search_options",  # refused: a search the provider runs out of fak's sight
            "n",  # more than one choice refused: fak adjudicates one
        }
    ),
    RESPONSES: frozenset(
        {
            "model",
            "input",
            "instructions",
            "tools",
            "tool_choice",
            "stream",
            "stream_options",
            "previous_response_id",  # refused: server-side state fak never screened
            "conversation",  # refused, likewise
            "prompt",  # refused, likewise
            "background",  # true refused: fak answers the turn it adjudicates
        }
    ),
    MESSAGES: frozenset(
        {
            "model",
            "messages",
            "system",
            "tools",
            "tool_choice",
            "stream",
            "mcp_servers",  # stripped with a note: tools run out of the kernel's sight
            "container",  # stripped likewise
        }
    ),
}


def refuse(field: str, source: WireName, target: WireName, why: str = "") -> WireError:
    reason = why or f"it has no equivalent on the upstream's wire ({target})"
    return WireError(
        "unsupported_parameter",
        f"{field} cannot be forwarded from the {source} wire: {reason}; "
        "drop it, or point fak at an upstream of the client's own wire",
        field,
    )


Mapper = Callable[[Any, dict[str, Any], WireName, WireName], None]
"""(value, upstream body, source, target): write the translation, or raise ``WireError``."""


def _same(name: str) -> Mapper:
    def put(value: Any, body: dict[str, Any], source: WireName, target: WireName) -> None:
        body[name] = value

    return put


def _nested(outer: str, inner: str) -> Mapper:
    def put(value: Any, body: dict[str, Any], source: WireName, target: WireName) -> None:
        slot = body.setdefault(outer, {})
        slot[inner] = value

    return put


def _default_only(name: str, default: Any) -> Mapper:
    """A field whose default value means nothing to translate; any other value is refused."""

    def put(value: Any, body: dict[str, Any], source: WireName, target: WireName) -> None:
        if value != default:
            raise refuse(name, source, target, f"only {default!r} has an equivalent there")

    return put


# -- structured output ---------------------------------------------------------------------
def _format_in(value: Any, field: str, source: WireName, target: WireName) -> dict[str, Any]:
    """A chat ``response_format`` or a Responses ``text.format`` → the Responses shape."""
    if not isinstance(value, Mapping) or not isinstance(value.get("type"), str):
        raise refuse(field, source, target, "it is not a format object")
    if value["type"] == "json_schema" and isinstance(value.get("json_schema"), Mapping):
        return {"type": "json_schema", **value["json_schema"]}  # chat nests it
    return dict(value)


def _chat_format(fmt: Mapping[str, Any]) -> dict[str, Any]:
    if fmt.get("type") != "json_schema":
        return dict(fmt)
    inner = {k: v for k, v in fmt.items() if k != "type"}
    return {"type": "json_schema", "json_schema": inner}


def _messages_format(
    fmt: Mapping[str, Any], field: str, source: WireName, target: WireName
) -> dict[str, Any] | None:
    kind = fmt.get("type")
    if kind == "text":
        return None  # plain text is the Messages default
    if kind != "json_schema" or not isinstance(fmt.get("schema"), Mapping):
        raise refuse(field, source, target, f"a {kind!r} format has no equivalent there")
    return {"type": "json_schema", "schema": fmt["schema"]}


def _put_format(
    fmt: dict[str, Any], body: dict[str, Any], field: str, source: WireName, target: WireName
) -> None:
    if target == CHAT:
        body["response_format"] = _chat_format(fmt)
    elif target == RESPONSES:
        body.setdefault("text", {})["format"] = fmt
    else:
        out = _messages_format(fmt, field, source, target)
        if out is not None:
            body.setdefault("output_config", {})["format"] = out


def _response_format(value: Any, body: dict[str, Any], source: WireName, target: WireName) -> None:
    _put_format(
        _format_in(value, "response_format", source, target),
        body,
        "response_format",
        source,
        target,
    )


def _text(value: Any, body: dict[str, Any], source: WireName, target: WireName) -> None:
    if not isinstance(value, Mapping):
        raise refuse("text", source, target, "it is not an object")
    for key, inner in value.items():
        if inner is None:
            continue
        if key == "format":
            _put_format(
                _format_in(inner, "text.format", source, target),
                body,
                "text.format",
                source,
                target,
            )
        elif key == "verbosity" and target == CHAT:
            body["verbosity"] = inner
        else:
            raise refuse(f"text.{key}", source, target)


def _output_config(value: Any, body: dict[str, Any], source: WireName, target: WireName) -> None:
    if not isinstance(value, Mapping):
        raise refuse("output_config", source, target, "it is not an object")
    for key, inner in value.items():
        if inner is None:
            continue
        if key == "format" and isinstance(inner, Mapping) and inner.get("type") == "json_schema":
            fmt = {
                "type": "json_schema",
                "name": "output",
                "schema": inner.get("schema"),
                "strict": True,
            }
            _put_format(fmt, body, "output_config.format", source, target)
        elif key == "effort":
            _effort(inner, body, source, target)
        else:
            raise refuse(f"output_config.{key}", source, target)


# -- reasoning effort ----------------------------------------------------------------------
_MESSAGES_EFFORT = frozenset({"low", "medium", "high", "xhigh", "max"})


_EFFORT_FIELD = {
    CHAT: "reasoning_effort",
    RESPONSES: "reasoning.effort",
    MESSAGES: "output_config.effort",
}


def _effort(value: Any, body: dict[str, Any], source: WireName, target: WireName) -> None:
    if target == CHAT:
        body["reasoning_effort"] = value
    elif target == RESPONSES:
        body.setdefault("reasoning", {})["effort"] = value
    elif value in _MESSAGES_EFFORT:
        body.setdefault("output_config", {})["effort"] = value
    else:
        raise refuse(_EFFORT_FIELD[source], source, target, f"{value!r} is not an effort it takes")


def _reasoning_effort(value: Any, body: dict[str, Any], source: WireName, target: WireName) -> None:
    _effort(value, body, source, target)


# Asks for summaries of the reply's reasoning items; a chat or Messages upstream returns none.
_SUMMARY_KEYS = frozenset({"summary", "generate_summary"})


def _reasoning(value: Any, body: dict[str, Any], source: WireName, target: WireName) -> None:
    if not isinstance(value, Mapping):
        raise refuse("reasoning", source, target, "it is not an object")
    for key, inner in value.items():
        if inner is None or key in _SUMMARY_KEYS:
            continue
        if key == "effort":
            _effort(inner, body, source, target)
        else:
            raise refuse(f"reasoning.{key}", source, target)


def _nothing(value: Any, body: dict[str, Any], source: WireName, target: WireName) -> None:
    """A stated translation to nothing (see the table's comment on each use)."""


def _thinking(value: Any, body: dict[str, Any], source: WireName, target: WireName) -> None:
    """Adaptive thinking (the model decides how much to think) is what an OpenAI reasoning
    model does by itself, and ``display`` only shapes thinking blocks an OpenAI reply never
    has; a fixed thinking budget has no equivalent."""
    kind = value.get("type") if isinstance(value, Mapping) else None
    if kind not in ("adaptive", "disabled"):
        raise refuse("thinking", source, target, f"{kind!r} thinking has no equivalent there")


def _context_management(
    value: Any, body: dict[str, Any], source: WireName, target: WireName
) -> None:
    """Edits that clear earlier thinking blocks have nothing to act on when the request goes to
    an OpenAI upstream (fak renders no thinking blocks for it); any other edit is refused."""
    edits = value.get("edits") if isinstance(value, Mapping) else None
    if not isinstance(edits, list):
        raise refuse("context_management", source, target)
    for edit in edits:
        kind = edit.get("type") if isinstance(edit, Mapping) else None
        if not (isinstance(kind, str) and kind.startswith("clear_thinking")):
            raise refuse(f"context_management ({kind})", source, target)


# -- limits, sampling, identity -------------------------------------------------------------
_MAX_NAME = {CHAT: "max_completion_tokens", RESPONSES: "max_output_tokens", MESSAGES: "max_tokens"}


def _max_tokens(value: Any, body: dict[str, Any], source: WireName, target: WireName) -> None:
    body[_MAX_NAME[target]] = value


def _temperature(value: Any, body: dict[str, Any], source: WireName, target: WireName) -> None:
    if target == MESSAGES and isinstance(value, int | float) and value > 1:
        raise refuse("temperature", source, target, "it takes a temperature of at most 1")
    body["temperature"] = value


def _stop(value: Any, body: dict[str, Any], source: WireName, target: WireName) -> None:
    field = "stop_sequences" if source == MESSAGES else "stop"
    listed = [value] if isinstance(value, str) else value
    if target == CHAT:
        body["stop"] = listed
    elif target == MESSAGES:
        body["stop_sequences"] = listed
    else:
        raise refuse(field, source, target)


def _user(value: Any, body: dict[str, Any], source: WireName, target: WireName) -> None:
    if target == MESSAGES:
        body.setdefault("metadata", {})["user_id"] = value
    else:
        body["user"] = value


def _messages_metadata(
    value: Any, body: dict[str, Any], source: WireName, target: WireName
) -> None:
    if not isinstance(value, Mapping):
        raise refuse("metadata", source, target, "it is not an object")
    for key, inner in value.items():
        if key == "user_id" and isinstance(inner, str):
            body["user"] = inner
        elif inner is not None:
            raise refuse(f"metadata.{key}", source, target)


def _parallel(value: Any, body: dict[str, Any], source: WireName, target: WireName) -> None:
    if target != MESSAGES:
        body["parallel_tool_calls"] = value
        return
    if value is False and body.get("tools"):  # Messages says it inside tool_choice
        choice = body.setdefault("tool_choice", {"type": "auto"})
        choice["disable_parallel_tool_use"] = True


def _logprobs(value: Any, body: dict[str, Any], source: WireName, target: WireName) -> None:
    if value is False:
        return
    if target == RESPONSES:
        include = body.setdefault("include", [])
        if "message.output_text.logprobs" not in include:
            include.append("message.output_text.logprobs")
        return
    raise refuse("logprobs", source, target)


def _top_logprobs(value: Any, body: dict[str, Any], source: WireName, target: WireName) -> None:
    if target == MESSAGES:
        raise refuse("top_logprobs", source, target)
    body["top_logprobs"] = value
    if target == CHAT:
        body["logprobs"] = True


# Caching hints: a Messages upstream caches by ``cache_control`` marks instead; the hint changes
# what the request costs, never what the model answers, so it has nothing to carry there.
_CACHE_HINTS = ("prompt_cache_key", "prompt_cache_retention", "prompt_cache_options")


def _store_off(value: Any, body: dict[str, Any], source: WireName, target: WireName) -> None:
    """``store: false`` asks the provider to keep no copy for later retrieval, which a Messages
    upstream never offers; ``store: true`` (keep it) has no equivalent there."""
    if value is not False:
        raise refuse("store", source, target, "it keeps no responses for later retrieval")


# What ``include`` may ask of a Responses upstream that a chat upstream answers by itself:
# log probabilities (``logprobs``), and encrypted reasoning, which a chat upstream never
# returns (it has no reasoning items), so asking for it there asks for nothing.
_INCLUDE_ON_CHAT = {"message.output_text.logprobs": ("logprobs", True)}
_INCLUDE_VACUOUS = frozenset({"reasoning.encrypted_content"})


def _include(value: Any, body: dict[str, Any], source: WireName, target: WireName) -> None:
    if not isinstance(value, list):
        raise refuse("include", source, target, "it is not an array")
    for item in value:
        if item in _INCLUDE_VACUOUS:
            continue
        mapped = _INCLUDE_ON_CHAT.get(item) if target == CHAT else None
        if mapped is None:
            raise refuse(f"include ({item})", source, target)
        body[mapped[0]] = mapped[1]


_SHARED_OPENAI = (
    "metadata",
    "store",
    "service_tier",
    "safety_identifier",
    "prompt_cache_key",
    "prompt_cache_retention",
    "prompt_cache_options",
    "moderation",
    "top_p",
)

# The stated translations: source wire → target wire → field → mapper. A field of a source
# wire absent here (and not governed) is refused when it would cross to that target.
MAPPED: Mapping[tuple[WireName, WireName], Mapping[str, Mapper]] = {
    (CHAT, RESPONSES): {
        **{k: _same(k) for k in _SHARED_OPENAI},
        "max_tokens": _max_tokens,
        "max_completion_tokens": _max_tokens,
        "temperature": _temperature,
        "user": _user,
        "parallel_tool_calls": _parallel,
        "response_format": _response_format,
        "reasoning_effort": _reasoning_effort,
        "verbosity": _nested("text", "verbosity"),
        "logprobs": _logprobs,
        "top_logprobs": _top_logprobs,
        "modalities": _default_only("modalities", ["text"]),
    },
    (CHAT, MESSAGES): {
        **{k: _nothing for k in _CACHE_HINTS},
        "store": _store_off,
        "max_tokens": _max_tokens,
        "max_completion_tokens": _max_tokens,
        "temperature": _temperature,
        "top_p": _same("top_p"),
        "stop": _stop,
        "user": _user,
        "parallel_tool_calls": _parallel,
        "response_format": _response_format,
        "reasoning_effort": _reasoning_effort,
        "logprobs": _logprobs,
        "modalities": _default_only("modalities", ["text"]),
    },
    (RESPONSES, CHAT): {
        **{k: _same(k) for k in _SHARED_OPENAI},
        "max_output_tokens": _max_tokens,
        "temperature": _temperature,
        "user": _user,
        "parallel_tool_calls": _parallel,
        "text": _text,
        "reasoning": _reasoning,
        "top_logprobs": _top_logprobs,
        "include": _include,
        "truncation": _default_only("truncation", "disabled"),
        # Codex's telemetry for a Responses provider; another wire has no such field (and an
        # OpenAI chat upstream refuses unknown fields), so it stays with fak.
        "client_metadata": _nothing,
    },
    (RESPONSES, MESSAGES): {
        **{k: _nothing for k in _CACHE_HINTS},
        "store": _store_off,
        "max_output_tokens": _max_tokens,
        "temperature": _temperature,
        "top_p": _same("top_p"),
        "user": _user,
        "parallel_tool_calls": _parallel,
        "text": _text,
        "reasoning": _reasoning,
        "include": _include,
        "truncation": _default_only("truncation", "disabled"),
        # Codex's telemetry for a Responses provider; another wire has no such field (and an
        # OpenAI chat upstream refuses unknown fields), so it stays with fak.
        "client_metadata": _nothing,
    },
    (MESSAGES, CHAT): {
        "max_tokens": _max_tokens,
        "temperature": _temperature,
        "top_p": _same("top_p"),
        "stop_sequences": _stop,
        "metadata": _messages_metadata,
        "output_config": _output_config,
        "thinking": _thinking,
        "context_management": _context_management,
    },
    (MESSAGES, RESPONSES): {
        "max_tokens": _max_tokens,
        "temperature": _temperature,
        "top_p": _same("top_p"),
        "stop_sequences": _stop,
        "metadata": _messages_metadata,
        "output_config": _output_config,
        "thinking": _thinking,
        "context_management": _context_management,
    },
}


def carry(
    extra: Mapping[str, Any], source: WireName, target: WireName, body: dict[str, Any]
) -> None:
    """Write the client's ungoverned fields ``extra`` into the upstream ``body``: unchanged
    on the same wire, translated by ``MAPPED`` across wires, else a refusal naming the field."""
    if source == target:
        for key, value in extra.items():
            body.setdefault(key, value)
        return
    table = MAPPED[(source, target)]
    for key, value in extra.items():
        if value is None:
            continue
        mapper = table.get(key)
        if mapper is None:
            raise refuse(key, source, target)
        mapper(value, body, source, target)
