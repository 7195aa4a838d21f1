"""Auth, limits, errors, trace ids, access log, timeouts and metrics (in-process ASGI)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from fak.testing.planner import MockPlanner

from .conftest import AccessLines, asgi_client
from .scripts import agent_script

pytestmark = pytest.mark.gateway
CHAT = {"model": "m", "messages": [{"role": "user", "content": "read"}]}


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_auth_gates_every_route_but_healthz(app_factory: Callable[..., Any]) -> None:
    app = app_factory(MockPlanner(agent_script), require_key="s3cret")

    async def main() -> None:
        async with asgi_client(app) as c:
            assert (await c.get("/healthz")).status_code == 200
            for path in ("/metrics", "/debug/vars", "/v1/models"):
                r = await c.get(path)
                assert r.status_code == 401, path
                assert r.json()["error"]["code"] == "unauthorized"
            assert (await c.post("/v1/chat/completions", json=CHAT)).status_code == 401
            bad = [
                {"authorization": "s3cret"},
                {"authorization": "Bearer nope"},
                {"x-api-key": "s3cre"},
            ]
            for headers in bad:
                assert (await c.get("/v1/models", headers=headers)).status_code == 401
            ok = [{"authorization": "Bearer s3cret"}, {"x-api-key": "s3cret"}]
            for headers in ok:
                assert (
                    await c.post("/v1/chat/completions", json=CHAT, headers=headers)
                ).status_code == 200

    run(main())


def test_body_cap_and_bad_json(app_factory: Callable[..., Any]) -> None:
    app = app_factory(MockPlanner(), body_cap=1024)

    async def main() -> None:
        async with asgi_client(app) as c:
            big = {"model": "m", "messages": [{"role": "user", "content": "x" * 2000}]}
            r = await c.post("/v1/chat/completions", json=big)
            assert r.status_code == 413 and r.json()["error"]["code"] == "payload_too_large"
            r = await c.post(
                "/v1/chat/completions",
                content=b"{nope",
                headers={"content-type": "application/json"},
            )
            assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_json"
            r = await c.post(
                "/v1/chat/completions", json={"model": "m", "messages": [{"role": "robot"}]}
            )
            assert r.status_code == 400
            assert r.json()["error"] == {
                "message": "messages[0].role must be system, developer, user, assistant or tool",
                "type": "invalid_request_error",
                "code": "invalid_request",
                "param": "messages[0].role",
            }

    run(main())


def test_unknown_path_and_wrong_method_are_json(app_factory: Callable[..., Any]) -> None:
    app = app_factory(MockPlanner())

    async def main() -> None:
        async with asgi_client(app) as c:
            r = await c.get("/nope")
            assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"
            r = await c.get("/v1/chat/completions")
            assert r.status_code == 405 and r.json()["error"]["code"] == "method_not_allowed"

    run(main())


def test_trace_id_threads_response_header_and_access_log(
    app_factory: Callable[..., Any], access: AccessLines
) -> None:
    app = app_factory(MockPlanner(agent_script))

    async def main() -> tuple[Any, Any]:
        async with asgi_client(app) as c:
            given = await c.post(
                "/v1/chat/completions", json=CHAT, headers={"x-trace-id": "trace-abc"}
            )
            minted = await c.get("/healthz")
            return given, minted

    given, minted = run(main())
    assert given.headers["x-trace-id"] == "trace-abc"
    assert minted.headers["x-trace-id"].startswith("gw-")
    lines = access.lines
    ops = [x for x in lines if x["event"] == "gateway_operation"]
    http = [x for x in lines if x["event"] == "gateway_http_request"]
    assert [(o["tool"], o["verdict"], o["trace_id"]) for o in ops] == [
        ("read_file", "ALLOW", "trace-abc"),
        ("delete_account", "DENY", "trace-abc"),
    ]
    assert ops[1]["reason"] == "POLICY_BLOCK" and ops[1]["disposition"] == "TERMINAL"
    assert http[0]["route"] == "/v1/chat/completions" and http[0]["status"] == 200
    assert http[0]["trace_id"] == "trace-abc" and http[0]["bytes"] == len(given.content)
    assert http[1]["trace_id"] == minted.headers["x-trace-id"]
    assert all("duration_ms" in x for x in lines)


def test_write_timeout_is_a_504(app_factory: Callable[..., Any]) -> None:
    app = app_factory(MockPlanner(delay_s=1.0), write_timeout_s=0.05)

    async def main() -> Any:
        async with asgi_client(app) as c:
            return await c.post("/v1/chat/completions", json=CHAT)

    r = run(main())
    assert r.status_code == 504 and r.json()["error"]["code"] == "gateway_timeout"


def test_metrics_and_debug_vars(app_factory: Callable[..., Any]) -> None:
    app = app_factory(MockPlanner(agent_script))

    async def main() -> tuple[str, Any, Any]:
        async with asgi_client(app) as c:
            await c.post("/v1/chat/completions", json=CHAT)
            metrics = (await c.get("/metrics")).text
            dv = (await c.get("/debug/vars")).json()
            hz = (await c.get("/healthz")).json()
            return metrics, dv, hz

    metrics, dv, hz = run(main())
    assert hz == {"ok": True, "planner": "mock", "model": "mock"}
    assert (
        "fak_gateway_operations_total{"
        'disposition="TERMINAL",operation="adjudicate",reason="POLICY_BLOCK",verdict="DENY"} 1.0'
        in metrics
    )
    assert (
        "fak_gateway_http_requests_total{"
        'method="POST",route="/v1/chat/completions",status="200"} 1.0' in metrics
    )
    assert "fak_kernel_submits_total" in metrics and "fak_gateway_vdso_hit_ratio" in metrics
    assert dv["gateway"]["planner"] == "mock" and dv["gateway"]["auth_required"] is False
    assert dv["kernel"]["decisions"] >= 2
    assert {
        "operation": "adjudicate",
        "verdict": "ALLOW",
        "reason": "",
        "disposition": "",
        "count": 1,
    } in dv["metrics"]["operations"]
