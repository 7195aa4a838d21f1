"""MCP round-trip cost of one ``fak_adjudicate``, side by side on every transport fak serves.

Arms, all answering the same call (an explicit policy DENY) from the same policy:
  tools       McpTools.call in-process: input checks + Kernel.decide + the reply envelope
  sdk-inproc  the official mcp Client against the Server object (no framing, no I/O)
  stdio       the official client talking to a spawned `fak mcp` over stdin/stdout
  http        the official client over Streamable HTTP (stateless JSON) to a loopback uvicorn
Sessions stay open; rounds interleave the arms; each sample is one batch's mean per call. Also
measures the one-off cost of spawning `fak mcp` up to its first answer. Prints a table, writes
benchmarks/results/mcp_roundtrip.json. Not a test.

    .venv/bin/python benchmarks/mcp_roundtrip.py [--rounds 30] [--batch 20] [--spawns 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

from fak.gateway.mcp_server import build_mcp_server, mcp_asgi_app
from fak.gateway.mcp_tools import McpTools
from fak.gateway.server import LoopbackServer
from fak.kernel import Kernel
from fak.policy import Policy

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "mcp_roundtrip.json"
SUPPORT = ROOT / "examples" / "customer-support-readonly-policy.json"
CALL = {"tool": "refund_payment", "arguments": {"order": "o-1"}}
STDIO = StdioServerParameters(
    command=sys.executable,
    args=["-m", "fak.cli.main", "mcp", "--policy", str(SUPPORT)],
    cwd=str(ROOT),
)


def _pct(samples: list[float], p: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(p / 100.0 * (len(ordered) - 1)))]


def _check(result: Any) -> None:
    envelope = json.loads(result.content[0].text)
    if envelope["data"].get("reason") != "POLICY_BLOCK" or result.is_error:
        msg = f"unexpected answer: {envelope}"
        raise SystemExit(msg)


async def _spawn_to_first_answer() -> float:
    t0 = time.perf_counter()
    async with Client(STDIO, mode="legacy") as client:
        _check(await client.call_tool("fak_adjudicate", CALL))
        return time.perf_counter() - t0


async def _run(rounds: int, batch: int, spawns: int, url: str) -> dict[str, Any]:
    tools = McpTools(Kernel(Policy.load(SUPPORT)))
    samples: dict[str, list[float]] = {"tools": [], "sdk-inproc": [], "stdio": [], "http": []}
    async with AsyncExitStack() as stack:
        clients = {
            "sdk-inproc": await stack.enter_async_context(
                Client(build_mcp_server(Kernel(Policy.load(SUPPORT))))
            ),
            "stdio": await stack.enter_async_context(Client(STDIO, mode="legacy")),
            "http": await stack.enter_async_context(Client(f"{url}/mcp", mode="legacy")),
        }
        arms: dict[str, Callable[[], Awaitable[None]]] = {}

        async def direct() -> None:
            answer = tools.call("fak_adjudicate", CALL)
            if answer.wire()["data"]["reason"] != "POLICY_BLOCK":
                raise SystemExit("unexpected in-process answer")

        arms["tools"] = direct
        for name, client in clients.items():

            async def remote(client: Client = client) -> None:
                _check(await client.call_tool("fak_adjudicate", CALL))

            arms[name] = remote
        for fn in arms.values():  # warm up every path once
            await fn()
        for _ in range(rounds):
            for name, fn in arms.items():
                t0 = time.perf_counter()
                for _ in range(batch):
                    await fn()
                samples[name].append((time.perf_counter() - t0) / batch * 1e6)
    spawn = [await _spawn_to_first_answer() for _ in range(spawns)]
    return {"samples_us": samples, "spawn_to_first_answer_s": spawn}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--batch", type=int, default=20)
    ap.add_argument("--spawns", type=int, default=3)
    opts = ap.parse_args()
    with LoopbackServer(mcp_asgi_app(Kernel(Policy.load(SUPPORT)))) as url:
        raw = asyncio.run(_run(opts.rounds, opts.batch, opts.spawns, url))
    base = statistics.median(raw["samples_us"]["tools"])
    rows = []
    print(f"{'arm':<12} {'p50 us':>10} {'p99 us':>10} {'x tools':>9}")
    for name, values in raw["samples_us"].items():
        p50, p99 = statistics.median(values), _pct(values, 99)
        rows.append({"arm": name, "p50_us": p50, "p99_us": p99, "ratio_to_tools": p50 / base})
        print(f"{name:<12} {p50:>10.1f} {p99:>10.1f} {p50 / base:>9.1f}")
    spawn = statistics.median(raw["spawn_to_first_answer_s"])
    print(f"spawn `fak mcp` to first answer: {spawn * 1000:.0f} ms (median of {opts.spawns})")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    result = {
        "benchmark": "mcp_roundtrip",
        "command": "python benchmarks/mcp_roundtrip.py " + " ".join(sys.argv[1:]),
        "rounds": opts.rounds,
        "batch": opts.batch,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "arms": rows,
        "spawn_to_first_answer_ms": spawn * 1000,
    }
    OUT.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
