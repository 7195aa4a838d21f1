"""The answer as a sink: names in the model's text that only a tool result gave (tier T1, pure).

With the manifest's ``"answer": "annotate"``, the text the model writes to the user is read
like a ``composed`` sink value, and every entity in it whose best origin is an untrusted tool
result is reported with that result: a link, an e-mail address, an amount (a number with a
currency sign or code), a multi-word capitalised name (a place, a hotel), or any leaf of a JSON
tool result it carries on whole runs. What the user wrote, what a trusted source gave, and what
appears nowhere (the model's own words) is not reported. Nothing is refused or removed: the
door appends ``answer_note``'s lines (``[fak] "Riverside View Hotel" came from tool result
get_reviews#v1``) so the reader knows whose words they are. Held (quarantined) bytes never
reach the context, so what the model repeats from a result is what it was shown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from fak.abi import Context
from fak.policy.hosts import email_address, links
from fak.policy.lookup import normal_text
from fak.policy.origins import Origin, ProvenanceIndex
from fak.policy.provenance import ProvenanceRung

__all__ = ["Named", "answer_note", "answer_sources"]

_SHOWN: Final = 5  # entities named one per line; the rest counted
_WIDTH: Final = 80  # an entity longer than this is shown cut
_AMOUNT: Final = re.compile(
    r"(?:[$€£¥]\s?|\b(?:USD|EUR|GBP|CHF|JPY|CAD|AUD)\s?)(\d[\d,]*(?:\.\d+)?)"
    r"|(\d[\d,]*(?:\.\d+)?)\s?(?:[$€£¥]|(?:USD|EUR|GBP|CHF|JPY|CAD|AUD)\b)"
)
_WORD: Final = r"[A-Z][\w'’&.-]*[\w]"
_LINK: Final = r"(?:of|de|la|le|du|des|del|di|the|and|&|on|at|van|von)"
_NAME: Final = re.compile(rf"\b{_WORD}(?:\s+(?:{_LINK}\s+)?{_WORD})+")
_EDGE: Final = "\"'()[]<>{},;:!?."


@dataclass(frozen=True, slots=True)
class Named:
    """An entity of the answer (as written, cut to ``_WIDTH``) and the result that gave it."""

    entity: str
    source: str


def answer_sources(rung: ProvenanceRung, context: Context | None, text: str) -> tuple[Named, ...]:
    """Every entity of ``text`` whose best origin in ``context`` is an untrusted tool result,
    in order of first appearance, without one that another named entity contains."""
    if not text or context is None:
        return ()
    index = rung.index(context)
    found: dict[str, tuple[int, Named]] = {}
    for at, entity, origin in _entities(text, index):
        if origin is None or origin.source != "untrusted":
            continue
        key = normal_text(entity)
        if key and key not in found:
            source = f"{origin[1]}#{origin[2]}" if origin[2] else origin[1]
            found[key] = (at, Named(_cut(entity), source))
    kept = [
        (at, named)
        for key, (at, named) in found.items()
        if not any(key != other and key in other for other in found)
    ]
    return tuple(named for _, named in sorted(kept, key=lambda pair: pair[0]))


def _entities(text: str, index: ProvenanceIndex) -> list[tuple[int, str, Origin | None]]:
    out: list[tuple[int, str, Origin | None]] = []
    for _, written, source in index.leaves.within(text):
        out.append((_position(text, written), written, index.leaf_origin(written, source)))
    for match in re.finditer(r"\S+@\S+", text):
        word = match.group().strip(_EDGE)
        if email_address(word) is not None:
            out.append((match.start(), word, index.origin("email", word)))
    for link in links(text):
        out.append((_position(text, link), link, index.origin("url", link)))
    for match in _AMOUNT.finditer(text):
        number = match.group(1) or match.group(2)
        out.append((match.start(), match.group().strip(), index.origin("number", number)))
    for match in _NAME.finditer(text):
        out.append((match.start(), match.group(), index.origin("text", match.group())))
    return out


def _position(text: str, written: str) -> int:
    at = text.find(written)
    if at < 0:
        at = text.casefold().find(written.casefold())
    return at if at >= 0 else len(text)


def _cut(entity: str) -> str:
    flat = " ".join(entity.split())
    return flat if len(flat) <= _WIDTH else flat[: _WIDTH - 1] + "…"


def answer_note(named: tuple[Named, ...]) -> str:
    """The lines the door appends to the answer; empty when nothing is named."""
    lines = [f'[fak] "{n.entity}" came from tool result {n.source}' for n in named[:_SHOWN]]
    rest = len(named) - _SHOWN
    if rest > 0:
        lines.append(f"[fak] and {rest} more name(s) came from tool results")
    return "\n".join(lines)
