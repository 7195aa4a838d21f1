"""Repetition pollution: exact and near repeats of a short period, and long one-byte runs (tier T1).

A result is polluted when a stretch of at least ``MIN_RUN`` bytes (or ``DOMINANT_RUN`` bytes
making up half the body) repeats one unit of up to ``MAX_PERIOD`` bytes back to back at least
``MIN_REPEATS`` times: the same sentence, token or markup over and over. "Near" repeats are exact repeats of the folded view
(ASCII letters lower-cased, whitespace and punctuation dropped), so a unit repeated with changes
of case, spacing or punctuation counts, while lines that differ in a number, a name or a date
(a CSV, ``ping``, ``ls -l``, a progress log) do not. A run of one punctuation or space byte
(which the folded view drops) counts on the raw bytes. The scan is linear: one anchor every ``ANCHOR_STRIDE`` bytes, each checked against the
candidate periods within ``MAX_PERIOD`` bytes with C-level slice compares. Pure; spans only.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "ANCHOR_STRIDE",
    "MAX_PERIOD",
    "MIN_PERIOD",
    "MIN_REPEATS",
    "MIN_RUN",
    "DOMINANT_RUN",
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
_MAX_CANDIDATES = 64  # candidate periods looked at per anchor


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
    """The first k >= at with view[k] != view[k + period] (or len - period)."""
    limit = len(view) - period
    step = 64
    while at < limit:
        size = min(step, limit - at)
        if view[at : at + size] == view[at + period : at + period + size]:
            at += size
            step *= 2
            continue
        if size <= 8:
            while at < limit and view[at] == view[at + period]:
                at += 1
            return at
        step = max(8, size // 4)
    return limit


def _backward(view: bytes, at: int, period: int) -> int:
    """The smallest s <= at with view[k] == view[k + period] for every k in [s, at)."""
    step = 64
    while at > 0:
        size = min(step, at)
        if view[at - size : at] == view[at - size + period : at + period]:
            at -= size
            step *= 2
            continue
        if size <= 8:
            while at > 0 and view[at - 1] == view[at - 1 + period]:
                at -= 1
            return at
        step = max(8, size // 4)
    return 0


def _scan(view: bytes, label: str) -> RepeatHit | None:
    size = len(view)
    if size < DOMINANT_RUN:
        return None
    need = min(MIN_RUN, max(DOMINANT_RUN, (size + 1) // 2))
    stride = ANCHOR_STRIDE if need >= MIN_RUN else _SMALL_STRIDE
    anchor = 0
    while anchor + _PROBE < size:
        probe = view[anchor : anchor + _PROBE]
        stop = min(size, anchor + MAX_PERIOD + _PROBE)
        found = view.find(probe, anchor + 1, stop)
        next_anchor = anchor + stride
        tried = 0
        while found >= 0 and tried < _MAX_CANDIDATES:
            tried += 1
            period = found - anchor
            end = _forward(view, anchor, period)
            begin = _backward(view, anchor, period)
            covered = end + period - begin
            if covered >= max(need, MIN_REPEATS * period):
                return RepeatHit(begin, end + period, period, label)
            next_anchor = max(next_anchor, end) if end - anchor > stride else next_anchor
            found = view.find(probe, found + 1, stop)
        anchor = next_anchor
    return None


def find_repeats(data: bytes) -> RepeatHit | None:
    """The first polluted stretch of ``data`` (raw view for one-byte runs, folded otherwise).

    Spans on the ``folded`` view are mapped back to the raw bytes only approximately (the
    folded view is shorter); callers that cut spans use a whole-result hold for pollution.
    """
    if len(data) < DOMINANT_RUN:
        return None
    # runs of bytes the folded view drops (spaces, punctuation, NUL): look for them on the raw
    # bytes, only where such a run is long enough
    mask = data.translate(_DROP_MASK)
    if mask.find(b"\x01" * DOMINANT_RUN) >= 0:
        hit = _scan(data, "raw")
        if hit is not None:
            return hit
    folded = fold(data)
    hit = _scan(folded, "folded")
    if hit is None:
        return None
    if folded is data or len(folded) == len(data):
        return RepeatHit(hit.start, hit.end, hit.period, "raw")
    return hit
