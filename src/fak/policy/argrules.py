"""Compiled arg-level predicates: restrict-only rules on one decoded argument value (tier T1).

A rule never grants anything; it can only refuse an otherwise allowed call. Values are read as
scalars (string, number, bool); objects, arrays and null count as absent. The witness names the
violated bound (``tool.arg allow_glob g``), never the argument value. Pure; regexes are RE2.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fak.abi import Reason
from fak.policy.globs import AllowGlob
from fak.policy.manifest import ArgRule, compile_re2
from fak.policy.names import match_key

__all__ = ["CompiledArgRule", "scalar_text"]

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


@dataclass(frozen=True, slots=True)
class CompiledArgRule:
    tool_lower: str
    arg: str
    reason: Reason
    witness: str
    allow_glob: AllowGlob | None = None
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
        if text is None:
            return False
        if self.deny_regex is not None:
            return self.deny_regex.search(text) is not None
        return self.max_bytes is not None and len(text.encode("utf-8")) > self.max_bytes
