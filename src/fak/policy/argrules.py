"""Compiled arg-level predicates: restrict-only rules on one decoded argument value (tier T1).

A rule never grants anything; it can only refuse an otherwise allowed call. ``arg`` is a name or
a path (``recipients[]`` for each element of a list, ``event.participants[]`` for a nested one),
found under every case- or separator-variant of each name (``arg_key``); values are read as
scalars (string, number, bool); objects, arrays and null count as absent. ``allow_glob`` takes
one glob or a set; ``allow_hosts`` reads the value as an http(s) URL and ``allow_emails`` as an
e-mail address, and admit it only when its host / address, in the normal form of
``fak.policy.hosts`` (UTS #46, IDNA 2008), is listed. The witness names the violated bound
(``tool.arg allow_glob g``), never the argument value. Pure; regexes are RE2.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from fak.abi import Reason
from fak.policy.globs import AllowGlob
from fak.policy.hosts import email_address, url_host
from fak.policy.manifest import ArgRule, compile_re2
from fak.policy.names import match_key

__all__ = [
    "CompiledArgRule",
    "arg_key",
    "email_address",
    "email_listed",
    "host_listed",
    "parse_arg_path",
    "scalar_text",
    "url_host",
    "values_at",
]

_WITNESS_RE_MAX = 120


def scalar_text(value: object) -> str | None:
    """The string form of a scalar argument, or None for absent/object/array/null."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    return None


def host_listed(host: str, patterns: tuple[str, ...]) -> bool:
    """``example.com`` matches that host only; ``*.example.com`` matches its subdomains."""
    for pattern in patterns:
        if pattern.startswith("*."):
            if host.endswith(pattern[1:]) and len(host) > len(pattern) - 1:
                return True
        elif host == pattern:
            return True
    return False


def email_listed(address: tuple[str, str], patterns: tuple[str, ...]) -> bool:
    """``alice@example.com``, ``*@example.com`` or ``*@*.example.com``."""
    local, domain = address
    for pattern in patterns:
        want_local, _, want_domain = pattern.rpartition("@")
        if (want_local == "*" or want_local == local) and host_listed(domain, (want_domain,)):
            return True
    return False


_Segment = tuple[str, bool]  # (field name, each element of a list)


def parse_arg_path(path: str) -> tuple[_Segment, ...]:
    """``recipients[]`` → ((recipients, True),); ``event.participants[]`` → two segments."""
    return tuple((part.removesuffix("[]"), part.endswith("[]")) for part in path.split("."))


@lru_cache(maxsize=4096)
def arg_key(name: str) -> str:
    """The form argument names are matched in: NFKC, case-folded, letters and digits only, so
    ``Recipient``, ``RECIPIENT``, ``recipient_`` and ``re-cipient`` are all ``recipient`` (a
    tool that reads a variant of the name a rule checks is not let past the rule)."""
    folded = "".join(ch for ch in unicodedata.normalize("NFKC", name).casefold() if ch.isalnum())
    return folded or name


def values_at(args: Mapping[str, Any], path: tuple[_Segment, ...]) -> list[Any] | None:
    """Every value the path reaches, under every key that is a variant of the name (``arg_key``);
    None when a field on the way is missing or null under every variant (a path through a list
    reaches nothing in an empty list, which is not missing)."""
    current: list[Any] = [args]
    for name, each in path:
        key = arg_key(name)
        reached: list[Any] = []
        for node in current:
            found = (
                [v for k, v in node.items() if v is not None and arg_key(str(k)) == key]
                if isinstance(node, Mapping)
                else []
            )
            if not found:
                return None
            for value in found:
                if each and isinstance(value, list):
                    reached.extend(value)
                else:
                    reached.append(value)
        current = reached
    return current


@dataclass(frozen=True, slots=True)
class CompiledArgRule:
    tool_lower: str
    arg: str
    reason: Reason
    witness: str
    allow_glob: tuple[AllowGlob, ...] | None = None
    allow_hosts: tuple[str, ...] | None = None
    allow_emails: tuple[str, ...] | None = None
    deny_regex: Any = None
    max_bytes: int | None = None
    path: tuple[_Segment, ...] = ()

    @classmethod
    def compile(cls, rule: ArgRule, root: str | None = None) -> CompiledArgRule:
        reason = Reason[rule.reason] if rule.reason else Reason.POLICY_BLOCK
        prefix = f"{rule.tool}.{rule.arg}"
        head = (match_key(rule.tool), rule.arg, reason)
        path = parse_arg_path(rule.arg)
        if rule.allow_glob is not None:
            globs = (rule.allow_glob,) if isinstance(rule.allow_glob, str) else rule.allow_glob
            shown = globs[0] if isinstance(rule.allow_glob, str) else f"[{_shown(globs)}]"
            return cls(
                *head,
                f"{prefix} allow_glob {shown}",
                allow_glob=tuple(AllowGlob(g, root) for g in globs),
                path=path,
            )
        if rule.allow_hosts is not None:
            return cls(
                *head,
                f"{prefix} allow_hosts [{_shown(rule.allow_hosts)}]",
                allow_hosts=tuple(rule.allow_hosts),
                path=path,
            )
        if rule.allow_emails is not None:
            return cls(
                *head,
                f"{prefix} allow_emails [{_shown(rule.allow_emails)}]",
                allow_emails=tuple(rule.allow_emails),
                path=path,
            )
        if rule.deny_regex is not None:
            shown_re = rule.deny_regex[:_WITNESS_RE_MAX]
            return cls(
                *head,
                f"{prefix} deny_regex /{shown_re}/",
                deny_regex=compile_re2(rule.deny_regex),
                path=path,
            )
        return cls(
            *head, f"{prefix} max_bytes {rule.max_bytes}", max_bytes=rule.max_bytes, path=path
        )

    @property
    def positive(self) -> bool:
        """A rule every value must satisfy (as opposed to one no value may trip)."""
        return (
            self.allow_glob is not None
            or self.allow_hosts is not None
            or self.allow_emails is not None
        )

    def _admits(self, text: str, root: str | None = None) -> bool:
        if self.allow_glob is not None:
            return any(g.admits(text, root) for g in self.allow_glob)
        if self.allow_hosts is not None:
            host = url_host(text)
            return host is not None and host_listed(host, self.allow_hosts)
        assert self.allow_emails is not None
        address = email_address(text)
        return address is not None and email_listed(address, self.allow_emails)

    def violated(self, args: Mapping[str, Any], root: str | None = None) -> bool:
        """True when the call breaks the rule. A positive rule fails closed on a missing scalar
        argument and on any value that is not a scalar; a path through a list checks every
        element (an empty or absent list has none to check). ``root``: a narrower root for
        ``allow_glob`` (``fak.policy.globs.narrower_root``)."""
        path = self.path or parse_arg_path(self.arg)
        values = values_at(args, path)
        if values is None:
            return self.positive and not any(each for _, each in path)
        texts = [scalar_text(v) for v in values]
        if self.positive:
            return any(t is None or not self._admits(t, root) for t in texts)
        if self.deny_regex is not None:
            return any(t is not None and self.deny_regex.search(t) is not None for t in texts)
        limit = self.max_bytes
        return limit is not None and any(
            t is not None and len(t.encode("utf-8")) > limit for t in texts
        )


def _shown(items: tuple[str, ...]) -> str:
    return ", ".join(items[:4]) + (", ..." if len(items) > 4 else "")
