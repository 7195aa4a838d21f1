"""Repetition pollution: exact and near repeats of a short period, and long one-byte runs (tier T1).

A result is polluted when a stretch of at least ``MIN_RUN`` bytes (or ``DOMINANT_RUN`` bytes
making up half the body) repeats one unit of up to ``MAX_PERIOD`` bytes back to back at least
``MIN_REPEATS`` times: the same sentence, token or markup over and over. The main view lower-cases
letters and makes every other ASCII byte one separator (same length, so spans are exact); when
anchors hint at a unit repeated with small changes, the folded view (separators dropped) judges
near repeats that differ in spacing or punctuation. Lines that differ in a number, a name or a
date (a CSV, ``ping``, ``ls -l``, a progress log) never repeat exactly. A unit of separators
only counts when the raw bytes repeat too (a run of ``=``, not indentation and brackets). A
stretch that is a list of values — numbers, short quoted constants or source-map segments,
between commas or semicolons (or numbers between spaces) — is data, not a loop: minified code's
tables and ``mappings`` strings pass, a word or phrase looping does not. Nor is a stretch whose
every copy opens more brackets than it closes, down to ``MAX_NESTING`` levels (a comment tree's
reply chain). Linear: one anchor every ``ANCHOR_STRIDE`` bytes, each checked against the
candidate periods within ``MAX_PERIOD`` bytes with C-level slice compares. Pure; spans, never
bytes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

__all__ = [
    "ANCHOR_STRIDE",
    "DOMINANT_RUN",
    "EDITED_COPIES",
    "EDITED_EQUAL",
    "EDITED_PERIOD",
    "MAX_PERIOD",
    "MIN_PERIOD",
    "MIN_REPEATS",
    "MIN_RUN",
    "RepeatHit",
    "find_repeats",
    "fold",
]

MIN_RUN = 816
"""Bytes a repeated stretch must cover (the spec's seal: more than 50 chunks of 16 bytes)."""
DOMINANT_RUN = 384
"""A shorter stretch, of at least this many bytes, counts when it is half the body or more."""
MIN_REPEATS = 4
"""Back-to-back copies of the unit the stretch must hold."""
MIN_PERIOD = 8
MAX_PERIOD = 256
ANCHOR_STRIDE = 512
"""A stretch of MIN_RUN bytes always holds an anchor with a whole period plus a probe after it."""
_SMALL_STRIDE = 64  # bodies where a dominant (shorter) stretch may count
_PROBE = 16
_CHECK = 32


@dataclass(frozen=True, slots=True)
class RepeatHit:
    """A repeated stretch: [start, end) in the scanned view, the unit's period, which view."""

    start: int
    end: int
    period: int
    view: str


_UPPER = bytes(range(65, 91))
_DROP = bytes(b for b in range(128) if not (48 <= b <= 57 or 65 <= b <= 90 or 97 <= b <= 122))
_FOLD = bytes.maketrans(_UPPER, _UPPER.lower())
_DROP_MASK = bytes(1 if b in _DROP else 0 for b in range(256))


def fold(data: bytes) -> bytes:
    """Lower-case ASCII letters, drop ASCII whitespace, punctuation and controls."""
    return data.translate(_FOLD, _DROP)


def _forward(view: bytes, at: int, period: int) -> int:
    """The first k >= at with view[k] != view[k + period] (or len - period).

    Windows grow while they compare equal; in the first unequal one, the first differing byte is
    the most significant byte of the two windows' XOR read as big-endian integers (C-level)."""
    limit = len(view) - period
    step = 128
    while at < limit:
        size = min(step, limit - at)
        here, there = view[at : at + size], view[at + period : at + period + size]
        if here != there:
            diff = int.from_bytes(here, "big") ^ int.from_bytes(there, "big")
            return at + size - 1 - (diff.bit_length() - 1) // 8
        at += size
        step *= 4
    return limit


def _backward(view: bytes, at: int, period: int) -> int:
    """The smallest s <= at with view[k] == view[k + period] for every k in [s, at).

    As ``_forward``, backwards: the last differing byte of a window is the most significant
    byte of the XOR read as little-endian integers."""
    step = 128
    while at > 0:
        size = min(step, at)
        here, there = view[at - size : at], view[at - size + period : at + period]
        if here != there:
            diff = int.from_bytes(here, "little") ^ int.from_bytes(there, "little")
            return at - size + (diff.bit_length() - 1) // 8 + 1
        at -= size
        step *= 4
    return 0


@dataclass(slots=True)
class _Scan:
    hit: RepeatHit | None = None
    anchors: int = 0
    distances: list[int] = field(default_factory=list)  # first recurrence of each anchor's probe


Judge = Callable[[int, int, int], bool]
"""(start, end, period) of a stretch in the scanned view -> the stretch is a list of values."""


def _scan(view: bytes, label: str, raw: bytes | None = None, data: Judge | None = None) -> _Scan:
    """Anchor scan of one view. ``raw`` (same length as ``view``) confirms separator-only units;
    a stretch ``data`` calls a list of values is passed over and the scan goes on after it."""
    out = _Scan()
    size = len(view)
    if size < DOMINANT_RUN:
        return out
    need = min(MIN_RUN, max(DOMINANT_RUN, (size + 1) // 2))
    stride = ANCHOR_STRIDE if need >= MIN_RUN else _SMALL_STRIDE
    # A reportable stretch (``need`` bytes or more) holds an anchor less than ``stride`` bytes
    # after its start, and from that anchor on it repeats for at least ``need - period - stride``
    # more bytes: one C-level compare of that many bytes (at least _CHECK) rules out almost every
    # candidate period before any Python-level walk. Every candidate period repeats at least
    # ``span`` bytes from the anchor on, so the search for candidates uses a probe that long.
    span = max(_PROBE, need - MAX_PERIOD - stride)
    find, distances = view.find, out.distances
    anchor = anchors = 0
    last = size - _PROBE  # anchors stop before it
    while anchor < last:
        anchors += 1
        next_anchor = anchor + stride
        short = find(view[anchor : anchor + _PROBE], anchor + 1, anchor + MAX_PERIOD + _PROBE)
        if short < 0:
            anchor = next_anchor
            continue
        distances.append(short - anchor)
        probe = view[anchor : anchor + span]
        stop = anchor + MAX_PERIOD + span
        # the probe starts with the short one, so it recurs nowhere before ``short``
        found = find(probe, short, stop)
        if found < 0:
            anchor = next_anchor
            continue
        # a probe of separators only: the raw bytes judge each period apart
        places = _candidates(
            view, anchor, probe, found, need, stride, None if probe.strip(b" ") else raw
        )
        for found in places:
            period = found - anchor
            # that compare (the probe's own bytes already match)
            reach = max(_CHECK, need - period - stride)
            if reach > span and not view.startswith(view[anchor : anchor + reach], found):
                continue
            end = _forward(view, anchor, period)
            begin = _backward(view, anchor, period)
            covered = end + period - begin
            if covered >= max(need, MIN_REPEATS * period) and _confirmed(
                view, raw, anchor, period, need
            ):
                if data is not None and data(begin, end + period, period):
                    # data, not a loop: no hint of near repeats either
                    anchors -= 1
                    distances.pop()
                    next_anchor = max(next_anchor, end + period)
                    break
                out.anchors = anchors
                out.hit = RepeatHit(begin, end + period, period, label)
                return out
            if end - anchor > stride:
                next_anchor = max(next_anchor, end)
        anchor = next_anchor
    out.anchors = anchors
    return out


def _candidates(
    view: bytes,
    anchor: int,
    probe: bytes,
    found: int,
    need: int,
    stride: int,
    raw: bytes | None,
) -> Iterator[int]:
    """The places within ``MAX_PERIOD`` (from ``found``, the first) where the anchor's probe
    recurs and whose walk can change the scan: the same verdict, anchors and hints as walking
    each.

    Two places (the anchor is one) at most half the probe's length apart make that distance the
    probe's smallest period q (a one-byte run, ``abab…``; a shorter one would put a place
    between them); with no such period, places lie further apart: a handful, each walked.
    A probe of period q recurs at every q-th place of each stretch of period q in reach, up to
    ``MAX_PERIOD / q`` times. Let [b, e) be the anchor's own stretch of period q:

    * a place in [b, e) is a period whose walk covers exactly [b, e): only the first can
      hold it, and it moves the next anchor furthest. Only it is walked, unless the probe is
      separators only (each period's raw bytes judge it: those that hold are walked too);
    * a place in another stretch [g, h) of period q (the two overlap by less than q) is a
      period p whose walk stops where either stretch does, at ``min(e, h - p)`` forwards and
      ``max(b, g - p)`` backwards, unless it runs on past ``e`` or before ``b``. Stopping
      there it covers less than 2p + q bytes, never the 4 copies a hit needs; so only the
      places where ``view[anchor : e + 1]`` or ``view[b - 1 : anchor + len(probe)]``
      recurs are walked. When [b, e) reaches a stride past the anchor, a walk that stops
      early can still move the next anchor: then every place is walked.
    """
    find, span = view.find, len(probe)
    stop = anchor + MAX_PERIOD + span
    close = span // 2
    unit = found - anchor
    if unit > close:  # no place in the anchor's own stretch
        while True:
            yield found
            after = find(probe, found + 1, stop)
            if after < 0:
                return
            unit, found = after - found, after
            if unit <= close:
                break
        own_end = _forward(view, anchor, unit) + unit
    else:
        yield found
        own_end = _forward(view, anchor, unit) + unit
        covered = own_end - _backward(view, anchor, unit) if raw is not None else 0
        if covered >= need:  # the others' walks are known: only their raw bytes judge
            longest = min(covered // MIN_REPEATS, own_end - span - anchor, MAX_PERIOD)
            for period in range(2 * unit, longest + 1, unit):
                if own_end - anchor - period >= max(_CHECK, need - period - stride) and _confirmed(
                    view, raw, anchor, period, need
                ):
                    yield anchor + period
        found = find(probe, own_end - span + 1, stop)
        if found < 0:
            return
    if own_end - anchor > stride:
        while found >= 0:
            yield found
            found = find(probe, found + 1, stop)
        return
    # the places whose walk runs on past the anchor's stretch, forwards or backwards
    last = anchor + MAX_PERIOD
    ahead = view[anchor : own_end + 1] if own_end < len(view) else b""
    forth = find(ahead, found, last + len(ahead)) if ahead else -1
    own_begin = _backward(view, anchor, unit)
    behind = view[own_begin - 1 : anchor + span] if own_begin else b""
    lead = anchor - own_begin + 1  # ``behind`` starts that far before its place
    back = find(behind, max(0, found - lead), last - lead + len(behind)) if behind else -1
    back = back + lead if back >= 0 else -1
    while forth >= 0 or back >= 0:
        place = forth if back < 0 or 0 <= forth <= back else back
        yield place
        if forth == place:
            forth = find(ahead, place + 1, last + len(ahead))
        if back == place:
            back = find(behind, place - lead + 1, last - lead + len(behind))
            back = back + lead if back >= 0 else -1


def _confirmed(view: bytes, raw: bytes | None, anchor: int, period: int, need: int) -> bool:
    """A unit of separators only (spaces, punctuation) counts when the raw bytes repeat too:
    a run of ``=`` or NUL is pollution, a stretch of mixed brackets and indentation is not."""
    if raw is None or view[anchor : anchor + period].strip(b" "):
        return True
    covered = _forward(raw, anchor, period) + period - _backward(raw, anchor, period)
    return covered >= max(need, MIN_REPEATS * period)


_SEP = bytes(
    32 if b in _DROP else (b + 32 if 65 <= b <= 90 else b) for b in range(256)
)  # lower-case, every dropped byte one separator: same length, so spans map back exactly


def _near_hint(scan: _Scan) -> bool:
    """Most anchors' probes recur, mostly at about one distance: a unit repeated with changes."""
    size = len(scan.distances)
    if size < 2 or 2 * size < scan.anchors:
        return False
    found = sorted(scan.distances)
    # half of them (rounded up) within 25% + 4 of the smallest of them: some run of that many
    # sorted distances ends within 25% + 4 of where it starts
    half = (size + 1) // 2
    return any(found[i + half - 1] <= found[i] * 5 // 4 + 4 for i in range(size - half + 1))


_SMALL_BODY = 8192  # below this the folded view is cheap: always judge near repeats


def find_repeats(data: bytes) -> RepeatHit | None:
    """The first polluted stretch of ``data``.

    The main view keeps every position (letters lower-cased, separators made one byte), so its
    spans are spans of ``data``. When many anchors see local repeats that do not extend, the
    folded view (separators dropped) judges near repeats that differ in spacing or punctuation;
    its spans are on the folded view (``view="folded"``).
    """
    if len(data) < DOMINANT_RUN:
        return None

    judged: dict[bytes, bool] = {}  # a body's lists repeat: each distinct start judged once
    unfold = _Unfold(data)

    def is_list(at: int, size: int, period: int) -> bool:
        text = data[at : at + min(size, _DATA_WINDOW, max(_DATA_MIN, 3 * period))]
        found = judged.get(text)
        if found is None:
            found = judged[text] = _is_data(text)
        return found

    def raw_list(start: int, end: int, period: int) -> bool:
        return is_list(start, end - start, period) or _descends(data, start, end, period)

    def folded_list(start: int, end: int, period: int) -> bool:
        # the raw bytes from there on hold the folded stretch's bytes and separators
        begin = unfold(start)
        if is_list(begin, end - start, period):
            return True
        unit = unfold(start + period) - begin  # the folded unit's raw bytes (brackets too)
        return _descends(data, begin, begin + unit * ((end - start) // period), unit)

    scan = _scan(data.translate(_SEP), "raw", data, raw_list)
    if scan.hit is not None:
        return scan.hit
    if len(data) > _SMALL_BODY and not _near_hint(scan):
        return None
    folded = _scan(fold(data), "folded", None, folded_list).hit
    return folded if folded is not None else _edited(data, raw_list)


# --- lists of values: repeats that are data, not a loop ----------------------------------------

_DATA_WINDOW = 512
_DATA_MIN = 64
"""A stretch's first three periods, ``_DATA_MIN`` to ``_DATA_WINDOW`` bytes, are judged."""
_ESCAPED_SPACE = re.compile(rb"\\[nrt]")  # a newline or tab inside a JSON or JS string
_NUMBER = rb"[-+]?+(?:0[xX][0-9a-fA-F]++|\d++(?:\.\d*+)?+|\.\d++)(?:[eE][-+]?+\d++)?+"
_QUOTED = rb"([\"'])\\*+[^\"'\\\s]{1,3}\\*+\1"  # a code of one to three characters
_VLQ = rb"[g-z0-9+/]*+[A-Za-f]"  # one base64 VLQ value: continuation digits, then a last one
_SEGMENT = rb"%s(?:(?:%s){3}(?:%s)?)?" % (_VLQ, _VLQ, _VLQ)  # 1, 4 or 5 values: a mapping
_PAD = rb"[ \t\r\n\\]*+"
_LIST = re.compile(rb"(?:%s(?:(?:%s|%s|%s)%s)?[,;])*+" % (_PAD, _NUMBER, _QUOTED, _SEGMENT, _PAD))
_NUMBERS = re.compile(rb"(?:%s)(?: (?:%s))*+" % (_NUMBER, _NUMBER))
_NOT_VALUE = b" \t\r\n\\,;"


def _is_data(text: bytes) -> bool:
    """``text`` (a stretch's start) is a list of values. Either at least three whole elements
    between commas or semicolons, each empty or a value, one at least a value — a number, a
    quoted code of at most three characters (a table of codes) or a source-map segment (1, 4
    or 5 base64 VLQ values: a word ending in g-z, or of 2, 3 or 6+ values, is none) — or at
    least three whole numbers between spaces (an SVG path, a table). The elements at either
    edge may be cut, so they are not judged. A word or a phrase (``company company``,
    ``poem,poem``, ``{"status": "pending"},``) is never a value; a one-byte run is no list.
    Regular expressions with possessive steps: linear, at C speed, on at most 512 bytes."""
    text = _ESCAPED_SPACE.sub(b" ", text)
    first = min((i for i in (text.find(b","), text.find(b";")) if i >= 0), default=-1)
    if first >= 0:
        inner = text[first + 1 : max(text.rfind(b","), text.rfind(b";")) + 1]
        if inner.count(b",") + inner.count(b";") >= 3:
            return bool(_LIST.fullmatch(inner)) and bool(inner.translate(None, _NOT_VALUE))
    words = text.split()[1:-1]
    return len(words) >= 3 and bool(_NUMBERS.fullmatch(b" ".join(words)))


MAX_NESTING = 96
"""Bracket levels a repeated stretch may descend in all and still be structure (a Reddit reply
level opens five; see ``_descends``)."""


def _descends(data: bytes, start: int, end: int, period: int) -> bool:
    """The stretch's copies of one ``period`` open more brackets than they close — at least one
    level a copy, at most ``MAX_NESTING`` levels in all: a document going down its own structure
    (a reply chain in a comment tree, whose every level repeats the same leading fields), not a
    loop. Deeper is a nesting bomb and stays pollution. Counted over the whole stretch of raw
    bytes, so a near repeat (the folded view) is judged by what all its copies hold."""
    copies = (end - start) // max(period, 1)
    stretch = data[start : start + copies * period]
    depth = stretch.count(b"{") + stretch.count(b"[") - stretch.count(b"}") - stretch.count(b"]")
    return 0 < copies <= depth <= MAX_NESTING


class _Unfold:
    """The index in ``data`` of the folded view's byte ``kept`` (``fold`` drops separators),
    walking forward from the last answer (one scan's stretches come in order): linear overall."""

    __slots__ = ("data", "kept", "raw")

    def __init__(self, data: bytes) -> None:
        self.data, self.raw, self.kept = data, 0, 0  # ``kept`` folded bytes before ``raw``

    def __call__(self, kept: int) -> int:
        if kept < self.kept:
            self.raw = self.kept = 0
        data, step = self.data, 512
        while self.raw < len(data):
            chunk = data[self.raw : self.raw + step]
            here = len(chunk.translate(None, _DROP))
            if self.kept + here > kept:
                left = kept - self.kept
                for i, byte in enumerate(chunk):
                    if not _DROP_MASK[byte]:
                        if left == 0:
                            return self.raw + i
                        left -= 1
            self.kept += here
            self.raw += step
        return len(data)


# Letters -> "a", digits -> "0", other ASCII kept, other bytes one value: a unit repeated with a
# letter or digit changed here and there repeats exactly in this view.
_CLASS = bytes(
    97 if (65 <= b <= 90 or 97 <= b <= 122) else 48 if 48 <= b <= 57 else b if b < 128 else 128
    for b in range(256)
)
_DIGITS = frozenset(b"0123456789")
EDITED_PERIOD = 32
"""Near repeats with edits count only for short units (a looping phrase, not a log line)."""
EDITED_EQUAL = 0.85
"""At least this fraction of the stretch's bytes equal the byte one period later."""
EDITED_COPIES = 3
"""Edits in at least this many copies: spread over the stretch, not one seam between two runs."""


def _class_recurs(data: bytes) -> bool:
    """A necessary condition, cheap: at some anchor, the next ``EDITED_PERIOD`` bytes' classes
    recur within ``EDITED_PERIOD`` bytes (only 128 bytes per anchor are translated). A
    reportable stretch (``need`` bytes, as ``_scan`` asks) with a period of at most
    ``EDITED_PERIOD`` holds an anchor whose 2 x 64 bytes lie inside it when anchors are
    ``need - 128`` bytes apart, so it always passes."""
    size = len(data)
    need = min(MIN_RUN, max(DOMINANT_RUN, (size + 1) // 2))
    width = EDITED_PERIOD
    for anchor in range(0, size - 2 * width + 1, need - 2 * width):
        window = data[anchor : anchor + 2 * width].translate(_CLASS)
        if window.find(window[:width], 1) >= 0:
            return True
    return False


def _edited(data: bytes, lists: Judge | None = None) -> RepeatHit | None:
    """A short unit repeated with small edits (a letter changed here and there): the stretch
    repeats exactly in the class view, at least ``EDITED_EQUAL`` of its bytes repeat exactly,
    the differences fall in ``EDITED_COPIES`` or more copies and none of them is a digit (a
    counter, an issue number or a timestamp column is a list or a log, not a loop)."""
    if not _class_recurs(data):
        return None
    hit = _scan(data.translate(_CLASS), "edited", data, lists).hit
    if hit is None or hit.period > EDITED_PERIOD:
        return None
    start, end, period = hit.start, hit.end, hit.period
    here, there = data[start : end - period], data[start + period : end]
    diff = (int.from_bytes(here, "big") ^ int.from_bytes(there, "big")).to_bytes(len(here), "big")
    differing = len(diff) - diff.count(0)
    if differing > (1 - EDITED_EQUAL) * len(diff):
        return None
    at = [i for i, byte in enumerate(diff) if byte]
    if len({i // period for i in at}) < EDITED_COPIES:
        return None
    if any(data[start + i] in _DIGITS or data[start + i + period] in _DIGITS for i in at):
        return None  # a number changes: a list or a log (issue numbers, counters), not a loop
    return RepeatHit(start, end, period, "edited")
