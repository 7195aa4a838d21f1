"""The agent-fleet benchmark: naive re-prefill (A), warm per-agent KV (B), fak (C), one run.

C agents share a P-token prefix; T turns; each turn decodes D tokens, then ingests R private
result tokens. Exact prefill token counts come from the closed forms in
``fak.bench.fleet.token_counts``; B and C run live (their generated tokens must be identical),
A is extrapolated from a measured prefill-cost curve anchored to B's live prefix prefill, and a
small cell runs A live to check the extrapolation (anchored/live). The quarantine cell evicts
one agent's poisoned result mid-run through the kernel's result gate and checks that every
agent decodes exactly what it would have had the result never arrived.

    .venv/bin/python benchmarks/fleet.py [--prefix 2048 --turns 50 --agents 5 --decode 32
        --result 64] [--threads 2]     # same options as `fak bench fleet`

Prints a table and writes benchmarks/results/fleet.json. Not a test.
"""

from __future__ import annotations

import sys
from pathlib import Path

from fak.cli.main import cli

OUT = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "fleet.json"

if __name__ == "__main__":
    args = sys.argv[1:]
    if "--out" not in args:
        args += ["--out", str(OUT)]
    cli(["bench", "fleet", *args], prog_name="benchmarks/fleet.py")
