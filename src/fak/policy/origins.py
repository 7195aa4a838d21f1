"""Where argument values came from: the provenance index (tier T1, pure).

``ProvenanceIndex`` holds one run's ``fak.abi.Context`` under one policy's trusted sources as
three classes of text (the user's and pinned values, trusted results, untrusted results) and
answers ``origin(kind, value)`` with an ``Origin``: the first class that holds the value in its
kind's normal form (``fak.policy.lookup``), with the tool and call that gave it, else "nowhere".
It also gathers what confidentiality sources returned (``secrets``) and, for composed sinks,
every JSON leaf of a result (``leaves``). It refuses nothing: ``fak.policy.provenance`` judges.
"""

from __future__ import annotations

import copy
import functools
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Final

import orjson

from fak.abi import Context, Piece, PieceKind
from fak.policy.argrules import scalar_text
from fak.policy.dates import value_groups
from fak.policy.hosts import email_address, url_host
from fak.policy.labels import ValueTable, leaves, parsed
from fak.policy.lookup import MARK, SEP, Segments, TextIndex, email_key, normal_text
from fak.policy.names import match_key

__all__ = ["Origin", "ProvenanceIndex", "under"]

_COMPACT_DROP: Final = re.compile(r"[\s\-]+")
_DIGIT: Final = re.compile(r"\d")


def _compact(text: str) -> str:
    return _COMPACT_DROP.sub("", unicodedata.normalize("NFKC", text)).upper()


@dataclass(frozen=True, slots=True)
class _Needle:
    kind: str
    value: Any


def _needle(kind: str, value: str) -> _Needle | None:
    """The comparable form of one argument value, or None when it has none (unparseable)."""
    if kind == "email":
        address = email_address(value)
        return None if address is None else _Needle("email", email_key(*address))
    if kind in ("url", "host"):
        candidate = value.strip()
        if kind == "host" and ("/" in candidate or "@" in candidate):
            return None
        host = url_host(candidate) if "://" in candidate else url_host(f"https://{candidate}/")
        return None if host is None else _Needle("host", host)
    if kind == "iban":
        compact = _compact(value)
        return _Needle("iban", compact) if compact.isalnum() else None
    if kind == "number":
        try:
            number = Decimal(value.strip().replace(",", ""))
        except InvalidOperation:
            return None
        return _Needle("number", abs(number)) if number.is_finite() else None
    if kind in ("date", "datetime"):
        groups = value_groups(value, with_time=kind == "datetime")
        return None if groups is None else _Needle("date", groups)
    text = normal_text(value)
    return _Needle("text", text) if text and SEP not in text and MARK not in text else None


def _first(index: TextIndex, *, needle: _Needle) -> int | None:
    """The index of the first piece of ``index`` that holds the value, or None."""
    match needle.kind:
        case "number":
            return index.number(needle.value)
        case "iban":
            return index.run(needle.value)
        case "host":
            return index.host(needle.value)
        case "email":
            return index.email(needle.value)
        case "date":  # one group of alternative keys
            found = [at for key in needle.value if (at := index.date(key)) is not None]
            return min(found) if found else None
        case _:
            return index.text(needle.value)


class Origin(tuple[str, str, str]):
    """(source, tool, call id): source is user, trusted, untrusted or nowhere."""

    __slots__ = ()

    @property
    def source(self) -> str:
        return self[0]


_USER = Origin(("user", "", ""))
_NOWHERE = Origin(("nowhere", "", ""))
_RANK: Final = {"user": 0, "trusted": 1, "untrusted": 2, "nowhere": 3}


def _name(tool: str, call_id: str) -> str:
    return f"{tool}#{call_id}" if call_id else tool


def _field_values(doc: Any, path: str) -> list[Any]:
    """Values at a result path: ``[]`` walks a list, ``name`` a field, ``name[]`` both, and a
    last ``name{}`` (or ``{}``) gives every key of an object."""
    keys = path.endswith("{}")
    nodes = [doc]
    for part in path.removesuffix("{}").split("."):
        name, each = part.removesuffix("[]"), part.endswith("[]")
        step: list[Any] = []
        for node in nodes:
            if name:
                node = node.get(name) if isinstance(node, Mapping) else None
                if node is None:
                    continue
            if each:
                if isinstance(node, list):
                    step.extend(node)
            else:
                step.append(node)
        nodes = step
    if keys:
        return [key for node in nodes if isinstance(node, Mapping) for key in node]
    return nodes


def _labelled(text: str, fields: tuple[str, ...]) -> list[str]:
    """The values of a confidentiality source's result: at ``fields`` of its JSON, or every
    leaf when it names none; a result that is not JSON is labelled line by line."""
    doc = parsed(text)
    if doc is None:
        return [] if fields else [line.strip() for line in text.splitlines() if line.strip()]
    if not fields:
        return list(leaves(doc))
    return [v for path in fields for v in _scalars(_field_values(doc, path))]


def _scalars(values: Iterable[Any]) -> Iterable[str]:
    for value in values:
        text = scalar_text(value)
        if text is not None:
            yield text


class ProvenanceIndex:
    """One context under one policy's trusted sources, as three classes of text (user, trusted,
    untrusted) that a lookup asks in that order. ``extended`` indexes appended pieces only."""

    __slots__ = (
        "_fields",
        "_secret_sources",
        "_tools",
        "_want_leaves",
        "has_untrusted",
        "leaves",
        "pieces",
        "secrets",
        "trusted",
        "trusted_names",
        "untrusted",
        "untrusted_names",
        "user",
    )

    def __init__(
        self,
        context: Context | None,
        *,
        pinned: Iterable[str] = (),
        trusted_tools: frozenset[str] = frozenset(),
        trusted_fields: Mapping[str, tuple[str, ...]] | None = None,
        secret_sources: Mapping[str, tuple[str, ...]] | None = None,
        want_leaves: bool = False,
    ) -> None:
        self._tools = trusted_tools
        self._want_leaves = want_leaves
        self.leaves = ValueTable()  # every leaf of a JSON result, when composed text is judged
        self._fields: Mapping[str, tuple[str, ...]] = trusted_fields or {}
        self._secret_sources: Mapping[str, tuple[str, ...]] = secret_sources or {}
        self.secrets = ValueTable()
        self.pieces = 0
        self.user = Segments.of(list(pinned))
        self.trusted = Segments()
        self.untrusted = Segments()
        self.trusted_names: tuple[tuple[str, str], ...] = ()
        self.untrusted_names: tuple[tuple[str, str], ...] = ()
        self.has_untrusted = False
        if context is not None:
            self._add(context.pieces)

    def extended(self, pieces: Sequence[Piece]) -> ProvenanceIndex:
        """This index with ``pieces`` appended (the context's pieces after ``self.pieces``);
        self is left as it was, for whoever still reads it."""
        grown = copy.copy(self)
        grown._add(pieces)
        return grown

    def _add(self, pieces: Sequence[Piece]) -> None:
        user: list[str] = []
        trusted: list[str] = []
        untrusted: list[str] = []
        trusted_names: list[tuple[str, str]] = []
        untrusted_names: list[tuple[str, str]] = []
        secret: list[tuple[str, str, list[str]]] = []
        found: list[tuple[str, str, list[str]]] = []
        for piece in pieces:
            if piece.kind is PieceKind.USER:
                user.append(piece.text)
                continue
            if self._want_leaves:
                doc = parsed(piece.text)
                if doc is not None and not isinstance(doc, str):
                    found.append((piece.tool, piece.call_id, list(leaves(doc))))
            key = match_key(piece.tool)
            labelled = self._secret_sources.get(key)
            if labelled is not None:
                secret.append((piece.tool, piece.call_id, _labelled(piece.text, labelled)))
            if key in self._tools:
                trusted.append(piece.text)
                trusted_names.append((piece.tool, piece.call_id))
                continue
            paths = self._fields.get(key)
            if paths:
                try:
                    doc = orjson.loads(piece.text)
                except orjson.JSONDecodeError:  # not JSON (or not JSON orjson reads): no fields
                    doc = None
                for path in paths:
                    for value in _scalars(_field_values(doc, path)):
                        trusted.append(value)
                        trusted_names.append((piece.tool, piece.call_id))
            untrusted.append(piece.text)
            untrusted_names.append((piece.tool, piece.call_id))
        self.pieces += len(pieces)
        self.user = self.user.extended(user)
        self.trusted = self.trusted.extended(trusted)
        self.untrusted = self.untrusted.extended(untrusted)
        self.trusted_names += tuple(trusted_names)
        self.untrusted_names += tuple(untrusted_names)
        self.has_untrusted = self.has_untrusted or bool(untrusted)
        if secret:
            self.secrets = self.secrets.extended(secret)
        if found:
            self.leaves = self.leaves.extended(found)

    def user_wrote(self, key: str) -> bool:
        """True when the user's text (or ``pinned``) holds ``key`` (a ``run_key``) on whole
        runs: a value the user gave is theirs to send, whatever a tool labels it."""
        return self.user.first(functools.partial(_first, needle=_Needle("iban", key))) is not None

    def held_names(self) -> list[str]:
        """``tool#call`` of every untrusted result, sorted (for the after_untrusted claim)."""
        return sorted({_name(tool, cid) for tool, cid in self.untrusted_names})

    def origin(self, kind: str, value: str, domains: frozenset[str] = frozenset()) -> Origin | None:
        """Where ``value`` (compared as ``kind``) came from; None if it has no such form. A host
        (of a URL or an address) under one of ``domains`` is the user's own."""
        needle = _needle(kind, value)
        if needle is None:
            return None
        if domains and needle.kind in ("host", "email"):
            host = needle.value if needle.kind == "host" else needle.value.rpartition("@")[2]
            if under(host, domains):
                return _USER
        if needle.kind == "date":
            return self.dated(needle.value)
        return self._where(functools.partial(_first, needle=needle))

    def dated(self, groups: tuple[tuple[str, ...], ...]) -> Origin:
        """The origin of a date (and time) as ``fak.policy.dates`` groups it: each group must
        be found; the worst group's origin is the value's."""
        worst = _USER
        for group in groups:
            got = self._where(functools.partial(_first, needle=_Needle("date", group)))
            if _RANK[got.source] > _RANK[worst.source]:
                worst = got
        return worst

    def _where(self, ask: Callable[[TextIndex], int | None]) -> Origin:
        if self.user.first(ask) is not None:
            return _USER
        for source, index, names in (
            ("trusted", self.trusted, self.trusted_names),
            ("untrusted", self.untrusted, self.untrusted_names),
        ):
            at = index.first(ask)
            if at is not None:
                return Origin((source, *names[at]))
        return _NOWHERE

    def leaf_origin(self, written: str, source: str) -> Origin:
        """Where a tool-result leaf a composed text carries came from: the best origin it has
        as text, a date, an address or a number; at worst the result it was read from."""
        best: Origin | None = None
        digits = _DIGIT.search(written) is not None
        for kind, may in (
            ("text", True),
            ("date", digits),
            ("email", "@" in written),
            ("number", digits),
        ):
            got = self.origin(kind, written) if may else None
            if got is not None and (best is None or _RANK[got.source] < _RANK[best.source]):
                best = got
                if best.source == "user":
                    break
        if best is None or best.source == "nowhere":
            tool, _, call_id = source.partition("#")
            return Origin(("untrusted", tool, call_id))
        return best


def under(host: str, domains: frozenset[str]) -> bool:
    """True when ``host`` is one of ``domains`` or a name below one (on label boundaries)."""
    if host in domains:
        return True
    at = host.find(".")
    while at >= 0:
        if host[at + 1 :] in domains:
            return True
        at = host.find(".", at + 1)
    return False
