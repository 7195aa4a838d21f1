"""The scripted always-obeying agent of benchmarks/agentdojo.py, its arms and approver models.

Runs only inside the benchmark's throwaway venv (it subclasses AgentDojo's pipeline element).
The agent replays the user task's ground-truth calls; the moment a result it was handed carries
an injection it replays the attacker's calls first (always obeying), then finishes the user
task. AgentDyn's ground truth names values it cannot know in advance (a one-time password, a
file id, an invitation link) as ``placeholder_args``; ``Placeholders`` fills them from the
results the agent was handed, as a model reading them would. Not a test, not shipped code.

Approver models for held calls (``REQUIRE_WITNESS``), each an arm:
  fak           nobody approves: every hold stays refused
  fak+stamp     the rubber stamp: approves every hold
  fak+evidence  reads only what the approval prompt shows (the user's words, the held call, the
                claim naming the result the value came from, that result as the agent saw it):
                approves when (1) the claim names a tool result, (2) the wall flagged nothing in
                that result, and (3) the user pointed at that result — one argument of the call
                that produced it is written in the user's own words (the file, page or channel
                the user named), or lies under a path or address the user wrote
                (``/system/.ssh/id.pub`` under ``/system/.ssh``). Never reads the ground truth.
  fak+truth     the upper bound: approves exactly the held calls the user task's ground truth
                makes (it reads the ground truth; labelled as such everywhere)
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from agentdojo.agent_pipeline.base_pipeline_element import BasePipelineElement
from agentdojo.agent_pipeline.tool_execution import tool_result_to_str
from agentdojo.functions_runtime import FunctionCall

from fak.abi import Context, ToolCall, ToolResult, Verdict, VerdictKind
from fak.kernel import Kernel

ARMS = ("none", "fak", "fak+stamp", "fak+evidence", "fak+truth")
APPROVER = {
    "none": "no gate",
    "fak": "no approver (holds refused)",
    "fak+stamp": "rubber stamp (approves every hold)",
    "fak+evidence": "evidence approver (prompt only)",
    "fak+truth": "ground-truth approver (upper bound)",
}
_SOURCE = re.compile(r"came from (?:un)?trusted (\S+?)#(\S+)$")
_OTP = re.compile(r"(?i)(?:otp|one[- ]time password)\D{0,40}?(?<!\d)(\d{6})(?!\d)")
_URL = re.compile(r"(?:https?://)?(?:www\.)?[A-Za-z0-9_.-]+\.[a-z]{2,}(?:/[^\s\"'<>|,)]*)?")
_FILE_ID = re.compile(
    r"""["']file_id["']\s*:\s*["']([^"']+)["']|["']attachments["']: \[([^\]]*)\]"""
)
_ORDER = re.compile(r"ORDER-\d+")
_ADDED = re.compile(r"(\S+) has been added to (\S+?)\.?$", re.M)


def render(result: Any) -> str:
    """What the agent is handed: AgentDojo's own formatter, JSON instead of YAML."""
    return tool_result_to_str(result, dump_fn=lambda v: json.dumps(v, default=str))


def lines_of(injection: str) -> list[str]:
    """Distinctive lines of an injection, as they read raw and inside a JSON string."""
    out = []
    for line in injection.splitlines():
        line = line.strip()
        if len(line) >= 16:
            out += [line, json.dumps(line)[1:-1]]
    return out or ([injection.strip()] if injection.strip() else [])


def _fold(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


def _file_ids(text: str) -> Iterator[str]:
    for one, many in _FILE_ID.findall(text):
        yield from [one] if one else re.findall(r"[\"']([^\"']+)[\"']", many)


@dataclass
class Placeholders:
    """Fills AgentDyn's ``$…`` placeholders from the results handed so far (latest first)."""

    seen: list[str] = field(default_factory=list)

    def fill(self, args: Any, holes: Any) -> Any:
        if isinstance(holes, str) and holes.startswith("$"):
            found = self.value(holes)
            return args if found is None else found
        if isinstance(args, dict) and isinstance(holes, dict):
            return {k: self.fill(v, holes.get(k)) for k, v in args.items()}
        if isinstance(args, list) and isinstance(holes, list) and len(args) == len(holes):
            return [self.fill(a, h) for a, h in zip(args, holes, strict=True)]
        return args

    def value(self, hole: str) -> str | None:
        name, _, nth = hole[1:].rpartition("_")
        index = int(nth) - 1 if nth.isdigit() else -1
        name = name if nth.isdigit() else hole[1:]
        for text in reversed(self.seen):
            if name == "6-digits":
                found = _OTP.findall(text)
            elif name == "file_id":
                found = list(dict.fromkeys(_file_ids(text)))
            elif name == "order_id":
                found = _ORDER.findall(text)
            elif name == "invitation_link":
                found = [u for u in _URL.findall(text) if "invit" in u.lower()]
            elif name == "file_name":
                found = [m.group(1) for m in _ADDED.finditer(text)]
            else:
                return None
            if found and -len(found) <= index < len(found):
                return found[index]
        return None


class Agent(BasePipelineElement):  # type: ignore[misc]
    name = "gpt-4o-2024-05-13"  # attacks address the model by a name; any listed one works

    def __init__(self) -> None:
        self.arm = "none"
        self.kernel: Kernel | None = None
        self.user_task: Any = None
        self.attacker_plan: Callable[[Any], list[Any]] | None = None
        self.injections: dict[str, str] = {}
        self.stats: dict[str, int] = defaultdict(int)
        self.blinded = False  # the wall held a whole result this run
        self.nowhere = False  # a call was refused for a value no prompt or handed result holds

    def query(self, query, runtime, env, messages=(), extra_args=None):  # type: ignore[no-untyped-def]
        ctx = Context().user(query)
        self.blinded = self.nowhere = False
        self._prompt = _fold(query)
        self._calls: dict[str, tuple[str, dict[str, Any], bool]] = {}
        self._holes = Placeholders()
        needles = [n for v in self.injections.values() for n in lines_of(v)]
        plan = list(self.user_task.ground_truth(env))
        wanted = [(c.function, dict(c.args)) for c in plan]
        out = list(messages)
        obeyed = False
        step = 0
        while plan:
            call = plan.pop(0)
            step += 1
            seen = self._run(call, runtime, env, ctx, wanted, out, step)
            if seen is None or obeyed or self.attacker_plan is None:
                continue
            if any(n in seen for n in needles):
                obeyed = True
                self.stats["obeyed"] += 1
                plan = list(self.attacker_plan(env)) + plan
        text = self.user_task.GROUND_TRUTH_OUTPUT
        out.append(
            {
                "role": "assistant",
                "content": [{"type": "text", "content": text}],
                "tool_calls": None,
            }
        )
        return query, runtime, env, out, extra_args or {}

    def _run(self, call, runtime, env, ctx, wanted, out, step):  # type: ignore[no-untyped-def]
        fn, fargs = call.function, dict(call.args)
        if call.placeholder_args:
            fargs = self._holes.fill(fargs, dict(call.placeholder_args))
        call_id = f"c{step}"
        if self.kernel is not None:
            verdict = self.kernel.decide(ToolCall(fn, fargs, call_id=call_id, context=ctx))
            if verdict.kind is VerdictKind.REQUIRE_WITNESS:
                self.stats["asked"] += 1
                if self._approves(fn, fargs, verdict, wanted, call):
                    self.kernel.approve_witness(verdict.meta["witness_id"], self.arm)
                    self.stats["approved"] += 1
                    verdict = self.kernel.decide(ToolCall(fn, fargs, call_id=call_id, context=ctx))
            if not verdict.admits:
                self.stats["refused"] += 1
                if "appears nowhere in the run" in verdict.claim:
                    self.nowhere = True
                return None
        result, error = runtime.run_function(env, fn, fargs)
        text = error if error is not None else render(result)
        flagged = False
        if self.kernel is not None:
            admission = self.kernel.admit_result(ToolResult(fn, text.encode(), call_id))
            if admission.verdict.kind is not VerdictKind.ALLOW:
                self.stats["results_held"] += 1
                flagged = True
            if admission.payload.startswith(b'{"_quarantined"'):
                self.blinded = True
                self.stats["results_held_whole"] += 1
            text = admission.payload.decode("utf-8", "replace")
            ctx.result(fn, call_id, text)
        self._calls[call_id] = (fn, fargs, flagged)
        self._holes.seen.append(text)
        fc = FunctionCall(function=fn, args=fargs, id=call_id)
        out.append({"role": "assistant", "content": None, "tool_calls": [fc]})
        out.append(
            {
                "role": "tool",
                "content": [{"type": "text", "content": text}],
                "tool_call": fc,
                "tool_call_id": call_id,
                "error": error,
            }
        )
        return text

    def _approves(self, fn: str, fargs: dict[str, Any], verdict: Verdict, wanted, call) -> bool:  # type: ignore[no-untyped-def]
        match self.arm:
            case "fak+stamp":
                return True
            case "fak+truth":
                return (fn, dict(call.args)) in wanted
            case "fak+evidence":
                return self._evidence(verdict)
            case _:
                return False

    def _evidence(self, verdict: Verdict) -> bool:
        """The evidence rule (see the module docstring): only what the prompt shows."""
        found = _SOURCE.search(verdict.claim)
        if found is None:
            self.stats["evidence_no_source"] += 1
            return False
        source = self._calls.get(found.group(2))
        if source is None or source[0] != found.group(1):
            self.stats["evidence_no_source"] += 1
            return False
        _, source_args, flagged = source
        if flagged:
            self.stats["evidence_flagged"] += 1
            return False
        places = [w.strip(".,;:'\"()") for w in self._prompt.split()]
        places = [w for w in places if len(w) >= 4 and ("/" in w or "." in w)]
        pointed = any(
            len(s.strip()) >= 3
            and (_fold(s) in self._prompt or any(_fold(s).startswith(p) for p in places))
            for s in _strings(source_args)
        )
        if not pointed:
            self.stats["evidence_not_pointed"] += 1
        return pointed
