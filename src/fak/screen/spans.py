"""Offending spans of a result and the cut that removes them (tier T1).

``offending_spans`` lists every credential and every injection window the raw-byte detectors find,
as byte spans of the original text, each widened to the line that carries it (or, for a long
line, to the sentence or markup around it) and never splitting a UTF-8 sequence; overlapping
spans merge. Pollution has no span: it returns ``None`` (hold the whole result). ``cut`` puts a
stub in place of each span. Pure; the kernel decides whether a cut result may enter context (it
re-screens the cut bytes with the whole chain).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fak.abi import Reason
from fak.screen.injection import score_injection
from fak.screen.pollution import find_repeats
from fak.screen.secrets import find_secrets
from fak.screen.sources import DEFAULT_SETTINGS, SourceSettings

__all__ = ["MAX_WIDEN", "Span", "cut", "offending_spans", "widen"]

MAX_WIDEN = 1024
"""A span grows to its line's ends when they lie within this many bytes; else to a sentence or
markup boundary within ``MAX_WIDEN // 2`` bytes; else it stays as found."""

_SENTENCE_END = b'.!?\n<>"'


@dataclass(frozen=True, slots=True)
class Span:
    """[start, end) of the original bytes to hold out, and why."""

    start: int
    end: int
    reason: Reason


def _utf8_start(data: bytes, at: int) -> int:
    while 0 < at < len(data) and 0x80 <= data[at] <= 0xBF:
        at -= 1
    return at


def _utf8_end(data: bytes, at: int) -> int:
    while 0 < at < len(data) and 0x80 <= data[at] <= 0xBF:
        at += 1
    return at


def widen(data: bytes, start: int, end: int) -> tuple[int, int]:
    """The span grown to its carrying line (or sentence), on UTF-8 boundaries."""
    line_start = data.rfind(b"\n", max(0, start - MAX_WIDEN), start) + 1
    if line_start == 0 and start > MAX_WIDEN:
        line_start = -1
    nl = data.find(b"\n", end, end + MAX_WIDEN)
    line_end = nl if nl >= 0 else (len(data) if len(data) - end <= MAX_WIDEN else -1)
    if line_start < 0:
        window = data[max(0, start - MAX_WIDEN // 2) : start]
        cut_at = max(window.rfind(bytes([c])) for c in _SENTENCE_END)
        line_start = start - len(window) + cut_at + 1 if cut_at >= 0 else start
    if line_end < 0:
        window = data[end : end + MAX_WIDEN // 2]
        found = [i for i in (window.find(bytes([c])) for c in _SENTENCE_END) if i >= 0]
        line_end = end + min(found) + 1 if found else end
    return _utf8_start(data, line_start), _utf8_end(data, line_end)


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
        hits = score_injection(data, use.injection_threshold)
        found += [Span(h.start, h.end, Reason.TRUST_VIOLATION) for h in hits]
    if not found:
        return None
    widened = sorted(
        (Span(*widen(data, s.start, s.end), s.reason) for s in found),
        key=lambda s: (s.start, s.end),
    )
    merged: list[Span] = []
    for span in widened:
        if merged and span.start <= merged[-1].end:
            last = merged[-1]
            reason = last.reason if last.reason == Reason.SECRET_EXFIL else span.reason
            merged[-1] = Span(last.start, max(last.end, span.end), reason)
        else:
            merged.append(span)
    return merged


def cut(data: bytes, spans: list[Span], stub: Callable[[int, Span], bytes]) -> bytes:
    """``data`` with span number ``i`` (from 1) replaced by ``stub(i, span)``."""
    out: list[bytes] = []
    at = 0
    for index, span in enumerate(spans, start=1):
        out.append(data[at : span.start])
        out.append(stub(index, span))
        at = span.end
    out.append(data[at:])
    return b"".join(out)
