"""OpenAI Chat Completions ⇄ canonical turn IR (tier T1, pure, no I/O).

Client direction: ``parse_request`` (a chat request → ``ParsedRequest``), ``render_response`` and
``ChatChunks`` (a ``TurnOutcome`` → a completion or its SSE chunks). Upstream direction:
``render_request`` (IR → a chat request for an OpenAI-compatible upstream), ``parse_response``
and ``ChatStreamAccumulator`` (its completion or stream → ``PlannerTurn``). Tool-result messages
carry no name on this wire; parsing recovers it from the assistant call that the id answers.
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
from fak.wire.outcome import ParsedRequest, TurnOutcome

__all__ = [
    "ChatChunks",
    "ChatStreamAccumulator",
    "parse_request",
    "parse_response",
    "render_request",
    "render_response",
]

_ROLES = {
    "system": Role.SYSTEM,
    "developer": Role.SYSTEM,
    "user": Role.USER,
    "assistant": Role.ASSISTANT,
    "tool": Role.TOOL,
}
_FINISH_IN = {
    "stop": FinishReason.STOP,
    "length": FinishReason.LENGTH,
    "tool_calls": FinishReason.TOOL_CALLS,
    "function_call": FinishReason.TOOL_CALLS,
}
BAD_UPSTREAM = "upstream_bad_response"
BAD_TOOL_CALLS = "upstream_bad_tool_calls"
_MEDIA_PARTS = frozenset({"image_url", "input_audio", "file"})
_CUSTOM_INPUT = {
    "type": "object",
    "properties": {"input": {"type": "string", "description": "the tool's free-form input"}},
    "required": ["input"],
}


# -- client request -------------------------------------------------------------------------
def _content_text(value: Any, where: str) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts: list[str] = []
        for i, part in enumerate(value):
            p = as_object(part, f"{where}[{i}]")
            kind = p.get("type")
            if kind in ("text", "refusal", "input_text", "output_text"):
                parts.append(
                    req_str(p, "refusal" if kind == "refusal" else "text", f"{where}[{i}]")
                )
            elif kind in _MEDIA_PARTS:
                continue  # no text to screen; the upstream turn carries the text around it
            else:
                raise WireError(
                    "unsupported_content",
                    f"{where}[{i}] has type {kind!r}; fak serve screens text only, send text parts",
                    f"{where}[{i}].type",
                )
        return "".join(parts)
    raise WireError(INVALID, f"{where} must be a string, null or an array of parts", where)


def _tool_calls(value: Any, where: str, names: dict[str, str]) -> tuple[ProposedCall, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise WireError(INVALID, f"{where} must be an array", where)
    calls: list[ProposedCall] = []
    for i, raw in enumerate(value):
        at = f"{where}[{i}]"
        tc = as_object(raw, at)
        if tc.get("type") == "custom":  # free-form input, judged as the argument "input"
            custom = as_object(tc.get("custom"), f"{at}.custom")
            value = custom.get("input")
            text = orjson.dumps({"input": value if isinstance(value, str) else ""}).decode()
            call = ProposedCall(
                req_str(tc, "id", at), req_str(custom, "name", f"{at}.custom"), text
            )
            names[call.id] = call.name
            calls.append(call)
            continue
        fn = as_object(tc.get("function"), f"{at}.function")
        call = ProposedCall(
            id=req_str(tc, "id", at),
            name=req_str(fn, "name", f"{at}.function"),
            arguments=arguments_text(fn.get("arguments"), f"{at}.function.arguments"),
        )
        names[call.id] = call.name
        calls.append(call)
    return tuple(calls)


def _message(raw: Any, i: int, names: dict[str, str]) -> Message:
    at = f"messages[{i}]"
    m = as_object(raw, at)
    role_name = m.get("role")
    role = _ROLES.get(role_name) if isinstance(role_name, str) else None
    if role is None:
        raise WireError(
            INVALID, f"{at}.role must be system, developer, user, assistant or tool", f"{at}.role"
        )
    content = _content_text(m.get("content"), f"{at}.content")
    if role is Role.ASSISTANT:
        calls = _tool_calls(m.get("tool_calls"), f"{at}.tool_calls", names)
        return Message(Role.ASSISTANT, content, tool_calls=calls)
    if role is Role.TOOL:
        call_id = req_str(m, "tool_call_id", at)
        name = names.get(call_id) or opt_str(m, "name", at) or "tool"
        return Message(Role.TOOL, content, tool_call_id=call_id, name=name)
    return Message(role, content)


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
        params = fn.get("parameters")
        specs.append(
            ToolSpec(
                name=req_str(fn, "name", f"tools[{i}].function"),
                description=opt_str(fn, "description", f"tools[{i}].function"),
                parameters=as_object(params, f"tools[{i}].function.parameters")
                if params is not None
                else {},
            )
        )
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


def parse_request(body: Any) -> ParsedRequest:
    """A decoded chat-completions request → canonical form. Raises ``WireError``."""
    obj = as_object(body, "body")
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


# -- upstream request -----------------------------------------------------------------------
def _render_call(call: ProposedCall, kinds: Mapping[str, str] | None = None) -> dict[str, Any]:
    if kinds and kinds.get(call.name) == "custom":
        try:
            args = orjson.loads(call.arguments or "{}")
        except orjson.JSONDecodeError:
            args = {}
        value = args.get("input") if isinstance(args, dict) else None
        return {
            "id": call.id,
            "type": "custom",
            "custom": {"name": call.name, "input": value if isinstance(value, str) else ""},
        }
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments},
    }


def _render_message(m: Message) -> dict[str, Any]:
    if m.role is Role.TOOL:
        return {"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content}
    if m.role is Role.ASSISTANT and m.tool_calls:
        return {
            "role": "assistant",
            "content": m.content or None,
            "tool_calls": [_render_call(c) for c in m.tool_calls],
        }
    return {"role": str(m.role), "content": m.content}


def render_request(parsed: ParsedRequest, *, stream: bool = False) -> dict[str, Any]:
    """Canonical form → a chat-completions request body for an upstream."""
    turn, opts = parsed.turn, parsed.options
    body: dict[str, Any] = {
        "model": turn.model,
        "messages": [_render_message(m) for m in turn.messages],
    }
    if turn.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": dict(t.parameters),
                },
            }
            for t in turn.tools
        ]
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
    choice = opts.get("tool_choice")
    if isinstance(choice, str):
        body["tool_choice"] = (
            {"type": "function", "function": {"name": choice[5:]}}
            if choice.startswith("tool:")
            else choice
        )
    if "seed" in opts:
        body["seed"] = opts["seed"]
    if "parallel_tool_calls" in opts:
        body["parallel_tool_calls"] = opts["parallel_tool_calls"]
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
        calls = _tool_calls(raw_calls, "tool_calls", {})
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
        message["tool_calls"] = [_render_call(c, o.tool_kinds) for c in o.tool_calls]
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
            {"tool_calls": [{"index": i, **_render_call(c, kinds)} for i, c in enumerate(calls)]}
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
