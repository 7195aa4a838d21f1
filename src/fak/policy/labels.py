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
from typing import Any, Final

import orjson

__all__ = ["MIN_KEY", "ValueTable", "leaves", "parsed", "run_key"]

MIN_KEY: Final = 3
_ALNUM_RUN: Final = re.compile(r"[^\W_]+")
_RUN_SPLIT: Final = str.maketrans({chr(i): " " for i in range(128) if not chr(i).isalnum()})
_MAX_LEAF: Final = 256  # a longer leaf is prose, not a value a sink could carry whole


def _runs(text: str) -> list[str]:
    form = unicodedata.normalize("NFKC", text).upper()
    if form.isascii():
        return form.translate(_RUN_SPLIT).split()
    return _ALNUM_RUN.findall(form)


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
    """Values keyed by their first ``MIN_KEY`` run characters; each remembers where it came
    from (an index into ``names``) and how it was written."""

    __slots__ = ("_by_head", "names")

    def __init__(self) -> None:
        self._by_head: dict[str, tuple[tuple[str, int, str], ...]] = {}
        self.names: tuple[tuple[str, str], ...] = ()

    def __bool__(self) -> bool:
        return bool(self._by_head)

    def extended(self, found: Iterable[tuple[str, str, Iterable[str]]]) -> ValueTable:
        """This table with the values of each (tool, call id, values); self is unchanged."""
        grown: ValueTable | None = None
        for tool, call_id, values in found:
            for written in values:
                if len(written) > _MAX_LEAF:
                    continue
                key = run_key(written)
                if len(key) < MIN_KEY:
                    continue
                if grown is None:
                    grown = ValueTable()
                    grown._by_head = dict(self._by_head)
                    grown.names = self.names
                if not grown.names or grown.names[-1] != (tool, call_id):
                    grown.names += ((tool, call_id),)
                head = key[:MIN_KEY]
                entry = (key, len(grown.names) - 1, written)
                grown._by_head[head] = (*grown._by_head.get(head, ()), entry)
        return self if grown is None else grown

    def within(self, text: str) -> Iterator[tuple[str, str, str]]:
        """(run key, as written, ``tool#call``) of each held value ``text`` carries on whole
        runs, in the order they start in the text (each value once)."""
        if not self._by_head:
            return
        runs = _runs(text)
        joined = "".join(runs)
        ends: set[int] = set()
        starts: list[int] = []
        at = 0
        for run in runs:
            starts.append(at)
            at += len(run)
            ends.add(at)
        seen: set[str] = set()
        by_head = self._by_head
        for start in starts:
            entries = by_head.get(joined[start : start + MIN_KEY])
            if entries is None:
                continue
            for key, name, written in entries:
                if key not in seen and joined.startswith(key, start) and start + len(key) in ends:
                    seen.add(key)
                    tool, call_id = self.names[name]
                    yield key, written, f"{tool}#{call_id}" if call_id else tool
