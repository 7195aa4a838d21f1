"""Where a value first occurs in a run's text: the index behind sink lookups (tier T1, pure).

``TextIndex`` holds the pieces of one origin class (the user's, the trusted or the untrusted
text, in order) and answers "which piece first holds this value, compared as ``kind``" with a
hash probe on the value's normal form: O(length of the value), however large the text and
however often the value's characters recur in it. Each kind's structure is built on first use,
once per index (the rung keeps one index per context version, so once per conversation):

- ``host``: the normal form (``fak.policy.hosts``) of every host-shaped token of the text;
- ``email``: every ``local@host`` written in the text, normalised like the value;
- ``number``: every number written, by absolute value;
- ``text``: word-bounded substrings of the normalised text, keyed per (anchoring, length) pair
  the values asked about; ``iban``: runs of alphanumerics joined, keyed per length, so a value
  matches only whole runs (``DE89 3704 …`` holds ``DE893704…``, not ``E893``).

It never refuses anything itself; ``fak.policy.provenance`` judges what it answers.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from collections.abc import Callable, Sequence
from decimal import Decimal, InvalidOperation
from itertools import accumulate
from typing import Final, TypeVar

from fak.policy.hosts import normal_host

__all__ = ["TextIndex", "email_key", "normal_text"]

SEP: Final = "\x00"  # between pieces: no value holds it, so no match spans two pieces
_SPACE: Final = re.compile(r"\s+")
_WORD: Final = re.compile(r"\w+")
_ALNUM_RUN: Final = re.compile(r"[^\W_]+")
_NUMBER: Final = re.compile(r"(?<![\w.])[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![\w])")
_DELIMS: Final = r"\s/\\:@?#<>()\[\]{}\"'`,;!*|^=&+$%~"
_HOST_TOKEN: Final = re.compile(f"[^{_DELIMS}]+")
_EMAIL: Final = re.compile(f"([\\w.%+'\\-]+)@([^{_DELIMS}]+)")


def normal_text(text: str) -> str:
    """NFKC, case-folded, white space collapsed: the form ``text`` values compare in."""
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def email_key(local: str, host: str) -> str:
    """``local@host`` as both sides compare it (a quote before the local part is not in it)."""
    return f"{local.lstrip(chr(39))}@{host}"


def _is_word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


class _Words:
    """The normalised text of every piece joined by ``SEP``, with where words start and end."""

    __slots__ = ("ends", "ends_list", "joined", "keys", "offsets", "starts")

    def __init__(self, texts: Sequence[str]) -> None:
        forms = [normal_text(t) for t in texts]
        self.joined = SEP.join(forms)
        self.offsets = [0, *accumulate(len(f) + 1 for f in forms)][:-1]
        spans = [m.span() for m in _WORD.finditer(self.joined)]
        self.starts = [s for s, _ in spans]
        self.ends_list = [e for _, e in spans]
        self.ends = frozenset(self.ends_list)
        self.keys: dict[tuple[str, int], dict[str, int]] = {}

    def first(self, needle: str) -> int | None:
        """The offset of the first occurrence of ``needle`` that starts on a word boundary if
        its first character is a word character, and ends on one if its last is."""
        left, right, size = _is_word(needle[0]), _is_word(needle[-1]), len(needle)
        if not left and not right:  # no boundary to respect: a plain substring
            at = self.joined.find(needle)
            return None if at < 0 else at
        mode = ("l" if left else "") + ("r" if right else "")
        keys = self.keys.get((mode, size))
        if keys is None:
            keys = self._build(mode, size)
            self.keys[(mode, size)] = keys
        return keys.get(needle)

    def _build(self, mode: str, size: int) -> dict[str, int]:
        """Every substring of ``size`` characters with the anchoring ``mode`` asks for, mapped
        to its first offset (built in reverse, so the earliest occurrence wins)."""
        text, ends = self.joined, self.ends
        if mode == "lr":
            return {text[s : s + size]: s for s in reversed(self.starts) if s + size in ends}
        if mode == "l":
            limit = len(text) - size
            return {text[s : s + size]: s for s in reversed(self.starts) if s <= limit}
        return {text[e - size : e]: e - size for e in reversed(self.ends_list) if e >= size}


class _Runs:
    """Every piece's alphanumeric runs (NFKC, upper case) joined, pieces apart by ``SEP``."""

    __slots__ = ("ends", "joined", "keys", "offsets", "starts")

    def __init__(self, texts: Sequence[str]) -> None:
        parts: list[str] = []
        starts: list[int] = []
        ends: list[int] = []
        self.offsets: list[int] = []
        at = 0
        for text in texts:
            runs = _ALNUM_RUN.findall(unicodedata.normalize("NFKC", text).upper())
            self.offsets.append(at)
            stops = [at + x for x in accumulate(len(r) for r in runs)]
            starts.extend([at, *stops[:-1]] if runs else [])
            ends.extend(stops)
            parts.append("".join(runs))
            at += len(parts[-1]) + 1
        self.joined = SEP.join(parts)
        self.starts = starts
        self.ends = frozenset(ends)
        self.keys: dict[int, dict[str, int]] = {}

    def first(self, needle: str) -> int | None:
        """The offset of the first occurrence of ``needle`` that covers whole runs."""
        size = len(needle)
        keys = self.keys.get(size)
        if keys is None:
            text, ends = self.joined, self.ends
            keys = {text[s : s + size]: s for s in reversed(self.starts) if s + size in ends}
            self.keys[size] = keys
        return keys.get(needle)


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
    for token in set(_HOST_TOKEN.findall(unicodedata.normalize("NFKC", text))):
        host = normal_host(token.strip("."))
        if host is not None:
            out.add(host)
    return out


def _emails(text: str) -> set[str]:
    out: set[str] = set()
    for local, domain in set(_EMAIL.findall(unicodedata.normalize("NFKC", text))):
        host = normal_host(domain.rstrip("."))
        if host is not None and ":" not in host:
            out.add(email_key(local.lower(), host))
    return out


class TextIndex:
    """One origin class's pieces, in order; ``first`` answers the index of the first piece that
    holds a value in normal form, or None. Structures are built per kind on first use."""

    __slots__ = ("_emails", "_hosts", "_numbers", "_runs", "_texts", "_words")

    def __init__(self, texts: Sequence[str]) -> None:
        self._texts = tuple(texts)
        self._words: _Words | None = None
        self._runs: _Runs | None = None
        self._hosts: dict[str, int] | None = None
        self._emails: dict[str, int] | None = None
        self._numbers: dict[Decimal, int] | None = None

    def __len__(self) -> int:
        return len(self._texts)

    def text(self, needle: str) -> int | None:
        """``needle`` is in ``normal_text`` form, without ``SEP``."""
        if not self._texts or not needle:
            return None
        if self._words is None:
            self._words = _Words(self._texts)
        at = self._words.first(needle)
        return None if at is None else bisect_right(self._words.offsets, at) - 1

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

    def number(self, value: Decimal) -> int | None:
        if self._numbers is None:
            self._numbers = _first_piece(self._texts, _numbers)
        return self._numbers.get(value)


_K = TypeVar("_K", str, Decimal)


def _first_piece(texts: Sequence[str], tokens: Callable[[str], set[_K]]) -> dict[_K, int]:
    found: dict[_K, int] = {}
    for i in range(len(texts) - 1, -1, -1):  # in reverse, so the first piece wins
        found.update(dict.fromkeys(tokens(texts[i]), i))
    return found
