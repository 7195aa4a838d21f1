"""Compiled arg-level predicates: restrict-only rules on one decoded argument value (tier T1).

A rule never grants anything; it can only refuse an otherwise allowed call. Values are read as
scalars (string, number, bool); objects, arrays and null count as absent. ``allow_hosts`` reads
the value as an http(s) URL and admits it only when its parsed host is listed. The witness names the
violated bound (``tool.arg allow_glob g``), never the argument value. Pure; regexes are RE2.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from fak.abi import Reason
from fak.policy.globs import AllowGlob
from fak.policy.manifest import ArgRule, compile_re2
from fak.policy.names import match_key

__all__ = ["CompiledArgRule", "host_listed", "scalar_text", "url_host"]

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


_URL_BANNED = frozenset("\\ \t\r\n\x00")


def url_host(value: str) -> str | None:
    """The lower-case host of an ``http``/``https`` URL, or None for anything else — including
    URLs that parsers disagree on (backslashes, whitespace, control characters, credentials
    before the host), so what is checked is what a client would connect to."""
    if any(ch in _URL_BANNED or ord(ch) < 0x20 or ch == "\x7f" for ch in value):
        return None
    try:
        parts = urlsplit(value)
        port = parts.port  # raises on a malformed port
    except ValueError:
        return None
    del port
    if parts.scheme.lower() not in ("http", "https") or "@" in parts.netloc:
        return None
    host = (parts.hostname or "").rstrip(".")
    if not host:
        return None
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            return None
    return host.lower()


def host_listed(host: str, patterns: tuple[str, ...]) -> bool:
    """``example.com`` matches that host only; ``*.example.com`` matches its subdomains."""
    for pattern in patterns:
        if pattern.startswith("*."):
            if host.endswith(pattern[1:]) and len(host) > len(pattern) - 1:
                return True
        elif host == pattern:
            return True
    return False


@dataclass(frozen=True, slots=True)
class CompiledArgRule:
    tool_lower: str
    arg: str
    reason: Reason
    witness: str
    allow_glob: AllowGlob | None = None
    allow_hosts: tuple[str, ...] | None = None
    deny_regex: Any = None
    max_bytes: int | None = None

    @classmethod
    def compile(cls, rule: ArgRule, root: str | None = None) -> CompiledArgRule:
        reason = Reason[rule.reason] if rule.reason else Reason.POLICY_BLOCK
        prefix = f"{rule.tool}.{rule.arg}"
        if rule.allow_glob is not None:
            return cls(
                match_key(rule.tool),
                rule.arg,
                reason,
                f"{prefix} allow_glob {rule.allow_glob}",
                allow_glob=AllowGlob(rule.allow_glob, root),
            )
        if rule.allow_hosts is not None:
            shown_hosts = ", ".join(rule.allow_hosts[:4]) + (
                ", ..." if len(rule.allow_hosts) > 4 else ""
            )
            return cls(
                match_key(rule.tool),
                rule.arg,
                reason,
                f"{prefix} allow_hosts [{shown_hosts}]",
                allow_hosts=tuple(rule.allow_hosts),
            )
        if rule.deny_regex is not None:
            shown = rule.deny_regex[:_WITNESS_RE_MAX]
            return cls(
                match_key(rule.tool),
                rule.arg,
                reason,
                f"{prefix} deny_regex /{shown}/",
                deny_regex=compile_re2(rule.deny_regex),
            )
        return cls(
            match_key(rule.tool),
            rule.arg,
            reason,
            f"{prefix} max_bytes {rule.max_bytes}",
            max_bytes=rule.max_bytes,
        )

    def violated(self, args: Mapping[str, Any]) -> bool:
        text = scalar_text(args.get(self.arg))
        if self.allow_glob is not None:
            # positive rule: a missing value, or one outside the glob, fails closed
            return text is None or not self.allow_glob.admits(text)
        if self.allow_hosts is not None:
            host = url_host(text) if text is not None else None
            return host is None or not host_listed(host, self.allow_hosts)
        if text is None:
            return False
        if self.deny_regex is not None:
            return self.deny_regex.search(text) is not None
        return self.max_bytes is not None and len(text.encode("utf-8")) > self.max_bytes
