"""Long base64 / hex tokens and their printable decodings, behind a one-pass prefilter (tier T1).

A token is a maximal run of 16+ base64-alphabet bytes; it is read as base64 (standard or
URL-safe) and, when it is all hex digits, as hex too, and a reading is kept when it is at least
90% printable UTF-8. ``CANDIDATE_PATTERN`` is an RE2 pattern that matches inside every token
with a printable reading (a necessary condition derived from UTF-8's byte structure), so a whole
body is ruled out in one linear pass and only matched tokens are decoded. Pure; no logging.
"""

from __future__ import annotations

import binascii
import functools
import itertools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import re2

__all__ = [
    "BIG_DFA",
    "CANDIDATE_PATTERN",
    "MIN_TOKEN",
    "Naming",
    "compile_latin1",
    "decode_token",
    "decoded_tokens",
    "latin1_options",
    "token_bounds",
    "token_mask",
]

MIN_TOKEN = 16
"""A token is at least this many base64-alphabet bytes."""

_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_"
_TOKEN_MASK = bytes(1 if b in _ALPHABET else 0 for b in range(256))
_RUN = b"\x01" * MIN_TOKEN
_HEXDIGITS = b"0123456789abcdefABCDEF"
_URLSAFE = bytes.maketrans(b"-_", b"+/")
_PAD = (b"", b"", b"==", b"=")
# Bytes that count against "printable": C0 controls except tab/newline/return, and DEL.
_CONTROL = bytes(b for b in range(32) if b not in (9, 10, 13)) + b"\x7f"
# Bytes that never occur in UTF-8: a decoding holding any of them is not text.
_NOT_UTF8 = bytes([0xC0, 0xC1, *range(0xF5, 0x100)])


def _mostly_printable(raw: bytes) -> bool:
    """At least 8 bytes, at least 90% non-control bytes and, if not ASCII, valid UTF-8."""
    size = len(raw)
    if size < MIN_TOKEN // 2:
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


def decode_token(token: bytes) -> Iterator[bytes]:
    """The mostly printable readings of one token: hex first (if all hex digits), then base64."""
    digits = token[2:] if token.startswith((b"0x", b"0X")) else token
    if not digits.translate(None, _HEXDIGITS):
        raw = binascii.unhexlify(digits[: len(digits) & ~1])
        if _mostly_printable(raw):
            yield raw
    cut = len(token) & 3
    body = token.translate(_URLSAFE)
    raw = binascii.a2b_base64(body[:-1] if cut == 1 else body + _PAD[cut])
    if _mostly_printable(raw):
        yield raw


def token_mask(view: bytes) -> bytes:
    """One byte per input byte: 1 inside the base64 alphabet, 0 outside."""
    return view.translate(_TOKEN_MASK)


def token_bounds(view: bytes, at: int) -> tuple[int, int]:
    """The [begin, end) of the alphabet run holding index ``at`` (``view[at]`` must be in it).

    Looks outwards in doubling windows, so the work is proportional to the run's length.
    """
    begin, width = at, 64
    while begin:
        lo = max(0, begin - width)
        cut = view[lo:begin].translate(_TOKEN_MASK).rfind(b"\x00")
        if cut >= 0:
            begin = lo + cut + 1
            break
        begin, width = lo, width * 2
    end, width = at, 64
    while end < len(view):
        cut = view[end : end + width].translate(_TOKEN_MASK).find(b"\x00")
        if cut >= 0:
            end += cut
            break
        end, width = min(len(view), end + width), width * 2
    return begin, end


# --- the prefilter ----------------------------------------------------------------------------
#
# A printable reading is valid UTF-8, so every byte of it falls in a class fixed by its top bits:
# ASCII 0xxxxxxx, continuation 10xxxxxx, or a lead 110xxxxx / 1110xxxx / 11110xxx that must be
# followed by exactly 1 / 2 / 3 continuations (11111xxx never occurs). Relaxing UTF-8 to these
# classes (overlongs and surrogates allowed) keeps the conditions below necessary, and makes each
# class a constraint on fixed bits, which base64 and hex spell as character classes.

_ASCII, _CONT, _LEAD2, _LEAD3, _LEAD4 = (0b0, 1), (0b10, 2), (0b110, 3), (0b1110, 4), (0b11110, 5)
_OPENS = {_ASCII: 0, _LEAD2: 1, _LEAD3: 2, _LEAD4: 3}
_B64 = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_SPELLINGS = {value: bytes([char]) for value, char in enumerate(_B64)}
_SPELLINGS[62] += b"-"  # URL-safe twins
_SPELLINGS[63] += b"_"


def _step(due: int, cls: tuple[int, int]) -> int | None:
    """Continuations still due after a byte of this class, or None if UTF-8 cannot go on."""
    if cls == _CONT:
        return due - 1 if due else None
    return _OPENS[cls] if due == 0 else None


def _survives(triple: tuple[tuple[int, int], ...], pending: tuple[int, ...]) -> bool:
    """Whether three bytes of these classes can follow a state with this many continuations due."""
    for start in pending:
        due: int | None = start
        for cls in triple:
            if due is None:
                break
            due = _step(due, cls)
        if due is not None:
            return True
    return False


def _base64_group(triple: tuple[tuple[int, int], ...]) -> bytes:
    """The four base64 characters of three bytes of these classes, as four character classes."""
    mask = value = 0
    for index, (prefix, length) in enumerate(triple):
        shift = 8 * (2 - index) + 8 - length
        mask |= ((1 << length) - 1) << shift
        value |= prefix << shift
    classes = []
    for place in range(4):
        shift = 18 - 6 * place
        bits, want = (mask >> shift) & 63, (value >> shift) & 63
        chars = b"".join(_SPELLINGS[v] for v in range(64) if v & bits == want)
        classes.append(b"[" + re2.escape(chars) + b"]")
    return b"".join(classes)


def _group_pattern(pending: tuple[int, ...]) -> bytes:
    classes = (_ASCII, _CONT, _LEAD2, _LEAD3, _LEAD4)
    groups = (t for t in itertools.product(classes, repeat=3) if _survives(t, pending))
    return b"(?:" + b"|".join(map(_base64_group, groups)) + b")"


# Base64: the first four 4-character groups of a token (12 bytes) decode to bytes each group of
# which is consistent on its own; the token starts in the ASCII state, later groups in any state.
_BASE64_PREFIX = b"(?:^|[^A-Za-z0-9+/_-])" + _group_pattern((0,)) + _group_pattern((0, 1, 2, 3)) * 3

# Hex: pairs read as bytes. A printable reading of n >= 8 bytes either is all ASCII without a
# control when n is 8 or 9 (the token then ends), or starts with 10 ASCII bytes, or has its first
# non-ASCII byte among the first 10: a lead with its continuations, after which the reading goes
# on validly to its 10th byte or ends (at a sequence boundary, past its 8th byte).
_H = b"[0-9a-fA-F]"
_A = b"(?:[0-7]" + _H + b")"
_NC = b"(?:0[9aAdD]|[2-6]" + _H + b"|7[0-9a-eA-E])"
_C = b"[89abAB]" + _H
_LEAD = {2: b"[cdCD]" + _H, 3: b"[eE]" + _H, 4: b"[fF][0-7]"}
_MULTI = {size: _LEAD[size] + _C * (size - 1) for size in (2, 3, 4)}
_HEX_SPAN = 10  # bytes a candidate's hex reading is checked over
_HEX_END = rb"?\b"


@functools.cache
def _hex_rest(left: int) -> bytes:
    """The next ``left`` bytes of the reading go on validly (the last sequence may be cut), or it
    ends here at a sequence boundary if 8 bytes are already read."""
    if left <= 0:
        return b""
    options = [_A + _hex_rest(left - 1)]
    options += [_LEAD[n] + _C * (min(n, left) - 1) + _hex_rest(left - n) for n in (2, 3, 4)]
    if _HEX_SPAN - left >= 8:
        options.append(_H + _HEX_END)
    return b"(?:" + b"|".join(options) + b")"


def _hex_pattern() -> bytes:
    options = [_NC + b"{8,9}" + _H + _HEX_END, _A + b"{%d}" % _HEX_SPAN]
    for lead in range(_HEX_SPAN):
        ascii_run = _A + b"{%d}" % lead if lead else b""
        options += [ascii_run + _MULTI[n] + _hex_rest(_HEX_SPAN - lead - n) for n in (2, 3, 4)]
    return rb"\b(?:0[xX])?(?:" + b"|".join(options) + b")"


CANDIDATE_PATTERN = _BASE64_PREFIX + b"|" + _hex_pattern()
"""Matches inside (or at the separator before) every token that has a printable reading."""


BIG_DFA = 256 << 20
"""``max_mem`` for the screen's large automata: hostile bytes visit many DFA states."""


def latin1_options(max_mem: int = 0) -> re2.Options:
    """RE2 options over raw bytes (Latin-1 mode: never UTF-8 decoded), logging nothing;
    ``max_mem`` raises the automaton's memory budget (0: RE2's default)."""
    options = re2.Options()
    options.encoding = re2.Options.Encoding.LATIN1
    options.log_errors = False
    if max_mem:
        options.max_mem = max_mem
    return options


def compile_latin1(pattern: bytes, max_mem: int = 0) -> re2._Regexp:
    """An RE2 regex over raw bytes with ``latin1_options``."""
    return re2.compile(pattern, latin1_options(max_mem))


@dataclass(frozen=True, slots=True)
class Naming:
    """Two anchored RE2 Sets of an alternation's alternatives, to name the one a match starts
    with, without the submatch engine a group per alternative needs.

    At a fixed start, leftmost-first alternation takes the first alternative that can match at
    all, so the alternative is the smallest index the Set reports. ``after`` prefixes each one
    with one arbitrary byte: matched from the byte before the start, ``\\b`` and ``^`` see the
    same left context as in the text (a Set matches a buffer from its beginning); ``at_start``
    serves a match at offset 0.
    """

    after: re2.Set
    at_start: re2.Set

    @classmethod
    def of(cls, sources: Iterable[bytes]) -> Naming:
        """The Sets of ``sources`` (RE2, Latin-1), in order."""
        sources = list(sources)
        sets = []
        for prefix in (b"(?s:.)", b""):
            named = re2.Set.MatchSet(latin1_options(BIG_DFA))
            for src in sources:
                named.Add(prefix + b"(?:" + src + b")")
            named.Compile()
            sets.append(named)
        return cls(sets[0], sets[1])

    def first_at(self, text: bytes, start: int) -> int | None:
        """The alternative a match at ``start`` takes; None when none matches there, or when a
        Set ran out of memory (it then reports nothing): callers fall back to a grouped match."""
        hits = (
            self.after.Match(memoryview(text)[start - 1 :]) if start else self.at_start.Match(text)
        )
        return min(hits) if hits else None


@functools.cache
def _candidates() -> re2._Regexp:
    return compile_latin1(CANDIDATE_PATTERN)  # compiled on first use: ~10 ms


def decoded_tokens(view: bytes) -> list[bytes]:
    """Decodings of the long base64 / hex tokens in ``view`` that are mostly printable text.

    In order of the tokens, a token's hex reading before its base64 one. Tokens the prefilter
    rules out are never decoded; the result equals decoding every token.
    """
    if _RUN not in token_mask(view):
        return []
    out: list[bytes] = []
    done = 0
    for match in _candidates().finditer(view):
        at = match.end() - 1
        if at >= done:
            begin, done = token_bounds(view, at)
            out.extend(decode_token(view[begin:done]))
    return out
