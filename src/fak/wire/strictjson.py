"""Strict JSON for request bodies: one value per key, or no request at all (tier T1).

A JSON object that names a key twice is read differently by different parsers (first wins in
some, last wins in others). If the gateway screened one reading and the upstream acted on the
other, bytes the screen never saw would reach the model. So a body with a repeated key anywhere
is refused (``DuplicateKey``), as are ``NaN``/``Infinity`` and lone UTF-16 surrogates, which the
renderers could not write back. Integers past 64 bits become floats, as orjson reads them. Pure.
"""

from __future__ import annotations

import json
from typing import Any, Final

import orjson

__all__ = ["DuplicateKey", "InvalidJson", "loads_strict"]

_I64: Final = 2**63


class InvalidJson(ValueError):
    """Not JSON fak can take: ``str(exc)`` says what is wrong."""


class DuplicateKey(InvalidJson):
    """An object names the same key twice; ``key`` is the repeated name."""

    def __init__(self, key: str) -> None:
        super().__init__(f"an object repeats the key {key[:64]!r}; send each key once")
        self.key = key


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKey(key)
            seen.add(key)
    return obj


def _int(text: str) -> int | float:
    value = int(text)
    return value if -_I64 <= value < 2 * _I64 else float(value)


def _constant(name: str) -> Any:
    raise InvalidJson(f"{name} is not JSON")


_DECODER: Final = json.JSONDecoder(
    object_pairs_hook=_pairs, parse_int=_int, parse_constant=_constant
)


def loads_strict(raw: bytes | str) -> Any:
    """Decode ``raw``; raises ``DuplicateKey`` or ``InvalidJson`` (never anything else)."""
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes | bytearray) else raw
        value, end = _DECODER.raw_decode(text, _skip_ws(text, 0))
    except InvalidJson:
        raise
    except UnicodeDecodeError as exc:
        raise InvalidJson("the body is not UTF-8") from exc
    except (ValueError, RecursionError) as exc:
        detail = exc.msg if isinstance(exc, json.JSONDecodeError) else "too deeply nested"
        raise InvalidJson(detail) from exc
    if _skip_ws(text, end) != len(text):
        raise InvalidJson("extra data after the JSON value")
    if "\\ud" in text or "\\uD" in text:  # surrogate escapes: orjson decides what is valid
        try:
            orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            raise InvalidJson(exc.msg) from exc
    return value


def _skip_ws(text: str, i: int) -> int:
    n = len(text)
    while i < n and text[i] in " \t\r\n":
        i += 1
    return i
