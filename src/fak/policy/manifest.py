"""The ``fak-policy/v1`` manifest: strict load, canonical dump, content hash (tier T1).

A manifest is the whole capability floor; loading one replaces the floor, nothing merges. The
loader is strict: an unknown field, an unknown refusal reason, a bad regex or posture, an arg rule
with zero or two matchers, an empty name that would match every tool, or another major version
is a ``PolicyError`` that lists every problem and says what to fix. It never falls back to a more
permissive floor. Pure: parsing and validation only, no file I/O beyond ``load_manifest_file``.
"""

from __future__ import annotations

import enum
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

from fak.abi import Reason
from fak.policy.regex import compile_re2

_HOST_LABEL = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?")
_EMAIL_LOCAL = re.compile(r"[a-z0-9!#$%&'*+/=?^_`{|}~.-]+")
_ARG_PATH = re.compile(r"[^.\[\]\s]+(\[\])?(\.[^.\[\]\s]+(\[\])?)*")
# a sink path may end in ``{}``: every key of that object (``shared_with{}``)
_SINK_PATH = re.compile(r"[^.\[\]{}\s]+(\[\])?(\.[^.\[\]{}\s]+(\[\])?)*(\{\})?")
_RESULT_KEYS = re.compile(r"(\[\]|[^.\[\]{}\s]+(\[\])?)(\.[^.\[\]{}\s]+(\[\])?)*(\{\})?")


def _check_arg_path(value: str) -> str:
    if not _ARG_PATH.fullmatch(value):
        msg = (
            f"arg {value!r} is not a name or a path: use name, name[] for each element of a "
            "list, and a.b / a[].b for nested fields"
        )
        raise ValueError(msg)
    return value


def _check_domains(value: tuple[str, ...]) -> tuple[str, ...]:
    """Each entry a host name under a registrable domain (``acme.com``, ``mail.acme.co.uk``),
    never a public suffix (``com``, ``co.uk``, ``github.io``: that would pin every site). A name
    whose TLD the Public Suffix List does not know (``corp.internal``) needs two labels."""
    from fak.policy.hosts import normal_host, public_suffix, registrable_domain

    for entry in value:
        host = normal_host(entry)
        if host is None or ":" in host or host.replace(".", "").isdigit():
            ok = False
        elif public_suffix(host) is not None:
            ok = registrable_domain(host) is not None
        else:
            ok = "." in host
        if not ok:
            msg = (
                f"pinned_domains entry {entry!r} is not a domain under a registrable name "
                "(acme.com or mail.acme.co.uk; a public suffix such as com, co.uk or github.io, "
                "an IP address or a URL is not one)"
            )
            raise ValueError(msg)
    return value


def _valid_host_pattern(host: str) -> bool:
    """``example.com`` or ``*.example.com``: lower-case DNS labels."""
    bare = host.removeprefix("*.")
    return host == host.lower() and all(_HOST_LABEL.fullmatch(x) for x in bare.split("."))


__all__ = [
    "MANIFEST_VERSION",
    "ArgRule",
    "Manifest",
    "PolicyError",
    "PolicyErrorCode",
    "Posture",
    "Problem",
    "SinkRule",
    "TrustedSource",
    "compile_re2",
    "dump_manifest",
    "load_manifest",
    "load_manifest_file",
    "manifest_hash",
    "refusal_vocabulary",
]

MANIFEST_VERSION: Final = "fak-policy/v1"
_MAJOR_PREFIX: Final = "fak-policy/v"


class Posture(enum.StrEnum):
    FAIL_CLOSED = "fail_closed"
    ADMIT_AND_LOG = "admit_and_log"


class PolicyErrorCode(enum.StrEnum):
    """Stable codes for manifest problems (what a CI gate can branch on)."""

    BAD_JSON = "FAK-POLICY-BAD-JSON"
    UNKNOWN_FIELD = "FAK-POLICY-UNKNOWN-FIELD"
    UNKNOWN_REASON = "FAK-POLICY-UNKNOWN-REASON"
    BAD_VERSION = "FAK-POLICY-BAD-VERSION"
    BAD_POSTURE = "FAK-POLICY-BAD-POSTURE"
    BAD_REGEX = "FAK-POLICY-BAD-REGEX"
    BAD_RULE = "FAK-POLICY-BAD-ARG-RULE"
    BAD_VALUE = "FAK-POLICY-BAD-VALUE"
    BAD_GLOB = "FAK-POLICY-BAD-GLOB"


@dataclass(frozen=True, slots=True)
class Problem:
    code: PolicyErrorCode
    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}" if self.where else self.message


class PolicyError(ValueError):
    """A manifest that cannot be loaded. ``problems`` lists every defect found."""

    def __init__(self, problems: tuple[Problem, ...], source: str = "") -> None:
        self.problems = problems
        self.source = source
        head = f"invalid policy manifest{f' {source}' if source else ''}"
        lines = "\n".join(f"  - [{p.code}] {p}" for p in problems)
        super().__init__(f"{head}:\n{lines}")

    @property
    def code(self) -> PolicyErrorCode:
        return self.problems[0].code


def refusal_vocabulary() -> tuple[str, ...]:
    """The reason names a manifest may use (every refusal; NONE is not one)."""
    return tuple(r.name for r in Reason if r != Reason.NONE)


def _check_reason(name: str) -> str:
    if Reason.__members__.get(name) in (None, Reason.NONE):
        msg = f"unknown reason {name!r}; valid reasons: {', '.join(refusal_vocabulary())}"
        raise ValueError(msg)
    return name


def _re2_detail(exc: Exception) -> str:
    detail = exc.args[0] if exc.args else exc
    if isinstance(detail, bytes):
        detail = detail.decode("utf-8", "replace")
    return str(detail)


def _check_glob(value: str, kind: str) -> str:
    from fak.policy.globs import AllowGlob, GuardGlob  # globs compiles through compile_re2

    try:
        GuardGlob(value) if kind == "guard" else AllowGlob(value)
    except Exception as exc:
        msg = (
            f"bad glob {value!r}: {_re2_detail(exc)}; use * ? and [a-z] classes with ranges "
            "in ascending order, or escape a literal [ as \\["
        )
        raise ValueError(msg) from None
    return value


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class ArgRule(_Strict):
    """A restrict-only predicate on one argument of one tool; exactly one matcher."""

    tool: str
    arg: str
    allow_glob: str | tuple[str, ...] | None = None
    allow_hosts: tuple[str, ...] | None = None
    allow_emails: tuple[str, ...] | None = None
    deny_regex: str | None = None
    max_bytes: int | None = None
    reason: str | None = None

    @field_validator("tool", "arg")
    @classmethod
    def _non_empty(cls, value: str) -> str:
        if not value.strip():
            msg = "must be a non-empty name"
            raise ValueError(msg)
        return value

    @field_validator("arg")
    @classmethod
    def _arg_path(cls, value: str) -> str:
        return _check_arg_path(value)

    @field_validator("reason")
    @classmethod
    def _known_reason(cls, value: str | None) -> str | None:
        return None if value is None else _check_reason(value)

    @field_validator("deny_regex")
    @classmethod
    def _valid_regex(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                compile_re2(value)
            except Exception as exc:
                msg = f"bad RE2 regex {value!r}: {_re2_detail(exc)}"
                raise ValueError(msg) from None
        return value

    @field_validator("max_bytes")
    @classmethod
    def _positive(cls, value: int | None) -> int | None:
        if value is not None and value <= 0:
            msg = "max_bytes must be a positive number of bytes"
            raise ValueError(msg)
        return value

    @field_validator("allow_glob")
    @classmethod
    def _glob(cls, value: str | tuple[str, ...] | None) -> str | tuple[str, ...] | None:
        if value is None:
            return None
        globs = (value,) if isinstance(value, str) else value
        if not globs or any(not g.strip() for g in globs):
            msg = "allow_glob must be a non-empty glob or a non-empty list of them"
            raise ValueError(msg)
        for glob in globs:
            _check_glob(glob, "allow")
        return value

    @field_validator("allow_emails")
    @classmethod
    def _emails(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if value is None:
            return None
        if not value:
            msg = "allow_emails must name at least one address pattern"
            raise ValueError(msg)
        for pattern in value:
            local, at, domain = pattern.rpartition("@")
            if not at or not local or not _valid_host_pattern(domain) or pattern != pattern.lower():
                msg = (
                    f"allow_emails entry {pattern!r} is not a lower-case address pattern "
                    "(alice@example.com, *@example.com or *@*.example.com)"
                )
                raise ValueError(msg)
            if local != "*" and (not _EMAIL_LOCAL.fullmatch(local)):
                msg = f"allow_emails entry {pattern!r} has a bad local part (use * or a name)"
                raise ValueError(msg)
        return value

    @field_validator("allow_hosts")
    @classmethod
    def _hosts(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if value is None:
            return None
        if not value:
            msg = "allow_hosts must name at least one host"
            raise ValueError(msg)
        for host in value:
            if not _valid_host_pattern(host):
                msg = (
                    f"allow_hosts entry {host!r} is not a lower-case host name "
                    "(example.com, or *.example.com for its subdomains)"
                )
                raise ValueError(msg)
        return value

    @model_validator(mode="after")
    def _one_matcher(self) -> ArgRule:
        present = [
            name
            for name in ("allow_glob", "allow_hosts", "allow_emails", "deny_regex", "max_bytes")
            if getattr(self, name) is not None
        ]
        if len(present) != 1:
            got = " and ".join(present) if present else "none"
            msg = (
                f"rule for {self.tool}.{self.arg} needs exactly one of allow_glob, allow_hosts, "
                f"allow_emails, deny_regex, max_bytes (got {got})"
            )
            raise ValueError(msg)
        return self


SinkKind = Literal[
    "text", "email", "url", "host", "iban", "number", "urls", "date", "datetime", "composed"
]
_HOST_KINDS: Final = ("email", "url", "host", "urls", "composed")


class SinkRule(_Strict):
    """Where a destination or payload argument's value must have come from (``needs``):
    ``user`` — the user's own text (or a pinned value); ``trusted`` — that, or a trusted source;
    ``any`` — anywhere it appears, even a tool result (only values from nowhere are judged).
    A value from elsewhere is refused with ``reason`` (default TRUST_VIOLATION), or held for a
    witness with ``untrusted: witness``; a value found nowhere follows ``unknown``, and so does
    an argument that is absent or null, unless the rule is ``optional`` (then an absent or null
    argument has nothing to check; a present one is judged as always). ``kind`` says how values
    are compared (``urls``: every link or domain written inside a free-text value; ``date`` /
    ``datetime``: the date (and time) however written; ``composed``: every value a text the
    model wrote carries — tool-result leaves, addresses, links, dates)."""

    tool: str
    arg: str
    kind: SinkKind = "text"
    needs: Literal["user", "trusted", "any"] = "user"
    unknown: Literal["deny", "witness", "allow"] = "deny"
    untrusted: Literal["deny", "witness"] = "deny"
    optional: bool | None = None
    reason: str | None = None
    pinned_domains: tuple[str, ...] | None = None
    """Domains this sink takes as the user's own (host, address or link under one of them)."""
    secret: Literal["deny", "witness", "allow"] | None = None
    """A value carrying a confidentiality source's value: refused SECRET_EXFIL (unset: deny),
    held for a witness, or let through (a sink meant to receive them)."""

    @field_validator("pinned_domains")
    @classmethod
    def _domains(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if value is None:
            return None
        if not value:
            msg = "pinned_domains must name at least one domain (omit it for none)"
            raise ValueError(msg)
        return _check_domains(value)

    @model_validator(mode="after")
    def _domains_need_hosts(self) -> SinkRule:
        if self.pinned_domains is not None and self.kind not in _HOST_KINDS:
            msg = (
                f"sink {self.tool}.{self.arg}: pinned_domains needs a kind with a host "
                f"({', '.join(_HOST_KINDS)}), not {self.kind!r}"
            )
            raise ValueError(msg)
        return self

    @field_validator("optional")
    @classmethod
    def _optional(cls, value: bool | None) -> bool | None:
        return True if value else None  # false is the default: it dumps (and hashes) as absent

    @field_validator("tool")
    @classmethod
    def _tool(cls, value: str) -> str:
        if not value.strip():
            msg = "must be a non-empty name"
            raise ValueError(msg)
        return value

    @field_validator("arg")
    @classmethod
    def _arg(cls, value: str) -> str:
        if not _SINK_PATH.fullmatch(value):
            msg = (
                f"arg {value!r} is not a name or a path: use name, name[] for each element of a "
                "list, a.b / a[].b for nested fields, and name{} (last) for every key of an object"
            )
            raise ValueError(msg)
        return value

    @field_validator("reason")
    @classmethod
    def _known_reason(cls, value: str | None) -> str | None:
        return None if value is None else _check_reason(value)


class TrustedSource(_Strict):
    """A tool whose results the operator vouches for: all of it, or only the values at
    ``fields`` (paths into its JSON result, e.g. ``[].recipient``). As a ``secret_sources``
    entry: a tool whose values (all its leaves, or those at ``fields``) must reach no sink."""

    tool: str
    fields: tuple[str, ...] | None = None

    @field_validator("fields")
    @classmethod
    def _paths(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if value is None:
            return None
        if not value:
            msg = "fields must name at least one path (omit it to trust the whole result)"
            raise ValueError(msg)
        for path in value:
            if not _RESULT_KEYS.fullmatch(path):
                msg = (
                    f"field path {path!r} is not a path such as name, a.b, [].name, a[].b or "
                    "a{} (every key of an object)"
                )
                raise ValueError(msg)
        return value


_DETECTORS: Final = ("secrets", "injection", "pollution")
_QUARANTINE_MODES: Final = ("span", "whole")


def _check_detectors(value: tuple[str, ...] | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    unknown = sorted(set(value) - set(_DETECTORS))
    if unknown:
        msg = f"unknown detector(s) {', '.join(unknown)}; known: {', '.join(_DETECTORS)}"
        raise ValueError(msg)
    if len(set(value)) != len(value):
        msg = "a detector is listed twice"
        raise ValueError(msg)
    return value


def _check_threshold(value: float | None) -> float | None:
    if value is not None and not 0.0 < value <= 10.0:
        msg = f"injection_threshold must be in (0, 10] (got {value}); the default is 1.0"
        raise ValueError(msg)
    return value


def _check_mode(value: str | None) -> str | None:
    if value is not None and value not in _QUARANTINE_MODES:
        msg = f"quarantine must be one of: {', '.join(_QUARANTINE_MODES)} (got {value!r})"
        raise ValueError(msg)
    return value


class ScreenRule(_Strict):
    """Result-screen settings for one tool (``tool``) or a family of tools (``tool_prefix``)."""

    tool: str | None = None
    tool_prefix: str | None = None
    detectors: tuple[str, ...] | None = None
    injection_threshold: float | None = None
    quarantine: str | None = None

    _detectors = field_validator("detectors")(classmethod(lambda cls, v: _check_detectors(v)))
    _threshold = field_validator("injection_threshold")(
        classmethod(lambda cls, v: _check_threshold(v))
    )
    _mode = field_validator("quarantine")(classmethod(lambda cls, v: _check_mode(v)))

    @model_validator(mode="after")
    def _one_selector(self) -> ScreenRule:
        if (self.tool is None) == (self.tool_prefix is None):
            msg = "a screen rule names exactly one of tool, tool_prefix"
            raise ValueError(msg)
        if not (self.tool or self.tool_prefix or "").strip():
            msg = "a screen rule's tool / tool_prefix must not be empty"
            raise ValueError(msg)
        return self


class ScreenSection(_Strict):
    """The result screen: which detectors run and how strict, by default and per source.

    ``injection_threshold`` is the cue score at which a window is an injection (lower is
    stricter); ``quarantine`` says whether a held injection or secret may be cut out as a span
    (``span``) or holds the whole result (``whole``); pollution always holds the whole result.
    """

    detectors: tuple[str, ...] = _DETECTORS
    injection_threshold: float = 1.0
    quarantine: str = "span"
    rules: tuple[ScreenRule, ...] = ()

    _detectors = field_validator("detectors")(classmethod(lambda cls, v: _check_detectors(v)))
    _threshold = field_validator("injection_threshold")(
        classmethod(lambda cls, v: _check_threshold(v))
    )
    _mode = field_validator("quarantine")(classmethod(lambda cls, v: _check_mode(v)))


class Manifest(_Strict):
    """The whole floor. ``{}`` is valid and denies every call."""

    version: str = MANIFEST_VERSION
    posture: Posture = Posture.FAIL_CLOSED
    allow: tuple[str, ...] = ()
    allow_prefix: tuple[str, ...] = ()
    deny: dict[str, str] = {}
    self_modify_globs: tuple[str, ...] = ()
    redact_fields: tuple[str, ...] = ()
    arg_rules: tuple[ArgRule, ...] = ()
    sinks: tuple[SinkRule, ...] = ()
    trusted_sources: tuple[TrustedSource, ...] = ()
    secret_sources: tuple[TrustedSource, ...] = ()
    """Confidentiality sources: tools (or fields of their JSON results) whose values are
    secret; a sink value carrying one is refused SECRET_EXFIL (per sink: ``secret``)."""
    secret_scope: Literal["sinks", "all"] | None = None
    """Where secrets are looked for: at sinks (unset), or in every argument of every call."""
    pinned: tuple[str, ...] = ()
    """Values the operator vouches for as if the user had typed them (an own IBAN, a domain)."""
    pinned_domains: tuple[str, ...] = ()
    """Domains the operator vouches for (the user's organisation): for ``email``, ``url``,
    ``host`` and ``urls`` sinks, a host under one of them counts as the user's own."""
    witness: tuple[str, ...] = ()
    """Tools every call of which waits for a witness (money-moving, irreversible), if allowed."""
    after_untrusted: dict[str, Literal["deny", "witness"]] = {}
    """Tools refused (or held for a witness) once any untrusted tool result is in the run."""
    root: str | None = None
    """The project directory path arguments are resolved against (absolute). Unset: the
    directory the policy was loaded from a process started in (``fak serve``, ``fak hook``)."""
    answer: Literal["annotate"] | None = None
    """``annotate``: the door appends a ``[fak]`` line for each name in the model's text that
    only an untrusted tool result gave (``fak.policy.answer``). Unset: the answer is not read."""
    screen: ScreenSection | None = None
    """Result-screen settings (detectors, injection threshold, span or whole quarantine) by
    default and per tool / tool prefix. Unset: the built-in defaults."""

    @field_validator("root")
    @classmethod
    def _absolute_root(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith("/"):
            msg = f"root must be an absolute path (got {value!r})"
            raise ValueError(msg)
        return value

    @field_validator("pinned_domains")
    @classmethod
    def _pinned_domains(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return _check_domains(value)

    @field_validator("version")
    @classmethod
    def _version(cls, value: str) -> str:
        if value == MANIFEST_VERSION or value.startswith(MANIFEST_VERSION + "."):
            return value
        if value.startswith(_MAJOR_PREFIX):
            msg = f"unsupported major version {value!r}; this build reads {MANIFEST_VERSION}"
        else:
            msg = f"version must be {MANIFEST_VERSION!r} (got {value!r})"
        raise ValueError(msg)

    @field_validator("allow", "allow_prefix", "self_modify_globs", "redact_fields")
    @classmethod
    def _no_empty_names(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if any(not item.strip() for item in value):
            msg = "empty string not allowed (it would match everything)"
            raise ValueError(msg)
        return value

    @field_validator("self_modify_globs")
    @classmethod
    def _guard_globs(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for glob in value:
            _check_glob(glob, "guard")
        return value

    @field_validator("deny")
    @classmethod
    def _deny_reasons(cls, value: dict[str, str]) -> dict[str, str]:
        bad = sorted(
            (tool, name)
            for tool, name in value.items()
            if Reason.__members__.get(name) in (None, Reason.NONE)
        )
        if bad:
            offenders = ", ".join(f'{tool}="{name}"' for tool, name in bad)
            msg = (
                f"unknown deny reason(s): {offenders}; "
                f"valid reasons: {', '.join(refusal_vocabulary())}"
            )
            raise ValueError(msg)
        if any(not tool.strip() for tool in value):
            msg = "deny has an empty tool name"
            raise ValueError(msg)
        return value

    def to_json_dict(self) -> dict[str, Any]:
        """Every field, in declaration order; arg rules omit absent matchers."""
        out: dict[str, Any] = {
            "version": self.version,
            "posture": self.posture.value,
            "allow": list(self.allow),
            "allow_prefix": list(self.allow_prefix),
            "deny": dict(self.deny),
            "self_modify_globs": list(self.self_modify_globs),
            "redact_fields": list(self.redact_fields),
            "arg_rules": [rule.model_dump(exclude_none=True) for rule in self.arg_rules],
        }
        if self.root is not None:  # only when set: older manifests keep their hash
            out["root"] = self.root
        if self.sinks:
            out["sinks"] = [rule.model_dump(exclude_none=True) for rule in self.sinks]
        if self.trusted_sources:
            out["trusted_sources"] = [
                src.model_dump(exclude_none=True) for src in self.trusted_sources
            ]
        if self.secret_sources:
            out["secret_sources"] = [
                src.model_dump(exclude_none=True) for src in self.secret_sources
            ]
        if self.secret_scope is not None:
            out["secret_scope"] = self.secret_scope
        if self.pinned:
            out["pinned"] = list(self.pinned)
        if self.pinned_domains:
            out["pinned_domains"] = list(self.pinned_domains)
        if self.after_untrusted:
            out["after_untrusted"] = dict(self.after_untrusted)
        if self.witness:
            out["witness"] = list(self.witness)
        if self.answer is not None:
            out["answer"] = self.answer
        if self.screen is not None:  # likewise
            out["screen"] = self.screen.model_dump(exclude_none=True)
        return out


_KNOWN_FIELDS: Final = {
    (): tuple(Manifest.model_fields),
    ("arg_rules",): tuple(ArgRule.model_fields),
    ("sinks",): tuple(SinkRule.model_fields),
    ("trusted_sources",): tuple(TrustedSource.model_fields),
    ("secret_sources",): tuple(TrustedSource.model_fields),
    ("screen",): tuple(ScreenSection.model_fields),
    ("screen", "rules"): tuple(ScreenRule.model_fields),
}


def _where(loc: tuple[int | str, ...]) -> str:
    parts = [f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc]
    return "".join(parts).lstrip(".")


def _problem(err: Mapping[str, Any]) -> Problem:
    loc = tuple(err.get("loc", ()))
    etype = str(err.get("type", ""))
    where = _where(loc)
    if etype == "json_invalid":
        detail = err.get("ctx", {}).get("error", "malformed JSON")
        return Problem(PolicyErrorCode.BAD_JSON, "", f"not valid JSON: {detail}")
    if etype == "model_type" and not loc:
        return Problem(PolicyErrorCode.BAD_JSON, "", "a manifest must be a JSON object")
    if etype == "extra_forbidden":
        parent = tuple(p for p in loc[:-1] if not isinstance(p, int))
        known = ", ".join(_KNOWN_FIELDS.get(parent, ()))
        return Problem(
            PolicyErrorCode.UNKNOWN_FIELD,
            where,
            f'unknown field "{loc[-1]}" (check the spelling; known fields: {known})',
        )
    if loc and loc[0] == "posture":
        values = ", ".join(p.value for p in Posture)
        return Problem(PolicyErrorCode.BAD_POSTURE, where, f"posture must be one of: {values}")
    message = str(err.get("msg", "invalid value"))
    if etype == "value_error":
        message = str(err.get("ctx", {}).get("error", message))
    code = PolicyErrorCode.BAD_VALUE
    if "reason" in message and "valid reasons" in message:
        code = PolicyErrorCode.UNKNOWN_REASON
    elif message.startswith("bad glob"):
        code = PolicyErrorCode.BAD_GLOB
    elif "RE2" in message:
        code = PolicyErrorCode.BAD_REGEX
    elif loc and loc[0] == "version":
        code = PolicyErrorCode.BAD_VERSION
    elif loc and loc[0] == "arg_rules":
        code = PolicyErrorCode.BAD_RULE
    return Problem(code, where, message)


def load_manifest(text: str | bytes, *, source: str = "") -> Manifest:
    """Parse and validate a manifest; raises PolicyError listing every problem."""
    try:
        return Manifest.model_validate_json(text)
    except ValidationError as exc:
        problems = tuple(_problem(err) for err in exc.errors(include_url=False))
        raise PolicyError(problems, source) from None


def load_manifest_file(path: str | Path) -> Manifest:
    """Read a manifest file; an unreadable file is a PolicyError too."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        problem = Problem(PolicyErrorCode.BAD_JSON, "", f"cannot read {path}: {exc.strerror}")
        raise PolicyError((problem,), str(path)) from None
    return load_manifest(data, source=str(path))


def dump_manifest(manifest: Manifest) -> str:
    """The canonical text form; ``load_manifest(dump_manifest(m))`` dumps identically."""
    return json.dumps(manifest.to_json_dict(), indent=2, ensure_ascii=False) + "\n"


def manifest_hash(manifest: Manifest) -> str:
    """sha256 hex of the canonical (sorted-key, compact) manifest: the policy version pin."""
    canonical = json.dumps(
        manifest.to_json_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()
