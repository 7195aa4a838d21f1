"""The escape readers of ``fak.kernel.views`` read every backslash once, left to right; they
must equal replacing each kind of escape in turn (the readers they replaced, kept here)."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from fak.kernel.views import json_text_view, unescaped

_SIMPLE = (("\\n", "\n"), ("\\t", "\t"), ("\\r", "\r"), ('\\"', '"'), ("\\/", "/"))
_UNICODE = re.compile(r"\\u([0-9a-fA-F]{4})")
_UNICODE_BYTES = re.compile(rb"\\u([0-9a-fA-F]{4})")


def _point(hex4: bytes | str) -> str:
    point = int(hex4, 16)
    return " " if 0xD800 <= point <= 0xDFFF else chr(point)


def _reference(text: str) -> str | None:
    if "\\" not in text:
        return None
    out = text
    for escape, char in _SIMPLE:
        out = out.replace(escape, char)
    out = _UNICODE.sub(lambda m: _point(m.group(1)), out)
    return out if out != text else None


def _reference_bytes(payload: bytes) -> bytes:
    out = payload
    for escape, char in _SIMPLE:
        out = out.replace(escape.encode(), char.encode())
    return _UNICODE_BYTES.sub(lambda m: _point(m.group(1)).encode("utf-8"), out)


# backslashes, the letters that follow them, hex digits, and anything else
_ESCAPING = ["\\", "\\", "n", "t", "r", '"', "/", "u", "\\u", "\\\\", "\\ud83d"]
_HEXISH = ["0", "0", "4", "1", "d", "8", "F", "g", "x"]
_OTHER = [" ", "é", "\U0001f600"]
_PIECES = st.sampled_from([*_ESCAPING, *_HEXISH, *_OTHER])
_TEXTS = st.lists(st.one_of(_PIECES, st.text(max_size=3)), max_size=40).map("".join)


@settings(max_examples=400)
@given(_TEXTS)
def test_unescaped_equals_replacing_each_kind_in_turn(text: str) -> None:
    assert unescaped(text) == _reference(text)


@settings(max_examples=400)
@given(_TEXTS)
def test_the_json_text_view_equals_replacing_each_kind_in_turn(text: str) -> None:
    payload = b'{"k": "' + text.encode("utf-8", "surrogatepass") + b'"}'
    expected = _reference_bytes(payload)
    assert json_text_view(payload) == (expected if expected != payload else None)


def test_known_readings() -> None:
    assert unescaped("a\\nb\\\\nc\\u0041\\ud83d\\q") == "a\nb\\\ncA \\q"
    assert json_text_view(b'{"a": "x\\"y\\/z\\u00e9"}') == '{"a": "x"y/zé"}'.encode()
    assert json_text_view(b'{"a": "no escapes"}') is None
    assert json_text_view(b"not json \\n") is None
