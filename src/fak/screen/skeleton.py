"""The ASCII skeleton of a text: what a reader would take it to say (tier T1).

``normalize_reference`` defines it: NFKD folds compatibility forms and splits accents off,
Unicode tag characters read as the ASCII they encode, Cyrillic/Greek homoglyphs map to their
Latin twins (and ı, ł, đ, ø to their ASCII bases), everything else non-ASCII (and invalid UTF-8,
and NUL) is dropped. That is a per-character map, so ``normalize`` computes it from a table of
the characters whose skeleton is not empty (built once, on first use): a body with few non-ASCII
bytes is folded run by run, one without any folding character needs one byte deletion, one with
a few of them one charmap pass; NFKD runs only on bodies with too many distinct ones. Pure.
"""

from __future__ import annotations

import codecs
import itertools
import threading
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING

import re2

from fak.screen.tokens import latin1_options

if TYPE_CHECKING:
    from _codecs import _EncodingMap

__all__ = ["fold_table", "normalize", "normalize_reference"]

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
    # Latin letters NFKD does not split but a reader takes for their ASCII base: Turkish
    # dotless i, Polish l with stroke, Vietnamese d with stroke, Nordic o with stroke
    "ı": "i", "ł": "l", "Ł": "L", "đ": "d", "Đ": "D", "ø": "o", "Ø": "O",
}  # fmt: skip

# A charmap encoder keeps ASCII, turns each homoglyph into a private byte 128 + i, and drops every
# other character (errors="ignore"). A byte table then maps the private bytes to ASCII letters.
_GLYPHS = list(_HOMOGLYPHS)
_FILLER = "\ufffe"  # a noncharacter for the unused private bytes; they map to NUL below
_ASCII_CHARS = "".join(map(chr, range(128)))
_ENCODE_MAP = codecs.charmap_build(_ASCII_CHARS + "".join(_GLYPHS) + _FILLER * (128 - len(_GLYPHS)))
_PRIVATE_TO_ASCII = (
    bytes(range(128)) + bytes(ord(_HOMOGLYPHS[g]) for g in _GLYPHS) + b"\x00" * (128 - len(_GLYPHS))
)
_TAGS = {cp: chr(cp - 0xE0000) for cp in range(0xE0020, 0xE007F)}  # Unicode tag characters
_TAG_LEAD = b"\xf3\xa0"  # every tag character's UTF-8 encoding starts with these bytes


def normalize_reference(data: bytes) -> bytes:
    """The skeleton by definition: decode, NFKD, read tags, fold homoglyphs, drop the rest.

    Pure-ASCII input is returned as is; otherwise NUL bytes are dropped with the rest.
    """
    if data.isascii():
        return data
    return _reference_folds(data, data.decode("utf-8", errors="ignore"))


def _reference_folds(data: bytes, text: str) -> bytes:
    """``normalize_reference`` of non-ASCII ``data``, given ``data`` decoded."""
    text = unicodedata.normalize("NFKD", text)
    if _TAG_LEAD in data:
        text = text.translate(_TAGS)
    skeleton, _ = codecs.charmap_encode(text, "ignore", _ENCODE_MAP)
    return skeleton.translate(_PRIVATE_TO_ASCII, b"\x00")


# --- the fold table ---------------------------------------------------------------------------

_PLANE = 1 << 16
_LOW = bytes(range(256)) * 256
_HIGH = b"".join(bytes([b]) * 256 for b in range(256))
_NEVER = "\udfff"  # a lone surrogate: UTF-8 decoding never yields one, so it fills unused slots


def _plane_points(plane: int) -> list[int]:
    """The non-ASCII, non-surrogate code points of a plane."""
    if plane:
        return list(range(plane * _PLANE, (plane + 1) * _PLANE))
    return [*range(0x80, 0xD800), *range(0xE000, _PLANE)]


def _plane_text(plane: int, *, separated: bool) -> str:
    """Those code points as one string, in order, optionally each followed by a newline."""
    width = 8 if separated else 4
    buf = bytearray(width * _PLANE)
    buf[0::width] = _LOW
    buf[1::width] = _HIGH
    buf[2::width] = bytes([plane]) * _PLANE
    if separated:
        buf[4::width] = b"\n" * _PLANE
    if not plane:
        buf = buf[width * 0x80 : width * 0xD800] + buf[width * 0xE000 :]
    return buf.decode("utf-32-le")


def _fold_table() -> dict[int, bytes]:
    """Code point -> skeleton, for every non-ASCII character whose skeleton is not empty."""
    fold: dict[int, bytes] = {}
    for plane in range(17):
        # Without decompositions a character's skeleton is empty unless it is a homoglyph (plane
        # 0) or a tag (plane 14); such planes need no per-character look.
        if plane not in (0, 14) and unicodedata.is_normalized(
            "NFKD", _plane_text(plane, separated=False)
        ):
            continue
        points = _plane_points(plane)
        parts = normalize_reference(_plane_text(plane, separated=True).encode()).split(b"\n")
        if len(parts) != len(points) + 1:  # a skeleton held a newline: look one at a time
            parts = [normalize_reference(chr(p).encode()) for p in points] + [b""]
        for point, skeleton in zip(
            itertools.compress(points, parts), filter(None, parts), strict=True
        ):
            fold[point] = skeleton
    return fold


@dataclass(frozen=True, slots=True)
class _Folds:
    """The fold table and the two RE2 views of it."""

    points: tuple[int, ...]  # sorted; a Set match index names one
    skeletons: dict[int, bytes]
    present: re2._Regexp  # any folding character
    which: re2.Set  # which folding characters


@dataclass(frozen=True, slots=True)
class _Encoder:
    """A charmap encoder for a set of non-ASCII characters, and the byte fix-ups after it.

    Each character gets its own private byte: a single-character skeleton is translated to,
    an empty one deleted, a longer one expanded afterwards.
    """

    points: frozenset[int]
    encoding_map: dict[int, int] | _EncodingMap
    table: bytes
    delete: bytes
    expand: tuple[tuple[bytes, bytes], ...]

    def finish(self, encoded: bytes) -> bytes:
        skeleton = encoded.translate(self.table, self.delete)
        for slot, expansion in self.expand:
            if slot in skeleton:
                skeleton = skeleton.replace(slot, expansion)
        return skeleton


_SLOTS = 128  # private bytes 0x80-0xFF of a charmap encoder
_lock = threading.Lock()
_folds: _Folds | None = None
_encoders: dict[frozenset[int], _Encoder] = {}
_MAX_ENCODERS = 256


def _load() -> _Folds:
    global _folds
    with _lock:
        if _folds is None:
            skeletons = _fold_table()
            points = tuple(sorted(skeletons))
            # Byte literals in Latin-1 mode: RE2 shares their common prefixes, and a match is
            # exactly an occurrence of a character's UTF-8 form, however the bytes around it look.
            literals = [re2.escape(chr(point).encode()) for point in points]
            options = latin1_options(32 << 20)  # one DFA state per folding character
            which = re2.Set.SearchSet(options)
            for literal in literals:
                which.Add(literal)
            which.Compile()
            present = re2.compile(b"|".join(literals), options)
            _folds = _Folds(points, skeletons, present, which)
        return _folds


def fold_table() -> Mapping[int, bytes]:
    """Code point -> skeleton for every non-ASCII character whose skeleton is not empty.

    Built on first use (40–60 ms) from ``normalize_reference`` over every code point.
    """
    return MappingProxyType((_folds or _load()).skeletons)


def _build(folds: _Folds, points: frozenset[int]) -> _Encoder:
    ordered = sorted(points)
    encoding_map = codecs.charmap_build(
        _ASCII_CHARS + "".join(map(chr, ordered)) + _NEVER * (_SLOTS - len(ordered))
    )
    table = bytearray(range(256))
    delete = bytearray(b"\x00")  # NUL is dropped from every non-ASCII text
    expand = []
    for slot, point in enumerate(ordered, start=128):
        skeleton = folds.skeletons.get(point, b"")
        if not skeleton:
            delete.append(slot)
        elif len(skeleton) == 1:
            table[slot] = skeleton[0]
        else:
            expand.append((bytes([slot]), skeleton))
    return _Encoder(points, encoding_map, bytes(table), bytes(delete), tuple(expand))


def _encoder(folds: _Folds, points: frozenset[int]) -> _Encoder:
    encoder = _encoders.get(points)
    if encoder is None:
        if len(_encoders) >= _MAX_ENCODERS:
            _encoders.clear()
        encoder = _encoders[points] = _build(folds, points)
    return encoder


_CHUNK = 1 << 13
_OVERLAP = 3  # a UTF-8 sequence is at most 4 bytes: chunks overlapping by 3 miss none


def _present(folds: _Folds, high: bytes) -> frozenset[int] | None:
    """The folding characters in ``high``, or None for more than one encoder holds.

    The Set runs chunk by chunk so that a body with hundreds of distinct folding characters
    stops early. A chunk the Set reports empty is checked with the plain regex, since the Set
    also reports nothing when it runs out of memory; then the reference must run.
    """
    found: set[int] = set()
    for start in range(0, len(high), _CHUNK):
        chunk = high[start : start + _CHUNK + _OVERLAP]
        hits = folds.which.Match(chunk)
        if hits is None:
            if folds.present.search(chunk) is not None:
                return None
            continue
        found.update(hits)
        if len(found) > _SLOTS:
            return None
    return frozenset(folds.points[i] for i in found)


# The hot encoder holds every non-ASCII character (folding or not) of recent traffic. When a
# text has no others, one strict charmap pass folds it and no Set pass is needed; strict mode
# itself proves that no character was left out. A miss relearns it, at most once every
# _RELEARN misses and from a bounded sample (the start of the text, and where the miss was), so
# traffic it cannot hold pays little for trying.
_hot: _Encoder | None = None
_misses = 0
_RELEARN = 16
_SAMPLE = 1 << 14  # bytes / characters looked at when learning


def _learn(folds: _Folds, high: bytes, text: str, missed_at: int) -> None:
    global _hot, _misses
    _misses = (_misses + 1) % _RELEARN
    if _misses != 1:
        return
    sample = set(high[:_SAMPLE].decode("utf-8", errors="ignore"))
    sample.update(text[missed_at : missed_at + _SAMPLE])
    seen = {ord(c) for c in sample if c >= "\x80"}
    if _hot is not None and len(seen | _hot.points) <= _SLOTS:
        seen |= _hot.points
    if len(seen) <= _SLOTS:
        _hot = _build(folds, frozenset(seen))


_ASCII_BYTES = bytes(range(128))
_DROP = bytes(range(128, 256)) + b"\x00"
_HIGH_MASK = bytes(128) + b"\x01" * 128  # 1 where a byte is not ASCII
_SPARSE = 256
"""A text with at most one non-ASCII byte in this many is folded run by run."""
_BLOCK = 2048  # the sparse check skips ASCII blocks of this many bytes whole


def _sparse_runs(data: bytes) -> list[list[int]] | None:
    """The [start, end) of every maximal run of non-ASCII bytes, when they are sparse.

    None as soon as the non-ASCII bytes seen outnumber one in ``_SPARSE`` of the text: blocks
    that are all ASCII are skipped by one C-level check each, so a dense text stops at its first
    non-ASCII block and a sparse one is translated only where it is not ASCII.
    """
    allowed = len(data) // _SPARSE
    runs: list[list[int]] = []
    for block in range(0, len(data), _BLOCK):
        chunk = data[block : block + _BLOCK]
        if chunk.isascii():
            continue
        mask = chunk.translate(_HIGH_MASK)
        allowed -= mask.count(1)
        if allowed < 0:
            return None
        at = 0
        while (begin := mask.find(1, at)) >= 0:
            end = mask.find(0, begin)
            at = len(chunk) if end < 0 else end
            if runs and runs[-1][1] == block + begin:  # a run across the block boundary
                runs[-1][1] = block + at
            else:
                runs.append([block + begin, block + at])
    return runs


def _by_runs(skeletons: dict[int, bytes], data: bytes, runs: list[list[int]]) -> bytes:
    """The skeleton of a text from its maximal runs of non-ASCII bytes, one run at a time.

    A maximal run of non-ASCII bytes decodes alone to the characters it holds in the whole text:
    an ASCII byte never continues a UTF-8 sequence, so decoding errors stay inside their run. The
    ASCII between runs is kept, except NUL (dropped from every non-ASCII text).
    """
    parts: list[bytes] = []
    start = 0
    for begin, end in runs:
        parts.append(data[start:begin])
        parts += [skeletons.get(ord(c), b"") for c in data[begin:end].decode("utf-8", "ignore")]
        start = end
    parts.append(data[start:])
    skeleton = b"".join(parts)
    return skeleton.replace(b"\x00", b"") if b"\x00" in data else skeleton


_hot_first = False  # the last dense text folded with the hot encoder: try it first next time


def _fold_hot(hot: _Encoder, text: str) -> bytes | int:
    """The hot encoder's skeleton of ``text``, or the index of the first character it lacks."""
    try:
        encoded, _ = codecs.charmap_encode(text, "strict", hot.encoding_map)
    except UnicodeEncodeError as exc:
        return exc.start
    return hot.finish(encoded)


def normalize(data: bytes) -> bytes:
    """The ASCII skeleton of ``data``; equal to ``normalize_reference`` on every input.

    Pure-ASCII input is returned as is. Few non-ASCII bytes (source code, English with a dash or
    two): each run of them is folded alone. Otherwise RE2 looks at the non-ASCII bytes alone (a
    character's UTF-8 form lies whole in them) for characters that fold to something. None: the
    skeleton is the input without its non-ASCII and NUL bytes. Else one charmap pass folds the
    text, with the hot encoder if it holds every character, or with an encoder made for the
    folding characters an RE2 Set finds (up to 128 distinct); with more, the reference runs.
    While the hot encoder keeps folding whole texts, it is tried before the RE2 look.
    """
    global _hot_first
    if data.isascii():
        return data
    folds = _folds or _load()
    runs = _sparse_runs(data)
    if runs is not None:
        return _by_runs(folds.skeletons, data, runs)
    hot, text, missed_at = _hot, "", -1
    if hot is not None and _hot_first:
        text = data.decode("utf-8", errors="ignore")
        folded = _fold_hot(hot, text)
        if isinstance(folded, bytes):
            return folded
        missed_at, _hot_first = folded, False
    high = data.translate(None, _ASCII_BYTES)
    if folds.present.search(high) is None:
        return data.translate(None, _DROP)
    if missed_at < 0:
        text = data.decode("utf-8", errors="ignore")
        if hot is not None:
            folded = _fold_hot(hot, text)
            if isinstance(folded, bytes):
                _hot_first = True
                return folded
            missed_at = folded
    points = _present(folds, high)
    _learn(folds, high, text, max(missed_at, 0))
    if points is None:
        return _reference_folds(data, text)
    encoder = _encoder(folds, points)
    encoded, _ = codecs.charmap_encode(text, "ignore", encoder.encoding_map)
    return encoder.finish(encoded)
