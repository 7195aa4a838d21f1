"""Typed readers for fields of decoded JSON bodies (tier T1, pure).

Each reader either returns a value of the promised type or raises ``WireError`` naming the
field and what it should be, so every wire reports bad input the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from fak.abi import ToolSpec
from fak.wire.errors import WireError

__all__ = [
    "arguments_text",
    "as_object",
    "opt_bool",
    "opt_float",
    "opt_int",
    "opt_str",
    "req_list",
    "req_str",
    "stop_list",
    "tool_spec",
]

INVALID = "invalid_request"


def as_object(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise WireError(INVALID, f"{where} must be a JSON object", where)
    return value


def req_str(obj: Mapping[str, Any], key: str, where: str) -> str:
    value = obj.get(key)
    if not isinstance(value, str):
        raise WireError(
            INVALID, f"{where}.{key} is required and must be a string", f"{where}.{key}"
        )
    return value


def opt_str(obj: Mapping[str, Any], key: str, where: str, default: str = "") -> str:
    value = obj.get(key)
    if value is None:
        return default
    if not isinstance(value, str):
        raise WireError(INVALID, f"{where}.{key} must be a string", f"{where}.{key}")
    return value


def req_list(obj: Mapping[str, Any], key: str, where: str) -> list[Any]:
    value = obj.get(key)
    if not isinstance(value, list):
        raise WireError(
            INVALID, f"{where}.{key} is required and must be an array", f"{where}.{key}"
        )
    return value


def opt_float(
    obj: Mapping[str, Any], key: str, lo: float, hi: float, where: str = "body"
) -> float | None:
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not lo <= value <= hi:
        raise WireError(INVALID, f"{key} must be a number in [{lo}, {hi}]", key)
    return float(value)


def opt_int(obj: Mapping[str, Any], key: str, lo: int = 0) -> int | None:
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < lo:
        raise WireError(INVALID, f"{key} must be an integer >= {lo}", key)
    return value


def opt_bool(obj: Mapping[str, Any], key: str) -> bool | None:
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, bool):
        raise WireError(INVALID, f"{key} must be true or false", key)
    return value


def stop_list(value: Any, key: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise WireError(INVALID, f"{key} must be a string or an array of strings", key)


def arguments_text(value: Any, where: str) -> str:
    """Tool-call arguments as raw JSON text: strings pass unchanged, objects are serialised."""
    if isinstance(value, str):
        return value
    if value is None:
        return "{}"
    if isinstance(value, Mapping):
        return orjson.dumps(value).decode()
    raise WireError(INVALID, f"{where} must be a JSON object or a JSON string", where)


def tool_spec(
    obj: Mapping[str, Any], where: str, schema_key: str, name: str | None = None
) -> ToolSpec:
    """A client function tool declared as ``obj`` (its name, description, the JSON schema under
    ``schema_key`` and ``strict``), the same on every wire; ``name`` overrides a qualified name."""
    schema = obj.get(schema_key)
    return ToolSpec(
        name=req_str(obj, "name", where) if name is None else name,
        description=opt_str(obj, "description", where),
        parameters=as_object(schema, f"{where}.{schema_key}") if schema is not None else {},
        strict=opt_bool(obj, "strict"),
    )
