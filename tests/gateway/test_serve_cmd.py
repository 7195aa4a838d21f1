"""``fak serve``: start-up refusals and a real process answering on its port."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from fak.cli.main import cli

pytestmark = pytest.mark.gateway


def test_empty_required_key_refuses_to_start() -> None:
    r = CliRunner().invoke(
        cli, ["serve", "--mock", "--require-key-env", "FAK_T_EMPTY"], env={"FAK_T_EMPTY": ""}
    )
    assert r.exit_code == 2
    assert "FAK_T_EMPTY" in r.output and "refusing to start" in r.output


def test_bad_policy_file_refuses_to_start(tmp_path: Path) -> None:
    bad = tmp_path / "floor.json"
    bad.write_text('{"version": "fak-policy/v1", "allows": ["x"]}')
    r = CliRunner().invoke(cli, ["serve", "--mock", "--policy", str(bad)])
    assert r.exit_code == 1
    assert "allows" in r.output


def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = int(s.getsockname()[1])
    s.close()
    return port


def test_serve_process_answers_with_auth_and_warns_on_a_public_bind() -> None:
    port = _free_port()
    env = {**os.environ, "FAK_T_TOKEN": "tok-123"}
    cmd = [sys.executable, "-m", "fak.cli.main", "serve", "--mock", "--access-log", "off"]
    proc = subprocess.Popen(
        [*cmd, "--addr", f"0.0.0.0:{port}", "--require-key-env", "FAK_T_TOKEN"],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 20
        while True:
            try:
                health = httpx.get(url + "/healthz")
                break
            except httpx.ConnectError:
                assert proc.poll() is None and time.monotonic() < deadline
                time.sleep(0.05)
        assert health.json() == {"ok": True, "planner": "mock", "model": "mock"}
        assert httpx.get(url + "/metrics").status_code == 401
        ok = httpx.post(
            url + "/v1/fak/adjudicate",
            json={"tool": "delete_account", "arguments": {}},
            headers={"authorization": "Bearer tok-123"},
        )
        assert ok.status_code == 200 and ok.json()["verdict"]["reason"] == "POLICY_BLOCK"
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=10)
    assert "SCRIPTED MOCK" in err
    assert "NO client key" not in err  # a key was required, so no public-bind warning

    port = _free_port()
    proc = subprocess.Popen([*cmd, "--addr", f"0.0.0.0:{port}"], stderr=subprocess.PIPE, text=True)
    time.sleep(0.2)
    try:
        deadline = time.monotonic() + 20
        while proc.poll() is None and time.monotonic() < deadline:
            try:
                httpx.get(f"http://127.0.0.1:{port}/healthz")
                break
            except httpx.ConnectError:
                time.sleep(0.05)
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=10)
    assert "NO client key" in err


def test_the_gateway_app_serves_mcp_at_slash_mcp_behind_its_auth() -> None:
    from fak.gateway.app import build_app
    from fak.gateway.server import LoopbackServer
    from fak.gateway.state import GatewayOptions
    from fak.kernel import Kernel
    from fak.testing.planner import MockPlanner

    app = build_app(Kernel(), MockPlanner(), GatewayOptions(require_key="k1"))
    headers = {"authorization": "Bearer k1", "accept": "application/json, text/event-stream"}
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"},
        },
    }
    with LoopbackServer(app) as url:
        assert httpx.post(url + "/mcp", json=init).status_code == 401
        r = httpx.post(url + "/mcp", json=init, headers=headers)
        assert r.status_code == 200, r.text
        assert r.json()["result"]["serverInfo"]["name"] == "fak-gateway"
        listed = httpx.post(
            url + "/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers=headers
        )
        assert "fak_adjudicate" in {t["name"] for t in listed.json()["result"]["tools"]}


def test_finding_small_readiness_is_printed_only_after_the_bind() -> None:
    cmd = [sys.executable, "-m", "fak.cli.main", "serve", "--mock", "--access-log", "off"]
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = subprocess.run(
            [*cmd, "--addr", f"127.0.0.1:{port}"], capture_output=True, text=True, timeout=60
        )
    assert done.returncode == 2
    assert "cannot bind" in done.stderr
    assert "fak serve: ready" not in done.stderr

    proc = subprocess.Popen(
        [*cmd, "--addr", "127.0.0.1:0", "--examples"], stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stderr is not None
        line = ""
        deadline = time.monotonic() + 30
        while "ready" not in line and time.monotonic() < deadline:
            line = proc.stderr.readline()
        assert "fak serve: ready" in line
        url = line.split(" on ", 1)[1].split(" ", 1)[0]
        # the moment the line is out, the server answers: no connection refused
        assert httpx.get(url + "/healthz", timeout=5).status_code == 200
        example = proc.stderr.readline() + proc.stderr.readline()
        assert "try" in example and "curl -s " + url in example
    finally:
        proc.terminate()
        proc.communicate(timeout=10)


def test_serve_stdio_is_fak_mcp() -> None:
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    done = subprocess.run(
        [sys.executable, "-m", "fak.cli.main", "serve", "--stdio"],
        input=json.dumps(init) + "\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[0])["result"]["protocolVersion"] == "2025-06-18"


def test_a_doubled_v1_says_how_to_set_the_base_url(serve_app: Any, app_factory: Any) -> None:
    from fak.testing.planner import MockPlanner

    url = serve_app(app_factory(MockPlanner()))
    r = httpx.post(url + "/v1/v1/messages", json={"model": "m", "max_tokens": 5, "messages": []})
    assert r.status_code == 404
    assert "without /v1" in r.text and r.json()["type"] == "error"  # in Anthropic's shape
