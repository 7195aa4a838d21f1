"""The boundary's fail-closed and rewrite paths, through the app (in-process)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from fak.abi import FinishReason, PlannerTurn, ProposedCall, Role, ToolResult, Usage
from fak.kernel import Kernel
from fak.policy import Policy
from fak.testing.planner import MockPlanner

from .conftest import SECRET, asgi_client

pytestmark = pytest.mark.gateway


class _BrokenAdmission(Kernel):
    def admit_result(self, result: ToolResult) -> Any:
        raise RuntimeError("store offline")


def _post(app: Any, body: dict[str, Any]) -> Any:
    async def main() -> Any:
        async with asgi_client(app) as c:
            return await c.post("/v1/chat/completions", json=body)

    return asyncio.run(main())


def test_a_result_that_cannot_be_admitted_is_held_out_with_admit_error(
    app_factory: Callable[..., Any],
) -> None:
    planner = MockPlanner()
    app = app_factory(planner, kernel=_BrokenAdmission(Policy.default()))
    r = _post(
        app,
        {
            "model": "m",
            "messages": [
                {"role": "user", "content": "go"},
                {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "read_file", "arguments": "{}"},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "c1", "content": "plain text " + SECRET},
            ],
        },
    )
    assert r.status_code == 200
    [adm] = r.json()["fak"]["result_admissions"]
    assert adm["verdict"] == {
        "kind": "QUARANTINE",
        "reason": "ADMIT_ERROR",
        "by": "gateway",
        "disposition": "TERMINAL",
    }
    [tool] = [m for m in planner.requests[-1].messages if m.role is Role.TOOL]
    assert tool.content == '{"_quarantined":true,"boundary":"proxy","reason":"ADMIT_ERROR"}'


def test_transform_rewrites_the_surviving_call_and_reports_repaired_arguments(
    app_factory: Callable[..., Any],
) -> None:
    call = ProposedCall("c1", "read_config", '{"path":"a.ini","password":"hunter2"}')
    app = app_factory(MockPlanner([PlannerTurn("", (call,), FinishReason.TOOL_CALLS, Usage(1, 1))]))
    r = _post(app, {"model": "m", "messages": [{"role": "user", "content": "go"}]})
    body = r.json()
    [kept] = body["choices"][0]["message"]["tool_calls"]
    assert kept["function"]["arguments"] == '{"path":"a.ini","password":"[REDACTED]"}'
    [adj] = body["fak"]["adjudications"]
    assert adj["verdict"]["kind"] == "TRANSFORM" and adj["admitted"] is True
    assert adj["repaired_arguments"] == {"path": "a.ini", "password": "[REDACTED]"}
    assert "hunter2" not in r.text


def test_admitted_call_with_non_object_arguments_is_denied_malformed(
    app_factory: Callable[..., Any],
) -> None:
    call = ProposedCall("c1", "read_file", "[1, 2]")
    app = app_factory(MockPlanner([PlannerTurn("", (call,), FinishReason.TOOL_CALLS, Usage(1, 1))]))
    body = _post(app, {"model": "m", "messages": [{"role": "user", "content": "go"}]}).json()
    assert body["choices"][0]["finish_reason"] == "stop"
    [adj] = body["fak"]["adjudications"]
    assert adj["admitted"] is False and adj["verdict"]["reason"] == "MALFORMED"


def test_D9_a_huge_tool_name_from_the_upstream_is_bounded_in_the_access_log(
    app_factory: Callable[..., Any], access: Any
) -> None:
    name = "read_" + "x" * 500_000
    call = ProposedCall("c1", name, "{}")
    app = app_factory(MockPlanner([PlannerTurn("", (call,), FinishReason.TOOL_CALLS, Usage(1, 1))]))
    r = _post(app, {"model": "m", "messages": [{"role": "user", "content": "go"}]})
    assert r.status_code == 200
    assert len(access.raw) < 4096  # every line of the request, not half a megabyte
    [op] = [x for x in access.lines if x["event"] == "gateway_operation"]
    assert op["tool"] == name[:200] + f"...(+{len(name) - 200} chars)"
