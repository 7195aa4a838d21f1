"""Labelled values found inside a sink's text: secrets and tool-result leaves (tier T1, pure).

A ``ValueTable`` holds short values a run has read — the fields of a confidentiality source, or
every scalar leaf of a tool result — each with the ``tool#call`` it came from. ``within(text)``
answers which of them a (composed) text carries, compared as whole runs of letters and digits
(NFKC, upper case, everything else dropped): ``4111 1111 1111 1111`` carries
``4111-1111-1111-1111``, ``Booking hotel Riverside View`` carries ``Riverside View``, but
``1234`` does not carry ``123`` and ``Bobby`` does not carry ``Bob``. Values shorter than
``MIN_KEY`` letters and digits are not kept (``true``, ``1``, ``ok`` would be found everywhere).

A probe walks the text's run starts once and hashes ``MIN_KEY`` characters at each, so its cost
is the text's length, not the number of values held. Tables grow by copy (``extended``), as the
provenance index does. Judging is ``fak.policy.provenance``'s; nothing here refuses.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from itertools import accumulate, repeat
from operator import add
from typing import Any, Final

import orjson

__all__ = ["MIN_KEY", "ValueTable", "leaves", "parsed", "run_key"]

MIN_KEY: Final = 3
_WIDTHS: Final = repeat(MIN_KEY)  # endless: zipped against each text's run starts
_FEW_KEYS: Final = 16  # up to this many values, a probe searches for each instead
_ALNUM_RUN: Final = re.compile(r"[^\W_]+")
_RUN_SPLIT: Final = str.maketrans({chr(i): " " for i in range(128) if not chr(i).isalnum()})
_NOT_ALNUM: Final = bytes(i for i in range(128) if not chr(i).isalnum())
_NOT_ALNUM_BUT_SEP: Final = _NOT_ALNUM[1:]  # keeps NUL, the batch separator
_MAX_LEAF: Final = 256  # a longer leaf is prose, not a value a sink could carry whole


def _runs(text: str) -> list[str]:
    if text.isascii():  # NFKC leaves ASCII as it is
        return text.upper().translate(_RUN_SPLIT).split()
    return _ALNUM_RUN.findall(unicodedata.normalize("NFKC", text).upper())


def _joined(text: str) -> str:
    """``run_key(text)``, for ASCII in three C calls (no list of runs)."""
    if text.isascii():
        return text.upper().encode("ascii").translate(None, _NOT_ALNUM).decode("ascii")
    return "".join(_runs(text))


def run_key(text: str) -> str:
    """The form values compare in: the letters and digits of ``text``, NFKC, upper case."""
    return "".join(_runs(text))


def parsed(text: str) -> Any:
    """A tool result's JSON document, or None when it is not JSON."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None


def leaves(doc: Any) -> Iterator[str]:
    """Every string and number leaf of a JSON document (not its keys, not booleans or null)."""
    stack = [doc]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            yield node
        elif isinstance(node, bool) or node is None:
            continue
        elif isinstance(node, (int, float)):
            yield str(node)
        elif isinstance(node, Mapping):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


class ValueTable:
    """Values keyed by their first ``MIN_KEY`` run characters, then by length, then whole: a
    probe at a run start costs one lookup per distinct length under its head (IBANs, dates,
    ids of one shape share one), never a walk over the values. The first value of a key (the
    earliest piece) keeps it; each remembers its source (an index into ``names``) and how it
    was written."""

    __slots__ = ("_by_head", "_keys", "names")

    def __init__(self) -> None:
        self._by_head: dict[str, dict[int, dict[str, tuple[int, str]]]] = {}
        self._keys: frozenset[str] = frozenset()
        self.names: tuple[tuple[str, str], ...] = ()

    def __bool__(self) -> bool:
        return bool(self._by_head)

    def extended(self, found: Iterable[tuple[str, str, Iterable[str]]]) -> ValueTable:
        """This table with the values of each (tool, call id, values); self is unchanged (the
        heads the new values touch are copied, the rest shared)."""
        by_head = dict(self._by_head)
        names = list(self.names)
        touched: set[str] = set()
        added: list[str] = []
        for tool, call_id, values in found:
            kept = [v for v in values if len(v) <= _MAX_LEAF]
            keys = _keys_of(kept)
            name = len(names)
            used = False
            for key, written in zip(keys, kept, strict=True):
                if len(key) < MIN_KEY or key in self._keys:
                    continue
                head = key[:MIN_KEY]
                if head not in touched:
                    touched.add(head)
                    old = by_head.get(head)
                    by_head[head] = {n: dict(d) for n, d in old.items()} if old else {}
                bucket = by_head[head].setdefault(len(key), {})
                if key not in bucket:
                    bucket[key] = (name, written)
                    added.append(key)
                    used = True
            if used:
                names.append((tool, call_id))
        if not added:
            return self
        grown = ValueTable()
        grown._by_head = by_head
        grown.names = tuple(names)
        grown._keys = self._keys.union(added)
        return grown

    def within(self, text: str) -> Iterator[tuple[str, str, str]]:
        """(run key, as written, ``tool#call``) of each held value ``text`` carries on whole
        runs, in the order they start in the text (each value once)."""
        if not self._by_head:
            return
        if len(self._keys) <= _FEW_KEYS:  # a few secrets: one C substring search each
            flat = _joined(text)
            if not any(key in flat for key in self._keys):
                return
        runs = _runs(text)
        if not runs:
            return
        joined = "".join(runs)
        ends = list(accumulate(map(len, runs)))
        starts = [0, *ends[:-1]]
        heads = list(map(joined.__getitem__, map(slice, starts, map(add, starts, _WIDTHS))))
        by_head = self._by_head
        if by_head.keys().isdisjoint(heads):  # the common case, decided in C
            return
        stops = set(ends)
        seen: set[str] = set()
        for start, head in zip(starts, heads, strict=True):
            lengths = by_head.get(head)
            if lengths is None:
                continue
            for size, bucket in lengths.items():
                if start + size not in stops:
                    continue
                key = joined[start : start + size]
                hit = bucket.get(key)
                if hit is not None and key not in seen:
                    seen.add(key)
                    tool, call_id = self.names[hit[0]]
                    yield key, hit[1], f"{tool}#{call_id}" if call_id else tool


def _keys_of(values: list[str]) -> list[str]:
    """``run_key`` of each value; ASCII values in one batch of C calls."""
    blob = "\x00".join(values)
    if blob.isascii() and blob.count("\x00") == len(values) - 1:
        flat = blob.upper().encode("ascii").translate(None, _NOT_ALNUM_BUT_SEP).decode("ascii")
        return flat.split("\x00") if values else []
    return [_joined(value) for value in values]
