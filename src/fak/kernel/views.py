"""A tool result of any shape, as the model will read it (tier T2, pure, no I/O).

A result arrives as text, bytes or a JSON value (an MCP ``structuredContent``, a hook's object
``tool_response``, an ``/v1/fak/admit`` object). Its serialization is what travels; but a
screen over serialized JSON reads ``\\n`` where the model reads a line break, so an injection
split by escapes inside a string, or hidden in a key, slips past. ``decoded_view`` lists what
the model will read: every key and every string leaf, decoded, one per line, and the text a
base64 leaf carries when it decodes to text. A text result that is JSON holding escapes (an API
reply passed as a string) is read with its escapes decoded (``json_text_view``). ``serialized``
is the canonical bytes of a value (any integer size, sorted keys, UTF-8), so a digest never
fails on a value JSON allows.
"""

from __future__ import annotations

import base64
import binascii
import functools
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


_SIMPLE: Final = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "/": "/"}
_SIMPLE_BYTES: Final = {k.encode(): v.encode() for k, v in _SIMPLE.items()}
_HEX_DIGITS: Final = "0123456789abcdefABCDEF"


@functools.lru_cache(maxsize=4096)
def _code_point(hex4: str) -> str | None:
    """The character ``\\u`` + ``hex4`` reads as (a surrogate as a space), None unless
    ``hex4`` is four hex digits. A text repeats the same few escapes: each is read once."""
    if len(hex4) != 4 or hex4.strip(_HEX_DIGITS):
        return None
    point = int(hex4, 16)
    return " " if 0xD800 <= point <= 0xDFFF else chr(point)


@functools.lru_cache(maxsize=4096)
def _code_point_bytes(hex4: bytes) -> bytes | None:
    """``_code_point`` of four bytes, as UTF-8."""
    char = _code_point(hex4.decode("latin-1"))
    return None if char is None else char.encode("utf-8")


# Both readers below find every backslash with one C-level split and look at each once, left to
# right: before n, t, r, " or / it reads as that character, before u and four hex digits as that
# code point (a surrogate as a space), else it stays. Escapes never overlap, since the character
# read after a backslash is never a backslash itself, so this equals replacing each kind of escape
# in turn; a multi-byte ``in`` or ``replace`` per kind walked the whole text byte by byte.


def unescaped(text: str) -> str | None:
    """``text`` with its JSON/C-style escapes (``\\n``, ``\\t``, ``\\u0041``, ...) read as
    the model reads them, or None when it holds none (JSON text inside a string, a log line).
    A screening view, not a decoder: an escaped backslash before an ``n`` reads as a line break
    too, which can only add a line break to what is screened."""
    if "\\" not in text:
        return None
    parts = text.split("\\")
    out = [parts[0]]
    for part in parts[1:]:
        head = part[:1]
        if head in _SIMPLE:
            out += (_SIMPLE[head], part[1:])
        elif head == "u" and (char := _code_point(part[1:5])) is not None:
            out += (char, part[5:])
        else:
            out += ("\\", part)
    joined = "".join(out)
    return joined if joined != text else None


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
_LEAD: Final = b" \t\r\n\xef\xbb\xbf\xbd\xff\xfe"  # whitespace, a BOM, stray or replaced bytes


def json_text_view(payload: bytes) -> bytes | None:
    """What the model reads of a text result that is JSON (an object or array passed as text,
    an API reply) holding escapes (``\\n``, ``\\u…``): the text with its escapes read, keys
    and values decoded in place, in one pass; None for any other text, which the screen already
    reads as the model does (source code's escapes are not worth a second screen)."""
    if b"\\" not in payload:
        return None
    head = payload[:64].lstrip(_LEAD)[:1]
    if not head or head[0] not in _JSON_START:
        return None
    parts = payload.split(b"\\")
    out = [parts[0]]
    for part in parts[1:]:
        head = part[:1]
        if head in _SIMPLE_BYTES:
            out += (_SIMPLE_BYTES[head], part[1:])
        elif head == b"u" and (code := _code_point_bytes(part[1:5])) is not None:
            out += (code, part[5:])
        else:
            out += (b"\\", part)
    joined = b"".join(out)
    return joined if joined != payload else None
