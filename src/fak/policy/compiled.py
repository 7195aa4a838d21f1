"""The compiled floor: the default chain plus per-tool verdicts precomputed at load (tier T1).

For most calls the default chain's answer depends on the tool name alone: no grammar or schema is
installed for the tool, there is no arg rule for it, and none of the argument keys the monitor
inspects (shell command, path of a write-shaped tool, redacted fields) is present. For those calls
``CompiledFloor.decide`` returns the precomputed verdict; every other call runs the full fold. The
two paths must agree on every call (a property test pins it). Plans are memoised per tool name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from fak.abi import ToolCall, Verdict
from fak.policy.fold import Chain, Rung, RungTrace
from fak.policy.grammar import Grammar, GrammarRung
from fak.policy.monitor import Monitor, name_verdict
from fak.policy.names import is_plain_name
from fak.policy.policy import Policy
from fak.policy.preflight import PreflightRung, Schema
from fak.policy.shapes import PATH_KEYS, SHELL_KEYS, write_shaped

__all__ = ["CompiledFloor", "default_chain"]

_PLAN_CAP: Final = 8192
_Plan = tuple[Verdict | None, frozenset[str]]


def default_chain(
    policy: Policy,
    grammars: Mapping[str, Grammar] | None = None,
    schemas: Mapping[str, Schema] | None = None,
) -> Chain:
    """Grammar repair (5), preflight ladder (10), monitor (100), and the provenance of sink
    arguments (110) when the manifest names sinks."""
    rungs: list[Rung] = [GrammarRung(grammars), PreflightRung(schemas), Monitor(policy)]
    if policy.provenance is not None:
        rungs.append(policy.provenance)
    return Chain(rungs)


class CompiledFloor:
    """``decide`` equals ``chain.decide`` on every call, with a name-only fast path."""

    __slots__ = ("_plans", "_slow_tools", "chain", "policy")

    def __init__(
        self,
        policy: Policy,
        grammars: Mapping[str, Grammar] | None = None,
        schemas: Mapping[str, Schema] | None = None,
    ) -> None:
        self.policy: Final = policy
        self.chain: Final = default_chain(policy, grammars, schemas)
        self._slow_tools = frozenset(grammars or ()) | frozenset(schemas or ())
        self._plans: dict[str, _Plan] = {}
        for tool in (*policy.allow, *policy.deny):
            self._plan(tool)

    def _plan(self, tool: str) -> _Plan:
        plan = self._plans.get(tool)
        if plan is not None:
            return plan
        policy = self.policy
        plan = (None, frozenset())
        if tool in self._slow_tools or (
            policy.provenance is not None and policy.provenance.guards(tool)
        ):
            pass  # the plan depends on the arguments (or on the run's context)
        elif policy.deny_reason(tool) is not None or not is_plain_name(tool):
            plan = (self.chain.decide(ToolCall(tool)), frozenset())
        elif not policy.rules_for(tool):
            sensitive: set[str] = set()
            if policy.self_modify_globs:
                sensitive.update(SHELL_KEYS)
                if write_shaped(tool):
                    sensitive.update(PATH_KEYS)
            verdict = name_verdict(policy, tool)
            if verdict.admits:
                sensitive.update(policy.redact_fields)
            plan = (verdict, frozenset(sensitive))
        if len(self._plans) < _PLAN_CAP:
            self._plans[tool] = plan
        return plan

    def decide(self, call: ToolCall) -> Verdict:
        plan = self._plans.get(call.tool) or self._plan(call.tool)
        fast = plan[0]
        if fast is not None:
            args = call.args
            if args is None:
                return fast
            if type(args) is dict:
                sensitive = plan[1]
                if not sensitive:
                    return fast
                for key in args:
                    if type(key) is not str or key in sensitive or key.lower() in sensitive:
                        break
                else:
                    return fast
        return self.chain.decide(call)

    def explain(self, call: ToolCall) -> tuple[Verdict, list[RungTrace]]:
        return self.chain.explain(call)
