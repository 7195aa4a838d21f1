"""Offending spans of a result and the cut that removes them (tier T1).

``offending_spans`` lists every credential and every injection window the raw-byte detectors
find, as byte spans of the original text, each widened to the line that carries it (a line of
more than ``LONG_LINE`` bytes, to the finding's sentence and at least ``FOLLOW`` bytes of what
follows, up to a sentence end; a line past ``MAX_WIDEN``, to the sentence or markup around it),
never splitting a UTF-8 sequence; overlapping spans merge. In a JSON document (it opens with
``{`` or ``[``) a finding inside a string value is widened only within that string, to its
escaped lines (``\n``), and its stub is written JSON-escaped, so the document stays valid JSON
and its other fields stay readable. Pollution has no span: it returns ``None`` (hold the whole
result). ``cut`` puts a stub in place of each span. Pure; the kernel decides whether a cut
result may enter context (it re-screens the cut bytes with the whole chain).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fak.abi import Reason
from fak.screen.deobfuscate import screen_deobfuscated
from fak.screen.injection import find_cues, score_cues
from fak.screen.intent import read_windows
from fak.screen.pollution import find_repeats
from fak.screen.secrets import find_secrets
from fak.screen.sources import DEFAULT_SETTINGS, SourceSettings
from fak.screen.tokens import MIN_TOKEN, decode_token, token_mask

__all__ = ["FOLLOW", "LONG_LINE", "MAX_WIDEN", "Span", "cut", "offending_spans", "widen"]

MAX_WIDEN = 1024
"""A span grows to its line's ends when they lie within this many bytes; else to a sentence or
markup boundary within ``MAX_WIDEN // 2`` bytes; else it stays as found."""

_SENTENCE_END = b'.!?\n<>"'
LONG_LINE = 120
"""A line longer than this is cut by sentences: the finding's own and what follows it."""
FOLLOW = 160
"""How far past a finding in a long line the cut reaches at least (to the next sentence end)."""


@dataclass(frozen=True, slots=True)
class Span:
    """[start, end) of the original bytes to hold out, and why."""

    start: int
    end: int
    reason: Reason
    in_json_string: bool = False  # the stub goes inside a JSON string literal: escape it


def _utf8_start(data: bytes, at: int) -> int:
    while 0 < at < len(data) and 0x80 <= data[at] <= 0xBF:
        at -= 1
    return at


def _utf8_end(data: bytes, at: int) -> int:
    while 0 < at < len(data) and 0x80 <= data[at] <= 0xBF:
        at += 1
    return at


def _string_literal(data: bytes, start: int, end: int) -> tuple[int, int] | None:
    """The content bounds of the JSON string literal holding ``[start, end)`` on its line, or
    None when the span is not wholly inside one."""
    at = data.rfind(b"\n", 0, start) + 1
    opened = -1
    while at < start:
        byte = data[at]
        if opened >= 0 and byte == 0x5C:  # an escape inside a string: skip the escaped byte
            at += 2
            continue
        if byte == 0x22:
            opened = at if opened < 0 else -1
        at += 1
    if opened < 0 or at > start:  # not inside, or the span starts inside an escape
        return None
    at = start
    while at < len(data):
        byte = data[at]
        if byte == 0x5C:
            at += 2
            continue
        if byte == 0x22 or byte == 0x0A:
            break
        at += 1
    if at >= len(data) or data[at] != 0x22 or at < end:
        return None
    return opened + 1, at


def _widen_in_string(data: bytes, lo: int, hi: int, start: int, end: int) -> tuple[int, int]:
    """Grow ``[start, end)`` to the escaped lines (``\\n``) of the literal ``[lo, hi)``."""
    left = data.rfind(b"\\n", lo, start)
    right = data.find(b"\\n", end, hi)
    return (left + 2 if left >= 0 else lo), (right if right >= 0 else hi)


def _json_spans(data: bytes, spans: list[Span]) -> list[Span]:
    out: list[Span] = []
    for span in spans:
        literal = _string_literal(data, span.start, span.end)
        if literal is None:
            out.append(Span(*widen(data, span.start, span.end), span.reason))
            continue
        start, end = _widen_in_string(data, *literal, span.start, span.end)
        out.append(Span(start, end, span.reason, in_json_string=True))
    return out


def _sentences(data: bytes, lo: int, hi: int, start: int, end: int) -> tuple[int, int]:
    """Within the line ``[lo, hi)``: back to the start of the finding's sentence, forward past
    at least ``FOLLOW`` more bytes to a sentence end (what an instruction says next is cut with
    it), never past the line."""
    back = max(data.rfind(bytes([c]), lo, start) for c in b".!?")
    first = back + 1 if back >= 0 else lo
    reach = min(hi, end + FOLLOW)
    ends = [i for i in (data.find(bytes([c]), reach, hi) for c in b".!?") if i >= 0]
    last = min(ends) + 1 if ends else hi
    return first, last


def widen(data: bytes, start: int, end: int) -> tuple[int, int]:
    """The span grown to its carrying line (or sentence), on UTF-8 boundaries."""
    line_start = data.rfind(b"\n", max(0, start - MAX_WIDEN), start) + 1
    if line_start == 0 and start > MAX_WIDEN:
        line_start = -1
    nl = data.find(b"\n", end, end + MAX_WIDEN)
    line_end = nl if nl >= 0 else (len(data) if len(data) - end <= MAX_WIDEN else -1)
    if line_start >= 0 and line_end >= 0 and line_end - line_start > LONG_LINE:
        # a paragraph on one line (a web page's text): its sentences, not all of it
        first, last = _sentences(data, line_start, line_end, start, end)
        return _utf8_start(data, first), _utf8_end(data, last)
    if line_start < 0:
        window = data[max(0, start - MAX_WIDEN // 2) : start]
        cut_at = max(window.rfind(bytes([c])) for c in _SENTENCE_END)
        line_start = start - len(window) + cut_at + 1 if cut_at >= 0 else start
    if line_end < 0:
        window = data[end : end + MAX_WIDEN // 2]
        found = [i for i in (window.find(bytes([c])) for c in _SENTENCE_END) if i >= 0]
        line_end = end + min(found) + 1 if found else end
    return _utf8_start(data, line_start), _utf8_end(data, line_end)


_TOKEN_RUN = b"\x01" * MIN_TOKEN


def _is_json_document(data: bytes) -> bool:
    """It opens with ``{`` or ``[`` after white space (no copy of the data)."""
    for byte in data[:64]:
        if byte not in b" \t\r\n":
            return byte in b"{["
    return False


def _decoded_spans(data: bytes, settings: SourceSettings) -> list[Span]:
    """Each long base64 / hex token of the raw bytes whose decoding the de-obfuscating screen
    holds: the whole token, as written (a finding inside an encoded layer maps back to the
    token that carries it)."""
    mask = token_mask(data)
    out: list[Span] = []
    start = 0
    while (begin := mask.find(_TOKEN_RUN, start)) >= 0:
        end = mask.find(b"\x00", begin + MIN_TOKEN)
        end = len(mask) if end < 0 else end
        for layer in decode_token(data[begin:end]):
            hit = screen_deobfuscated(layer, settings=settings)
            if hit is not None:
                padded = end
                while padded < len(data) and padded - end < 2 and data[padded] == 0x3D:
                    padded += 1  # base64 padding goes with its token
                out.append(Span(begin, padded, hit.reason))
                break
        start = end
    return out


def _line_spans(data: bytes, settings: SourceSettings) -> list[Span]:
    """Each line the de-obfuscating screen holds on its own (a finding in the normalized view —
    zero-width, homoglyph or spaced-out text — maps back to the line that carries it). A result
    of one line yields nothing: the whole result is its line."""
    if data.count(b"\n") == 0:
        return []
    out: list[Span] = []
    start = 0
    for line in data.split(b"\n"):
        end = start + len(line)
        if line.strip():
            hit = screen_deobfuscated(line, settings=settings)
            if hit is not None:
                out.append(Span(start, end, hit.reason))
        start = end + 1
    return out


def offending_spans(data: bytes, settings: SourceSettings | None = None) -> list[Span] | None:
    """Every credential and injection window, widened and merged; ``None`` when the result must
    be held whole (pollution, or nothing the raw-byte detectors can place)."""
    use = settings or DEFAULT_SETTINGS
    if use.pollution and find_repeats(data) is not None:
        return None
    found: list[Span] = []
    if use.secrets:
        found += [Span(h.start, h.end, Reason.SECRET_EXFIL) for h in find_secrets(data)]
    if use.injection:
        cues = find_cues(data)
        hits = score_cues(cues, use.injection_threshold)
        found += [Span(h.start, h.end, Reason.TRUST_VIOLATION) for h in hits]
        spots = [(c.start, c.end, c.weight) for c in cues]
        read = read_windows(data, spots, use.injection_threshold)
        found += [Span(h.start, h.end, Reason.TRUST_VIOLATION) for h in read]
    if not found:
        # nothing on the raw bytes: an encoded token may carry it (cut as the token it is)
        decoded = _decoded_spans(data, use) or _line_spans(data, use)
        if not decoded:
            return None
        if _is_json_document(data):
            decoded = [
                Span(d.start, d.end, d.reason, _string_literal(data, d.start, d.end) is not None)
                for d in decoded
            ]
        return sorted(decoded, key=lambda s: (s.start, s.end))
    if _is_json_document(data):
        grown = _json_spans(data, found)
    else:
        grown = [Span(*widen(data, s.start, s.end), s.reason) for s in found]
    widened = sorted(grown, key=lambda s: (s.start, s.end))
    merged: list[Span] = []
    for span in widened:
        if merged and span.start <= merged[-1].end:
            last = merged[-1]
            reason = last.reason if last.reason == Reason.SECRET_EXFIL else span.reason
            inside = last.in_json_string and span.in_json_string
            if inside and _string_literal(data, last.start, max(last.end, span.end)) is None:
                inside = False  # merged across literals: no longer inside one string
            merged[-1] = Span(last.start, max(last.end, span.end), reason, inside)
        else:
            merged.append(span)
    return merged


def cut(data: bytes, spans: list[Span], stub: Callable[[int, Span], bytes]) -> bytes:
    """``data`` with span number ``i`` (from 1) replaced by ``stub(i, span)``."""
    out: list[bytes] = []
    at = 0
    for index, span in enumerate(spans, start=1):
        out.append(data[at : span.start])
        piece = stub(index, span)
        if span.in_json_string:
            piece = piece.replace(b"\\", b"\\\\").replace(b'"', b'\\"')
        out.append(piece)
        at = span.end
    out.append(data[at:])
    return b"".join(out)
