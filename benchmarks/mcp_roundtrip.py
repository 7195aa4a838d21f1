"""MCP round-trip cost of one ``fak_adjudicate``, side by side on every transport fak serves.

Arms, all answering the same call (an explicit policy DENY) from the same policy:
  tools       McpTools.call in-process: input checks + Kernel.decide + the reply envelope
  sdk-inproc  the official mcp Client against the Server object (no framing, no I/O)
  stdio       the official client talking to a spawned `fak mcp` over stdin/stdout
  http        the official client over Streamable HTTP (stateless JSON) to a loopback uvicorn
Sessions stay open; rounds interleave the arms; each sample is one batch's mean per call. Also
measures the one-off cost of spawning `fak mcp` up to its first answer.

The proxy section (issue 12) measures what `fak mcp proxy` adds in front of a real stdio server:
the official client calls ``get_current_time`` on ``mcp-server-time`` directly and through the
proxy (policy allows it; the result passes the screen), alternating call by call in one run,
``--proxy-calls`` samples per arm; the added latency is the difference of the p50s.
``--proxy-journal`` adds a third arm with the decision journal on (fsync'd rows per call).
Prints tables, writes benchmarks/results/mcp_roundtrip.json. Not a test.

    .venv/bin/python benchmarks/mcp_roundtrip.py [--rounds 30] [--batch 20] [--spawns 3]
                                                 [--proxy-calls 400] [--proxy-journal]
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

from fak.gateway.mcp.server import build_mcp_server, mcp_asgi_app
from fak.gateway.mcp.tools import McpTools
from fak.gateway.server import LoopbackServer
from fak.kernel import Kernel
from fak.policy import Policy

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "mcp_roundtrip.json"
SUPPORT = ROOT / "examples" / "customer-support-readonly-policy.json"
CALL = {"tool": "refund_payment", "arguments": {"order": "o-1"}}
ENV = {"PYTHONPATH": str(ROOT / "src")}  # this checkout's fak, whatever is installed
STDIO = StdioServerParameters(
    command=sys.executable,
    args=["-m", "fak.cli.main", "mcp", "--policy", str(SUPPORT)],
    cwd=str(ROOT),
    env=ENV,
)
TIME_SERVER = str(Path(sys.executable).parent / "mcp-server-time")
TIME_ARGS = {"timezone": "UTC"}


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


async def _proxy_run(calls: int, floor: Path, journal: Path | None) -> dict[str, list[float]]:
    def proxied(env: dict[str, str]) -> StdioServerParameters:
        return StdioServerParameters(
            command=sys.executable,
            args=["-m", "fak.cli.main", "mcp", "proxy", "--name", "time", "--policy", str(floor),
                  "--", TIME_SERVER],
            cwd=str(ROOT),
            env=env,
        )  # fmt: skip

    servers = {
        "server-direct": (StdioServerParameters(command=TIME_SERVER), "get_current_time"),
        "server-via-proxy": (proxied(ENV), "time__get_current_time"),
    }
    if journal is not None:
        env = {**ENV, "FAK_AUDIT_JOURNAL": str(journal)}
        servers["via-proxy+journal"] = (proxied(env), "time__get_current_time")
    samples: dict[str, list[float]] = {name: [] for name in servers}
    async with AsyncExitStack() as stack:
        arms: dict[str, Callable[[], Awaitable[Any]]] = {}
        for name, (params, tool) in servers.items():
            client = await stack.enter_async_context(Client(params, mode="legacy", cache=None))

            def call(client: Client = client, tool: str = tool) -> Awaitable[Any]:
                return client.call_tool(tool, TIME_ARGS)

            arms[name] = call
        for name, fn in arms.items():  # warm up, and check every arm answers the same shape
            result = await fn()
            if result.is_error or json.loads(result.content[0].text)["timezone"] != "UTC":
                raise SystemExit(f"{name}: unexpected answer {result}")
        for _ in range(calls):
            for name, fn in arms.items():
                t0 = time.perf_counter()
                await fn()
                samples[name].append((time.perf_counter() - t0) * 1e6)
    return samples


def _proxy_section(calls: int, with_journal: bool) -> dict[str, Any]:
    import tempfile

    if not Path(TIME_SERVER).exists():
        print("proxy section skipped: mcp-server-time is not installed (pip install '.[dev]')")
        return {}
    with tempfile.TemporaryDirectory() as tmp:
        floor = Path(tmp) / "floor.json"
        floor.write_text(json.dumps({"allow": ["time__get_current_time"]}))
        journal = Path(tmp) / "journal.jsonl" if with_journal else None
        samples = asyncio.run(_proxy_run(calls, floor, journal))
    direct = statistics.median(samples["server-direct"])
    proxied = statistics.median(samples["server-via-proxy"])
    print(f"\n{'proxy arm':<18} {'p50 us':>10} {'p90 us':>10} {'p99 us':>10}  ({calls} calls each)")
    arms = []
    for name, values in samples.items():
        p50, p90, p99 = statistics.median(values), _pct(values, 90), _pct(values, 99)
        arms.append(
            {"arm": name, "calls": len(values), "p50_us": p50, "p90_us": p90, "p99_us": p99}
        )
        print(f"{name:<18} {p50:>10.1f} {p90:>10.1f} {p99:>10.1f}")
    added = proxied - direct
    print(f"added by fak mcp proxy: {added:.1f} us at p50 ({proxied / direct:.2f}x direct)")
    return {"arms": arms, "added_p50_us": added, "ratio_p50": proxied / direct, "calls": calls}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--batch", type=int, default=20)
    ap.add_argument("--spawns", type=int, default=3)
    ap.add_argument("--proxy-calls", type=int, default=400, help="0 skips the proxy section")
    ap.add_argument(
        "--proxy-journal", action="store_true", help="add a proxy arm with FAK_AUDIT_JOURNAL on"
    )
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
    proxy = _proxy_section(opts.proxy_calls, opts.proxy_journal) if opts.proxy_calls > 0 else {}
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
        "proxy": proxy,
    }
    OUT.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
