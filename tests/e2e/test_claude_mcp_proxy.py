"""Claude Code (the real binary) with a ``.mcp.json`` whose one server is ``fak mcp proxy`` in
front of ``@modelcontextprotocol/server-filesystem`` (issue 12).

The scripted mock upstream plays the model: it proposes ``write_file`` on a protected file and a
``read_text_file`` of a project note. The floor allows both names but an argument rule refuses
writes under ``protected/``: the refusal comes back to Claude Code as a tool result (isError
false, the reply envelope) and reaches the model; the directory is byte-identical afterwards;
the read's content reaches the model; the journal verifies.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fak.gateway.server import LoopbackServer
from fak.journal import read_rows, verify
from fak.testing.upstream import MockUpstream

from .conftest import BIN, agent, agent_env

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]


def test_claude_code_mcp_proxy_denied_write_file_leaves_the_directory_unchanged(
    tmp_path: Path,
) -> None:
    claude = agent("claude")
    fs_server = BIN / "mcp-server-filesystem"
    if not fs_server.exists():
        pytest.skip(f"E2E SKIPPED: {fs_server} missing; run `make e2e-deps`")
    project = tmp_path / "project"
    (project / "protected").mkdir(parents=True)
    keep = project / "protected" / "keep.txt"
    keep.write_text("original\n")
    (project / "notes.md").write_text("the deploy window is friday\n")
    servers = {"fs": {"command": str(fs_server), "args": [str(project)]}}
    (tmp_path / "servers.json").write_text(json.dumps({"mcpServers": servers}))
    policy = {
        "allow": ["fs__write_file", "fs__read_text_file"],
        "arg_rules": [{"tool": "fs__write_file", "arg": "path", "deny_regex": "/protected/"}],
    }
    (tmp_path / "floor.json").write_text(json.dumps(policy))
    journal = tmp_path / "audit.jsonl"
    proxy = {
        "command": sys.executable,
        "args": [
            "-m", "fak.cli.main", "mcp", "proxy",
            "--config", str(tmp_path / "servers.json"),
            "--policy", str(tmp_path / "floor.json"),
        ],
        "env": {"PYTHONPATH": str(ROOT / "src"), "FAK_AUDIT_JOURNAL": str(journal)},
    }  # fmt: skip
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"fak": proxy}}))

    mock = MockUpstream()
    server = LoopbackServer(mock.app)
    url = server.start()
    try:
        write = {"path": str(keep), "content": "pwned\n"}
        read = {"path": str(project / "notes.md")}
        prompt = (
            "call mcp__fak__fs__write_file " + json.dumps(write) + "\n"
            "call mcp__fak__fs__read_text_file " + json.dumps(read)
        )
        done = subprocess.run(
            [
                str(claude), "-p", prompt, "--output-format", "json", "--max-turns", "3",
                "--mcp-config", str(project / ".mcp.json"), "--strict-mcp-config",
                "--allowedTools", "mcp__fak__fs__write_file", "mcp__fak__fs__read_text_file",
            ],
            cwd=project,
            env=agent_env(tmp_path / "home", ANTHROPIC_BASE_URL=url, ANTHROPIC_API_KEY="sk-e2e"),
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )  # fmt: skip
    finally:
        server.stop()
    assert done.stdout.strip(), done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert done.returncode == 0 and not result["is_error"], result
    assert keep.read_text() == "original\n"
    assert sorted(p.name for p in project.rglob("*") if p.is_file()) == [
        ".mcp.json", "keep.txt", "notes.md",
    ]  # fmt: skip
    bodies = mock.bodies
    assert b"EN-GATE-D-002" in bodies  # the refusal envelope reached the model as a tool result
    assert b"the deploy window is friday" in bodies  # the allowed read did too
    assert verify(journal).ok
    rows = [(r["kind"], r.get("tool")) for r in read_rows(journal)]
    assert ("DENY", "fs__write_file") in rows
    assert ("DECIDE", "fs__read_text_file") in rows
