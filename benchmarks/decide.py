"""Decide-path cost: in-process ``Kernel.decide`` versus spawning ``fak hook`` per call.

In one run, side by side:
  in-process arms   Kernel.decide on the compiled floor (allow-listed read by exact name and by
                    prefix, explicit deny, default deny, an arg-rule call that needs the full fold,
                    a read on a manifest with sink rules, and a sink-checked payment against a
                    32 KB conversation: provenance index warm, and built for the call as the
                    gateway does per request),
                    the uncompiled fold for the same read, a vDSO hit and a full syscall
                    (decide + dispatch + result admission)
  spawned arms      one process per call, interleaved: a bare `python -S -c pass` (the floor for
                    any Python hook), `fak hook` answered by its resident decider (fak's own
                    shape on the default floor, and a Claude Code Bash call on the Claude Code
                    pack, which needs the full fold), and `fak hook` with FAK_HOOK_DAEMON=0
                    (start-up, imports, policy load and one decision in the spawned process)
The package is byte-compiled first, as a pip install does.
In-process timings are taken in batches (rounds interleave the arms; GC off while timing, as
timeit does); each sample is one batch's mean per call, and p50/p99 are over samples. Prints a
table and the ratio, and writes benchmarks/results/decide.json. Not a test.

    .venv/bin/python benchmarks/decide.py [--rounds 400] [--batch 200] [--spawns 30]
"""

from __future__ import annotations

import argparse
import compileall
import gc
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fak
from fak.abi import Context, ToolCall
from fak.hooks.daemon import stop_deciders
from fak.kernel import Kernel
from fak.policy import Policy

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "decide.json"
SUPPORT = ROOT / "examples" / "customer-support-readonly-policy.json"
BANKING = ROOT / "examples" / "agentdojo" / "banking-policy.json"
GATE_P50_NS = 3000.0
GATE_RATIO = 1000.0
HOOK_INPUT = json.dumps({"tool": "calculate", "args": {"expression": "2+2"}}).encode()


def _pct(samples: list[float], p: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(p / 100.0 * (len(ordered) - 1)))]


def _conversation(size: int) -> list[tuple[str, str]]:
    """A user turn naming the payee, then ~``size`` bytes of transaction-list results."""
    rows = [
        {"id": i, "recipient": f"GB29NWBK6016133192{i:04d}", "amount": 10.5 + i, "subject": "x"}
        for i in range(size // 100)
    ]
    body = json.dumps(rows)
    chunks = [body[i : i + 4096] for i in range(0, len(body), 4096)]
    return [("user", "please pay DE89 3704 0044 0532 0130 00 the usual 120 EUR")] + [
        ("get_most_recent_transactions", chunk) for chunk in chunks
    ]


def _context(history: list[tuple[str, str]]) -> Context:
    ctx = Context()
    for i, (who, text) in enumerate(history):
        if who == "user":
            ctx.user(text)
        else:
            ctx.result(who, f"c{i}", text)
    return ctx


def _arms() -> dict[str, tuple[Callable[[ToolCall], Any], ToolCall, str]]:
    default = Kernel(Policy.default())
    support = Kernel(Policy.load(SUPPORT))
    chain = default.explain  # the uncompiled fold (with a per-rung trace)
    uncompiled = Kernel(Policy.default())
    plain_chain = uncompiled._state.decider.chain  # type: ignore[union-attr]
    syscall = Kernel(Policy.default())
    syscall.register_tool("get_user_details", lambda args: {"user_id": args["user_id"], "n": 1})
    dispatch = Kernel(Policy.default(), vdso=False)
    dispatch.register_tool("get_user_details", lambda args: {"user_id": args["user_id"], "n": 1})
    banking = Kernel(Policy.load(BANKING))
    history = _conversation(32 * 1024)
    warm = _context(history)
    pay = {"recipient": "DE89370400440532013000", "amount": 120}
    read = ToolCall("calculate", {"expression": "2+2"})
    prefixed = ToolCall("get_user_details", {"user_id": "u1"})
    syscall.syscall(prefixed)  # warm the vDSO entry
    return {
        "decide allow (exact allow-list, read)": (default.decide, read, "ALLOW"),
        "decide allow (allow_prefix get_)": (default.decide, prefixed, "ALLOW"),
        "decide deny (explicit deny)": (default.decide, ToolCall("delete_account", {}), "DENY"),
        "decide deny (default deny)": (default.decide, ToolCall("wire_money", {"to": "x"}), "DENY"),
        "decide allow (arg rule, full fold)": (
            support.decide,
            ToolCall("search_kb", {"query": "reset my password"}),
            "ALLOW",
        ),
        "decide allow (read, manifest with sink rules)": (
            banking.decide,
            ToolCall("get_balance", {}),
            "ALLOW",
        ),
        "sink check, 32 KB conversation, index warm": (
            banking.decide,
            ToolCall("send_money", pay, context=warm),
            "ALLOW",
        ),
        "sink check, 32 KB conversation, index cold": (
            lambda c: banking.decide(ToolCall(c.tool, c.args, context=_context(history))),
            ToolCall("send_money", pay),
            "ALLOW",
        ),
        "uncompiled fold, same read": (plain_chain.decide, read, "ALLOW"),
        "explain (fold + per-rung trace)": (lambda c: chain(c)[0], read, "ALLOW"),
        "syscall vDSO hit": (lambda c: syscall.syscall(c).verdict, prefixed, "ALLOW"),
        "syscall decide+dispatch+admit": (lambda c: dispatch.syscall(c).verdict, prefixed, "ALLOW"),
    }


def _in_process(rounds: int, batch: int) -> dict[str, dict[str, float]]:
    arms = _arms()
    for name, (fn, call, expect) in arms.items():
        got = str(fn(call).kind)
        if got != expect:
            msg = f"{name}: expected {expect}, got {got}"
            raise SystemExit(msg)
    samples: dict[str, list[float]] = {name: [] for name in arms}
    clock = time.perf_counter_ns
    gc.collect()
    gc.disable()
    try:
        for _ in range(rounds):
            for name, (fn, call, _) in arms.items():
                start = clock()
                for _ in range(batch):
                    fn(call)
                samples[name].append((clock() - start) / batch)
    finally:
        gc.enable()
    return {
        name: {
            "p50_ns": _pct(values, 50),
            "p99_ns": _pct(values, 99),
            "mean_ns": statistics.fmean(values),
            "samples": len(values),
        }
        for name, values in samples.items()
    }


def _fak_binary() -> list[str]:
    local = Path(sys.executable).with_name("fak")
    if local.exists():
        return [str(local)]
    found = shutil.which("fak")
    return [found] if found else [sys.executable, "-m", "fak.cli.main"]


CLAUDE_PACK = ROOT / "examples" / "claude-code-policy.json"
CLAUDE_BASH = json.dumps(
    {
        "session_id": "bench",
        "cwd": str(ROOT),
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "git status --short"},
        "tool_use_id": "toolu_bench",
    }
).encode()


def _spawned(spawns: int, run_dir: str) -> dict[str, dict[str, Any]]:
    """Spawned arms, interleaved round by round so they share the machine's noise."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FAK_")}
    env["FAK_RUN_DIR"] = run_dir
    fak = [*_fak_binary(), "hook"]
    arms: dict[str, tuple[list[str], bytes, dict[str, str], str, int]] = {
        "bare `python -S -c pass` (floor)": (
            [sys.executable, "-S", "-c", "pass"],
            b"",
            env,
            "",
            spawns,
        ),
        "`fak hook`, resident decider": (fak, HOOK_INPUT, env, "ALLOW", spawns),
        "`fak hook` Claude Code Bash, pack, decider": (
            [*fak, "--policy", str(CLAUDE_PACK)],
            CLAUDE_BASH,
            env,
            "allow",
            spawns,
        ),
        "`fak hook`, FAK_HOOK_DAEMON=0 (in-process)": (
            fak,
            HOOK_INPUT,
            {**env, "FAK_HOOK_DAEMON": "0"},
            "ALLOW",
            max(3, spawns // 3),
        ),
    }
    times: dict[str, list[float]] = {name: [] for name in arms}
    for name, (cmd, stdin, arm_env, expect, _) in arms.items():  # warm-up; starts the decider
        for _ in range(3):
            done = subprocess.run(cmd, input=stdin, capture_output=True, env=arm_env, check=False)
            time.sleep(0.3)
        if expect and expect not in done.stdout.decode():
            msg = f"{name}: expected {expect}, got {done.stdout!r} {done.stderr!r}"
            raise SystemExit(msg)
    for i in range(spawns):
        for name, (cmd, stdin, arm_env, _, count) in arms.items():
            if i >= count:
                continue
            start = time.perf_counter_ns()
            subprocess.run(cmd, input=stdin, capture_output=True, env=arm_env, check=True)
            times[name].append(float(time.perf_counter_ns() - start))
    return {
        name: {
            "command": " ".join(arms[name][0]),
            "p50_ns": _pct(values, 50),
            "p99_ns": _pct(values, 99),
            "mean_ns": statistics.fmean(values),
            "samples": len(values),
        }
        for name, values in times.items()
    }


def _fmt_ns(ns: float) -> str:
    if ns >= 1e6:
        return f"{ns / 1e6:,.2f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:,.2f} µs"
    return f"{ns:,.0f} ns"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=400)
    parser.add_argument("--batch", type=int, default=200)
    parser.add_argument("--spawns", type=int, default=30)
    opts = parser.parse_args()

    # a pip install byte-compiles the package; an editable one (make's .venv) may not have
    compileall.compile_dir(str(Path(fak.__file__).parent), quiet=1)
    in_proc = _in_process(opts.rounds, opts.batch)
    with tempfile.TemporaryDirectory(prefix="fak-bench-run-") as run_dir:
        os.chmod(run_dir, 0o700)
        try:
            spawned_arms = _spawned(opts.spawns, run_dir)
        finally:
            stop_deciders(run_dir)
    bare = spawned_arms["bare `python -S -c pass` (floor)"]
    spawned = spawned_arms["`fak hook`, resident decider"]
    headline = in_proc["decide allow (exact allow-list, read)"]
    ratio = spawned["p50_ns"] / headline["p50_ns"]

    width = max(len(n) for n in (*in_proc, *spawned_arms)) + 4
    print(f"{'arm':<{width}}{'p50':>12}{'p99':>12}{'samples':>9}")
    for name, row in (*in_proc.items(), *spawned_arms.items()):
        print(
            f"{name:<{width}}{_fmt_ns(row['p50_ns']):>12}{_fmt_ns(row['p99_ns']):>12}"
            f"{row['samples']:>9}"
        )
    print()
    gate_ok = headline["p50_ns"] <= GATE_P50_NS
    print(
        f"in-process decide p50 (allow-listed read): {_fmt_ns(headline['p50_ns'])}"
        f"  (gate ≤ {_fmt_ns(GATE_P50_NS)}: {'pass' if gate_ok else 'FAIL'})"
    )
    print(
        f"spawned hook p50 / in-process decide p50 = {ratio:,.0f}x"
        f"  (gate ≥ {GATE_RATIO:,.0f}x: {'pass' if ratio >= GATE_RATIO else 'FAIL'})"
    )

    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(
        json.dumps(
            {
                "benchmark": "decide",
                "command": "benchmarks/decide.py " + " ".join(sys.argv[1:]),
                "machine": {
                    "python": platform.python_version(),
                    "implementation": platform.python_implementation(),
                    "platform": platform.platform(),
                    "cpus": os.cpu_count(),
                },
                "method": {
                    "rounds": opts.rounds,
                    "batch": opts.batch,
                    "gc": "disabled while timing",
                },
                "in_process": in_proc,
                "spawned": spawned_arms,
                "ratio_bare_interpreter_over_in_process": bare["p50_ns"] / headline["p50_ns"],
                "ratio_spawned_over_bare_interpreter": {
                    name: row["p50_ns"] / bare["p50_ns"] for name, row in spawned_arms.items()
                },
                "headline": {
                    "arm": "decide allow (exact allow-list, read)",
                    "p50_ns": headline["p50_ns"],
                    "ratio_spawned_over_in_process": ratio,
                    "gate_p50_ns": GATE_P50_NS,
                    "gate_ratio": GATE_RATIO,
                    "pass": headline["p50_ns"] <= GATE_P50_NS and ratio >= GATE_RATIO,
                },
            },
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )
    print(
        f"even a bare interpreter spawn is {bare['p50_ns'] / headline['p50_ns']:,.0f}x "
        "the in-process decide (the floor for any Python hook)"
    )
    for name, row in spawned_arms.items():
        if row is bare:
            continue
        startup = row["p50_ns"] / bare["p50_ns"]
        print(f"{name} p50 / bare interpreter spawn p50 = {startup:,.2f}x")
    startup = spawned["p50_ns"] / bare["p50_ns"]
    print(
        f"issue-9 target (fak hook ≤ 2x bare interpreter): {'met' if startup <= 2 else 'NOT met'}"
    )
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
