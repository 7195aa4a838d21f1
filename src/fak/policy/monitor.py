"""The monitor rung: the authoritative decision of the policy floor (tier T1).

Fixed order for one call: explicit deny by name → self-modify through a path argument of a
write-shaped tool → self-modify through a shell command (the write-verb floor) → arg predicates →
redaction → affirmative allow / allow_prefix → default deny. Redaction only rewrites a call that
is otherwise admitted; it never admits one. ``admit_and_log`` downgrades only a read-shaped
default deny, and records ``would_deny``. Witnesses name the rule, never argument values.
A call may name its client's working directory (``meta["root"]``, ``ROOT_META``): path rules
then resolve against it when it lies inside the policy's root, never otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from fak.abi import Reason, ToolCall, Verdict
from fak.policy.globs import narrower_root
from fak.policy.manifest import Posture
from fak.policy.policy import Policy
from fak.policy.shapes import PATH_KEYS, SHELL_KEYS, read_shaped, write_shaped
from fak.policy.shell import shell_self_modify

__all__ = ["REDACTED", "ROOT_META", "Monitor", "name_verdict"]

REDACTED: Final = "[REDACTED]"
ROOT_META: Final = "root"
"""``ToolCall.meta`` key: the client's working directory, a narrower root for path rules."""
_BY: Final = "monitor"
_ALLOW: Final = Verdict.allow(_BY)
_LOGGED: Final = Verdict.allow(_BY, meta={"posture": "admit_and_log", "would_deny": "DEFAULT_DENY"})
_DEFAULT_DENY: Final = Verdict.deny(Reason.DEFAULT_DENY, _BY, claim="not in allow or allow_prefix")


def name_verdict(policy: Policy, tool: str) -> Verdict:
    """The tail of the monitor's walk, which depends on the tool name only."""
    if policy.names_allowed(tool):
        return _ALLOW
    if policy.posture == Posture.ADMIT_AND_LOG and read_shaped(tool):
        return _LOGGED
    return _DEFAULT_DENY


class Monitor:
    """Rank 100. Never defers: it always answers for the floor."""

    __slots__ = ("_policy",)
    name: Final = _BY
    rank: Final = 100

    def __init__(self, policy: Policy) -> None:
        self._policy = policy

    @property
    def policy(self) -> Policy:
        return self._policy

    def decide(self, call: ToolCall, args: Mapping[str, Any] | None) -> Verdict:
        policy = self._policy
        tool = call.tool
        reason = policy.deny_reason(tool)
        if reason is not None:
            return Verdict.deny(reason, _BY, claim=f"deny {tool}")
        if args is None:
            claim = "arguments are not a JSON object"
            return Verdict.deny(Reason.MALFORMED, _BY, claim=claim)
        globs = policy.self_modify_globs
        if globs:
            if write_shaped(tool):
                for key in PATH_KEYS:
                    value = args.get(key)
                    if isinstance(value, str):
                        hit = next((g for g in globs if g.in_path(value)), None)
                        if hit is not None:
                            claim = f"self_modify_globs {hit.glob}"
                            return Verdict.deny(Reason.SELF_MODIFY, _BY, claim=claim)
            for key in SHELL_KEYS:
                command = args.get(key)
                if isinstance(command, str):
                    touched = shell_self_modify(command, globs)
                    if touched is not None:
                        claim = f"shell write to {touched.glob}"
                        return Verdict.deny(Reason.SELF_MODIFY, _BY, claim=claim)
        rules = policy.rules_for(tool)
        asked = call.meta.get(ROOT_META) if rules and call.meta else None
        root = narrower_root(policy.root, asked) if asked else None
        for rule in rules:
            if rule.violated(args, root):
                return Verdict.deny(rule.reason, _BY, claim=rule.witness)
        verdict = name_verdict(policy, tool)
        if not verdict.admits or not policy.redact_fields:
            return verdict
        hidden = sorted(k for k in args if isinstance(k, str) and k.lower() in policy.redact_fields)
        if not hidden:
            return verdict
        redacted = {k: (REDACTED if k in hidden else v) for k, v in args.items()}
        meta = {**verdict.meta, "redacted": ",".join(hidden)}
        return Verdict.transform(redacted, _BY, meta=meta)
