"""OpenAI Chat Completions, the tool-call shape both directions read and write (tier T1, pure).

``read_tool_calls`` reads an assistant message's ``tool_calls`` (a client's history, an
upstream's completion); ``render_call`` writes one (to an upstream, to a client; a custom tool's
call takes its free-form shape when the client declared the tool as custom).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from fak.abi import ProposedCall
from fak.wire.errors import WireError
from fak.wire.fields import INVALID, arguments_text, as_object, req_str

__all__ = ["read_tool_calls", "render_call"]


def read_tool_calls(value: Any, where: str, names: dict[str, str]) -> tuple[ProposedCall, ...]:
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


def render_call(call: ProposedCall, kinds: Mapping[str, str] | None = None) -> dict[str, Any]:
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
