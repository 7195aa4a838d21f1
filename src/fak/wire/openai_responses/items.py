"""OpenAI Responses API, the item shapes both directions read and write (tier T1, pure, no I/O).

``read_parts``/``read_text`` (a message's or an output's text parts, a user's media kept),
``shell_arguments`` (a shell call's action → the adjudicated arguments: ``command`` as one
string beside the exact list the client runs),
``call_item`` (a call → its function, custom or shell call item, the inverse of both) and
``SKIPPED_ITEMS`` (items that carry nothing for the model to act on here).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Any

import orjson

from fak.abi import ProposedCall
from fak.abi.turn import Part
from fak.wire.errors import WireError
from fak.wire.fields import INVALID, as_object, req_str
from fak.wire.media import read_part
from fak.wire.names import WireName

__all__ = ["SKIPPED_ITEMS", "call_item", "read_parts", "read_text", "shell_arguments"]

_TEXT_PARTS = frozenset({"input_text", "output_text", "text"})
# Items that carry nothing for the model to act on here: reasoning (often encrypted), and the
# records of server-side tools, which fak never forwards (see server._SERVER_TOOLS).
SKIPPED_ITEMS = frozenset(
    {
        "reasoning",
        "compaction",
        "web_search_call",
        "file_search_call",
        "code_interpreter_call",
        "image_generation_call",
        "mcp_call",
        "mcp_list_tools",
        "mcp_approval_request",
        "mcp_approval_response",
    }
)


_MEDIA_PARTS = frozenset({"input_image", "input_file"})


def read_parts(value: Any, where: str, *, user: bool = False) -> tuple[str, tuple[str | Part, ...]]:
    """A content's text (what screens read) and, for a user's message with media, its parts in
    order (the media kept for the upstream). Media anywhere else (a tool's output) is held out:
    a ``[fak]`` note takes its place."""
    if isinstance(value, str):
        return value, ()
    if not isinstance(value, list):
        raise WireError(INVALID, f"{where} must be a string or an array of parts", where)
    texts: list[str] = []
    parts: list[str | Part] = []
    media = False
    for i, raw in enumerate(value):
        at = f"{where}[{i}]"
        p = as_object(raw, at)
        kind = p.get("type")
        if kind in _TEXT_PARTS or kind == "refusal":
            text = req_str(p, "refusal" if kind == "refusal" else "text", at)
        elif kind in _MEDIA_PARTS and user:
            media = True
            parts.append(read_part(WireName.OPENAI_RESPONSES, p, at))
            continue
        elif kind in _MEDIA_PARTS:
            what = "an image" if kind == "input_image" else "a file"
            text = f"[fak] {what} in this tool result was held out: fak cannot screen it"
        else:
            raise WireError(
                "unsupported_content",
                f"{at} has type {kind!r}; fak serve carries text parts here "
                "(and a user's image and file parts)",
                f"{at}.type",
            )
        texts.append(text)
        parts.append(text)
    return "".join(texts), tuple(parts) if media else ()


def read_text(value: Any, where: str) -> str:
    return read_parts(value, where)[0]


def shell_arguments(name: str, action: Mapping[str, Any], where: str) -> str:
    """The adjudicated arguments of a shell call: ``command`` as one string, plus the exact
    list the client will run and the action's other settings."""
    key = "command" if name == "local_shell" else "commands"
    listed = action.get(key)
    if not isinstance(listed, list) or not all(isinstance(x, str) for x in listed):
        raise WireError(INVALID, f"{where}.{key} must be an array of strings", f"{where}.{key}")
    args: dict[str, Any] = {k: v for k, v in action.items() if k not in ("type", key)}
    if name == "local_shell":
        args.update(command=shlex.join(listed), argv=listed)
    else:
        args.update(command="\n".join(listed), commands=listed)
    return orjson.dumps(args).decode()


def call_item(
    c: ProposedCall,
    item_id: str,
    status: str = "completed",
    kinds: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    kind = (kinds or {}).get(c.name, "")
    item: dict[str, Any]
    if kind in ("local_shell", "shell"):
        item = {
            "type": f"{kind}_call",
            "call_id": c.id,
            "action": _shell_action(kind, c.arguments),
            "status": status,
        }
    elif kind == "custom":
        try:
            args = orjson.loads(c.arguments or "{}")
        except orjson.JSONDecodeError:
            args = {}
        value = args.get("input") if isinstance(args, dict) else None
        item = {
            "type": "custom_tool_call",
            "call_id": c.id,
            "name": c.name,
            "input": value if isinstance(value, str) else "",
            "status": status,
        }
    else:
        item = {
            "type": "function_call",
            "call_id": c.id,
            "name": c.name,
            "arguments": c.arguments,
            "status": status,
        }
        if kind.startswith("namespace:"):
            ns = kind.split(":", 1)[1]
            item["namespace"] = ns
            item["name"] = c.name.removeprefix(ns + ".")
    if item_id:
        item["id"] = item_id
    return item


def _shell_action(kind: str, arguments: str) -> dict[str, Any]:
    """The action a shell call item carries, from its adjudicated arguments: the exact list
    when it is there, else the command line split as a POSIX shell would."""
    try:
        args = orjson.loads(arguments or "{}")
    except orjson.JSONDecodeError:
        args = {}
    if not isinstance(args, dict):
        args = {}
    line = args.get("command") if isinstance(args.get("command"), str) else ""
    if kind == "local_shell":
        argv = args.get("argv")
        if not (isinstance(argv, list) and all(isinstance(x, str) for x in argv)):
            try:
                argv = shlex.split(line)
            except ValueError:
                argv = ["sh", "-c", line]
        action: dict[str, Any] = {"type": "exec", "command": argv, "env": args.get("env") or {}}
        for key in ("timeout_ms", "working_directory", "user"):
            if args.get(key) is not None:
                action[key] = args[key]
        return action
    commands = args.get("commands")
    if not (isinstance(commands, list) and all(isinstance(x, str) for x in commands)):
        commands = [line] if line else []
    action = {"commands": commands}
    for key in ("timeout_ms", "max_output_length"):
        if args.get(key) is not None:
            action[key] = args[key]
    return action
