"""De-obfuscating views of a result, screened by the same detectors (tier T1).

The second, independent result gate. The normalized view is the text's ASCII skeleton
(``fak.screen.skeleton``); long base64 / hex tokens are decoded when mostly printable
(``fak.screen.tokens``), and so is a view whose HTML character references or URL
percent-escapes spell words (``fak.screen.escapes``), recursively and within a budget; and
letter-spaced or reversed marker phrases are caught. Each view is scanned once by one RE2
pattern that matches wherever a detector could fire or a token could decode; only its matches
run Python. Decoding shrinks its input, so the work is linear.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

import re2

from fak.abi import Reason
from fak.screen.detect import (
    SCAN_BUDGET_MATCHES,
    SCAN_BUDGET_SPACING,
    Detector,
    Finding,
    screen_bytes,
)
from fak.screen.escapes import SPELLS, may_spell, spelled_out
from fak.screen.injection import INJECTION_FIND
from fak.screen.rx import matcher, searcher
from fak.screen.scope import current
from fak.screen.secrets import SECRET_FIND
from fak.screen.skeleton import normalize
from fak.screen.sources import SourceSettings
from fak.screen.starts import SharedStarts, Tail
from fak.screen.tokens import (
    BIG_DFA,
    CANDIDATE_PATTERN,
    MIN_TOKEN,
    compile_latin1,
    decode_token,
    decoded_tokens,
    token_bounds,
    token_mask,
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

_PHRASES = (
    b"ignore previous instructions",
    b"ignore all previous",
    b"system override",
    b"reveal your system prompt",
)
_DISTINCTIVE = tuple(p.replace(b" ", b"") for p in _PHRASES)
# A marker written plainly (words apart by whitespace only) is the scorer's to judge, quoted or
# discussed; the squeezed view catches the letter-spaced / punctuated forms.
_PLAIN = re2.compile(b"(?i:" + b"|".join(p.replace(b" ", rb"\s+") for p in _PHRASES) + b")")
# Letter-spaced or punctuated markers, forwards and backwards, over the alnum-only view.
_SQUEEZED_MARKERS = (*_DISTINCTIVE, *(m[::-1] for m in _DISTINCTIVE), b"etartlifxe")
_SQUEEZED = re2.compile(b"|".join(_SQUEEZED_MARKERS))
_UPPER = bytes(range(65, 91))
_SQUEEZE_TABLE = bytes.maketrans(_UPPER, _UPPER.lower())
_NOT_ALNUM = bytes(b for b in range(256) if not (48 <= b <= 57 or 65 <= b <= 90 or 97 <= b <= 122))

# A marker occurs in the alnum-only, lower-cased view exactly when its letters occur in order, in
# either case, with nothing but non-alphanumeric bytes between them: that needs no squeezed copy.
_GAPPED = b"(?i:%s)" % b"|".join(
    b"[^0-9A-Za-z]*".join(bytes([c]) for c in m) for m in _SQUEEZED_MARKERS
)


@dataclass(frozen=True, slots=True)
class _Scanners:
    """``scan_squeezed`` meets gapped markers (``level_squeezed``, which a view-level detector
    may fire on) and tokens that may decode; the raw bytes' other markers the first screen
    covers. No capture groups (RE2 would run its submatch engine on every match): a match is a
    gapped marker exactly when ``level_squeezed`` matches at its start, since the alternation
    prefers that alternative wherever it can match. ``union`` matches wherever the first-match
    screen's pass or ``scan_squeezed`` does: one pass over a view that both screen (see
    ``fak.screen.starts``)."""

    scan_squeezed: re2._Regexp
    level_squeezed: re2._Regexp
    union: re2._Regexp
    spells: re2._Regexp


@functools.cache
def _scanners() -> _Scanners:  # compiled on first use: ~40 ms
    union = b"|".join((SECRET_FIND, INJECTION_FIND, _GAPPED, CANDIDATE_PATTERN, SPELLS))
    return _Scanners(
        compile_latin1(_GAPPED + b"|" + CANDIDATE_PATTERN),
        compile_latin1(_GAPPED),
        compile_latin1(union, BIG_DFA),  # as the first-match screen's pass
        compile_latin1(SPELLS),
    )


def raw_starts(data: bytes) -> SharedStarts | None:
    """Within an admission scope, the union pass over ``data`` that the first-match screen
    walks and this screen then shares: ASCII bytes are their own skeleton (this screen's marker
    and token scan walks the same starts), and a skeleton that ends in the same bytes as
    ``data`` (all of a source file after its last dash) takes those starts for its tail (see
    ``_skeleton_tail``). None outside a scope, or for non-ASCII ``data`` under ``_TAIL_MIN``
    bytes or with less than half of it such a tail: the union pass costs the first screen
    ~20 % more than its own."""
    shared = current()
    if shared is None:
        return None
    if shared.raw is not data:
        plain = 0 if data.isascii() else _plain_tail(data) if len(data) >= _TAIL_MIN else -1
        if plain < 0 or plain > len(data) // 2:
            return None
        shared.raw, shared.plain = data, plain
        shared.starts = SharedStarts(_scanners().union, data)
    return shared.starts


_TAIL_MIN = 16384
"""A shorter non-ASCII body keeps its own passes: there the union pass and the tail's
bookkeeping cost the first screen more (~7 us on 4 KiB of source) than the skeleton's pass."""
_CHANGED = bytes(1 if b == 0 or b >= 0x80 else 0 for b in range(256))
_TAIL_CHUNK = 4096


def _plain_tail(data: bytes) -> int:
    """Where the longest suffix of ``data`` without NUL or non-ASCII bytes begins: the bytes
    ``normalize`` leaves as they are (it keeps ASCII and drops NUL)."""
    end = len(data)
    while end > 0:
        begin = max(0, end - _TAIL_CHUNK)
        chunk = data[begin:end]
        if not chunk.isascii() or b"\x00" in chunk:
            return begin + chunk.translate(_CHANGED).rfind(b"\x01") + 1
        end = begin
    return 0


def _skeleton_tail(data: bytes, top: bytes) -> Tail | None:
    """The skeleton ``top`` of non-ASCII ``data`` ends in the same bytes as ``data`` from
    ``plain`` on (checked, not assumed): there, its union starts are those of ``data``'s pass."""
    shared = current()
    if shared is None or shared.raw is not data or shared.starts is None or top is data:
        return None
    size = len(data) - shared.plain
    begin = len(top) - size
    if begin < 0 or not top.endswith(data[shared.plain :]):
        return None
    return Tail(shared.starts, begin, shared.plain - begin)


_DENSE = 32
_DENSE_SPACING = 256
"""After 32 candidate tokens, closer than 256 bytes apart on average, the plain token loop is
cheaper per token than a search per candidate: the rest of the view switches to it."""
_RUN = b"\x01" * MIN_TOKEN


def _squeezed_finding(view: bytes) -> Finding | None:
    """A letter-spaced, punctuated or reversed marker phrase in the alphanumeric-only view."""
    squeezed = view.translate(_SQUEEZE_TABLE, _NOT_ALNUM)
    match = _SQUEEZED.search(squeezed)
    if match is None:
        return None
    if match.group(0) in _DISTINCTIVE and squeezed.count(match.group(0)) == len(
        _PLAIN.findall(view)
    ):
        return None  # every occurrence is plainly written: not obfuscated
    return Finding(Reason.TRUST_VIOLATION, Detector.SQUEEZED_MARKER, view="squeezed")


def _view_finding(
    view: bytes, label: str, *, screen_raw: bool, settings: SourceSettings | None = None
) -> Finding | None:
    """The exact view-level checks: the first-match screen (unless done), then squeezed markers.

    Pollution is judged on the raw bytes and decoded layers, not again on the skeleton."""
    if screen_raw:
        hit = screen_bytes(view, settings, pollution=label != "normalized")
        if hit is not None:
            return replace(hit, view=label, span=None)
    if settings is not None and not settings.injection:
        return None
    return _squeezed_finding(view)


def _scan(
    view: bytes,
    label: str,
    *,
    screen_raw: bool,
    settings: SourceSettings | None = None,
    tail: Tail | None = None,
) -> tuple[Finding | None, list[bytes], bool]:
    """The view's finding, else the printable decodings of its tokens, and whether escapes in
    it spell words (``fak.screen.escapes.SPELLS``, found from the same union pass).

    A view other than the raw bytes first goes through the whole first-match screen; a finding
    there carries no span, since the view does not map back to the original bytes byte for byte.
    That screen's pass and this one walk the starts of one union pass over the view (the
    findings are those of separate passes). Then one RE2 scan meets squeezed markers and tokens: the
    squeezed check runs (once) when the scan meets one, and a token is decoded when the scan
    meets a candidate in it; when candidates come densely, the remaining tokens are all decoded
    and one search covers the rest of the view. Equal to running every check on every token.
    """
    scanners = _scanners()
    if screen_raw:
        # the first-match screen now; the squeezed check only where the scan below meets a
        # gapped marker (its translate is the expensive part). One union pass serves both.
        starts = SharedStarts(scanners.union, view, tail)
        hit = screen_bytes(view, settings, pollution=label != "normalized", starts=starts)
        if hit is not None:
            return replace(hit, view=label, span=None), [], False
        search, spells = starts.search(scanners.scan_squeezed), starts.search(scanners.spells)
    elif (shared := raw_starts(view)) is not None:
        search = shared.search(scanners.scan_squeezed)  # the first-match screen's pass
        spells = shared.search(scanners.spells)
    else:
        search, spells = searcher(scanners.scan_squeezed), searcher(scanners.spells)
    squeeze = settings is None or settings.injection
    gapped = matcher(scanners.level_squeezed)
    layers: list[bytes] = []
    checked = False
    done = pos = tokens = 0
    while (span := search(view, pos)) is not None:
        pos = span[0] + 1
        if gapped(view, span[0]) is not None:
            if not checked and squeeze:
                checked = True
                hit = _squeezed_finding(view)
                if hit is not None:
                    return hit, [], False
            continue
        at = span[1] - 1
        if at < done:
            continue
        begin, done = token_bounds(view, at)
        layers.extend(decode_token(view[begin:done]))
        tokens += 1
        if tokens >= _DENSE and tokens * _DENSE_SPACING > pos:
            layers.extend(_decode_rest(view, done))
            if not checked and squeeze and scanners.level_squeezed.search(view, pos) is not None:
                hit = _squeezed_finding(view)
                if hit is not None:
                    return hit, [], False
            break
    spelled = may_spell(view) and spells(view, 0) is not None
    return None, layers, spelled


def _decode_rest(view: bytes, start: int) -> list[bytes]:
    """The printable decodings of every token from ``start`` on."""
    mask = token_mask(view)
    out: list[bytes] = []
    while (begin := mask.find(_RUN, start)) >= 0:
        end = mask.find(b"\x00", begin + MIN_TOKEN)
        start = len(mask) if end < 0 else end
        out.extend(decode_token(view[begin:start]))
    return out


def _too_many_escapes(view: bytes) -> bool:
    """More than ``SCAN_BUDGET_MATCHES`` ``&`` and ``%`` bytes, closer than
    ``SCAN_BUDGET_SPACING`` bytes apart on average, in a view whose escapes spell words:
    decoding costs Python time per escape, and no page needs that many to say anything, so the
    body is held (``scan_budget``) as the first screen holds a body dense with candidates."""
    marks = view.count(b"&") + view.count(b"%")
    return marks > SCAN_BUDGET_MATCHES and marks * SCAN_BUDGET_SPACING > len(view)


def screen_deobfuscated(
    data: bytes, *, include_raw: bool = True, settings: SourceSettings | None = None
) -> Finding | None:
    """The first finding over the raw bytes, the normalized view and its decoded layers.

    With ``include_raw`` (the default) the raw bytes are screened too, so this screen alone holds
    everything ``screen_bytes`` holds; a chain that already runs ``screen_bytes`` on the same
    bytes passes False to skip that repeat. Fails closed (TRUST_VIOLATION) when printable encoded
    layers nest deeper than ``MAX_DECODE_DEPTH`` or the decoded layers together outgrow
    ``DECODE_BUDGET`` times the input.
    """
    if include_raw:
        hit = screen_bytes(data, settings)
        if hit is not None:
            return hit
    top = normalize(data)
    tail = _skeleton_tail(data, top)  # within an admission: the raw bytes' pass serves its tail
    budget = DECODE_BUDGET * len(data) + 4096
    pending = [(top, 0)]
    while pending:
        view, depth = pending.pop()
        if depth:
            budget -= len(view)
            if budget < 0:
                return Finding(Reason.TRUST_VIOLATION, Detector.DECODE_BUDGET, view="decoded")
        label = "decoded" if depth else "normalized"
        hit, layers, spells = _scan(
            view,
            label,
            screen_raw=depth > 0 or view is not data,
            settings=settings,
            tail=None if depth else tail,
        )
        if hit is not None:
            return hit
        spelled = None
        if spells:  # escapes spell words: the view as a reader reads it, decoded in Python
            if _too_many_escapes(view):
                return Finding(Reason.TRUST_VIOLATION, Detector.SCAN_BUDGET, view=label)
            spelled = spelled_out(view)
        if (layers or spelled is not None) and depth >= MAX_DECODE_DEPTH:
            return Finding(Reason.TRUST_VIOLATION, Detector.DECODE_DEPTH, view="decoded")
        pending.extend((normalize(layer), depth + 1) for layer in layers)
        if spelled is not None:
            pending.append((normalize(spelled), depth + 1))
    return None
