"""De-obfuscating views of a result, screened by the same detectors (tier T1).

The second, independent result gate. Each view undoes one cheap trick: invisible characters
(zero-width, bidi controls, soft hyphen, variation selectors) are removed, Unicode tag characters
are read as the ASCII they smuggle, compatibility forms (fullwidth, ideographic space, math
letters) and common Cyrillic/Greek homoglyphs fold to ASCII, long base64 / hex tokens are decoded
when the result is mostly printable text (recursively, to a bounded depth), letter-spaced and
reversed marker phrases are caught. Every decoding shrinks its input, so the total work is linear.
"""

from __future__ import annotations

import binascii
import unicodedata
from collections.abc import Iterator
from dataclasses import replace

import re2

from fak.abi import Reason
from fak.screen.detect import (
    Detector,
    Finding,
    find_injection,
    find_pollution,
    find_secret,
)

__all__ = [
    "DECODE_BUDGET",
    "MAX_DECODE_DEPTH",
    "decoded_tokens",
    "normalize",
    "screen_deobfuscated",
]

MAX_DECODE_DEPTH = 6
"""Nested base64/hex layers peeled; a printable layer deeper than this is held (fail closed)."""

DECODE_BUDGET = 8
"""The decoded views together may total at most this many times the input (plus 4 KiB)."""

_MIN_TOKEN = 16
_PRINTABLE_RATIO = 0.9

# --- normalization ----------------------------------------------------------------------------


def _invisible() -> list[int]:
    cps = [0x00AD, 0x034F, 0x061C, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x180E, 0x3164, 0xFEFF, 0xFFA0]
    cps += range(0x200B, 0x2010)  # zero-width space/joiners, LRM, RLM
    cps += range(0x202A, 0x202F)  # bidi embeddings and overrides
    cps += range(0x2060, 0x2070)  # word joiner, invisible operators, isolates, deprecated formats
    cps += range(0xFE00, 0xFE10)  # variation selectors
    cps += range(0xE0100, 0xE01F0)  # variation selectors supplement
    cps += [0xE0001, 0xE007F]  # language tag, cancel tag
    return cps


_HOMOGLYPHS = {
    # Cyrillic
    "а": "a", "в": "b", "е": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p", "с": "c",
    "т": "t", "у": "y", "х": "x", "ѕ": "s", "і": "i", "ј": "j", "ԁ": "d", "ԛ": "q", "ԝ": "w",
    "ӏ": "l", "ɡ": "g",
    "А": "A", "В": "B", "Е": "E", "К": "K", "М": "M", "Н": "H", "О": "O", "Р": "P", "С": "C",
    "Т": "T", "У": "Y", "Х": "X", "Ѕ": "S", "І": "I", "Ј": "J", "Ԁ": "D", "Ԛ": "Q", "Ԝ": "W",
    # Greek
    "α": "a", "β": "b", "ε": "e", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p", "τ": "t",
    "υ": "u", "χ": "x", "γ": "y",
    "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N",
    "Ο": "O", "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X",
}  # fmt: skip

_TABLE: dict[int, int | str | None] = dict.fromkeys(_invisible())
_TABLE.update({ord(k): v for k, v in _HOMOGLYPHS.items()})
_TABLE.update({cp: chr(cp - 0xE0000) for cp in range(0xE0020, 0xE007F)})  # tag characters


def normalize(data: bytes) -> bytes:
    """The folded view: NFKC, invisible characters removed, homoglyphs mapped, as UTF-8 bytes.

    Pure-ASCII input is returned unchanged (none of the tricks can be present). Bytes that are not
    valid UTF-8 are dropped, so they cannot split a marker either.
    """
    if data.isascii():
        return data
    text = data.decode("utf-8", errors="ignore")
    folded = unicodedata.normalize("NFKC", text).translate(_TABLE)
    return folded.encode("utf-8")


# --- encoded tokens ---------------------------------------------------------------------------

_TOKEN = re2.compile(rb"[A-Za-z0-9+/_\-]{%d,}={0,2}" % _MIN_TOKEN)
_HEX = re2.compile(rb"(?:0[xX])?[0-9a-fA-F]+")
_CONTROL = bytes(b for b in range(32) if b not in (9, 10, 13)) + b"\x7f"
_URLSAFE = bytes.maketrans(b"-_", b"+/")


def _mostly_printable(raw: bytes) -> bool:
    if len(raw) < _MIN_TOKEN // 2:
        return False
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    controls = len(raw) - len(raw.translate(None, _CONTROL))
    return controls <= len(raw) * (1.0 - _PRINTABLE_RATIO)


def _decode_hex(token: bytes) -> bytes | None:
    if _HEX.fullmatch(token) is None:
        return None
    digits = token[2:] if token[:2] in (b"0x", b"0X") else token
    if len(digits) % 2:
        digits = digits[:-1]
    try:
        return binascii.unhexlify(digits)
    except (binascii.Error, ValueError):
        return None


def _decode_base64(token: bytes) -> bytes | None:
    body = token.rstrip(b"=").translate(_URLSAFE)
    if len(body) % 4 == 1:
        body = body[:-1]
    body += b"=" * (-len(body) % 4)
    try:
        return binascii.a2b_base64(body)
    except (binascii.Error, ValueError):
        return None


def decoded_tokens(view: bytes) -> Iterator[bytes]:
    """Decodings of the long base64 / hex tokens in ``view`` that are mostly printable text."""
    for match in _TOKEN.finditer(view):
        token = match.group(0)
        for decoded in (_decode_hex(token), _decode_base64(token)):
            if decoded is not None and _mostly_printable(decoded):
                yield decoded


# --- the screen -------------------------------------------------------------------------------

_SQUEEZED_MARKERS = (
    b"ignorepreviousinstructions",
    b"ignoreallprevious",
    b"disregardtheabove",
    b"systemoverride",
    b"revealyoursystemprompt",
)
_NOT_ALNUM = bytes(b for b in range(256) if not (48 <= b <= 57 or 97 <= b <= 122))


def _screen_view(view: bytes, label: str) -> Finding | None:
    low = view.lower()
    hit = find_secret(view, low) or find_injection(view, low) or find_pollution(view)
    if hit is not None:
        return replace(hit, view=label)
    backwards = low[::-1]
    hit = find_injection(backwards, backwards)
    if hit is not None:
        return replace(hit, view="reversed")
    squeezed = low.translate(None, _NOT_ALNUM)
    for marker in _SQUEEZED_MARKERS:
        if marker in squeezed:
            return Finding(Reason.TRUST_VIOLATION, Detector.SQUEEZED_MARKER, view=label)
    return None


def screen_deobfuscated(data: bytes) -> Finding | None:
    """The first finding over the normalized view and its decoded layers, or None.

    Fails closed (TRUST_VIOLATION) when printable encoded layers nest deeper than
    ``MAX_DECODE_DEPTH`` or the decoded views outgrow ``DECODE_BUDGET`` times the input.
    """
    budget = DECODE_BUDGET * len(data) + 4096
    pending = [(normalize(data), 0)]
    while pending:
        view, depth = pending.pop()
        budget -= len(view)
        if budget < 0:
            return Finding(Reason.TRUST_VIOLATION, Detector.DECODE_BUDGET, view="decoded")
        hit = _screen_view(view, "normalized" if depth == 0 else "decoded")
        if hit is not None:
            return hit
        inner = [normalize(layer) for layer in decoded_tokens(view)]
        if inner and depth >= MAX_DECODE_DEPTH:
            return Finding(Reason.TRUST_VIOLATION, Detector.DECODE_DEPTH, view="decoded")
        pending.extend((layer, depth + 1) for layer in inner)
    return None
