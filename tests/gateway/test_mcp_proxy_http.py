"""The MCP proxy over Streamable HTTP: on ``fak serve``'s ``/mcp`` (same key as every route,
series on ``/metrics``), and with a Streamable HTTP downstream (server-everything's own HTTP
transport, the npm reference server)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from fak.journal import read_rows, verify

from .test_mcp_proxy import _server_bin, envelope, proxy_params, run
from .test_mcp_proxy_npm import _npm_server

pytestmark = [pytest.mark.gateway, pytest.mark.timeout(180)]

ROOT = Path(__file__).resolve().parents[2]
KEY = "fak-e2e-key-0123456789"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_http(url: str, proc: subprocess.Popen[Any], headers: dict[str, str]) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            httpx.get(url, timeout=2, headers=headers)
            return
        except httpx.TransportError:
            assert proc.poll() is None, "server exited before it answered"
            assert time.monotonic() < deadline, "server did not come up"
            time.sleep(0.1)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    servers = {"time": {"command": _server_bin("mcp-server-time")}}
    (tmp_path / "servers.json").write_text(json.dumps({"mcpServers": servers}))
    (tmp_path / "floor.json").write_text(json.dumps({"allow": ["time__get_current_time"]}))
    port = _free_port()
    cmd = [
        sys.executable, "-m", "fak.cli.main", "serve", "--mock", "--addr", f"127.0.0.1:{port}",
        "--policy", str(tmp_path / "floor.json"), "--mcp-proxy", str(tmp_path / "servers.json"),
        "--require-key-env", "FAK_TEST_KEY", "--access-log", "off",
    ]  # fmt: skip
    journal = tmp_path / "journal.jsonl"
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": str(ROOT / "src"),
        "FAK_TEST_KEY": KEY,
        "FAK_AUDIT_JOURNAL": str(journal),
    }
    proc = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_http(url + "/healthz", proc, {})
        yield url, journal
    finally:
        proc.terminate()
        proc.communicate(timeout=20)


def test_fak_serve_mcp_route_serves_the_proxy_behind_the_same_key(
    served: tuple[str, Path],
) -> None:
    url, journal = served
    assert httpx.post(url + "/mcp", json={}).status_code == 401

    async def main() -> dict[str, Any]:
        auth = {"Authorization": f"Bearer {KEY}"}
        async with (
            httpx2.AsyncClient(headers=auth, timeout=30) as http,
            Client(streamable_http_client(url + "/mcp", http_client=http)) as client,
        ):
            tools = sorted(t.name for t in (await client.list_tools()).tools)
            ok = await client.call_tool("time__get_current_time", {"timezone": "UTC"})
            denied = await client.call_tool(
                "time__convert_time",
                {"source_timezone": "UTC", "time": "10:00", "target_timezone": "Asia/Tokyo"},
            )
            return {"tools": tools, "ok": ok, "denied": denied}

    out = asyncio.run(main())
    assert out["tools"] == ["fak_page_in", "time__get_current_time"]
    assert json.loads(out["ok"].content[0].text)["timezone"] == "UTC"
    assert out["denied"].is_error is False
    assert envelope(out["denied"])["data"]["reason"] == "DEFAULT_DENY"
    metrics = httpx.get(url + "/metrics", headers={"Authorization": f"Bearer {KEY}"}).text
    allow = 'fak_mcp_proxy_calls_total{outcome="allow",server="time",tool="time__get_current_time"}'
    deny = 'fak_mcp_proxy_calls_total{outcome="deny",server="time",tool="time__convert_time"}'
    assert f"{allow} 1.0" in metrics
    assert f"{deny} 1.0" in metrics
    assert 'fak_mcp_proxy_downstream_connects_total{server="time"} 1.0' in metrics
    assert 'fak_mcp_proxy_tools{server="time",state="listed"} 2.0' in metrics
    assert verify(journal).ok
    rows = {(r["kind"], r.get("tool")) for r in read_rows(journal)}
    assert {("DECIDE", "time__get_current_time"), ("DENY", "time__convert_time")} <= rows


def test_streamable_http_downstream(tmp_path: Path) -> None:
    command = _npm_server("mcp-server-everything")
    port = _free_port()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PORT": str(port)}
    node = subprocess.Popen(
        [command, "streamableHttp"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert node.poll() is None and time.monotonic() < deadline
                time.sleep(0.1)
        servers = {"ev": {"url": f"http://127.0.0.1:{port}/mcp", "headers": {"X-Test": "1"}}}
        params, _ = proxy_params(tmp_path, servers, ["ev__echo", "ev__get-sum"])

        async def body(client: Client) -> dict[str, Any]:
            tools = sorted(t.name for t in (await client.list_tools()).tools)
            echo = await client.call_tool("ev__echo", {"message": "over http"})
            denied = await client.call_tool("ev__get-env", {})
            return {"tools": tools, "echo": echo, "denied": denied}

        out = run(params, body)
    finally:
        node.terminate()
        node.wait(timeout=10)
    assert out["tools"] == ["ev__echo", "ev__get-sum", "fak_page_in"]
    assert "over http" in out["echo"].content[0].text
    assert envelope(out["denied"])["reply_type"] == "D"
