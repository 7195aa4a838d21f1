"""Policy: a validated manifest compiled for the decide path (tier T1).

``Policy`` is immutable and built once per load: name sets, prefix tuples, the deny map resolved
to reasons, guarded globs, lower-cased redaction keys, and arg rules grouped by lower-cased tool
name with RE2 patterns compiled. ``version`` is the manifest's content hash, the pin that
tool-lock callers attest to. Constructing one never reads files except through ``Policy.load``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from functools import cache
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Final

from fak.abi import Reason
from fak.policy.argrules import CompiledArgRule
from fak.policy.globs import GuardGlob
from fak.policy.manifest import (
    Manifest,
    Posture,
    dump_manifest,
    load_manifest,
    load_manifest_file,
    manifest_hash,
)
from fak.policy.names import match_key, normal_name
from fak.policy.provenance import CompiledSink, ProvenanceRung, normal_domains

__all__ = ["Policy", "default_manifest"]

_DEFAULT_FLOOR: Final = "default-floor.json"


@cache
def _default_text() -> str:
    return resources.files("fak.policy").joinpath(_DEFAULT_FLOOR).read_text(encoding="utf-8")


def default_manifest() -> Manifest:
    """The built-in floor (what ``fak policy --dump`` prints)."""
    return load_manifest(_default_text(), source="<built-in default floor>")


def _provenance_rung(manifest: Manifest) -> ProvenanceRung | None:
    """The sink rung of this manifest, or None when it names no sinks."""
    everywhere = manifest.secret_scope == "all" and bool(manifest.secret_sources)
    if (
        not (manifest.sinks or manifest.after_untrusted or manifest.witness or manifest.answer)
        and not everywhere
    ):
        return None
    sinks: dict[str, list[CompiledSink]] = {}
    domains = normal_domains(manifest.pinned_domains)
    for rule in manifest.sinks:
        sinks.setdefault(match_key(rule.tool), []).append(CompiledSink.compile(rule, domains))
    whole = frozenset(match_key(s.tool) for s in manifest.trusted_sources if s.fields is None)
    fields: dict[str, tuple[str, ...]] = {}
    for source in manifest.trusted_sources:
        if source.fields is not None:
            key = match_key(source.tool)
            fields[key] = (*fields.get(key, ()), *source.fields)
    secret: dict[str, tuple[str, ...]] = {}  # () labels the whole result
    for source in manifest.secret_sources:
        key = match_key(source.tool)
        if source.fields is None or secret.get(key) == ():
            secret[key] = ()
        else:
            secret[key] = (*secret.get(key, ()), *source.fields)
    return ProvenanceRung(
        sinks=MappingProxyType({k: tuple(v) for k, v in sinks.items()}),
        after_untrusted=MappingProxyType(
            {match_key(tool): mode for tool, mode in manifest.after_untrusted.items()}
        ),
        pinned=tuple(manifest.pinned),
        always_witness=frozenset(match_key(tool) for tool in manifest.witness),
        trusted_tools=whole,
        trusted_fields=MappingProxyType(fields),
        secret_sources=MappingProxyType(secret),
        composed=manifest.answer is not None
        or any(rule.kind == "composed" for rule in manifest.sinks),
        answer=manifest.answer is not None,
        secret_everywhere=everywhere,
    )


class Policy:
    """A compiled, immutable floor. Build with ``from_manifest``/``load``/``default``/``empty``."""

    __slots__ = (
        "_deny_keys",
        "allow",
        "allow_prefix",
        "arg_rules",
        "deny",
        "manifest",
        "posture",
        "provenance",
        "redact_fields",
        "root",
        "self_modify_globs",
        "version",
    )

    def __init__(self, manifest: Manifest, *, root: str | None = None) -> None:
        self.manifest: Final = manifest
        self.root: Final = manifest.root or root
        self.version: Final = manifest_hash(manifest)
        self.posture: Final = manifest.posture
        self.allow: Final = frozenset(manifest.allow)
        self.allow_prefix: Final = tuple(dict.fromkeys(manifest.allow_prefix))
        self.deny: Final[Mapping[str, Reason]] = MappingProxyType(
            {tool: Reason[name] for tool, name in manifest.deny.items()}
        )
        self._deny_keys: Final[Mapping[str, Reason]] = MappingProxyType(
            {match_key(tool): reason for tool, reason in self.deny.items()}
        )
        self.self_modify_globs: Final = tuple(GuardGlob(g) for g in manifest.self_modify_globs)
        self.redact_fields: Final = frozenset(f.lower() for f in manifest.redact_fields)
        grouped: dict[str, list[CompiledArgRule]] = {}
        for rule in manifest.arg_rules:
            compiled = CompiledArgRule.compile(rule, self.root)
            grouped.setdefault(compiled.tool_lower, []).append(compiled)
        self.arg_rules: Final[Mapping[str, tuple[CompiledArgRule, ...]]] = MappingProxyType(
            {tool: tuple(rules) for tool, rules in grouped.items()}
        )
        self.provenance: Final = _provenance_rung(manifest)

    # -- construction ---------------------------------------------------------------------
    @classmethod
    def from_manifest(cls, manifest: Manifest, *, root: str | None = None) -> Policy:
        return cls(manifest, root=root)

    @classmethod
    def loads(cls, text: str | bytes, *, source: str = "", root: str | None = None) -> Policy:
        """Parse a manifest; path rules resolve against its ``root``, else ``root``, else the
        current directory."""
        return cls(load_manifest(text, source=source), root=root or os.getcwd())

    @classmethod
    def load(cls, path: str | Path, *, root: str | None = None) -> Policy:
        """Load a manifest file; raises PolicyError (never falls back to another floor)."""
        return cls(load_manifest_file(path), root=root or os.getcwd())

    @classmethod
    def default(cls) -> Policy:
        return cls(default_manifest(), root=os.getcwd())

    @classmethod
    def empty(cls) -> Policy:
        """The ``{}`` floor: every call is refused with DEFAULT_DENY."""
        return cls(Manifest())

    # -- views ----------------------------------------------------------------------------
    def names_allowed(self, tool: str) -> bool:
        """Affirmative allow by exact name or prefix (case-sensitive, on the NFKC form); a name
        that is not a plain identifier is never allowed."""
        form = normal_name(tool)
        if form is None:
            return False
        return form in self.allow or form.startswith(self.allow_prefix)

    def deny_reason(self, tool: str) -> Reason | None:
        """The deny entry for ``tool`` or any case/width variant of it."""
        return self._deny_keys.get(match_key(tool))

    def rules_for(self, tool: str) -> tuple[CompiledArgRule, ...]:
        return self.arg_rules.get(match_key(tool), ())

    @property
    def fail_closed(self) -> bool:
        return self.posture == Posture.FAIL_CLOSED

    def dump(self) -> str:
        return dump_manifest(self.manifest)

    def summary(self) -> dict[str, object]:
        """A small JSON-able description of the admitted floor."""
        return {
            "version": self.manifest.version,
            "posture": self.posture.value,
            "allow": len(self.allow),
            "allow_prefix": list(self.allow_prefix),
            "deny": {tool: reason.name for tool, reason in sorted(self.deny.items())},
            "self_modify_globs": len(self.self_modify_globs),
            "redact_fields": sorted(self.redact_fields),
            "arg_rules": sum(len(r) for r in self.arg_rules.values()),
            "hash": self.version,
        }

    def __repr__(self) -> str:
        return f"Policy(version={self.version[:12]}, {json.dumps(self.summary()['deny'])})"
