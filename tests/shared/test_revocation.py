"""Cross-process vDSO revocation: separate fak processes on one Redis, official MCP clients.

Worker B serves a repeat read from its vDSO; a write through worker A (another ``fak mcp``
process) and then a policy reload on a ``fak serve`` gateway (a third process) each make B's
cached answer unreachable before B's next response.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

pytestmark = pytest.mark.slow

TOOLS = f"{Path(__file__).with_name('fleet_tools.py')}:register"


def _params(policy: str, env: dict[str, str]) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "fak.cli.main", "mcp", "--policy", policy, "--tools", TOOLS],
        env={"PYTHONPATH": os.environ.get("PYTHONPATH", ""), **env},
    )


def _envelope(result: Any) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(result.content[0].text)
    return value


def test_a_write_and_a_reload_elsewhere_revoke_a_workers_cached_reads(
    redis_url: str, tmp_path: Path, fak_serve: Any
) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("v1")
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps({"allow": ["read_notes", "write_notes"]}))
    env = {"FAK_CAS_URL": redis_url, "FAK_TEST_NOTES": str(notes)}
    gateway = fak_serve("--cas-url", redis_url, "--policy", str(policy))
    errlog = (tmp_path / "mcp.log").open("w")

    async def main() -> list[tuple[str, str]]:
        seen: list[tuple[str, str]] = []
        async with Client(stdio_client(_params(str(policy), env), errlog=errlog)) as b:

            async def read() -> None:
                got = await b.call_tool("fak_syscall", {"tool": "read_notes"})
                data = _envelope(got)["data"]
                seen.append((data["served_by"], json.dumps(data["result"])))

            await read()
            await read()
            async with Client(stdio_client(_params(str(policy), env), errlog=errlog)) as a:
                args = {"tool": "write_notes", "arguments": {"text": "v2"}}
                wrote = _envelope(await a.call_tool("fak_syscall", args))
                assert wrote["data"]["served_by"] == "tool"
            await read()
            await read()
            reload = await asyncio.to_thread(
                httpx.post, gateway.url + "/v1/fak/policy/reload", timeout=30
            )
            assert reload.status_code == 200
            await read()
            await read()
        return seen

    try:
        seen = asyncio.run(main())
    finally:
        errlog.close()
    assert [by for by, _ in seen] == ["tool", "vdso", "tool", "vdso", "tool", "vdso"]
    assert ["v2" in result for _, result in seen] == [False, False, True, True, True, True]
