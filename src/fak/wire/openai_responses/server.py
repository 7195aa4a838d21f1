"""OpenAI Responses API, we are the server (tier T1, pure, no I/O).

The wire Codex and the OpenAI Agents SDK speak. ``parse_request`` reads ``instructions`` and the
``input`` items (messages, function, custom and shell calls and their outputs); ``render_response``
and ``ResponseEvents`` produce a ``response`` object or its streamed events (created … completed).
fak keeps no server-side response state: ``previous_response_id``, ``conversation`` and
``prompt`` are refused with a message saying to send the whole input. The other direction (a
Responses upstream, ``fak serve --provider openai-responses``) is ``client``; the item shapes
both read and write are in ``items``.
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
    Usage,
)
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
    req_str,
    tool_spec,
)
from fak.wire.names import WireName
from fak.wire.openai_responses.items import (
    SKIPPED_ITEMS,
    call_item,
    read_parts,
    read_text,
    shell_arguments,
)
from fak.wire.outcome import ParsedRequest, TurnOutcome

__all__ = [
    "ResponseEvents",
    "parse_request",
    "render_response",
]

_ROLES = {
    "system": Role.SYSTEM,
    "developer": Role.SYSTEM,
    "user": Role.USER,
    "assistant": Role.ASSISTANT,
}
# Tools the provider would run itself, out of the kernel's sight: stripped from the request.
_SERVER_TOOLS = frozenset(
    {
        "web_search",
        "web_search_preview",
        "file_search",
        "code_interpreter",
        "mcp",
        "image_generation",
        "computer_use_preview",
        "tool_search",
    }
)
_CUSTOM_INPUT = {
    "type": "object",
    "properties": {"input": {"type": "string", "description": "the tool's free-form input"}},
    "required": ["input"],
}
# Client-run shell tools. Their calls are adjudicated with the command line as one string,
# ``command`` (what shell rules and ``deny_regex`` read), beside the exact list the client runs
# (``argv`` for local_shell, ``commands`` for shell), which is what is rendered back.
_LOCAL_SHELL_PARAMS = {
    "type": "object",
    "properties": {
        "command": {"type": "string", "description": "the command line to run"},
        "working_directory": {"type": "string"},
        "timeout_ms": {"type": "integer"},
    },
    "required": ["command"],
}
_SHELL_PARAMS = {
    "type": "object",
    "properties": {
        "command": {"type": "string", "description": "shell commands, one per line"},
        "timeout_ms": {"type": "integer"},
    },
    "required": ["command"],
}
_SHELL_SPECS = {
    "local_shell": ToolSpec(
        "local_shell", "Run a command on the user's machine.", _LOCAL_SHELL_PARAMS
    ),
    "shell": ToolSpec("shell", "Run shell commands on the user's machine.", _SHELL_PARAMS),
}
_PLAIN_FUNCTION = frozenset({"type", "name", "description", "parameters"})
_HOSTED_SHELL = frozenset({"container_auto", "container_reference"})


def _shell_output_text(value: Any, where: str) -> str:
    """A ``shell_call_output``'s chunks as the text the screen reads and the model sees."""
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        raise WireError(INVALID, f"{where} must be an array of output chunks", where)
    texts: list[str] = []
    for i, raw in enumerate(value):
        chunk = as_object(raw, f"{where}[{i}]")
        for stream in ("stdout", "stderr"):
            text = chunk.get(stream)
            if isinstance(text, str) and text:
                texts.append(text if stream == "stdout" else f"[stderr]\n{text}")
        outcome = chunk.get("outcome")
        if isinstance(outcome, Mapping):
            if outcome.get("type") == "timeout":
                texts.append("[timed out]")
            elif isinstance(outcome.get("exit_code"), int) and outcome["exit_code"] != 0:
                texts.append(f"[exit {outcome['exit_code']}]")
    return "\n".join(texts)


def _items(value: Any) -> list[Message]:
    if isinstance(value, str):
        return [Message(Role.USER, value)]
    if not isinstance(value, list):
        raise WireError(INVALID, "input must be a string or an array of items", "input")
    out: list[Message] = []
    names: dict[str, str] = {}
    for i, raw in enumerate(value):
        at = f"input[{i}]"
        item = as_object(raw, at)
        kind = item.get("type", "message")
        if kind == "message":
            role = _ROLES.get(item.get("role", ""))
            if role is None:
                raise WireError(
                    INVALID, f"{at}.role must be system, developer, user or assistant", f"{at}.role"
                )
            text, parts = read_parts(item.get("content"), f"{at}.content", user=role is Role.USER)
            out.append(Message(role, text, parts=parts))
        elif kind in ("function_call", "custom_tool_call"):
            name = req_str(item, "name", at)
            ns = item.get("namespace")
            if isinstance(ns, str) and ns:
                name = f"{ns}.{name}"
            if kind == "custom_tool_call":
                raw_input = item.get("input")
                arguments = orjson.dumps({"input": raw_input if isinstance(raw_input, str) else ""})
                text = arguments.decode()
            else:
                text = arguments_text(item.get("arguments"), f"{at}.arguments")
            call = ProposedCall(id=req_str(item, "call_id", at), name=name, arguments=text)
            names[call.id] = call.name
            last = out[-1] if out else None
            if last is not None and last.role is Role.ASSISTANT:
                out[-1] = Message(Role.ASSISTANT, last.content, tool_calls=(*last.tool_calls, call))
            else:
                out.append(Message(Role.ASSISTANT, "", tool_calls=(call,)))
        elif kind in ("local_shell_call", "shell_call"):
            name = "local_shell" if kind == "local_shell_call" else "shell"
            action = as_object(item.get("action"), f"{at}.action")
            call = ProposedCall(
                id=req_str(item, "call_id", at),
                name=name,
                arguments=shell_arguments(name, action, f"{at}.action"),
            )
            names[call.id] = call.name
            last = out[-1] if out else None
            if last is not None and last.role is Role.ASSISTANT:
                out[-1] = Message(Role.ASSISTANT, last.content, tool_calls=(*last.tool_calls, call))
            else:
                out.append(Message(Role.ASSISTANT, "", tool_calls=(call,)))
        elif kind in (
            "function_call_output",
            "custom_tool_call_output",
            "local_shell_call_output",
            "shell_call_output",
        ):
            if kind == "local_shell_call_output" and "call_id" not in item:
                call_id = req_str(item, "id", at)  # this item names its call by ``id``
            else:
                call_id = req_str(item, "call_id", at)
            output = item.get("output")
            text = (
                _shell_output_text(output, f"{at}.output")
                if kind == "shell_call_output"
                else read_text(output, f"{at}.output")
            )
            out.append(
                Message(Role.TOOL, text, tool_call_id=call_id, name=names.get(call_id, "tool"))
            )
        elif kind not in SKIPPED_ITEMS:
            raise WireError(
                "unsupported_content",
                f"{at} has type {kind!r}; fak serve carries messages, function_call and "
                "function_call_output items",
                f"{at}.type",
            )
    return out


def _function(t: Mapping[str, Any], where: str, name: str) -> ToolSpec:
    return tool_spec(t, where, "parameters", name)


def _tools(
    value: Any,
) -> tuple[tuple[ToolSpec, ...], dict[str, str], list[str], list[dict[str, Any]]]:
    """(specs, kinds of the non-plain ones, stripped server tools, the kept tool objects as
    the client sent them, for a Responses upstream)."""
    if value is None:
        return (), {}, [], []
    if not isinstance(value, list):
        raise WireError(INVALID, "tools must be an array", "tools")
    specs: list[ToolSpec] = []
    kinds: dict[str, str] = {}
    stripped: list[str] = []
    kept: list[dict[str, Any]] = []
    for i, raw in enumerate(value):
        at = f"tools[{i}]"
        t = as_object(raw, at)
        kind = t.get("type")
        if kind in ("function", "namespace", "custom", "local_shell") or (
            kind == "shell" and _shell_is_local(t)
        ):
            kept.append(dict(t))
        if kind == "function":
            specs.append(_function(t, at, req_str(t, "name", at)))
        elif kind == "namespace":  # each inner function, adjudicated as "<namespace>.<name>"
            ns = req_str(t, "name", at)
            inner = t.get("tools")
            if not isinstance(inner, list):
                raise WireError(INVALID, f"{at}.tools must be an array", f"{at}.tools")
            for j, raw_fn in enumerate(inner):
                where = f"{at}.tools[{j}]"
                fn = as_object(raw_fn, where)
                if fn.get("type", "function") != "function":
                    stripped.append(f"{where} ({fn.get('type')})")
                    continue
                qualified = f"{ns}.{req_str(fn, 'name', where)}"
                specs.append(_function(fn, where, qualified))
                kinds[qualified] = f"namespace:{ns}"
        elif kind == "custom":  # free-form input, judged as the one argument "input"
            name = req_str(t, "name", at)
            specs.append(ToolSpec(name, opt_str(t, "description", at), _CUSTOM_INPUT))
            kinds[name] = "custom"
        elif kind == "local_shell" or (kind == "shell" and _shell_is_local(t)):
            specs.append(_SHELL_SPECS[kind])
            kinds[kind] = kind
        elif kind in _SERVER_TOOLS or isinstance(kind, str):
            stripped.append(f"{at} ({kind})")  # never run where the kernel cannot see it
        else:
            raise WireError(INVALID, f"{at}.type is required", f"{at}.type")
    return tuple(specs), kinds, stripped, kept


def _shell_is_local(tool: Mapping[str, Any]) -> bool:
    """A ``shell`` tool runs on the client unless its environment is a hosted container."""
    env = tool.get("environment")
    return not (isinstance(env, Mapping) and env.get("type") in _HOSTED_SHELL)


def _tool_choice(value: Any) -> str | None:
    if value is None:
        return None
    if value in ("auto", "none", "required"):
        return str(value)
    if (
        isinstance(value, Mapping)
        and value.get("type") == "function"
        and isinstance(value.get("name"), str)
    ):
        return "tool:" + str(value["name"])
    raise WireError(
        INVALID, "tool_choice must be auto, none, required or a function", "tool_choice"
    )


def parse_request(body: Any) -> ParsedRequest:
    """A decoded Responses request → canonical form. Raises ``WireError``."""
    obj = as_object(body, "body")
    if obj.get("previous_response_id") is not None:
        raise WireError(
            "unsupported_parameter",
            "fak serve keeps no response state; send the whole conversation in input "
            "instead of previous_response_id",
            "previous_response_id",
        )
    if "input" not in obj:
        raise WireError(INVALID, "input is required", "input")
    messages: list[Message] = []
    instructions = opt_str(obj, "instructions", "body")
    if instructions:
        messages.append(Message(Role.SYSTEM, instructions))
    messages.extend(_items(obj.get("input")))
    if not messages:
        raise WireError(INVALID, "input must not be empty", "input")
    for name in ("conversation", "prompt"):
        if obj.get(name) is not None:
            raise WireError(
                "unsupported_parameter",
                f"{name} brings in server-side state fak cannot screen; send the whole "
                "conversation in input instead",
                name,
            )
    if obj.get("background"):
        raise WireError(
            "unsupported_parameter",
            "background responses are not forwarded: fak answers the turn it adjudicates",
            "background",
        )
    tools, kinds, stripped, kept = _tools(obj.get("tools"))
    turn = TurnRequest(
        model=opt_str(obj, "model", "body"),
        messages=tuple(messages),
        tools=tools,
        max_tokens=opt_int(obj, "max_output_tokens"),
        temperature=opt_float(obj, "temperature", 0.0, 2.0),
        stream=bool(opt_bool(obj, "stream")),
        session=opt_str(obj, "user", "body"),
    )
    options: dict[str, Any] = {}
    top_p = opt_float(obj, "top_p", 0.0, 1.0)
    if top_p is not None:
        options["top_p"] = top_p
    choice = _tool_choice(obj.get("tool_choice"))
    if choice is not None:
        options["tool_choice"] = choice
    parallel = opt_bool(obj, "parallel_tool_calls")
    if parallel is not None:
        options["parallel_tool_calls"] = parallel
    if kinds:
        options["tool_kinds"] = kinds
    if stripped:
        options["stripped"] = tuple(stripped)
    if any(t.get("type") != "function" or t.keys() - _PLAIN_FUNCTION for t in kept):
        options["responses_tools"] = tuple(kept)  # shapes a plain rendering would lose
    options["wire"] = WireName.OPENAI_RESPONSES
    extra = {k: v for k, v in obj.items() if k not in GOVERNED[WireName.OPENAI_RESPONSES]}
    if extra:
        options["extra"] = extra
    return ParsedRequest(turn, options)


# -- client response ------------------------------------------------------------------------
def _message_item(item_id: str, text: str, status: str = "completed") -> dict[str, Any]:
    content = (
        [{"type": "output_text", "text": text, "annotations": []}] if status == "completed" else []
    )
    return {
        "type": "message",
        "id": item_id,
        "status": status,
        "role": "assistant",
        "content": content,
    }


def _usage(u: Usage) -> dict[str, Any]:
    return {
        "input_tokens": u.prompt_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": u.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": u.prompt_tokens + u.completion_tokens,
    }


def _shell(id: str, model: str, created: int, status: str) -> dict[str, Any]:
    return {
        "id": id,
        "object": "response",
        "created_at": created,
        "status": status,
        "model": model,
        "output": [],
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "metadata": {},
        "parallel_tool_calls": True,
        "temperature": None,
        "tool_choice": "auto",
        "tools": [],
        "top_p": None,
        "usage": None,
    }


def _output(o: TurnOutcome) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if o.text:
        out.append(_message_item(f"msg_{o.id}", o.text))
    out.extend(
        call_item(c, f"fc_{o.id}_{i}", kinds=o.tool_kinds) for i, c in enumerate(o.tool_calls)
    )
    return out


def render_response(o: TurnOutcome) -> dict[str, Any]:
    incomplete = o.finish_reason is FinishReason.LENGTH and not o.tool_calls
    body = _shell(o.id, o.model, o.created, "incomplete" if incomplete else "completed")
    body["output"] = _output(o)
    body["usage"] = _usage(o.usage)
    if incomplete:
        body["incomplete_details"] = {"reason": "max_output_tokens"}
    if o.extension is not None and not o.extension.empty:
        body["fak"] = o.extension.to_json()
    return body


class ResponseEvents:
    """Builds the SSE events of a streamed response, numbering them in order.

    Text may stream live (``text_start``/``text_delta``) before the tool calls are adjudicated;
    function-call items are only emitted by ``finish`` together with ``response.completed``.
    """

    __slots__ = ("_created", "_id", "_model", "_seq", "_text", "_text_open")

    def __init__(self, id: str, model: str, created: int) -> None:
        self._id, self._model, self._created = id, model, created
        self._seq = 0
        self._text: list[str] = []
        self._text_open = False

    def _event(self, kind: str, data: dict[str, Any]) -> bytes:
        data = {"type": kind, "sequence_number": self._seq, **data}
        self._seq += 1
        return b"event: " + kind.encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n"

    def start(self) -> list[bytes]:
        shell = _shell(self._id, self._model, self._created, "in_progress")
        return [
            self._event("response.created", {"response": shell}),
            self._event("response.in_progress", {"response": shell}),
        ]

    @property
    def _msg_id(self) -> str:
        return f"msg_{self._id}"

    def text_delta(self, delta: str) -> list[bytes]:
        frames: list[bytes] = []
        if not self._text_open:
            self._text_open = True
            frames.append(
                self._event(
                    "response.output_item.added",
                    {"output_index": 0, "item": _message_item(self._msg_id, "", "in_progress")},
                )
            )
            frames.append(
                self._event(
                    "response.content_part.added",
                    {
                        "item_id": self._msg_id,
                        "output_index": 0,
                        "content_index": 0,
                        "part": {"type": "output_text", "text": "", "annotations": []},
                    },
                )
            )
        self._text.append(delta)
        frames.append(
            self._event(
                "response.output_text.delta",
                {
                    "item_id": self._msg_id,
                    "output_index": 0,
                    "content_index": 0,
                    "delta": delta,
                    "logprobs": [],
                },
            )
        )
        return frames

    def finish(self, o: TurnOutcome) -> list[bytes]:
        """Close the text item (emitting the outcome text if none streamed), emit each
        surviving function call, then ``response.completed`` with the whole response."""
        frames: list[bytes] = []
        if o.text and not self._text_open:
            frames.extend(self.text_delta(o.text))
        elif self._text_open:  # text decided after the stream began (a [fak] note) follows it
            sent = "".join(self._text)
            if len(o.text) > len(sent) and o.text.startswith(sent):
                frames.extend(self.text_delta(o.text[len(sent) :]))
        if self._text_open:
            text = "".join(self._text)
            part = {"type": "output_text", "text": text, "annotations": []}
            where = {"item_id": self._msg_id, "output_index": 0, "content_index": 0}
            frames.append(
                self._event("response.output_text.done", {**where, "text": text, "logprobs": []})
            )
            frames.append(self._event("response.content_part.done", {**where, "part": part}))
            frames.append(
                self._event(
                    "response.output_item.done",
                    {"output_index": 0, "item": _message_item(self._msg_id, text)},
                )
            )
        base = 1 if self._text_open else 0
        for i, call in enumerate(o.tool_calls):
            item_id = f"fc_{o.id}_{i}"
            index = base + i
            done = call_item(call, item_id, kinds=o.tool_kinds)
            if done["type"] != "function_call":  # a custom call: its item says it all
                pending = {**done, "status": "in_progress"}
                for name, item in (("added", pending), ("done", done)):
                    frames.append(
                        self._event(
                            f"response.output_item.{name}", {"output_index": index, "item": item}
                        )
                    )
                continue
            pending = {**done, "status": "in_progress", "arguments": ""}
            frames.append(
                self._event("response.output_item.added", {"output_index": index, "item": pending})
            )
            frames.append(
                self._event(
                    "response.function_call_arguments.delta",
                    {"item_id": item_id, "output_index": index, "delta": call.arguments},
                )
            )
            frames.append(
                self._event(
                    "response.function_call_arguments.done",
                    {
                        "item_id": item_id,
                        "output_index": index,
                        "name": call.name,
                        "arguments": call.arguments,
                    },
                )
            )
            frames.append(
                self._event(
                    "response.output_item.done",
                    {"output_index": index, "item": done},
                )
            )
        final = render_response(o)
        kind = "response.incomplete" if final["status"] == "incomplete" else "response.completed"
        frames.append(self._event(kind, {"response": final}))
        return frames

    def failed(self, message: str, code: str = "server_error") -> bytes:
        shell = _shell(self._id, self._model, self._created, "failed")
        shell["error"] = {"code": code, "message": message}
        return self._event("response.failed", {"response": shell})
