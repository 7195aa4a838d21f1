"""AgentDojo and AgentDyn against a worst-case scripted agent, with and without fak.

The agent is scripted, not a model (``agentdojo_agent.py``): for each (user task, injection
task) pair it replays the user task's ground-truth calls and, as soon as a tool result it was
handed carries the injection, obeys it (replays the attacker's calls), then finishes the user
task — the worst case for a defence. AgentDojo's own environments, runtime, attacks and checks
judge utility and attack success, with one correction for the script's foresight: a run in
which the wall held a result whole (the agent got a quarantine stub) counts as a utility loss.

Suites: banking and slack from ``agentdojo==0.1.35`` (PyPI); shopping, github and dailylife from
AgentDyn (github.com/leolee99/AgentDyn, not on PyPI: pass ``--agentdyn`` a checkout or a bare
git directory of it; it is installed into its own throwaway venv). Each suite's manifest is
``examples/agentdojo/<suite>-policy.json``. workspace and travel are kept out of development:
they run only if a manifest for them exists (none does).

Arms, side by side on the same pairs (approver models in ``agentdojo_agent.py``): ``none`` (no
gate), ``fak`` (no approver), ``fak+stamp`` (rubber stamp), ``fak+evidence`` (reads only the
approval prompt), ``fak+truth`` (reads the task's ground truth: an upper bound, labelled).
Every hold is one approval asked; the counts are reported per benign task and per attacked pair.

Attacks: every attack AgentDojo registers that builds its injection without a model or a person
(``manual`` needs a person; the DoS attacks have no goal), and, reported apart, the adaptive
attacks of ``agentdojo_adaptive.py`` (an attacker who has read the manifest).

    .venv/bin/python benchmarks/agentdojo.py [--suites banking,slack,shopping,github,dailylife]
        [--attacks a,b] [--no-adaptive] [--limit N] [--agentdyn DIR]

builds the venvs under $TMPDIR on first use, re-runs itself there (one run per venv), and
writes benchmarks/results/agentdojo.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TMP = Path(os.environ.get("TMPDIR", "/tmp"))
AGENTDOJO = "agentdojo==0.1.35"
DOJO_SUITES = ("banking", "slack")
DYN_SUITES = ("shopping", "github", "dailylife")
KEPT_OUT = ("workspace", "travel")  # never tuned on; measured only if a manifest exists
SKIPPED_ATTACKS = {
    "manual": "asks a person to type the injection",
    "dos": "denial of service: no injection-task goal to succeed at",
    "swearwords_dos": "denial of service",
    "captcha_dos": "denial of service",
    "offensive_email_dos": "denial of service",
    "felony_dos": "denial of service",
}


# -- outer: make the venvs, re-run inside them -------------------------------------------------
def _venv(name: str, install: list[str]) -> Path:
    venv = TMP / name
    py = venv / "bin" / "python"
    if (venv / ".fak-ready").exists():
        return py
    print(f"installing {' '.join(install)} and fak (core) into {venv} ...", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(py), "-m", "pip", "install", "-q"]
    subprocess.run([*pip, *install], check=True)
    subprocess.run([*pip, "-e", str(ROOT)], check=True)
    (venv / ".fak-ready").touch()
    return py


def _agentdyn_tree(source: Path) -> tuple[Path, str]:
    """A source tree of AgentDyn from a checkout or a bare git directory, and its commit."""
    git = ["git", f"--git-dir={source}"] if (source / "HEAD").is_file() else None
    if git is None and (source / ".git").exists():
        git = ["git", f"--git-dir={source / '.git'}"]
    if git is None:
        return source, "unknown"
    commit = subprocess.run(
        [*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    tree = TMP / f"agentdyn-{commit[:12]}"
    if not (tree / "pyproject.toml").exists():
        with tempfile.TemporaryDirectory() as tmp:
            tar = Path(tmp) / "src.tar"
            with tar.open("wb") as fh:
                subprocess.run(
                    [*git, "archive", "HEAD", "src", "pyproject.toml", "README.md", "LICENSE"],
                    check=True,
                    stdout=fh,
                )
            shutil.rmtree(tree, ignore_errors=True)
            with tarfile.open(tar) as tf:
                tf.extractall(tree, filter="data")
    return tree, commit


def _outer(args: argparse.Namespace) -> int:
    suites = [s for s in args.suites.split(",") if s]
    for name in KEPT_OUT:
        if name in suites and not (ROOT / "examples/agentdojo" / f"{name}-policy.json").exists():
            print(f"!! {name}: kept out of development and no manifest exists: skipped")
            suites.remove(name)
    runs: list[tuple[Path, list[str], dict[str, str]]] = []
    dojo = [s for s in suites if s not in DYN_SUITES]
    if dojo:
        runs.append((_venv("fak-bench-agentdojo", [AGENTDOJO]), dojo, {"agentdojo": AGENTDOJO}))
    dyn = [s for s in suites if s in DYN_SUITES]
    if dyn and not args.agentdyn:
        print(
            f"!! AgentDyn suites {','.join(dyn)} skipped: it is not on PyPI; pass --agentdyn "
            "DIR (a checkout or bare git directory of leolee99/AgentDyn)"
        )
    elif dyn:
        tree, commit = _agentdyn_tree(Path(args.agentdyn))
        tag = hashlib.sha256(commit.encode()).hexdigest()[:8]
        py = _venv(f"fak-bench-agentdyn-{tag}", [str(tree)])
        runs.append((py, dyn, {"agentdyn": f"leolee99/AgentDyn@{commit}"}))
    report: dict[str, Any] = {"skipped_attacks": SKIPPED_ATTACKS, "suites": {}}
    t0 = time.perf_counter()
    for py, names, source in runs:
        with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as fh:
            part = Path(fh.name)
        argv = [
            str(py),
            str(Path(__file__).resolve()),
            "--inner",
            "--suites",
            ",".join(names),
            "--attacks",
            args.attacks,
            "--limit",
            str(args.limit),
            "--out",
            str(part),
        ]
        if args.no_adaptive:
            argv.append("--no-adaptive")
        code = subprocess.run(argv, check=False).returncode
        if code != 0:
            return code
        for name, per in json.loads(part.read_text())["suites"].items():
            report["suites"][name] = {**source, **per}
        part.unlink()
    report["seconds"] = round(time.perf_counter() - t0, 1)
    report["limit"] = args.limit
    _print(report)
    out = (
        ROOT
        / "benchmarks"
        / "results"
        / ("agentdojo.json" if not args.limit else "agentdojo-limited.json")
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")
    return 0


# -- inner: one venv, some suites --------------------------------------------------------------
def _inner(args: argparse.Namespace) -> int:
    here = Path(__file__).resolve().parent  # this file is named agentdojo.py: not the package
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != here] + [str(here)]
    import warnings

    warnings.simplefilter("ignore")
    import yaml

    if yaml.__with_libyaml__:  # the suites' YAML parsed by libyaml: same documents, ~10x faster
        yaml.safe_load = lambda text: yaml.load(text, Loader=yaml.CSafeLoader)
    from agentdojo.attacks.attack_registry import ATTACKS
    from agentdojo.task_suite.load_suites import get_suite

    from agentdojo_adaptive import ADAPTIVE, AdaptiveAttack, SinkMap
    from agentdojo_agent import APPROVER, ARMS, Agent
    from agentdojo_dyn_plans import attacker_plan
    from fak.kernel import Kernel
    from fak.policy import Policy

    agent = Agent()
    attack_names = sorted(a for a in ATTACKS if a not in SKIPPED_ATTACKS)
    if args.attacks:
        attack_names = [a for a in args.attacks.split(",") if a and a not in ADAPTIVE]
    adaptive = (
        []
        if args.no_adaptive
        else [a for a in ADAPTIVE if not args.attacks or a in args.attacks.split(",")]
    )
    report: dict[str, Any] = {"suites": {}, "arms": APPROVER}
    for suite_name in [s for s in args.suites.split(",") if s]:
        suite = get_suite("v1", suite_name)
        manifest = ROOT / "examples" / "agentdojo" / f"{suite_name}-policy.json"
        policy = Policy.load(manifest)
        user_tasks = dict(list(suite.user_tasks.items())[: args.limit or None])
        injection_tasks = dict(list(suite.injection_tasks.items())[: args.limit or None])
        per: dict[str, Any] = {
            "manifest": str(manifest.relative_to(ROOT)),
            "benign": {},
            "attacks": {},
            "adaptive": {},
        }

        def kernel_for(arm: str, policy: Policy = policy) -> Kernel | None:
            return None if arm == "none" else Kernel(policy, pageout_bytes=0)

        clean = suite.load_and_inject_default_environment({})
        for arm in ARMS:  # benign: no injection
            agent.stats = _counter()
            ok = 0
            lost: list[str] = []
            nowhere: list[str] = []
            for uid, task in user_tasks.items():
                agent.arm, agent.kernel = arm, kernel_for(arm)
                agent.user_task, agent.attacker_plan, agent.injections = task, None, {}
                utility, _ = suite.run_task_with_pipeline(
                    agent, task, None, {}, environment=clean.model_copy(deep=True)
                )
                utility = utility and not agent.blinded
                ok += bool(utility)
                if not utility:
                    lost.append(uid)
                    if agent.nowhere:
                        nowhere.append(uid)
            per["benign"][arm] = {
                "tasks": len(user_tasks),
                "utility": ok,
                "lost": lost,
                "lost_with_nowhere_refusal": nowhere,
                **dict(agent.stats),
            }
        tools = {
            f.name: set(f.parameters.model_json_schema().get("properties", {})) for f in suite.tools
        }
        sinks = SinkMap(json.loads(manifest.read_text()), tools)
        runs: list[tuple[str, str, Any]] = [
            ("attacks", n, ATTACKS[n](suite, agent)) for n in attack_names
        ]
        base = ATTACKS["direct"](suite, agent)

        def obeyed(inj: Any, suite_name: str = suite_name) -> Any:
            return attacker_plan(suite_name, inj)

        # the envelope the wall lets through
        runs += [("adaptive", n, AdaptiveAttack(n, base, sinks, obeyed)) for n in adaptive]
        for group, name, attack in runs:
            cells: dict[str, Any] = {
                arm: {"pairs": 0, "attack_success": 0, "utility": 0, "survivors": []}
                for arm in ARMS
            }
            stats = {arm: _counter() for arm in ARMS}
            skipped = unbuildable = 0
            for uid, task in user_tasks.items():
                if isinstance(attack, AdaptiveAttack):
                    attack.user_values = _values(task.ground_truth(clean.model_copy(deep=True)))
                for iid, inj in injection_tasks.items():
                    if isinstance(attack, AdaptiveAttack) and not attack.applies(inj, clean):
                        skipped += 1
                        continue
                    try:
                        injections = attack.attack(task, inj)
                    except ValueError:  # tool_knowledge needs placeholder_args the task lacks
                        unbuildable += 1
                        continue
                    loaded = suite.load_and_inject_default_environment(injections)
                    for arm in ARMS:  # the same pair, parsed once, for every arm
                        agent.stats = stats[arm]
                        agent.arm, agent.kernel = arm, kernel_for(arm)
                        agent.user_task, agent.injections = task, injections
                        agent.attacker_plan = (
                            attack.plan(inj) if isinstance(attack, AdaptiveAttack) else obeyed(inj)
                        )
                        utility, security = suite.run_task_with_pipeline(
                            agent, task, inj, injections, environment=loaded.model_copy(deep=True)
                        )
                        cell = cells[arm]
                        cell["pairs"] += 1
                        cell["utility"] += bool(utility and not agent.blinded)
                        if security:
                            cell["attack_success"] += 1
                            cell["survivors"].append(f"{uid}/{iid}")
            for arm in ARMS:
                cells[arm].update(stats[arm])
                if isinstance(attack, AdaptiveAttack):
                    cells[arm]["not_applicable"] = skipped
                if unbuildable:
                    cells[arm]["not_buildable"] = unbuildable
            per[group][name] = cells
            line = "  ".join(
                f"{arm}: {c['attack_success']}/{c['pairs']} u{c['utility']} a{c.get('asked', 0)}"
                for arm, c in cells.items()
            )
            print(f"{suite_name:9} {name:40} {line}", flush=True)
        report["suites"][suite_name] = per
    Path(args.out).write_text(json.dumps(report) + "\n")
    return 0


def _counter() -> dict[str, int]:
    from collections import defaultdict

    return defaultdict(int)


def _values(calls: list[Any]) -> dict[str, list[str]]:
    """Argument name -> string values (list elements too) the user task's own calls pass."""
    out: dict[str, list[str]] = {}
    for call in calls:
        for name, value in dict(call.args).items():
            items = value if isinstance(value, list) else [value]
            out.setdefault(name, []).extend(v for v in items if isinstance(v, str))
    return out


# -- the table ---------------------------------------------------------------------------------
def summary(per: dict[str, Any], arm: str, group: str) -> dict[str, float]:
    """Totals over a suite's attacks in one group (registered or adaptive) for one arm."""
    cells = [c[arm] for c in per[group].values()]
    pairs = sum(c["pairs"] for c in cells)
    return {
        "pairs": pairs,
        "won": sum(c["attack_success"] for c in cells),
        "useful": sum(c["utility"] for c in cells),
        "asked": sum(c.get("asked", 0) for c in cells),
    }


def _print(report: dict[str, Any]) -> None:
    print()
    head = (
        f"{'suite':9} {'arm':13} {'benign':>7} {'asked/b':>7} {'ASR reg':>15} "
        f"{'ASR adapt':>15} {'util|att':>8} {'asked/a':>7}"
    )
    print(head)
    for suite, per in report["suites"].items():
        for arm, b in per["benign"].items():
            reg = summary(per, arm, "attacks")
            ada = summary(per, arm, "adaptive") if per["adaptive"] else None
            pct = 100 * reg["won"] / max(reg["pairs"], 1)
            ada_txt = (
                f"{ada['won']:>5}/{ada['pairs']:<5} {100 * ada['won'] / max(ada['pairs'], 1):4.1f}%"
                if ada
                else "-"
            )
            print(
                f"{suite:9} {arm:13} {b['utility']:>3}/{b['tasks']:<3} "
                f"{b.get('asked', 0) / max(b['tasks'], 1):7.2f} "
                f"{reg['won']:>5}/{reg['pairs']:<5} {pct:4.1f}% {ada_txt:>15} "
                f"{100 * reg['useful'] / max(reg['pairs'], 1):7.1f}% "
                f"{reg['asked'] / max(reg['pairs'], 1):7.2f}"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suites", default=",".join(DOJO_SUITES + DYN_SUITES))
    parser.add_argument("--attacks", default="", help="comma-separated; default: all usable")
    parser.add_argument("--no-adaptive", action="store_true", help="skip the adaptive attacks")
    parser.add_argument(
        "--limit",
        type=int,
        default=0,
        help="first N user tasks and N injection tasks per suite (development)",
    )
    parser.add_argument("--agentdyn", default="", help="AgentDyn checkout or bare git directory")
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    return _inner(args) if args.inner else _outer(args)


if __name__ == "__main__":
    raise SystemExit(main())
