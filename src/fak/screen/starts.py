"""One find-only RE2 pass shared by several scans of the same view (tier T1).

The de-obfuscating screen scans a view for credential and cue starts (the first-match screen's
pattern) and then for gapped markers and tokens (its own). ``SharedStarts`` runs one pattern that
is the union of those parts, keeps its match starts, and hands each part a ``search`` that walks
them: a part's next match at or after ``pos`` is its anchored match at the first union start
there where it matches — the match its own search returns, since both pick, at the leftmost
start, the alternative RE2 prefers. Searches answer spans (``fak.screen.rx``). When union
starts come densely (each costs a Python-level anchored match per part), collection stops and
each part searches on its own past the last start kept, so hostile views cost no more than
separate scans. Pure; no logging.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import re2

from fak.screen.rx import Find, matcher, searcher

__all__ = ["SharedStarts", "Tail"]

_DENSE_AFTER = 16
_DENSE_SPACING = 512
"""After 16 union starts, closer than 512 bytes apart on average, each part scans on its own: an
anchored match per foreign start then costs more than the part's own pass over the bytes."""


@dataclass(frozen=True, slots=True)
class Tail:
    """``view[begin:]`` equals ``other``'s view from ``begin + shift`` on (``other`` passes
    over it with the same union). An anchored RE2 match looks back one byte at most (``\\b``),
    so past ``begin`` the two views have the same union starts, shifted: no second pass there."""

    other: SharedStarts
    begin: int
    shift: int


class SharedStarts:
    """Every match start of ``union`` in ``view`` (found on demand, kept); searches for its parts.

    ``union`` must match, anchored at a position, wherever one of the parts does (an alternation
    of the parts' patterns). Each part's ``search`` must be called with non-decreasing ``pos``.
    """

    __slots__ = ("_found", "_next", "_search", "_tail", "_view", "complete")

    def __init__(self, union: re2._Regexp, view: bytes, tail: Tail | None = None) -> None:
        self._search = searcher(union)
        self._view = view
        self._found: list[int] = []
        self._next = 0  # where the union search resumes
        self.complete = False  # every union start is in _found, or collection stopped (dense)
        self._tail = tail  # the starts past ``tail.begin`` are another view's, shifted

    def _more(self) -> bool:
        """Find the next union start; False when there is none or collection stopped."""
        if self.complete:
            return False
        found = self._found
        if len(found) >= _DENSE_AFTER and len(found) * _DENSE_SPACING > self._next:
            self.complete = True  # dense: parts search on their own from self._next on
            return False
        tail = self._tail
        if tail is not None and self._next > tail.begin:
            at = tail.other.start_from(self._next + tail.shift)
            if at is not None and at >= 0:
                found.append(at - tail.shift)
                self._next = at - tail.shift + 1
                return True
            if at is None:  # the other view has no start left: neither has this one
                self._next = len(self._view) + 1
                self.complete = True
                return False
            self._tail = None  # the other view stopped collecting (dense): search this one
        span = self._search(self._view, self._next)
        if span is None:
            self._next = len(self._view) + 1
            self.complete = True
            return False
        found.append(span[0])
        self._next = span[0] + 1
        return True

    def start_from(self, pos: int) -> int | None:
        """The first union start at or after ``pos`` (collected on demand); None if there is
        none; -1 if collection stopped (dense) before one was found."""
        found = self._found
        while (at := bisect.bisect_left(found, pos)) == len(found):
            if not self._more():
                return None if self._next > len(self._view) else -1
        return found[at]

    def search(self, part: re2._Regexp) -> Find:
        """``part.search``'s spans for ``view`` (``rx.searcher``), answered from the union's
        starts while they are kept. ``part`` has no capture groups."""
        anchored, own = matcher(part), searcher(part)
        found = self._found
        index = 0

        def search(view: bytes, pos: int) -> tuple[int, int] | None:
            nonlocal index
            while True:
                while index < len(found) and found[index] < pos:
                    index += 1
                if index == len(found):
                    if self._more():
                        continue
                    # every union start before self._next is in found and none of them is left
                    resume = self._next
                    return None if resume > len(view) else own(view, max(pos, resume))
                at = found[index]
                index += 1
                if (span := anchored(view, at)) is not None:
                    return span

        return search
