"""One body admitted N times, to be counted under callgrind: instructions, not seconds.

Timings on a shared machine move more between rounds than a small change costs (one run of
``benchmarks/screen.py --against`` moved 0.77-1.46x between rows on an idle machine).
Instruction counts repeat exactly for the same binary and inputs. Run it twice per tree, with
``--times 10`` and ``--times 0``; the difference over 10 is one admission's instructions:

    PYTHONPATH=src valgrind --tool=callgrind --callgrind-out-file=/dev/null \\
        .venv/bin/python benchmarks/screen_instructions.py code --times 10

The bodies are ``benchmarks/screen.py``'s 64 KiB corpora (its ``code`` body is read from
``src/fak`` of the checkout this script sits in, so both trees are fed the same bytes when one
copy of the script is used with each tree's ``PYTHONPATH``).
"""

from __future__ import annotations

import argparse
import random

import screen
from fak.abi import ToolResult
from fak.cas import MemoryStore
from fak.kernel.quarantine import QuarantineLedger

BODIES = {
    "code": screen.code,
    "json-api": screen.json_api,
    "json-ids": screen.json_ids,
    "html": screen.html,
    "prose-utf8": screen.prose_utf8,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("body", choices=sorted(BODIES))
    parser.add_argument("--times", type=int, default=10, help="admissions after a warm one")
    parser.add_argument("--size", type=int, default=65536)
    args = parser.parse_args()
    body = BODIES[args.body](args.size, random.Random(7))
    ledger = QuarantineLedger(MemoryStore(max_bytes=64 << 20), memoize=False)
    ledger.admit(ToolResult(tool="bench", payload=body))  # imports, compiled patterns, caches
    for _ in range(args.times):
        ledger.admit(ToolResult(tool="bench", payload=body))


if __name__ == "__main__":
    main()
