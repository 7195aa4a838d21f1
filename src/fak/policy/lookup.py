"""Where a value first occurs in a run's text: the index behind sink lookups (tier T1, pure).

``TextIndex`` holds the pieces of one origin class (the user's, the trusted or the untrusted
text, in order) and answers "which piece first holds this value, compared as ``kind``"; each
kind's structure is built on first use, once per index, and no lookup loops in Python over the
places where the value's characters recur:

- ``host`` / ``email`` / ``number``: the normal forms of every host-shaped token, every
  ``local@host`` and every number written in the text, in hash maps: a probe costs the value;
- ``date``: every date and time written in the text (``fak.policy.dates``), likewise;
- ``iban``: the alphanumeric runs joined, keyed per value length by the substrings that cover
  whole runs (``DE89 3704 …`` holds ``DE893704…``, not ``E893``): a probe costs the value;
- ``text``: the normalised text with its word boundaries marked, so a value marked the same
  way is found on word boundaries by one substring search (in C, linear in the text).

``Segments`` keeps an append-only class as a few such indexes, so a growing context is indexed
by what was added. It never refuses anything itself; ``fak.policy.provenance`` judges.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from collections.abc import Callable, Sequence
from decimal import Decimal, InvalidOperation
from itertools import accumulate, repeat
from operator import add, sub
from typing import Final, TypeVar

from fak.policy.dates import date_keys
from fak.policy.hosts import normal_host, public_suffix

__all__ = ["MARK", "SEP", "Segments", "TextIndex", "email_key", "normal_text"]

SEP: Final = "\x00"  # between pieces: no value holds it, so no match spans two pieces
MARK: Final = "\x01"  # a word boundary in the marked text (no value holds it either)
_BOUNDARY: Final = re.compile(r"(\w+)")
_FEW = 64  # near misses a text lookup steps over before it marks the text
_ALNUM_RUN: Final = re.compile(r"[^\W_]+")
_NUMBER: Final = re.compile(r"(?<![\w.])[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![\w])")
_DELIM_CHARS: Final = "/\\:@?#<>()[]{}\"'`,;!*|^=&+$%~"  # and white space: they end a host
_DELIMS: Final = r"\s" + re.escape(_DELIM_CHARS)
_HOST_TOKEN: Final = re.compile(f"[^{_DELIMS}]+")
_EMAIL: Final = re.compile(f"(?<![\\w.%+'\\-])([\\w.%+'\\-]+)@([^{_DELIMS}]+)")
# ASCII text takes str.translate + str.split (C speed) to the same tokens the patterns find
_HOST_SPLIT: Final = str.maketrans(dict.fromkeys(_DELIM_CHARS, " "))
_RUN_SPLIT: Final = str.maketrans({chr(i): " " for i in range(128) if not chr(i).isalnum()})


def normal_text(text: str) -> str:
    """NFKC, case-folded, white space collapsed: the form ``text`` values compare in."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def email_key(local: str, host: str) -> str:
    """``local@host`` as both sides compare it (a quote before the local part is not in it)."""
    return f"{local.lstrip(chr(39))}@{host}"


def _is_word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _marked(text: str) -> str:
    """``text`` with ``MARK`` on both sides of every run of word characters and of non-word
    characters: a needle marked the same way is found exactly where it starts and ends on word
    boundaries (at the ends that are word characters), by one substring search."""
    return MARK.join(_BOUNDARY.split(text))


def _marked_needle(needle: str) -> str:
    inner = _marked(needle).strip(MARK)
    left = MARK if _is_word(needle[0]) else ""
    right = MARK if _is_word(needle[-1]) else ""
    return f"{left}{inner}{right}"


class _Words:
    """The normalised text of every piece joined by ``SEP``; marked at word boundaries once a
    value turns out to recur there often."""

    __slots__ = ("_forms", "_marked", "_marked_offsets", "joined", "offsets")

    def __init__(self, texts: Sequence[str]) -> None:
        self._forms = [normal_text(t).replace(MARK, SEP) for t in texts]
        self.joined = SEP.join(self._forms)
        self.offsets = [0, *accumulate(len(f) + 1 for f in self._forms)][:-1]
        self._marked: str | None = None
        self._marked_offsets: list[int] = []

    def first(self, needle: str) -> int | None:
        """The piece of the first occurrence of ``needle`` that starts on a word boundary if its
        first character is a word character, and ends on one if its last is. A few near misses
        are stepped over; past ``_FEW`` the text is marked (once) and searched in one go, so no
        lookup walks more than ``_FEW`` occurrences in Python, however often the value recurs."""
        text = self.joined
        left, right = _is_word(needle[0]), _is_word(needle[-1])
        if self._marked is None:
            at = text.find(needle)
            for _ in range(_FEW):
                if at < 0:
                    return None
                end = at + len(needle)
                if (not left or at == 0 or not _is_word(text[at - 1])) and (
                    not right or end == len(text) or not _is_word(text[end])
                ):
                    return bisect_right(self.offsets, at) - 1
                at = text.find(needle, at + 1)
            if at < 0:
                return None
            forms = [_marked(form) for form in self._forms]
            self._marked_offsets = [0, *accumulate(len(f) + 3 for f in forms)][:-1]
            self._marked = MARK + (MARK + SEP + MARK).join(forms) + MARK
            self._forms = []
        at = self._marked.find(_marked_needle(needle))
        return None if at < 0 else bisect_right(self._marked_offsets, at) - 1


class _Runs:
    """Every piece's alphanumeric runs (NFKC, upper case) joined, pieces apart by ``SEP``;
    keyed per needle length by the substrings that cover whole runs (earliest first)."""

    __slots__ = ("ends", "joined", "keys", "offsets", "starts")

    def __init__(self, texts: Sequence[str]) -> None:
        runs: list[str] = []
        self.offsets: list[int] = []
        at = 0
        for text in texts:
            self.offsets.append(at)
            form = unicodedata.normalize("NFKC", text).upper()
            if form.isascii():
                found = form.translate(_RUN_SPLIT).split()
            else:
                found = _ALNUM_RUN.findall(form)
            runs.extend(found)
            runs.append(SEP)
            at += sum(map(len, found)) + 1
        self.joined = "".join(runs)
        stops = list(accumulate(map(len, runs)))
        self.starts = [0, *stops[:-1]]
        self.ends = frozenset(stops)
        self.keys: dict[int, dict[str, int]] = {}

    def first(self, needle: str) -> int | None:
        """The offset of the first occurrence of ``needle`` that covers whole runs."""
        size = len(needle)
        keys = self.keys.get(size)
        if keys is None:
            keys = self._build(size)
            self.keys[size] = keys
        return keys.get(needle)

    def _build(self, size: int) -> dict[str, int]:
        """Iterators all the way (no Python-level loop body): ends ``size`` after a start."""
        stops = list(filter(self.ends.__contains__, map(add, self.starts, repeat(size))))
        begins = list(map(sub, stops, repeat(size)))
        keys = list(map(self.joined.__getitem__, map(slice, begins, stops)))
        keys.reverse()
        begins.reverse()
        return dict(zip(keys, begins, strict=True))


def _numbers(text: str) -> set[Decimal]:
    out: set[Decimal] = set()
    for written in set(_NUMBER.findall(unicodedata.normalize("NFKC", text))):
        try:
            out.add(abs(Decimal(written.replace(",", ""))))
        except InvalidOperation:
            continue
    return out


def _hosts(text: str) -> set[str]:
    out: set[str] = set()
    form = unicodedata.normalize("NFKC", text)
    tokens = form.translate(_HOST_SPLIT).split() if form.isascii() else _HOST_TOKEN.findall(form)
    for token in set(tokens):
        bare = token.strip(".")
        host = normal_host(bare)
        if host is None:
            continue
        out.add(host)
        head, dot, tail = bare.rpartition(".")
        if dot and tail.isalpha() and tail[0].isupper() and public_suffix(host) is None:
            # "www.acme.com.They": a sentence run on after a host. Only when the last label is
            # not a TLD the Public Suffix List knows ("acme.co.Uk" stays acme.co.uk).
            run_on = normal_host(head)
            if run_on is not None and public_suffix(run_on) is not None:
                out.add(run_on)
    return out


def _emails(text: str) -> set[str]:
    out: set[str] = set()
    form = unicodedata.normalize("NFKC", text)  # first: it makes "＠" an "@"
    if "@" not in form:
        return out
    # an address holds no white space: scan only the words that hold an @
    words = " ".join([word for word in form.split() if "@" in word])
    for local, domain in set(_EMAIL.findall(words)):
        host = normal_host(domain.rstrip("."))
        if host is not None and ":" not in host:
            out.add(email_key(local.lower(), host))
    return out


class TextIndex:
    """One origin class's pieces, in order; ``first`` answers the index of the first piece that
    holds a value in normal form, or None. Structures are built per kind on first use."""

    __slots__ = ("_dates", "_emails", "_hosts", "_numbers", "_runs", "_texts", "_words", "size")

    def __init__(self, texts: Sequence[str]) -> None:
        self._texts = tuple(texts)
        self.size = sum(map(len, self._texts))
        self._words: _Words | None = None
        self._runs: _Runs | None = None
        self._hosts: dict[str, int] | None = None
        self._emails: dict[str, int] | None = None
        self._numbers: dict[Decimal, int] | None = None
        self._dates: dict[str, int] | None = None

    def __len__(self) -> int:
        return len(self._texts)

    @property
    def texts(self) -> tuple[str, ...]:
        return self._texts

    def text(self, needle: str) -> int | None:
        """``needle`` is in ``normal_text`` form, without ``SEP``."""
        if not self._texts or not needle:
            return None
        if self._words is None:
            self._words = _Words(self._texts)
        return self._words.first(needle)

    def run(self, needle: str) -> int | None:
        """``needle`` is upper-case alphanumerics (an IBAN or another account id)."""
        if not self._texts or not needle:
            return None
        if self._runs is None:
            self._runs = _Runs(self._texts)
        at = self._runs.first(needle)
        return None if at is None else bisect_right(self._runs.offsets, at) - 1

    def host(self, host: str) -> int | None:
        if self._hosts is None:
            self._hosts = _first_piece(self._texts, _hosts)
        return self._hosts.get(host)

    def email(self, key: str) -> int | None:
        if self._emails is None:
            self._emails = _first_piece(self._texts, _emails)
        return self._emails.get(key)

    def date(self, key: str) -> int | None:
        """``key`` as ``fak.policy.dates`` writes it (a date or a time)."""
        if self._dates is None:
            self._dates = _first_piece(self._texts, date_keys)
        return self._dates.get(key)

    def number(self, value: Decimal) -> int | None:
        if self._numbers is None:
            self._numbers = _first_piece(self._texts, _numbers)
        return self._numbers.get(value)


class Segments:
    """An append-only class of pieces as a few ``TextIndex`` segments, so a context that grows
    by a result is indexed by adding a segment, not by indexing everything again. Segments are
    kept like a binary counter by text size (a segment is merged into the one before it while
    that one is no larger), so n characters make O(log n) segments and each character is indexed
    O(log n) times over a run. ``first`` asks them in order: the earliest piece still wins."""

    __slots__ = ("count", "parts")

    def __init__(self, parts: tuple[tuple[int, TextIndex], ...] = ()) -> None:
        self.parts = parts
        self.count = parts[-1][0] + len(parts[-1][1]) if parts else 0

    @classmethod
    def of(cls, texts: Sequence[str]) -> Segments:
        return cls().extended(texts)

    def __len__(self) -> int:
        return self.count

    def extended(self, texts: Sequence[str]) -> Segments:
        """These pieces and ``texts`` after them (self is left as it was)."""
        if not texts:
            return self
        parts = [*self.parts, (self.count, TextIndex(texts))]
        while len(parts) > 1 and parts[-2][1].size <= parts[-1][1].size:
            (start, older), (_, newer) = parts[-2], parts[-1]
            parts[-2:] = [(start, TextIndex(older.texts + newer.texts))]
        return Segments(tuple(parts))

    def first(self, ask: Callable[[TextIndex], int | None]) -> int | None:
        for start, segment in self.parts:
            at = ask(segment)
            if at is not None:
                return start + at
        return None


_K = TypeVar("_K", str, Decimal)


def _first_piece(texts: Sequence[str], tokens: Callable[[str], set[_K]]) -> dict[_K, int]:
    found: dict[_K, int] = {}
    for i in range(len(texts) - 1, -1, -1):  # in reverse, so the first piece wins
        found.update(dict.fromkeys(tokens(texts[i]), i))
    return found
