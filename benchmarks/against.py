"""Before and after, side by side in one run: a benchmark script of this tree against the same
script of another checkout (an older commit's work tree), rounds interleaved.

Each round runs ``OTHER/benchmarks/NAME.py`` with ``PYTHONPATH=OTHER/src`` and then this tree's
``benchmarks/NAME.py`` with this tree's ``src`` (the order alternates every round, so a slow
spell of the shared machine falls on both), reads the JSON each writes, and prints per cell the
median over rounds of both and their ratio (after / before: below 1 is faster for a latency,
above 1 for a rate). Supported: ``decide`` (in-process and spawned p50) and ``gateway`` (p50 and
requests/s per payload, stream and arm). Writes benchmarks/results/against-NAME.json. Not a test.

    git worktree add /tmp/before c75b740
    .venv/bin/python benchmarks/against.py decide /tmp/before --rounds 3 -- --rounds 100 --spawns 10
    .venv/bin/python benchmarks/against.py gateway /tmp/before --rounds 3 -- --no-litellm
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _cells(name: str, doc: dict[str, Any]) -> dict[str, tuple[float, str]]:
    """Flatten one result document to {cell: (value, unit)}; unit "ms"/"ns" lower is better."""
    out: dict[str, tuple[float, str]] = {}
    if name == "decide":
        for group in ("in_process", "spawned"):
            for arm, row in doc[group].items():
                out[f"{arm} p50"] = (float(row["p50_ns"]), "ns")
    elif name == "gateway":
        for row in doc["rows"]:
            key = f"{row['payload']} stream={row['stream']}"
            for arm, m in row["arms"].items():
                out[f"{key} {arm} p50"] = (float(m["p50_ms"]), "ms")
                out[f"{key} {arm} rps c8"] = (float(m["rps_c8"]), "rps")
    else:
        raise SystemExit(f"against.py: no cell reader for {name!r} (decide, gateway)")
    return out


def _show(value: float, unit: str) -> str:
    if unit == "ns" and value >= 1e6:
        return f"{value / 1e6:,.2f} ms"
    if unit == "ns" and value >= 1e3:
        return f"{value / 1e3:,.2f} us"
    return f"{value:,.2f} {unit}"


def _run(tree: Path, name: str, extra: list[str]) -> dict[str, tuple[float, str]]:
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    script = tree / "benchmarks" / f"{name}.py"
    subprocess.run(
        [sys.executable, str(script), *extra], env=env, cwd=tree, check=True, capture_output=True
    )
    result = tree / "benchmarks" / "results" / f"{name}.json"
    return _cells(name, json.loads(result.read_text(encoding="utf-8")))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("name", help="decide or gateway")
    ap.add_argument("other", type=Path, help="the other checkout's root (the 'before')")
    ap.add_argument("--rounds", type=int, default=3)
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    args = ap.parse_args(argv[:cut])
    args.extra = argv[cut + 1 :]  # for the benchmark script
    trees = {"before": args.other.resolve(), "after": ROOT}
    samples: dict[str, dict[str, list[float]]] = {"before": {}, "after": {}}
    units: dict[str, str] = {}
    for r in range(args.rounds):
        order = ("before", "after") if r % 2 == 0 else ("after", "before")
        for side in order:
            for cell, (value, unit) in _run(trees[side], args.name, args.extra).items():
                samples[side].setdefault(cell, []).append(value)
                units[cell] = unit
            print(f"round {r + 1}/{args.rounds}: {side} done", flush=True)
    rows = []
    width = max(len(c) for c in units) + 2
    print(f"{'cell':<{width}}{'before':>12}{'after':>12}{'after/before':>14}")
    for cell, unit in units.items():
        if cell not in samples["before"] or cell not in samples["after"]:
            continue
        b = statistics.median(samples["before"][cell])
        a = statistics.median(samples["after"][cell])
        ratio = a / b if b else float("nan")
        rows.append({"cell": cell, "unit": unit, "before": b, "after": a, "ratio": ratio})
        print(f"{cell:<{width}}{_show(b, unit):>12}{_show(a, unit):>12}{ratio:>14.3f}")
    out = ROOT / "benchmarks" / "results" / f"against-{args.name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    doc = {"before": str(trees["before"]), "rounds": args.rounds, "extra": args.extra, "rows": rows}
    out.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
