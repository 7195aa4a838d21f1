"""A tool result of any shape, as the model will read it (tier T2, pure, no I/O).

A result arrives as text, bytes or a JSON value (an MCP ``structuredContent``, a hook's object
``tool_response``, an ``/v1/fak/admit`` object). Its serialization is what travels; but a
screen over serialized JSON reads ``\\n`` where the model reads a line break, so an injection
split by escapes inside a string, or hidden in a key, slips past. ``decoded_view`` lists what
the model will read: every key and every string leaf, decoded, one per line, and the text a
base64 leaf carries when it decodes to text. ``serialized`` is the canonical bytes of a value
(any integer size, sorted keys, UTF-8), so a digest never fails on a value JSON allows.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterator
from typing import Any, Final

__all__ = ["VIEW_MAX", "decoded_view", "serialized"]

VIEW_MAX: Final = 16 * 1024 * 1024
"""Characters of a decoded view; past it the rest of the value is not listed (the serialized
bytes are still screened whole)."""
_DEPTH_MAX: Final = 256
_B64: Final = re.compile(r"[A-Za-z0-9+/_-]{24,}={0,2}")
_B64_MIN: Final = 24


def serialized(value: Any) -> bytes:
    """Canonical JSON bytes of ``value`` (sorted keys, no ASCII escaping, any integer)."""
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=str)
    return text.encode("utf-8", "replace")


def _as_text(data: bytes) -> str | None:
    """``data`` as text when it is text (UTF-8 with few control characters)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    controls = sum(1 for ch in text if ch < " " and ch not in "\n\r\t")
    return text if controls <= len(text) // 50 else None


def _base64_text(leaf: str) -> str | None:
    """The text a base64 leaf carries (standard or URL-safe alphabet), else None."""
    stripped = leaf.strip()
    if len(stripped) < _B64_MIN or _B64.fullmatch(stripped) is None:
        return None
    padded = stripped + "=" * (-len(stripped) % 4)
    for decode in (base64.b64decode, base64.urlsafe_b64decode):
        try:
            return _as_text(decode(padded))
        except (binascii.Error, ValueError):
            continue
    return None


def _leaves(value: Any, depth: int = 0) -> Iterator[str]:
    if depth > _DEPTH_MAX:
        return
    if isinstance(value, str):
        yield value
        decoded = _base64_text(value)
        if decoded is not None:
            yield decoded
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _leaves(item, depth + 1)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _leaves(item, depth + 1)


def decoded_view(value: Any) -> str:
    """Every key and string leaf of ``value`` as the model reads it, one per line (bounded)."""
    out: list[str] = []
    size = 0
    for leaf in _leaves(value):
        out.append(leaf)
        size += len(leaf) + 1
        if size > VIEW_MAX:
            break
    return "\n".join(out)
