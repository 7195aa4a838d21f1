"""Where a held call's argument values sit in the run (tier T3, pure): the console's highlights.

``findings`` walks the redacted arguments of a hold's ``HoldEvidence`` and, for every scalar
value of four or more significant characters, finds its spans in each tool result the model was
shown and says whether the user's own messages hold it too. Values compare exactly, then with
case, spaces and hyphens ignored (an IBAN written in groups); offsets are into the stored text,
so the page can cut it into plain-text runs with the span marked. ``sink_argument`` reads which
argument a sink rule named from the rule's claim. No I/O; nothing here renders HTML.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any, Final

from fak.kernel.evidence import HoldEvidence
from fak.policy.monitor import REDACTED

__all__ = ["findings", "locate", "sink_argument"]

MIN_SIGNIFICANT: Final = 4
MAX_SPANS: Final = 8  # spans kept per value per text
_DROP: Final = frozenset(" \t\r\n-\u00a0")
_SINK: Final = re.compile(r"^sink ([^\s(]+) ")


def _compact(text: str) -> tuple[str, list[int]]:
    """``text`` without spaces and hyphens, case-folded, and where each kept character was."""
    chars: list[str] = []
    where: list[int] = []
    for i, ch in enumerate(text):
        if ch not in _DROP:
            chars.append(ch.casefold())
            where.append(i)
    return "".join(chars), where


def locate(value: str, text: str) -> list[tuple[int, int]]:
    """The spans (start, end) of ``value`` in ``text``: exact matches, else compact ones."""
    spans: list[tuple[int, int]] = []
    start = text.find(value)
    while start >= 0 and len(spans) < MAX_SPANS:
        spans.append((start, start + len(value)))
        start = text.find(value, start + len(value))
    if spans:
        return spans
    needle, _ = _compact(value)
    if len(needle) < MIN_SIGNIFICANT:
        return []
    hay, where = _compact(text)
    at = hay.find(needle)
    while at >= 0 and len(spans) < MAX_SPANS:
        spans.append((where[at], where[at + len(needle) - 1] + 1))
        at = hay.find(needle, at + len(needle))
    return spans


def _leaves(value: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield from _leaves(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _leaves(item, f"{path}[{i}]")
    elif isinstance(value, str | int | float) and not isinstance(value, bool):
        text = str(value)
        if text != REDACTED and len(_compact(text)[0]) >= MIN_SIGNIFICANT:
            yield path, text


def sink_argument(claim: str) -> str:
    """``recipient`` from ``sink send_money.recipient (needs user): ...``; else empty."""
    m = _SINK.match(claim)
    if m is None:
        return ""
    _, _, arg = m.group(1).partition(".")
    return arg


def findings(evidence: HoldEvidence) -> list[dict[str, Any]]:
    """For each argument value: its path, the value, whether the user wrote it, and its spans
    in each tool result (by index into ``evidence.results``)."""
    out: list[dict[str, Any]] = []
    users = [_compact(u)[0] for u in evidence.user]
    for path, value in _leaves(evidence.arguments, ""):
        needle = _compact(value)[0]
        sources = []
        for index, result in enumerate(evidence.results):
            spans = locate(value, result.text)
            if spans:
                sources.append({"result": index, "spans": [list(s) for s in spans]})
        out.append(
            {
                "arg": path,
                "value": value,
                "in_user": any(needle in u for u in users),
                "sources": sources,
            }
        )
    return out
