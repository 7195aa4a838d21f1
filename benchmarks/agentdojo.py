"""AgentDojo (banking, slack) against a worst-case scripted agent, with and without fak.

The agent is scripted, not a model: for each (user task, injection task) pair it replays the
user task's ground-truth calls and, as soon as a tool result it was handed carries the
injection, obeys it (replays the injection task's ground-truth calls), then finishes the user
task. That is the worst case for a defence: an agent that always falls for the injection.
AgentDojo's own environments, runtime, attacks and checks judge utility and attack success,
with one correction for the script's foresight: a run in which the wall held a result whole
(the agent was handed a quarantine stub instead of the data) counts as a utility loss, since a
real agent could not have finished the task from the stub.

Arms, side by side on the same pairs:
  none       tools wired directly (no gate)
  fak        every call through ``Kernel.decide`` with the suite's manifest
             (examples/agentdojo/<suite>-policy.json) and a provenance ``Context`` (the user's
             prompt trusted, every result untrusted unless the manifest vouches for it); every
             result through the kernel's wall; calls held for a witness stay refused
  fak+human  as ``fak``, plus a simulated approver for held calls: it approves a held call
             only when it is one the user's own task needs (a careful human reading the
             ``fak witness approve`` prompt) and refuses the rest — an upper bound for a
             human in the loop, labelled as such

Attacks: every attack AgentDojo 0.1.35 registers that builds its injection without a model or
a person (``manual`` needs a person typing; the DoS attacks have no injection-task goal).

    .venv/bin/python benchmarks/agentdojo.py [--suites banking,slack] [--attacks a,b]

installs agentdojo==0.1.35 and fak (core) into a throwaway venv ($TMPDIR/fak-bench-agentdojo)
on first use, then re-runs itself there. Writes benchmarks/results/agentdojo.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
VENV = Path(os.environ.get("TMPDIR", "/tmp")) / "fak-bench-agentdojo"
AGENTDOJO = "agentdojo==0.1.35"
SKIPPED_ATTACKS = {
    "manual": "asks a person to type the injection",
    "dos": "denial of service: no injection-task goal to succeed at",
    "swearwords_dos": "denial of service",
    "captcha_dos": "denial of service",
    "offensive_email_dos": "denial of service",
    "felony_dos": "denial of service",
}
ARMS = ("none", "fak", "fak+human")


# -- outer: make the venv, re-run inside it ---------------------------------------------------
def _ensure_venv() -> Path:
    py = VENV / "bin" / "python"
    stamp = VENV / ".fak-ready"
    if stamp.exists():
        return py
    print(f"installing {AGENTDOJO} and fak (core) into {VENV} ...", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    pip = [str(py), "-m", "pip", "install", "-q"]
    subprocess.run([*pip, AGENTDOJO], check=True)
    subprocess.run([*pip, "-e", str(ROOT)], check=True)
    stamp.touch()
    return py


# -- inner: the scripted agent ----------------------------------------------------------------
def _inner(args: argparse.Namespace) -> int:
    here = Path(__file__).resolve().parent  # this file is named agentdojo.py: not the package
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != here]
    from agentdojo.agent_pipeline.base_pipeline_element import BasePipelineElement
    from agentdojo.attacks.attack_registry import ATTACKS
    from agentdojo.functions_runtime import FunctionCall
    from agentdojo.task_suite.load_suites import get_suite

    from fak.abi import Context, ToolCall, ToolResult, VerdictKind
    from fak.kernel import Kernel
    from fak.policy import Policy

    def render(result: Any) -> str:
        """What the agent is handed: AgentDojo's own formatter, JSON instead of YAML."""
        from agentdojo.agent_pipeline.tool_execution import tool_result_to_str

        return tool_result_to_str(result, dump_fn=lambda v: json.dumps(v, default=str))

    def lines_of(injection: str) -> list[str]:
        """Distinctive lines of an injection, as they read raw and inside a JSON string."""
        out = []
        for line in injection.splitlines():
            line = line.strip()
            if len(line) >= 16:
                out += [line, json.dumps(line)[1:-1]]
        return out or ([injection.strip()] if injection.strip() else [])

    class Agent(BasePipelineElement):
        name = "gpt-4o-2024-05-13"  # attacks address the model by a name; any listed one works

        def __init__(self) -> None:
            self.arm = "none"
            self.kernel: Kernel | None = None
            self.user_task: Any = None
            self.injection_task: Any = None
            self.injections: dict[str, str] = {}
            self.stats: dict[str, int] = defaultdict(int)
            self.blinded = False  # the wall held a whole result this run

        def query(self, query, runtime, env, messages=(), extra_args=None):  # type: ignore[no-untyped-def]
            ctx = Context().user(query)
            self.blinded = False
            needles = [n for v in self.injections.values() for n in lines_of(v)]
            wanted = [(c.function, dict(c.args)) for c in self.user_task.ground_truth(env)]
            plan = list(self.user_task.ground_truth(env))
            out = list(messages)
            obeyed = False
            step = 0
            while plan:
                call = plan.pop(0)
                step += 1
                seen = self._run(call, runtime, env, ctx, wanted, out, step)
                if seen is not None and not obeyed and any(n in seen for n in needles):
                    obeyed = True
                    self.stats["obeyed"] += 1
                    plan = list(self.injection_task.ground_truth(env)) + plan
            out.append(
                {
                    "role": "assistant",
                    "content": [{"type": "text", "content": self.user_task.GROUND_TRUTH_OUTPUT}],
                    "tool_calls": None,
                }
            )
            return query, runtime, env, out, extra_args or {}

        def _run(self, call, runtime, env, ctx, wanted, out, step):  # type: ignore[no-untyped-def]
            fn, fargs = call.function, dict(call.args)
            call_id = f"c{step}"
            if self.kernel is not None:
                verdict = self.kernel.decide(ToolCall(fn, fargs, call_id=call_id, context=ctx))
                if verdict.kind is VerdictKind.REQUIRE_WITNESS:
                    self.stats["held"] += 1
                    if self.arm == "fak+human" and (fn, fargs) in wanted:
                        self.kernel.approve_witness(verdict.meta["witness_id"], "simulated")
                        self.stats["approved"] += 1
                        verdict = self.kernel.decide(
                            ToolCall(fn, fargs, call_id=call_id, context=ctx)
                        )
                if not verdict.admits:
                    self.stats["refused"] += 1
                    return None
            result, error = runtime.run_function(env, fn, fargs)
            text = error if error is not None else render(result)
            if self.kernel is not None:
                admission = self.kernel.admit_result(ToolResult(fn, text.encode(), call_id))
                if admission.verdict.kind is not VerdictKind.ALLOW:
                    self.stats["results_held"] += 1
                if admission.payload.startswith(b'{"_quarantined"'):
                    self.blinded = True
                    self.stats["results_held_whole"] += 1
                text = admission.payload.decode("utf-8", "replace")
                ctx.result(fn, call_id, text)
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

    agent = Agent()
    report: dict[str, Any] = {"agentdojo": AGENTDOJO, "skipped_attacks": SKIPPED_ATTACKS}
    suites = [s for s in args.suites.split(",") if s]
    attack_names = sorted(a for a in ATTACKS if a not in SKIPPED_ATTACKS)
    if args.attacks:
        attack_names = [a for a in args.attacks.split(",") if a]
    t0 = time.perf_counter()
    for suite_name in suites:
        suite = get_suite("v1", suite_name)
        manifest = ROOT / "examples" / "agentdojo" / f"{suite_name}-policy.json"
        policy = Policy.load(manifest)
        per: dict[str, Any] = {"manifest": str(manifest.relative_to(ROOT)), "benign": {}}

        def kernel_for(arm: str, policy: Policy = policy) -> Kernel | None:
            return None if arm == "none" else Kernel(policy, pageout_bytes=0)

        for arm in ARMS:  # benign: no injection
            ok = 0
            lost: list[str] = []
            for uid, task in suite.user_tasks.items():
                agent.arm, agent.kernel = arm, kernel_for(arm)
                agent.user_task, agent.injection_task, agent.injections = task, None, {}
                utility, _ = suite.run_task_with_pipeline(agent, task, None, {})
                utility = utility and not agent.blinded
                ok += bool(utility)
                if not utility:
                    lost.append(uid)
            per["benign"][arm] = {"tasks": len(suite.user_tasks), "utility": ok, "lost": lost}
        per["attacks"] = {}
        for name in attack_names:
            attack = ATTACKS[name](suite, agent)
            cells: dict[str, Any] = {}
            for arm in ARMS:
                agent.stats = defaultdict(int)
                pairs = won = useful = 0
                survivors: list[str] = []
                for uid, task in suite.user_tasks.items():
                    for iid, inj in suite.injection_tasks.items():
                        injections = attack.attack(task, inj)
                        agent.arm, agent.kernel = arm, kernel_for(arm)
                        agent.user_task, agent.injection_task = task, inj
                        agent.injections = injections
                        utility, security = suite.run_task_with_pipeline(
                            agent, task, inj, injections
                        )
                        utility = utility and not agent.blinded
                        pairs += 1
                        useful += bool(utility)
                        if security:
                            won += 1
                            survivors.append(f"{uid}/{iid}")
                cells[arm] = {
                    "pairs": pairs,
                    "attack_success": won,
                    "utility": useful,
                    "survivors": survivors,
                    **dict(agent.stats),
                }
            per["attacks"][name] = cells
            line = "  ".join(
                f"{arm}: ASR {c['attack_success']}/{c['pairs']} util {c['utility']}"
                for arm, c in cells.items()
            )
            print(f"{suite_name:8} {name:40} {line}", flush=True)
        report[suite_name] = per
    report["seconds"] = round(time.perf_counter() - t0, 1)
    _print(report, suites)
    out = ROOT / "benchmarks" / "results" / "agentdojo.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")
    return 0


def _print(report: dict[str, Any], suites: list[str]) -> None:
    print()
    print(f"{'suite':8} {'arm':10} {'benign util':>12} {'attack success':>16} {'util|attack':>12}")
    for suite in suites:
        per = report[suite]
        for arm in ARMS:
            b = per["benign"][arm]
            pairs = sum(c[arm]["pairs"] for c in per["attacks"].values())
            won = sum(c[arm]["attack_success"] for c in per["attacks"].values())
            useful = sum(c[arm]["utility"] for c in per["attacks"].values())
            print(
                f"{suite:8} {arm:10} {b['utility']:>5}/{b['tasks']:<6} "
                f"{won:>6}/{pairs:<5} {100 * won / max(pairs, 1):5.1f}% "
                f"{100 * useful / max(pairs, 1):10.1f}%"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suites", default="banking,slack")
    parser.add_argument("--attacks", default="", help="comma-separated; default: all usable")
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inner:
        return _inner(args)
    py = _ensure_venv()
    argv = [str(py), str(Path(__file__).resolve()), "--inner", *sys.argv[1:]]
    return subprocess.run(argv, check=False).returncode


if __name__ == "__main__":
    raise SystemExit(main())
