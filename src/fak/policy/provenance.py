"""Provenance of argument values: the sink rung (tier T1, pure).

A sink rule names a destination or payload argument (``send_money.recipient``,
``send_email.recipients[]``, ``post_webpage.url``) and where its value must have come from. The
rung looks every value up in the run's ``fak.abi.Context``:

- **user** — the value appears in the user's or system text, or is pinned in the manifest;
- **trusted** — else it appears in a result of a tool the manifest names a trusted source (the
  whole result, or only the values at the listed JSON fields of it);
- **untrusted** — else it appears in any other tool result (the witness names which);
- **nowhere** — the model made it up; the rule's ``unknown`` decides (deny, witness, allow).

A value must be satisfied by its rule's ``needs`` (user ⊂ trusted ⊂ any); else the call is
refused with TRUST_VIOLATION. Lookups compare normalised forms, never raw bytes:

- every text is NFKC-normalised and case-folded, and runs of white space become one space;
- ``text`` values match a normalised substring that starts and ends on a word boundary;
- ``email`` values are parsed (one address, ``Name <addr>`` allowed) and matched as
  ``local@domain``; ``url`` values by their parsed host, ``host`` values as hosts — a host
  must stand alone in the text (``evil-example.com`` does not contain ``example.com``);
- ``iban`` values (and other account ids) match upper-case with white space and hyphens
  removed, as a whole number of the text's alphanumeric runs (``DE89 3704 0044 …`` in a bill
  matches ``DE89370400…``; a prefix that ends inside a group does not);
- ``number`` values match any number written in the text with the same absolute value
  (``1,250.00`` matches ``1250``);
- ``urls`` values are free text (a message body): every link or bare domain written in it is
  judged as a ``url`` on its own, so a body is admitted only if each of its links is.

Laws (tests/policy/test_provenance.py): a value found only in tool results never satisfies
``user``; for ``user`` and ``trusted`` sinks, adding untrusted text to a context never turns a
refusal into an admission; ``after_untrusted`` tools are refused once any untrusted result is
present. A run with no context is an empty one: every value is "nowhere".
"""

from __future__ import annotations

import json
import re
import threading
import unicodedata
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any, Final

from fak.abi import Context, PieceKind, Reason, ToolCall, Verdict
from fak.policy.argrules import email_address, parse_arg_path, scalar_text, url_host, values_at
from fak.policy.manifest import SinkRule
from fak.policy.names import match_key

__all__ = [
    "CompiledSink",
    "Origin",
    "ProvenanceIndex",
    "ProvenanceRung",
    "normal_text",
]

_BY: Final = "provenance"
_SPACE = re.compile(r"\s+")
_COMPACT_DROP = re.compile(r"[\s\-]+")
_ALNUM_RUN = re.compile(r"[^\W_]+")
_LINK = re.compile(
    r"(?i)\b(?:https?://[^\s<>\"'`)\]]+|www\.[^\s<>\"'`)\]]+|"
    r"(?:[a-z0-9-]+\.)+(?:com|org|net|io|dev|ai|co|info|biz|app|xyz|me|us|uk|de|fr|ru|cn)"
    r"(?:/[^\s<>\"'`)\]]*)?)"
)
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![\w])")


def normal_text(text: str) -> str:
    """NFKC, case-folded, white space collapsed: the form every lookup compares."""
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def _compact(text: str) -> str:
    return _COMPACT_DROP.sub("", unicodedata.normalize("NFKC", text)).upper()


@dataclass(frozen=True, slots=True)
class _Runs:
    """A text's alphanumeric runs joined (``DE89 3704 …`` -> ``DE893704…``), with the offsets
    where a run starts and ends, so a grouped account number matches only whole runs."""

    joined: str
    starts: frozenset[int]
    ends: frozenset[int]

    @classmethod
    def of(cls, text: str) -> _Runs:
        parts: list[str] = []
        starts: set[int] = set()
        ends: set[int] = set()
        at = 0
        for match in _ALNUM_RUN.finditer(unicodedata.normalize("NFKC", text).upper()):
            starts.add(at)
            parts.append(match.group())
            at += len(match.group())
            ends.add(at)
        return cls("".join(parts), frozenset(starts), frozenset(ends))

    def has(self, needle: str) -> bool:
        at = self.joined.find(needle)
        while at != -1:
            if at in self.starts and at + len(needle) in self.ends:
                return True
            at = self.joined.find(needle, at + 1)
        return False


def _numbers(text: str) -> frozenset[Decimal]:
    out: set[Decimal] = set()
    for match in _NUMBER.finditer(unicodedata.normalize("NFKC", text)):
        try:
            out.add(abs(Decimal(match.group().replace(",", ""))))
        except InvalidOperation:
            continue
    return frozenset(out)


def _word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _host_char(ch: str) -> bool:
    return ch.isalnum() or ch in "-._"


def _email_char(ch: str) -> bool:
    return ch.isalnum() or ch in "._%+-"


def _find(haystack: str, needle: str, inside: Any) -> bool:
    """``needle`` occurs in ``haystack`` with no ``inside`` character touching either end
    (ends of the needle that are not themselves such characters need no boundary)."""
    if not needle:
        return False
    start = haystack.find(needle)
    check_left = inside(needle[0])
    check_right = inside(needle[-1])
    while start != -1:
        end = start + len(needle)
        left_ok = not check_left or start == 0 or not inside(haystack[start - 1])
        right_ok = not check_right or end == len(haystack) or not inside(haystack[end])
        if not right_ok and haystack[end] == ".":  # a full stop ends a sentence, not a host
            right_ok = (
                end + 1 == len(haystack)
                or not haystack[end + 1].isalnum()
                or inside is _host_char  # "www.x.com.They …": the user's own text, unspaced
            )
        if left_ok and right_ok:
            return True
        start = haystack.find(needle, start + 1)
    return False


@dataclass(slots=True)
class _View:
    """The normalised forms of one piece of text, built on first use."""

    raw: str
    _text: str | None = None
    _runs: _Runs | None = None
    _numbers: frozenset[Decimal] | None = None

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = normal_text(self.raw)
        return self._text

    @property
    def runs(self) -> _Runs:
        if self._runs is None:
            self._runs = _Runs.of(self.raw)
        return self._runs

    @property
    def numbers(self) -> frozenset[Decimal]:
        if self._numbers is None:
            self._numbers = _numbers(self.raw)
        return self._numbers


@dataclass(frozen=True, slots=True)
class _Needle:
    kind: str
    value: Any


def _needle(kind: str, value: str) -> _Needle | None:
    """The comparable form of one argument value, or None when it has none (unparseable)."""
    if kind == "email":
        address = email_address(value)
        return None if address is None else _Needle("email", f"{address[0]}@{address[1]}")
    if kind in ("url", "host"):
        candidate = value.strip()
        host = url_host(candidate) if "://" in candidate else url_host(f"https://{candidate}/")
        if host is None or (kind == "host" and ("/" in candidate or "@" in candidate)):
            return None
        return _Needle("host", normal_text(host))
    if kind == "iban":
        compact = _compact(value)
        return _Needle("iban", compact) if compact.isalnum() else None
    if kind == "number":
        try:
            return _Needle("number", abs(Decimal(value.strip().replace(",", ""))))
        except InvalidOperation:
            return None
    text = normal_text(value)
    return _Needle("text", text) if text else None


def _matches(view: _View, needle: _Needle) -> bool:
    kind = needle.kind
    if kind == "number":
        return needle.value in view.numbers
    if kind == "iban":
        return bool(view.runs.has(needle.value))
    if kind == "host":
        return _find(view.text, needle.value, _host_char)
    if kind == "email":
        return _find(view.text, needle.value, _email_char)
    return _find(view.text, needle.value, _word)


class Origin(tuple[str, str, str]):
    """(source, tool, call id): source is user, trusted, untrusted or nowhere."""

    __slots__ = ()

    @property
    def source(self) -> str:
        return self[0]


_USER = Origin(("user", "", ""))
_NOWHERE = Origin(("nowhere", "", ""))


def _name(tool: str, call_id: str) -> str:
    return f"{tool}#{call_id}" if call_id else tool


def _field_values(doc: Any, path: str) -> list[Any]:
    """Values at a result path: ``[]`` walks a list, ``name`` a field, ``name[]`` both."""
    nodes = [doc]
    for part in path.split("."):
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
    return nodes


def _scalars(values: Iterable[Any]) -> Iterable[str]:
    for value in values:
        text = scalar_text(value)
        if text is not None:
            yield text


class ProvenanceIndex:
    """The normalised views of one context under one policy's trusted sources."""

    __slots__ = ("has_untrusted", "trusted", "untrusted", "untrusted_names", "user")

    def __init__(
        self,
        context: Context | None,
        *,
        pinned: Iterable[str] = (),
        trusted_tools: frozenset[str] = frozenset(),
        trusted_fields: Mapping[str, tuple[str, ...]] | None = None,
    ) -> None:
        fields = trusted_fields or {}
        self.user: list[_View] = [_View(p) for p in pinned]
        self.trusted: list[tuple[_View, str, str]] = []
        self.untrusted: list[tuple[_View, str, str]] = []
        for piece in context.pieces if context is not None else ():
            if piece.kind is PieceKind.USER:
                self.user.append(_View(piece.text))
                continue
            key = match_key(piece.tool)
            if key in trusted_tools:
                self.trusted.append((_View(piece.text), piece.tool, piece.call_id))
                continue
            paths = fields.get(key)
            if paths:
                try:
                    doc = json.loads(piece.text)
                except ValueError:
                    doc = None
                for path in paths:
                    for value in _scalars(_field_values(doc, path)):
                        self.trusted.append((_View(value), piece.tool, piece.call_id))
            self.untrusted.append((_View(piece.text), piece.tool, piece.call_id))
        self.has_untrusted = bool(self.untrusted)
        self.untrusted_names = sorted(
            {f"{tool}#{cid}" if cid else tool for _, tool, cid in self.untrusted}
        )

    def origin(self, kind: str, value: str) -> Origin | None:
        """Where ``value`` (compared as ``kind``) came from; None if it has no such form."""
        needle = _needle(kind, value)
        if needle is None:
            return None
        if any(_matches(view, needle) for view in self.user):
            return _USER
        for source, views in (("trusted", self.trusted), ("untrusted", self.untrusted)):
            for view, tool, call_id in views:
                if _matches(view, needle):
                    return Origin((source, tool, call_id))
        return _NOWHERE


@dataclass(frozen=True, slots=True)
class CompiledSink:
    rule: SinkRule
    path: tuple[tuple[str, bool], ...]
    reason: Reason = Reason.TRUST_VIOLATION

    @classmethod
    def compile(cls, rule: SinkRule) -> CompiledSink:
        reason = Reason[rule.reason] if rule.reason else Reason.TRUST_VIOLATION
        return cls(rule, parse_arg_path(rule.arg), reason)

    @property
    def label(self) -> str:
        return f"{self.rule.tool}.{self.rule.arg}"


_ACCEPTS: Final = {
    "user": frozenset({"user"}),
    "trusted": frozenset({"user", "trusted"}),
    "any": frozenset({"user", "trusted", "untrusted"}),
}


@dataclass(slots=True)
class ProvenanceRung:
    """Rank 110, after the monitor: judges only calls the floor would admit, and only tools
    with sink rules, an ``after_untrusted`` entry or a ``witness`` entry (every other call
    defers at once)."""

    sinks: Mapping[str, tuple[CompiledSink, ...]]
    after_untrusted: Mapping[str, str]
    pinned: tuple[str, ...] = ()
    always_witness: frozenset[str] = frozenset()
    trusted_tools: frozenset[str] = frozenset()
    trusted_fields: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    name: str = _BY
    rank: int = 110
    _cache: weakref.WeakKeyDictionary[Context, tuple[int, ProvenanceIndex]] = field(
        default_factory=weakref.WeakKeyDictionary
    )
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def guards(self, tool: str) -> bool:
        key = match_key(tool)
        return key in self.sinks or key in self.after_untrusted or key in self.always_witness

    def index(self, context: Context | None) -> ProvenanceIndex:
        if context is None:
            return self._build(None)
        version = context.version
        with self._lock:
            hit = self._cache.get(context)
        if hit is not None and hit[0] == version:
            return hit[1]
        built = self._build(context)
        with self._lock:
            self._cache[context] = (version, built)
        return built

    def _build(self, context: Context | None) -> ProvenanceIndex:
        return ProvenanceIndex(
            context,
            pinned=self.pinned,
            trusted_tools=self.trusted_tools,
            trusted_fields=self.trusted_fields,
        )

    def decide(self, call: ToolCall, args: Mapping[str, Any] | None) -> Verdict:
        key = match_key(call.tool)
        sinks = self.sinks.get(key, ())
        mode = self.after_untrusted.get(key)
        if key in self.always_witness:
            return Verdict.require_witness(f"witness {call.tool}: every call is held", _BY)
        if (not sinks and mode is None) or args is None:
            return Verdict.defer(_BY)
        if call.context is None:  # a door that passed no run context: judged as the worst case
            return self._without_context(call.tool, sinks, mode)
        index = self.index(call.context)
        if mode is not None and index.has_untrusted:
            claim = (
                f"after_untrusted {call.tool}: the run holds {', '.join(index.untrusted_names[:3])}"
            )
            if mode == "witness":
                return Verdict.require_witness(claim, _BY)
            return Verdict.deny(Reason.TRUST_VIOLATION, _BY, claim=claim)
        held: Verdict | None = None
        for sink in sinks:
            values = values_at(args, sink.path)
            for text, kind in _probes(values or (), sink.rule.kind):
                origin = index.origin(kind, text) if text is not None else None
                verdict = self._judge(sink, origin)
                if verdict is None:
                    continue
                if verdict.kind.value == "DENY":
                    return verdict
                held = held or verdict
        return held if held is not None else Verdict.allow(_BY)

    @staticmethod
    def _without_context(tool: str, sinks: tuple[CompiledSink, ...], mode: str | None) -> Verdict:
        """No run context came with the call, so where its values came from cannot be known:
        ``after_untrusted`` applies as if a result were in, each sink as if its value came from
        a tool result (its ``untrusted`` answer). A rule is never skipped for want of context."""
        claim = f"{tool}: no run context came with the call; judged as if from a tool result"
        if mode is not None:
            if mode == "witness":
                return Verdict.require_witness(claim, _BY)
            return Verdict.deny(Reason.TRUST_VIOLATION, _BY, claim=claim)
        held: Verdict | None = None
        for sink in sinks:
            if sink.rule.untrusted != "witness":
                return Verdict.deny(sink.reason, _BY, claim=f"sink {sink.label}: {claim}")
            held = held or Verdict.require_witness(f"sink {sink.label}: {claim}", _BY)
        return held if held is not None else Verdict.allow(_BY)

    @staticmethod
    def _judge(sink: CompiledSink, origin: Origin | None) -> Verdict | None:
        """None when the value may pass; else the refusal or the witness request."""
        rule = sink.rule
        if origin is not None and origin.source in _ACCEPTS[rule.needs]:
            return None
        if origin is None or origin.source == "nowhere":
            if rule.unknown == "allow":
                return None
            what = "has no readable form" if origin is None else "appears nowhere in the run"
            claim = f"sink {sink.label} (needs {rule.needs}): the value {what}"
            if rule.unknown == "witness":
                return Verdict.require_witness(claim, _BY)
            return Verdict.deny(sink.reason, _BY, claim=claim)
        source = f"{origin[1]}#{origin[2]}" if origin[2] else origin[1]
        claim = (
            f"sink {sink.label} (needs {rule.needs}): the value came from {origin.source} {source}"
        )
        if rule.untrusted == "witness":
            return Verdict.require_witness(claim, _BY)
        return Verdict.deny(sink.reason, _BY, claim=claim)


def _probes(values: Iterable[Any], kind: str) -> Iterable[tuple[str | None, str]]:
    """(text, comparison kind) for each value at a sink; a ``urls`` value yields its links."""
    for value in values:
        text = scalar_text(value)
        if kind != "urls":
            yield text, kind
            continue
        for link in _LINK.findall(text or ""):
            yield link.rstrip(".,;:!?"), "url"
