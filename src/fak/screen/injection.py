"""Structural injection scoring: text that addresses the model rather than its reader (tier T1).

One RE2 pass (Latin-1 mode, linear) finds cues, each in a family: chat-template role markers
(ChatML, ``[INST]``/``<<SYS>>``, ``Human:``/``Assistant:``, ``SYSTEM:`` lines), overrides of
earlier instructions, an addressee that is the assistant / AI / agent / model, announced new
instructions, requests for secrecy from the user, fake tool-call syntax, ``<INFORMATION>``-style
envelopes, hidden carriers (HTML comments, zero-size or transparent CSS, alt text, markdown
comments), exfiltrating actions, and markdown images whose URL carries data. The same families
are spelled in fr, de, es, pt, it, zh, ja, ko and ru, and most of them in tr, ar, fa, hi, uk,
vi, id, pl, nl, th, sw, cs, ro, el, he and bn (Latin-script ones as their ASCII skeleton). A
window of text scores the largest weight of each family present, summed; one word never reaches
the threshold alone, and a cue quoted in text that discusses injection (papers, docs, fixtures)
counts for less. Pure; spans, no bytes.
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import re2

from fak.screen.cues import CUES, Cue
from fak.screen.rx import Find, matcher
from fak.screen.tokens import BIG_DFA, Naming, compile_latin1

__all__ = [
    "DEFAULT_THRESHOLD",
    "INJECTION_FIND",
    "INJECTION_PREFILTER",
    "Cue",
    "CueFilter",
    "CueHit",
    "InjectionHit",
    "find_cues",
    "make_cue",
    "score_cues",
    "score_injection",
]

DEFAULT_THRESHOLD = 1.0
"""A window scoring at least this much is an injection (the manifest may set it per source)."""

WINDOW = 700
"""Cues count together when they fall within this many bytes of one another."""


@dataclass(frozen=True, slots=True)
class InjectionHit:
    """A window that scored over the threshold: its score, the cue families, the byte span."""

    score: float
    cues: tuple[str, ...]
    start: int
    end: int


INJECTION_PREFILTER: bytes = b"|".join(b"(" + src + b")" for _, _, src in CUES)
"""RE2 source (Latin-1): matches wherever an injection cue occurs."""

_FAMILY = tuple(family for family, _, _ in CUES)
_WEIGHT = tuple(weight for _, weight, _ in CUES)
_QUOTES = b"'\"`\xe2\x80\x9c\xe2\x80\x98"  # ' " ` and the first bytes of curly quotes
_QUOTED = 0.35  # a quoted cue counts this fraction of its weight

_SCAN: re2._Regexp | None = None
_WHICH: re2._Regexp | None = None
_FIND_ONLY = b"|".join(b"(?:" + src + b")" for _, _, src in CUES)
INJECTION_FIND: bytes = _FIND_ONLY
"""``INJECTION_PREFILTER`` without groups (a find-only scan)."""


def _compile(pattern: bytes) -> re2._Regexp:
    return compile_latin1(pattern, BIG_DFA)


def _scanner() -> re2._Regexp:
    """Finds cues (no capture groups: the Python wrapper's per-match cost stays small)."""
    global _SCAN
    if _SCAN is None:
        _SCAN = _compile(_FIND_ONLY)
    return _SCAN


@functools.cache
def _cue_at() -> Find:
    """The span of the cue starting exactly at a position (``_scanner``, anchored)."""
    return matcher(_scanner())


def _which() -> re2._Regexp:
    """Names the alternative of a cue already found (one group per alternative)."""
    global _WHICH
    if _WHICH is None:
        _WHICH = _compile(INJECTION_PREFILTER)
    return _WHICH


_NAMING: Naming | None = None


def _naming() -> Naming:
    global _NAMING
    if _NAMING is None:
        _NAMING = Naming.of(src for _, _, src in CUES)
    return _NAMING


def _alternative(text: bytes, start: int) -> int:
    """The cue alternative that ``INJECTION_PREFILTER`` matches at ``start`` (a cue is there)."""
    if (first := _naming().first_at(text, start)) is not None:
        return first
    named = _which().match(text, start)  # a Set that ran out of memory reports nothing
    index: int | None = None if named is None else named.lastindex
    assert index is not None, "a cue starts here"
    return index - 1


def _quoted(text: bytes, start: int, end: int) -> bool:
    """A cue written inside quotes: mentioned, not said. The quotes touch it (a closing quote
    may follow one punctuation byte)."""
    if start == 0 or text[start - 1] not in _OPEN_QUOTES:
        return False
    after = text[end : end + 2]
    return bool(after) and (
        after[0] in _CLOSE_QUOTES
        or (after[0] in b".,!?;:" and after[-1:] != b"" and after[-1] in _CLOSE_QUOTES)
    )


_OPEN_QUOTES = frozenset(b"'\"`\x9c\x98")  # ' " ` and the last bytes of U+201C / U+2018
_CLOSE_QUOTES = frozenset(b"'\"`\xe2")  # the lead byte of U+201D / U+2019


@dataclass(slots=True)
class CueHit:
    family: Cue
    weight: float
    start: int
    end: int


_DENSE = 64
"""A cue within this many bytes of the last kept cue of its alternative adds nothing: dropped."""


def _cues(text: bytes) -> Iterator[CueHit]:
    """The cues of ``text`` in order, lazily (a first hit stops the scan)."""
    last: dict[bytes, int] = {}
    for match in _scanner().finditer(text):
        start, end = match.start(), match.end()
        key = text[start:end]
        if start - last.get(key, -_DENSE) < _DENSE:
            continue  # the same cue again within a few bytes adds nothing
        last[key] = start
        yield make_cue(text, _alternative(text, start), start, end)


class CueFilter:
    """Turns cue matches found elsewhere (e.g. by a combined scan) into cues, as ``_cues`` does:
    names each one's family and drops a repeat of the same cue within ``_DENSE`` bytes."""

    __slots__ = ("_last",)

    def __init__(self) -> None:
        self._last: dict[bytes, int] = {}

    def at(self, text: bytes, start: int) -> CueHit | None:
        found = _cue_at()(text, start)  # where the cue ends, without naming it yet
        if found is None:
            return None
        end = found[1]
        key = text[start:end]
        if start - self._last.get(key, -_DENSE) < _DENSE:
            return None
        self._last[key] = start
        return make_cue(text, _alternative(text, start), start, end)


def make_cue(text: bytes, alternative: int, start: int, end: int) -> CueHit:
    """The cue for a match of ``INJECTION_PREFILTER``'s alternative number ``alternative``."""
    family, weight = _FAMILY[alternative], _WEIGHT[alternative]
    if weight > 0 and _quoted(text, start, end):
        weight *= _QUOTED
    return CueHit(family, weight, start, end)


class _Window:
    """The cues within ``WINDOW`` bytes: per family, a count per distinct weight (few of each)."""

    __slots__ = ("counts",)

    def __init__(self) -> None:
        self.counts: dict[Cue, dict[float, int]] = {}

    def add(self, cue: CueHit, step: int) -> None:
        weights = self.counts.setdefault(cue.family, {})
        weights[cue.weight] = weights.get(cue.weight, 0) + step
        if not weights[cue.weight]:
            del weights[cue.weight]
            if not weights:
                del self.counts[cue.family]

    def score(self) -> float:
        counts = self.counts
        score = sum(min(w) if f == Cue.META else max(w) for f, w in counts.items())
        if Cue.HIDDEN in counts and not self.families():  # a hidden carrier matters when it
            score -= max(counts[Cue.HIDDEN])  # carries a cue
        return score

    def families(self) -> tuple[str, ...]:
        """The families that carry the score (not hidden carriers, not discussion markers)."""
        quiet = (Cue.HIDDEN, Cue.META, Cue.CANDIDATE)
        return tuple(sorted(str(f) for f in self.counts if f not in quiet))


def find_cues(text: bytes) -> list[CueHit]:
    """Every cue of ``text`` in order (a repeat of one cue within a few bytes counted once)."""
    return list(_cues(text))


def score_injection(
    text: bytes, threshold: float = DEFAULT_THRESHOLD, *, first: bool = False
) -> list[InjectionHit]:
    """Windows of ``text`` whose cue score reaches ``threshold``, as byte spans.

    A window holds the cues within ``WINDOW`` bytes of one another; it slides over the cues
    (two pointers), so the work is linear in their number. Overlapping hits merge into one.
    """
    return score_cues(_cues(text), threshold, first=first)


def score_cues(
    cues: Iterable[CueHit], threshold: float = DEFAULT_THRESHOLD, *, first: bool = False
) -> list[InjectionHit]:
    """``score_injection`` over cues already found (in order), e.g. by a combined scan."""
    hits: list[InjectionHit] = []
    window = _Window()
    held: deque[CueHit] = deque()
    for cue in cues:
        window.add(cue, 1)
        held.append(cue)
        while cue.start - held[0].start > WINDOW:
            window.add(held.popleft(), -1)
        score = window.score()
        if score < threshold:
            continue
        families = window.families()
        start, end = held[0].start, cue.end
        if hits and start <= hits[-1].end:
            last = hits[-1]
            merged = tuple(sorted(set(last.cues) | set(families)))
            hits[-1] = InjectionHit(max(last.score, round(score, 3)), merged, last.start, end)
        else:
            hits.append(InjectionHit(round(score, 3), families, start, end))
        if first:
            break
    return hits
