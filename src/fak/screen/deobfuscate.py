"""De-obfuscating views of a result, screened by the same detectors (tier T1).

The second, independent result gate (it screens the raw bytes too). The normalized view is the
text's ASCII skeleton: compatibility forms folded, tag characters read as the ASCII they smuggle,
Cyrillic/Greek homoglyphs mapped, everything else non-ASCII (zero-width, bidi, combining marks)
dropped. Long base64 / hex tokens are decoded when mostly printable (recursively, bounded), and
letter-spaced or reversed marker phrases are caught. Decoding shrinks its input: linear work.
"""

from __future__ import annotations

import binascii
import codecs
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

# A charmap encoder keeps ASCII, turns each homoglyph into a private byte 128 + i, and drops every
# other character (errors="ignore"): invisible and bidi controls, combining marks left by NFKD,
# and all other non-ASCII text. A byte table then maps the private bytes to their ASCII letters.
_GLYPHS = list(_HOMOGLYPHS)
_FILLER = "\ufffe"  # a noncharacter for the unused private bytes; mapped to nothing below
_ENCODE_MAP = codecs.charmap_build(
    "".join([*map(chr, range(128)), *_GLYPHS, *([_FILLER] * (128 - len(_GLYPHS)))])
)
_PRIVATE_TO_ASCII = (
    bytes(range(128)) + bytes(ord(_HOMOGLYPHS[g]) for g in _GLYPHS) + b"\x00" * (128 - len(_GLYPHS))
)
_TAGS = {cp: chr(cp - 0xE0000) for cp in range(0xE0020, 0xE007F)}  # Unicode tag characters
_TAG_LEAD = b"\xf3\xa0"  # every tag character's UTF-8 encoding starts with these bytes
# UTF-8 lead bytes of the homoglyph blocks (IPA ɡ, Greek, Cyrillic) and of the compatibility
# blocks NFKD turns into Greek letters (modifier letters, math alphanumerics). Text without any of
# them takes the plain ASCII encoder, which is several times faster than the charmap.
_GLYPH_LEADS = (
    *(b"\xc9", b"\xce", b"\xcf", b"\xd0", b"\xd1", b"\xd3", b"\xd4"),
    *(b"\xe1\xb4", b"\xe1\xb5", b"\xe1\xb6", b"\xf0\x9d"),
)


def normalize(data: bytes) -> bytes:
    """The ASCII skeleton of ``data``: what a reader would take the text to say.

    NFKD folds compatibility forms (fullwidth letters, math alphanumerics, ligatures, exotic
    spaces) and splits accents off; Unicode tag characters are read as the ASCII they encode;
    Cyrillic/Greek homoglyphs map to their Latin twins; every other non-ASCII character
    (zero-width, bidi controls, combining marks, other scripts) and invalid UTF-8 is dropped, so
    it cannot split a marker. Pure-ASCII input is returned as is.
    """
    if data.isascii():
        return data
    text = unicodedata.normalize("NFKD", data.decode("utf-8", errors="ignore"))
    if _TAG_LEAD in data:
        text = text.translate(_TAGS)
    if not any(lead in data for lead in _GLYPH_LEADS):
        return text.encode("ascii", errors="ignore")
    skeleton, _ = codecs.charmap_encode(text, "ignore", _ENCODE_MAP)
    return skeleton.translate(_PRIVATE_TO_ASCII, b"\x00")


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
    if (size - len(raw.translate(None, _CONTROL))) * 10 > size:
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


_PAD = (b"", b"", b"==", b"=")


def decoded_tokens(view: bytes) -> list[bytes]:
    """Decodings of the long base64 / hex tokens in ``view`` that are mostly printable text.

    Tokens are maximal runs of at least 16 base64-alphabet bytes, found with a byte mask rather
    than a regex. Every token is read as standard or URL-safe base64; a token of hex digits (with
    or without ``0x``) is also read as hex (some secret shapes have all-hex base64 forms, so hex
    tokens are never read as hex alone). This loop is the de-obfuscating screen's hot spot.
    """
    mask = view.translate(_TOKEN_MASK)
    find = mask.find
    printable = _mostly_printable
    a2b, unhex = binascii.a2b_base64, binascii.unhexlify
    urlsafe, hexdigits, pad = _URLSAFE, _HEXDIGITS, _PAD
    out: list[bytes] = []
    start = 0
    while (begin := find(_RUN, start)) >= 0:
        end = find(b"\x00", begin + _MIN_TOKEN)
        if end < 0:
            end = len(mask)
        token = view[begin:end]
        start = end
        digits = token[2:] if token.startswith((b"0x", b"0X")) else token
        if not digits.translate(None, hexdigits):
            raw = unhex(digits[: len(digits) & ~1])
            if printable(raw):
                out.append(raw)
        cut = len(token) & 3
        body = token.translate(urlsafe)
        raw = a2b(body[:-1] if cut == 1 else body + pad[cut])
        if printable(raw):
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


def screen_deobfuscated(data: bytes, *, include_raw: bool = True) -> Finding | None:
    """The first finding over the raw bytes, the normalized view and its decoded layers.

    With ``include_raw`` (the default) the raw bytes are screened too, so this screen alone holds
    everything ``screen_bytes`` holds; a chain that already runs ``screen_bytes`` on the same
    bytes passes False to skip that repeat. Fails closed (TRUST_VIOLATION) when printable encoded
    layers nest deeper than ``MAX_DECODE_DEPTH`` or the decoded layers together outgrow
    ``DECODE_BUDGET`` times the input.
    """
    if include_raw:
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
