"""Match spans straight from RE2's compiled program, for the screen's hot loops (tier T1).

google-re2's ``search`` and ``match`` build a generator and a match object on every call: about
1-2 us, more than the engine spends on the short stretch a screen asks about, and a cue-dense
body asks hundreds of times. ``searcher`` and ``matcher`` call the compiled program and answer
the whole match's span ``(start, end)``, or None: the span the wrapper's ``search(text, pos)``
and ``match(text, pos)`` report for the same bytes (``tests/screen/test_rx.py``). They take
group-free patterns only: RE2 runs its submatch engine for every group a call asks for, and a
span is all a caller gets. The compiled program is the binding's private part: where it is
missing, fails, or answers a probe otherwise than the wrapper, they fall back to the wrapper's
own calls. Pure; no logging.
"""

from __future__ import annotations

from collections.abc import Callable

import re2

__all__ = ["Find", "Span", "matcher", "searcher"]

Span = tuple[int, int]
Find = Callable[[bytes, int], "Span | None"]
"""(text, pos) -> the span of the first match at or after ``pos`` (``searcher``) or exactly at
``pos`` (``matcher``), or None."""

_NO_MATCH = (-1, -1)
# a new finder is trusted only when it answers this as the wrapper does
_PROBE = b"x = {'api_key': 'ab12'} # ignore the above\n"
_searchers: dict[object, Find] = {}
_matchers: dict[object, Find] = {}
_MAX_MADE = 256
"""Finders are made once per pattern object (the screen's are module-level singletons): a scan
asks for them on every body, and making one costs more than a short body's calls save. A
pattern is a key by identity and stays alive while it is one."""


def searcher(regexp: re2._Regexp) -> Find:
    """``regexp.search(text, pos)``'s span, for a pattern without capture groups."""
    find = _searchers.get(regexp)
    return find if find is not None else _made(_searchers, regexp, anchored=False)


def matcher(regexp: re2._Regexp) -> Find:
    """``regexp.match(text, pos)``'s span, for a pattern without capture groups."""
    find = _matchers.get(regexp)
    return find if find is not None else _made(_matchers, regexp, anchored=True)


def _made(made: dict[object, Find], regexp: re2._Regexp, *, anchored: bool) -> Find:
    find = _finder(regexp, anchored=anchored)
    if len(made) >= _MAX_MADE:
        made.clear()
    made[regexp] = find
    return find


def _finder(regexp: re2._Regexp, *, anchored: bool) -> Find:
    if groups := getattr(regexp, "groups", 0):
        raise ValueError(f"{groups} capture group(s): a span would drop them")
    wrapped = _wrapped(regexp.match if anchored else regexp.search)
    call = getattr(getattr(regexp, "_regexp", None), "Match", None)
    anchors = getattr(re2, "_Anchor", None)
    anchor = getattr(anchors, "ANCHOR_START" if anchored else "UNANCHORED", None)
    if call is None or anchor is None:
        return wrapped

    def find(text: bytes, pos: int) -> Span | None:
        size = len(text)
        span: Span = call(anchor, text, min(max(pos, 0), size), size)[0]
        return None if span == _NO_MATCH else span

    # the compiled program is the binding's private part: if it answers otherwise than the
    # wrapper on a probe, or fails in any way, the wrapper answers
    try:
        agrees = all(find(_PROBE, at) == wrapped(_PROBE, at) for at in (0, 3, len(_PROBE)))
    except Exception:
        agrees = False
    return find if agrees else wrapped


def _wrapped(method: Callable[[bytes, int], re2._Match | None]) -> Find:
    def find(text: bytes, pos: int) -> Span | None:
        found = method(text, pos)
        return None if found is None else found.span()

    return find
