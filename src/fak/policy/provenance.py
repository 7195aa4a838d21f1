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
refused with TRUST_VIOLATION. Where a value came from is ``fak.policy.origins``'s
``ProvenanceIndex``; this module judges what it answers. Values compare in one normal form per
kind (``fak.policy.lookup`` indexes the run's text in the same forms, once per context and then
only what is appended, so no lookup walks the places where a value's letters recur): ``text``
NFKC + case-fold on word boundaries; ``email`` / ``url`` / ``host`` by the UTS #46 / IDNA 2008
host of ``fak.policy.hosts`` compared whole (``acme.co`` is not the ``acme.co.uk`` the user
wrote; ``straße.de`` is not ``strasse.de``); ``iban`` as whole alphanumeric runs; ``number`` by
value; ``urls`` as every link in a free-text value (any TLD the Public Suffix List knows, IPv4
addresses, any ``scheme://``), walking lists and objects.

An argument a sink names is found under any case- or separator-variant of its name
(``Recipient`` is ``recipient``); one that is absent, null or not a readable scalar is judged
as the rule's ``unknown``, never skipped (an ``optional`` rule lets an absent or null one pass).

Laws (tests/policy/test_provenance.py): a value found only in tool results never satisfies
``user``; for ``user`` and ``trusted`` sinks, adding untrusted text to a context never turns a
refusal into an admission; ``after_untrusted`` tools are refused once any untrusted result is
present. A run with no context is an empty one: every value is "nowhere".
"""

from __future__ import annotations

import re
import threading
import weakref
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from fak.abi import Context, Reason, ToolCall, Verdict
from fak.policy.argrules import arg_key, parse_arg_path, scalar_text
from fak.policy.dates import dates_written
from fak.policy.hosts import links, normal_host
from fak.policy.lookup import normal_text
from fak.policy.manifest import SinkRule
from fak.policy.names import match_key
from fak.policy.origins import Origin, ProvenanceIndex

__all__ = [
    "CompiledSink",
    "Origin",
    "ProvenanceIndex",
    "ProvenanceRung",
    "arg_key",
    "normal_text",
]

_BY: Final = "provenance"


class _Gap:
    """A place a sink names that holds no value to look up: judged as ``unknown``."""

    __slots__ = ("what",)

    def __init__(self, what: str) -> None:
        self.what = what


_ABSENT: Final = _Gap("is missing")  # absent or null (nothing to check if the rule is optional)
_NOT_AN_OBJECT: Final = _Gap("has no readable form")  # the path runs through a non-object


def sink_values(
    args: Mapping[str, Any], path: tuple[tuple[str, bool], ...], keys: bool = False
) -> list[Any]:
    """Every value a sink path reaches, under every key that is a case- or separator-variant of
    the name (``{"Recipient": …}`` is the ``recipient`` argument); an absent or null argument is
    ``_ABSENT``, a place on the path that is not an object ``_NOT_AN_OBJECT``. A path through a
    list reaches each element (nothing in an empty list); a non-list there is one element. With
    ``keys`` (a path ending ``{}``) the values are every key of each object reached (nothing in
    an empty object); anything but an object there has no readable form."""
    current: list[Any] = [args]
    for name, each in path:
        reached: list[Any] = []
        for node in current:
            if isinstance(node, _Gap) or not isinstance(node, Mapping):
                reached.append(node if isinstance(node, _Gap) else _NOT_AN_OBJECT)
                continue
            found = [v for k, v in node.items() if arg_key(str(k)) == name]
            if not found:
                reached.append(_ABSENT)
            for value in found:
                if value is None:
                    reached.append(_ABSENT)
                elif each and isinstance(value, list):
                    reached.extend(value)
                else:
                    reached.append(value)
        current = reached
    if not keys:
        return current
    out: list[Any] = []
    for node in current:
        if isinstance(node, Mapping):
            out.extend(str(key) for key in node)
        else:
            out.append(node if isinstance(node, _Gap) else _NOT_AN_OBJECT)
    return out


def normal_domains(domains: Iterable[str]) -> frozenset[str]:
    """The manifest's domains in host normal form (the loader has checked each has one)."""
    return frozenset(host for host in map(normal_host, domains) if host is not None)


@dataclass(frozen=True, slots=True)
class CompiledSink:
    rule: SinkRule
    path: tuple[tuple[str, bool], ...]  # names as ``arg_key`` folds them
    reason: Reason = Reason.TRUST_VIOLATION
    keys: bool = False  # the path ends ``{}``: every key of the object there
    domains: frozenset[str] = frozenset()  # hosts under these are the user's own

    @classmethod
    def compile(cls, rule: SinkRule, domains: frozenset[str] = frozenset()) -> CompiledSink:
        """``domains``: the manifest's ``pinned_domains`` (normal form), for host kinds."""
        reason = Reason[rule.reason] if rule.reason else Reason.TRUST_VIOLATION
        keys = rule.arg.endswith("{}")
        parsed = parse_arg_path(rule.arg.removesuffix("{}"))
        path = tuple((arg_key(name), each) for name, each in parsed)
        if rule.kind in ("email", "url", "host", "urls"):
            domains = domains | normal_domains(rule.pinned_domains or ())
        else:
            domains = frozenset()
        return cls(rule, path, reason, keys, domains)

    @property
    def label(self) -> str:
        return f"{self.rule.tool}.{self.rule.arg}"

    @property
    def judges_origin(self) -> bool:
        """False for a rule every origin satisfies (``needs: any``, ``unknown: allow``): such a
        sink only screens for secrets, and its values are never looked up."""
        return not (self.rule.needs == "any" and self.rule.unknown == "allow")


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
    secret_sources: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    composed: bool = False  # a sink judges composed text: index every JSON result's leaves
    answer: bool = False  # the manifest's "answer": "annotate" (fak.policy.answer reads it)
    secret_everywhere: bool = False  # "secret_scope": "all": every argument of every call
    name: str = _BY
    rank: int = 110
    _cache: weakref.WeakKeyDictionary[Context, tuple[int, ProvenanceIndex]] = field(
        default_factory=weakref.WeakKeyDictionary
    )
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def guards(self, tool: str) -> bool:
        if self.secret_everywhere:
            return True
        key = match_key(tool)
        return key in self.sinks or key in self.after_untrusted or key in self.always_witness

    def index(self, context: Context | None) -> ProvenanceIndex:
        if context is None:
            return self._build(None)
        pieces = context.pieces  # one snapshot: the version is its length
        with self._lock:
            hit = self._cache.get(context)
        if hit is not None and hit[0] == len(pieces):
            return hit[1]
        if hit is not None and hit[0] < len(pieces):  # a context only grows: index what is new
            built = hit[1].extended(pieces[hit[0] :])
        else:
            built = self._build(None).extended(pieces)
        with self._lock:
            current = self._cache.get(context)
            if current is None or current[0] <= len(pieces):
                self._cache[context] = (len(pieces), built)
        return built

    def _build(self, context: Context | None) -> ProvenanceIndex:
        return ProvenanceIndex(
            context,
            pinned=self.pinned,
            trusted_tools=self.trusted_tools,
            trusted_fields=self.trusted_fields,
            secret_sources=self.secret_sources,
            want_leaves=self.composed,
        )

    def decide(self, call: ToolCall, args: Mapping[str, Any] | None) -> Verdict:
        key = match_key(call.tool)
        sinks = self.sinks.get(key, ())
        mode = self.after_untrusted.get(key)
        if key in self.always_witness:
            return Verdict.require_witness(f"witness {call.tool}: every call is held", _BY)
        if (not sinks and mode is None and not self.secret_everywhere) or args is None:
            return Verdict.defer(_BY)
        if call.context is None:  # a door that passed no run context: judged as the worst case
            if not sinks and mode is None:
                return Verdict.defer(_BY)  # no run, no secret read in it
            return self._without_context(call.tool, sinks, mode, args)
        index = self.index(call.context)
        if mode is not None and index.has_untrusted:
            claim = (
                f"after_untrusted {call.tool}: the run holds {', '.join(index.held_names()[:3])}"
            )
            if mode == "witness":
                return Verdict.require_witness(claim, _BY)
            return Verdict.deny(Reason.TRUST_VIOLATION, _BY, claim=claim)
        if self.secret_everywhere and index.secrets:
            leaked = _secret_anywhere(call.tool, args, sinks, index)
            if leaked is not None:
                return leaked
        if not sinks and mode is None:
            return Verdict.defer(_BY)
        held: Verdict | None = None
        for sink in sinks:
            values = sink_values(args, sink.path, sink.keys)
            if index.secrets and sink.rule.secret != "allow":
                verdict = _secret(sink, values, index)
                if verdict is not None and verdict.kind.value == "DENY":
                    return verdict
                held = held or verdict
            if not sink.judges_origin:
                continue
            if sink.rule.kind == "composed":
                verdict = _composed(sink, values, index)
                if verdict is not None and verdict.kind.value == "DENY":
                    return verdict
                held = held or verdict
                continue
            for text, kind in _probes(values, sink.rule.kind):
                if text is _ABSENT and sink.rule.optional:
                    continue
                if isinstance(text, _Gap):
                    verdict = self.judge(sink, None, text.what)
                elif text is None:
                    verdict = self.judge(sink, None, "has no readable form")
                else:
                    assert isinstance(text, str)
                    origin = index.origin(kind, text, sink.domains)
                    verdict = self.judge(sink, origin, "has no readable form")
                if verdict is None:
                    continue
                if verdict.kind.value == "DENY":
                    return verdict
                held = held or verdict
        return held if held is not None else Verdict.allow(_BY)

    @staticmethod
    def _without_context(
        tool: str, sinks: tuple[CompiledSink, ...], mode: str | None, args: Mapping[str, Any]
    ) -> Verdict:
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
            probes = list(_probes(sink_values(args, sink.path, sink.keys), sink.rule.kind))
            if sink.rule.optional and all(text is _ABSENT for text, _ in probes):
                continue  # an optional argument left out: nothing to judge
            if sink.rule.untrusted != "witness":
                return Verdict.deny(sink.reason, _BY, claim=f"sink {sink.label}: {claim}")
            held = held or Verdict.require_witness(f"sink {sink.label}: {claim}", _BY)
        return held if held is not None else Verdict.allow(_BY)

    @staticmethod
    def judge(sink: CompiledSink, origin: Origin | None, unread: str) -> Verdict | None:
        """None when the value may pass; else the refusal or the witness request."""
        rule = sink.rule
        if origin is not None and origin.source in _ACCEPTS[rule.needs]:
            return None
        if origin is None or origin.source == "nowhere":
            if rule.unknown == "allow":
                return None
            what = unread if origin is None else "appears nowhere in the run"
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


def _composed(sink: CompiledSink, values: list[Any], index: ProvenanceIndex) -> Verdict | None:
    """Judge a text the model composed by the values it carries, each as the rule needs: every
    tool-result leaf it holds on whole runs (``Booking hotel {name}``), every address, link and
    date written in it. The model's own words around them are not judged."""
    held: Verdict | None = None
    for value in values:
        if isinstance(value, _Gap):
            if value is _ABSENT and sink.rule.optional:
                continue
            verdicts: Iterable[Verdict | None] = (ProvenanceRung.judge(sink, None, value.what),)
        else:
            scalar = scalar_text(value)
            texts = (scalar,) if scalar is not None else tuple(_strings(value))
            verdicts = (
                ProvenanceRung.judge(sink, origin, "has no readable form")
                for text in texts
                for origin in _carried(text, index, sink.domains)
            )
        for verdict in verdicts:
            if verdict is not None and verdict.kind.value == "DENY":
                return verdict
            held = held or verdict
    return held


def _carried(text: str, index: ProvenanceIndex, domains: frozenset[str]) -> Iterator[Origin | None]:
    """The origin of each value a composed text carries (None: one that does not parse)."""
    for _, written, source in index.leaves.within(text):
        yield index.leaf_origin(written, source)
    if "@" in text:
        for word in text.split():
            if "@" in word:
                yield index.origin("email", word.strip(_WORD_EDGE), domains)
    if _LINKISH.search(text) is not None:  # a link has a dot (any of the four) or a scheme
        for link in links(text):  # an address's host too: it must come from where it did
            yield index.origin("url", link, domains)
    for groups in dates_written(text):
        yield index.dated(groups)


_LINKISH: Final = re.compile("[.\u3002\uff0e\uff61]|://")
_WORD_EDGE: Final = "\"'()[]<>{},;:!?."


def _secret_anywhere(
    tool: str, args: Mapping[str, Any], sinks: tuple[CompiledSink, ...], index: ProvenanceIndex
) -> Verdict | None:
    """``secret_scope: all``: SECRET_EXFIL when any argument of the call (every string and
    number in it, keys too) carries a secret the user did not write. A top-level argument a sink
    of the tool names is left to that sink (its own ``secret`` switch decides)."""
    own = {sink.path[0][0] for sink in sinks if len(sink.path) == 1}
    for name, value in args.items():
        if arg_key(str(name)) in own:
            continue
        scalar = scalar_text(value)
        for text in (scalar,) if scalar is not None else _strings(value):
            for key, _, source in index.secrets.within(text):
                if not index.user_wrote(key):
                    claim = f"{tool}: an argument carries a secret read from {source}"
                    return Verdict.deny(Reason.SECRET_EXFIL, _BY, claim=claim)
    return None


def _secret(sink: CompiledSink, values: list[Any], index: ProvenanceIndex) -> Verdict | None:
    """SECRET_EXFIL (or a witness request) when a value at the sink carries, on whole runs of
    letters and digits, a value a confidentiality source returned in this run and the user did
    not write themselves; None when it carries none."""
    for value in values:
        if isinstance(value, _Gap):
            continue
        scalar = scalar_text(value)
        for text in (scalar,) if scalar is not None else _strings(value):
            for key, _, source in index.secrets.within(text):
                if index.user_wrote(key):
                    continue
                claim = f"sink {sink.label}: the value carries a secret read from {source}"
                if sink.rule.secret == "witness":
                    return Verdict.require_witness(claim, _BY)
                return Verdict.deny(Reason.SECRET_EXFIL, _BY, claim=claim)
    return None


def _probes(values: Iterable[Any], kind: str) -> Iterator[tuple[str | _Gap | None, str]]:
    """(text, comparison kind) for each value at a sink (a ``_Gap`` where there is none, None
    for one that is not a scalar); a ``urls`` value yields every link written anywhere in it,
    walking a list or an object (its keys too) instead of skipping it."""
    for value in values:
        if isinstance(value, _Gap):
            yield value, kind
        elif kind != "urls":
            yield scalar_text(value), kind
        else:
            for text in _strings(value):
                for link in links(text):
                    yield link, "url"


def _strings(value: Any) -> Iterator[str]:
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            yield node
        elif isinstance(node, Mapping):
            for key, item in node.items():
                stack.extend((str(key), item))
        elif isinstance(node, (list, tuple)):
            stack.extend(node)
