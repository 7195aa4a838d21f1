"""De-obfuscating views of a result, screened by the same detectors (tier T1).

The second, independent result gate (it screens the raw bytes too). Each view undoes one cheap
trick: invisible characters (zero-width, bidi controls, soft hyphen, variation selectors) and
combining marks are removed, Unicode tag characters are read as the ASCII they smuggle,
compatibility forms (fullwidth, math letters) and common Cyrillic/Greek homoglyphs fold to ASCII,
long base64 / hex tokens are decoded when mostly printable (recursively, bounded), letter-spaced
and reversed marker phrases are caught. Decoding shrinks its input, so the work stays linear.
"""

from __future__ import annotations

import binascii
import unicodedata
from dataclasses import replace

import re2

from fak.abi import Reason
from fak.screen.detect import (
    Detector,
    Finding,
    screen_bytes,
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
    # combining marks (accents after NFKD, "zalgo" overlays)
    cps += range(0x0300, 0x0370)
    cps += range(0x1AB0, 0x1B00)
    cps += range(0x1DC0, 0x1E00)
    cps += range(0x20D0, 0x2100)
    cps += range(0xFE20, 0xFE30)
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
    """The folded view as UTF-8: NFKD, combining marks and invisible characters removed,
    homoglyphs and tag characters mapped to ASCII.

    Pure-ASCII input is returned unchanged (none of the tricks can be present). Bytes that are not
    valid UTF-8 are dropped, so they cannot split a marker either.
    """
    if data.isascii():
        return data
    text = data.decode("utf-8", errors="ignore")
    folded = unicodedata.normalize("NFKD", text).translate(_TABLE)
    return folded.encode("utf-8")


# --- encoded tokens ---------------------------------------------------------------------------

_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_"
_TOKEN_MASK = bytes(1 if b in _ALPHABET else 0 for b in range(256))
_RUN = b"\x01" * _MIN_TOKEN
_HEXDIGITS = b"0123456789abcdefABCDEF"
_URLSAFE = bytes.maketrans(b"-_", b"+/")
# Bytes that count against "printable": C0 controls except tab/newline/return, and DEL.
_CONTROL = bytes(b for b in range(32) if b not in (9, 10, 13)) + b"\x7f"
# Bytes that never occur in UTF-8: a decoding holding any of them is not text.
_NOT_UTF8 = bytes([0xC0, 0xC1, *range(0xF5, 0x100)])


def _mostly_printable(raw: bytes) -> bool:
    """At least 90% non-control bytes and, if not ASCII, valid UTF-8."""
    size = len(raw)
    if size < _MIN_TOKEN // 2:
        return False
    if size - len(raw.translate(None, _CONTROL)) > size * (1.0 - _PRINTABLE_RATIO):
        return False
    if raw.isascii():
        return True
    if len(raw.translate(None, _NOT_UTF8)) != size:
        return False
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def decoded_tokens(view: bytes) -> list[bytes]:
    """Decodings of the long base64 / hex tokens in ``view`` that are mostly printable text.

    Tokens are maximal runs of at least 16 base64-alphabet bytes, found with a byte mask rather
    than a regex. A token of hex digits only (with or without ``0x``) is read as hex; any other
    token as standard or URL-safe base64. (No marker or secret shape has a base64 form made of hex
    digits alone; ``tests/screen`` checks that.)
    """
    mask = view.translate(_TOKEN_MASK)
    find = mask.find
    out: list[bytes] = []
    start = 0
    while (begin := find(_RUN, start)) >= 0:
        end = find(b"\x00", begin + _MIN_TOKEN)
        if end < 0:
            end = len(mask)
        token = view[begin:end]
        start = end
        if token[:2] in (b"0x", b"0X") and not token[2:].translate(None, _HEXDIGITS):
            token = token[2:]
        if not token.translate(None, _HEXDIGITS):
            raw = binascii.unhexlify(token[: len(token) & ~1])
        else:
            body = token.translate(_URLSAFE)
            cut = len(body) % 4
            body = body[:-1] if cut == 1 else body + b"=" * (4 - cut) if cut else body
            raw = binascii.a2b_base64(body)
        if _mostly_printable(raw):
            out.append(raw)
    return out


# --- the screen -------------------------------------------------------------------------------

_DISTINCTIVE = (
    b"ignorepreviousinstructions",
    b"ignoreallprevious",
    b"disregardtheabove",
    b"systemoverride",
    b"revealyoursystemprompt",
)
# Letter-spaced or punctuated markers, forwards and backwards, over the alnum-only view.
_SQUEEZED = re2.compile(b"|".join([*_DISTINCTIVE, *(m[::-1] for m in _DISTINCTIVE), b"etartlifxe"]))
_UPPER = bytes(range(65, 91))
_SQUEEZE_TABLE = bytes.maketrans(_UPPER, _UPPER.lower())
_NOT_ALNUM = bytes(b for b in range(256) if not (48 <= b <= 57 or 65 <= b <= 90 or 97 <= b <= 122))


def _screen_view(view: bytes, label: str, *, first_match_done: bool = False) -> Finding | None:
    if not first_match_done:
        hit = screen_bytes(view)
        if hit is not None:
            return replace(hit, view=label)
    squeezed = view.translate(_SQUEEZE_TABLE, _NOT_ALNUM)
    if _SQUEEZED.search(squeezed) is not None:
        return Finding(Reason.TRUST_VIOLATION, Detector.SQUEEZED_MARKER, view="squeezed")
    return None


def screen_deobfuscated(data: bytes) -> Finding | None:
    """The first finding over the raw bytes, the normalized view and its decoded layers.

    The raw bytes are screened too, so this admitter alone holds everything ``screen_bytes``
    holds. Fails closed (TRUST_VIOLATION) when printable encoded layers nest deeper than
    ``MAX_DECODE_DEPTH`` or the decoded layers together outgrow ``DECODE_BUDGET`` times the input.
    """
    hit = screen_bytes(data)
    if hit is not None:
        return hit
    top = normalize(data)
    hit = _screen_view(top, "normalized", first_match_done=top is data)
    if hit is not None:
        return hit
    budget = DECODE_BUDGET * len(data) + 4096
    pending = [(top, 0)]
    while pending:
        view, depth = pending.pop()
        if depth:
            budget -= len(view)
            if budget < 0:
                return Finding(Reason.TRUST_VIOLATION, Detector.DECODE_BUDGET, view="decoded")
            hit = _screen_view(view, "decoded")
            if hit is not None:
                return hit
        inner = [normalize(layer) for layer in decoded_tokens(view)]
        if inner and depth >= MAX_DECODE_DEPTH:
            return Finding(Reason.TRUST_VIOLATION, Detector.DECODE_DEPTH, view="decoded")
        pending.extend((layer, depth + 1) for layer in inner)
    return None
