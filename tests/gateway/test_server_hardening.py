"""Gateway server hardening on real sockets: limits, unknown routes and methods mint no metric
(findings 4, 6, 7 and 9 of the first hostile run)."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from fak.gateway.routes.native import file_events
from fak.journal import Journal, read_rows, rows_after
from fak.kernel import Kernel
from fak.policy import Policy
from fak.testing.planner import MockPlanner

pytestmark = pytest.mark.gateway
JSON = {"content-type": "application/json"}


def _history(results: int, size: int = 40) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for i in range(results):
        call = {
            "id": f"c{i}",
            "type": "function",
            "function": {"name": "read_file", "arguments": '{"path":"a"}'},
        }
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append(
            {"role": "tool", "tool_call_id": f"c{i}", "content": f"row {i} " * (size // 6)}
        )
    return {"model": "m", "messages": messages}


# -- finding 4 ----------------------------------------------------------------------------------
def test_finding_4_healthz_answers_while_a_huge_request_is_screened(
    serve_app: Callable[[Any], str], app_factory: Callable[..., Any], tmp_path: Path
) -> None:
    journal = Journal(tmp_path / "audit.jsonl")
    kernel = Kernel(Policy.default(), journal=journal)
    url = serve_app(
        app_factory(MockPlanner(), kernel=kernel, max_messages=100_000, max_tool_calls=100_000)
    )
    body = json.dumps(_history(8000)).encode()  # 16,001 messages, 8,000 results to screen
    done: dict[str, Any] = {}

    def big() -> None:
        done["r"] = httpx.post(
            url + "/v1/chat/completions", content=body, headers=JSON, timeout=120
        )

    fsyncs = {"n": 0}
    real_fsync = os.fsync

    def counting(fd: int) -> None:
        fsyncs["n"] += 1
        real_fsync(fd)

    os.fsync = counting  # type: ignore[assignment]
    try:
        worker = threading.Thread(target=big)
        worker.start()
        worst = 0.0
        with httpx.Client() as client:
            while worker.is_alive():
                t0 = time.perf_counter()
                assert client.get(url + "/healthz", timeout=10).status_code == 200
                worst = max(worst, time.perf_counter() - t0)
                time.sleep(0.01)
        worker.join()
    finally:
        os.fsync = real_fsync  # type: ignore[assignment]
    assert done["r"].status_code == 200, done["r"].text[:300]
    rows = list(read_rows(tmp_path / "audit.jsonl"))
    assert len(rows) >= 8000  # every admission journaled ...
    assert fsyncs["n"] <= 4  # ... with one group commit for the screening, one for the turn
    assert worst < 1.0, f"/healthz waited {worst:.2f}s behind one request"


@pytest.mark.parametrize(
    ("results", "options", "code"),
    [
        (40, {"max_messages": 50}, "too_many_messages"),
        (40, {"max_tool_calls": 10}, "too_many_tool_calls"),
    ],
)
def test_finding_4_request_caps_are_413(
    results: int,
    options: dict[str, int],
    code: str,
    serve_app: Callable[[Any], str],
    app_factory: Callable[..., Any],
) -> None:
    url = serve_app(app_factory(MockPlanner(), **options))
    r = httpx.post(url + "/v1/chat/completions", json=_history(results))
    assert r.status_code == 413
    assert code in r.text


# -- finding 6 ----------------------------------------------------------------------------------
def test_finding_6_unknown_methods_and_routes_mint_no_series(
    serve_app: Callable[[Any], str], app_factory: Callable[..., Any]
) -> None:
    url = serve_app(app_factory(MockPlanner()))
    with httpx.Client() as client:
        client.get(url + "/healthz")
        before = client.get(url + "/metrics").text
        # methods the HTTP parser knows but the gateway does not serve (httptools refuses
        # made-up ones before they reach the app; h11 lets them through)
        odd = ["PROPFIND", "MKCOL", "LOCK", "UNLOCK", "COPY", "MOVE", "SEARCH", "REPORT", "PURGE"]
        for i in range(60):
            client.request(odd[i % len(odd)], url + f"/nowhere/{i}")
            client.request("GET", url + f"/also/nowhere/{i}")
        after = client.get(url + "/metrics").text
    series = [line for line in after.splitlines() if line.startswith("fak_gateway_http_requests")]
    assert not any(m in after for m in odd)
    assert "nowhere" not in after
    assert any('method="other"' in line and 'route="unmatched"' in line for line in series)
    assert len(after) - len(before) < 4000  # a handful of new series, not 120


# -- finding 7 ----------------------------------------------------------------------------------
def test_finding_7_get_mcp_is_405_at_once(
    serve_app: Callable[[Any], str], app_factory: Callable[..., Any]
) -> None:
    url = serve_app(app_factory(MockPlanner()))
    t0 = time.perf_counter()
    r = httpx.get(url + "/mcp", headers={"accept": "text/event-stream"}, timeout=5)
    assert r.status_code == 405
    assert r.headers["allow"] == "POST"
    assert time.perf_counter() - t0 < 2
    bad = '{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}'
    headers = {**JSON, "accept": "application/json, text/event-stream"}
    r = httpx.post(url + "/mcp", content=bad, headers=headers)
    assert r.status_code == 400 and "duplicate_key" in r.text


# -- finding 9 ----------------------------------------------------------------------------------
def test_finding_9_events_seek_from_the_cursor(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    journal = Journal(path)
    for i in range(3000):
        journal.append(
            {"kind": "DECIDE", "tool": f"t{i % 5}", "verdict": "ALLOW", "trace_id": f"x{i}"}
        )
    every = list(read_rows(path))
    for since in (0, 1, 1499, 2998, 2999, 3000, 4000):
        assert rows_after(path, since, 7) == every[since : since + 7]
    # the in-memory tail answers recent cursors; an old cursor seeks the file
    reader = file_events(str(path), journal)
    assert reader(2990, 5) == every[2990:2995]
    assert reader(10, 3) == every[10:13]
    # a cursor read costs O(log n) reads, not a pass over the file: time it against one pass
    t0 = time.perf_counter()
    for _ in range(20):
        rows_after(path, 2500, 100)
    seek = (time.perf_counter() - t0) / 20
    t0 = time.perf_counter()
    list(read_rows(path))
    full = time.perf_counter() - t0
    assert seek < full / 3, (seek, full)


def test_finding_9_rows_after_notices_a_tampered_window(tmp_path: Path) -> None:
    from fak.journal import RowError

    path = tmp_path / "audit.jsonl"
    journal = Journal(path)
    for i in range(50):
        journal.append({"kind": "DECIDE", "tool": "t", "verdict": "ALLOW", "trace_id": f"x{i}"})
    text = path.read_text().replace('"trace_id":"x30"', '"trace_id":"y30"')
    path.write_text(text)
    with pytest.raises(RowError):
        rows_after(path, 25, 10)


# -- finding 10 ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v1/fak/events"),
        ("GET", "/debug/vars"),
        ("POST", "/v1/chat/completions"),
        ("GET", "/healthz"),
        ("POST", "/mcp"),
    ],
)
def test_finding_10_a_foreign_host_is_refused_on_every_route(
    method: str, path: str, serve_app: Callable[[Any], str], app_factory: Callable[..., Any]
) -> None:
    url = serve_app(app_factory(MockPlanner()))
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    r = httpx.request(
        method, url + path, content=body, headers={**JSON, "host": "attacker.example:8080"}
    )
    assert r.status_code == 421, r.text
    assert "host_not_allowed" in r.text
    ok = httpx.request(
        method,
        url + path,
        content=body,
        headers={**JSON, "host": "localhost:8080", "accept": "application/json, text/event-stream"},
    )
    assert ok.status_code != 421


def test_finding_10_configured_hosts_and_any(
    serve_app: Callable[[Any], str], app_factory: Callable[..., Any]
) -> None:
    named = serve_app(app_factory(MockPlanner(), allowed_hosts=("fak.internal",)))
    assert httpx.get(named + "/healthz", headers={"host": "fak.internal:80"}).status_code == 200
    assert httpx.get(named + "/healthz", headers={"host": "other.internal"}).status_code == 421
    anyhost = serve_app(app_factory(MockPlanner(), allowed_hosts=("*",)))
    assert httpx.get(anyhost + "/healthz", headers={"host": "x.example"}).status_code == 200


@pytest.mark.parametrize("ctype", ["text/plain", "application/x-www-form-urlencoded", None])
@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/fak/adjudicate", "/v1/messages"])
def test_finding_10_json_routes_require_a_json_content_type(
    ctype: str | None, path: str, serve_app: Callable[[Any], str], app_factory: Callable[..., Any]
) -> None:
    url = serve_app(app_factory(MockPlanner()))
    headers = {} if ctype is None else {"content-type": ctype}
    body = b'{"tool":"delete_account","arguments":{}}'
    r = httpx.post(url + path, content=body, headers=headers)
    assert r.status_code == 415, r.text
    assert "unsupported_media_type" in r.text


def test_finding_10_cors_preflight_only_for_configured_origins(
    serve_app: Callable[[Any], str], app_factory: Callable[..., Any]
) -> None:
    preflight = {
        "origin": "https://evil.example",
        "access-control-request-method": "POST",
        "access-control-request-headers": "content-type",
    }
    closed = serve_app(app_factory(MockPlanner()))
    r = httpx.options(closed + "/v1/chat/completions", headers=preflight)
    assert r.status_code == 403 and "access-control-allow-origin" not in r.headers
    r = httpx.get(closed + "/v1/fak/events", headers={"origin": "https://evil.example"})
    assert "access-control-allow-origin" not in r.headers
    opened = serve_app(app_factory(MockPlanner(), cors_origins=("https://app.example",)))
    ok = {**preflight, "origin": "https://app.example"}
    r = httpx.options(opened + "/v1/chat/completions", headers=ok)
    assert r.status_code == 204
    assert r.headers["access-control-allow-origin"] == "https://app.example"
    assert httpx.options(opened + "/v1/chat/completions", headers=preflight).status_code == 403
    r = httpx.get(opened + "/healthz", headers={"origin": "https://app.example"})
    assert r.headers["access-control-allow-origin"] == "https://app.example"
