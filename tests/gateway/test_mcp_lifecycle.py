"""MCP lifecycle: version negotiation per the lifecycle rule; stdin EOF drains what is in flight."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

FAK = [sys.executable, "-m", "fak.cli.main", "mcp"]


def _init(version: str, rid: int = 1) -> str:
    params = {
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    }
    return json.dumps({"jsonrpc": "2.0", "id": rid, "method": "initialize", "params": params})


def _exchange(lines: list[str]) -> dict[object, dict]:
    proc = subprocess.run(
        FAK, input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr
    answers = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    return {a.get("id"): a for a in answers}


@pytest.mark.parametrize(
    ("asked", "answered"),
    [
        ("2025-06-18", "2025-06-18"),  # supported: echoed
        ("2024-11-05", "2024-11-05"),
        ("1999-01-01", "2025-11-25"),  # unknown: the newest version this server speaks
        ("2026-07-28", "2025-11-25"),  # a revision without the initialize handshake
    ],
)
def test_finding_small_mcp_version_negotiation(asked: str, answered: str) -> None:
    got = _exchange([_init(asked)])[1]["result"]["protocolVersion"]
    assert got == answered


def test_finding_small_mcp_stdin_close_answers_in_flight_requests() -> None:
    calls = [
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": i,
                "method": "tools/call",
                "params": {
                    "name": "fak_adjudicate",
                    "arguments": {"tool": "read_file", "arguments": {"path": f"f{i}"}},
                },
            }
        )
        for i in range(2, 12)
    ]
    notified = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
    answers = _exchange([_init("2025-06-18"), notified, *calls])
    assert sorted(k for k in answers if isinstance(k, int)) == list(range(1, 12))
    assert all("result" in answers[i] for i in range(2, 12))
