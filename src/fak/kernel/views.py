"""A tool result of any shape, as the model will read it (tier T2, pure, no I/O).

A result arrives as text, bytes or a JSON value (an MCP ``structuredContent``, a hook's object
``tool_response``, an ``/v1/fak/admit`` object). Its serialization is what travels; but a
screen over serialized JSON reads ``\\n`` where the model reads a line break, so an injection
split by escapes inside a string, or hidden in a key, slips past. ``decoded_view`` lists what
the model will read: every key and every string leaf, decoded, one per line, and the text a
base64 leaf carries when it decodes to text. A text result that *is* JSON (an API reply passed
as a string) is read the same way when it holds an escape (``json_text_view``): without one its
strings already stand in it as the model reads them. ``serialized`` is the canonical bytes of a
value (any integer size, sorted keys, UTF-8), so a digest never fails on a value JSON allows.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterator
from typing import Any, Final

__all__ = ["VIEW_MAX", "decoded_view", "json_text_view", "serialized", "unescaped"]

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


_ESCAPE: Final = re.compile(r'\\(?:u[0-9a-fA-F]{4}|[nrt"\\/bf])')
_ESCAPED: Final = {
    "n": "\n",
    "r": "\r",
    "t": "\t",
    '"': '"',
    "\\": "\\",
    "/": "/",
    "b": " ",
    "f": " ",
}


def _unescape_one(match: re.Match[str]) -> str:
    code = match.group(0)[1:]
    if code[0] == "u":
        point = int(code[1:], 16)
        return " " if 0xD800 <= point <= 0xDFFF else chr(point)
    return _ESCAPED[code]


def unescaped(text: str) -> str | None:
    """``text`` with its JSON/C-style escapes (``\\n``, ``\\t``, ``\\u0041``, ...) read as
    the model reads them, or None when it holds none (JSON text inside a string, a log line)."""
    if "\\" not in text:
        return None
    out = _ESCAPE.sub(_unescape_one, text)
    return out if out != text else None


def _leaves(value: Any, depth: int = 0) -> Iterator[str]:
    if depth > _DEPTH_MAX:
        return
    if isinstance(value, str):
        yield value
        opened = unescaped(value)
        if opened is not None:
            yield opened
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


_JSON_START: Final = frozenset(b"{[")
_SPACE: Final = b" \t\r\n"


def json_text_view(payload: bytes) -> bytes | None:
    """What the model reads of a text result holding escapes (``\\n``, ``\\u…``, ...): the
    decoded view when it is a JSON object or array, else the text with its escapes read; None
    for text without one (its bytes are already what is read)."""
    if b"\\" not in payload:
        return None
    head = payload.lstrip(_SPACE)[:1]
    if head and head[0] in _JSON_START:
        try:
            value = json.loads(payload)
        except (ValueError, RecursionError):
            value = None
        if isinstance(value, dict | list):
            return decoded_view(value).encode("utf-8", "replace")
    opened = unescaped(payload.decode("utf-8", "replace"))
    return opened.encode("utf-8", "replace") if opened is not None else None
