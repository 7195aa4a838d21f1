"""Cache-aware routing on the fleet workload: one worker, round-robin, cache-aware, one run.

C agents share a system prompt of about P words and run T turns each (D new tokens, then a
result of about R words), concurrently, against engine worker processes behind fak's router
(``fak.gateway.upstream.enginepool``). Three arms, each with freshly started workers: one
worker with the whole CPU budget; N workers (the budget split among them) routed round-robin;
N workers routed by prefix affinity. Prefill tokens come from the workers' cache verdicts;
wall-clock and the workers' CPU seconds cover the workload only.

    PYTHONPATH=src .venv/bin/python benchmarks/fleet_routing.py [--prefix 400 --turns 5
        --agents 5 --decode 12 --result 60] [--workers 2] [--threads 2] [--mode exact]
        [--stagger]

Prints a table and writes benchmarks/results/fleet_routing.json. Not a test.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from fak.bench.fleet_routing import RoutingCell, render, routing_report

OUT = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "fleet_routing.json"


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="benchmarks/fleet_routing.py")
    d = RoutingCell()
    p.add_argument("--prefix", type=int, default=d.P, help="shared system prompt, words")
    p.add_argument("--turns", type=int, default=d.T)
    p.add_argument("--agents", type=int, default=d.C)
    p.add_argument("--decode", type=int, default=d.D, help="new tokens per turn, at most")
    p.add_argument("--result", type=int, default=d.R, help="result words per turn")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--threads", type=int, default=2, help="CPU threads shared by the workers")
    p.add_argument("--mode", choices=["exact", "fast"], default="exact")
    p.add_argument(
        "--stagger",
        action="store_true",
        help="each agent starts once the previous one was answered",
    )
    p.add_argument("--out", type=Path, default=OUT)
    a = p.parse_args(argv)
    cell = RoutingCell(P=a.prefix, T=a.turns, C=a.agents, D=a.decode, R=a.result)

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    record = routing_report(
        cell, workers=a.workers, threads=a.threads, mode=a.mode, stagger=a.stagger, say=say
    )
    print(render(record))
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
