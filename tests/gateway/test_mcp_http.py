"""The Streamable-HTTP MCP endpoint on a real loopback uvicorn socket, with the official client."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from fak.gateway.mcp.server import McpHttpEndpoint, mcp_asgi_app
from fak.gateway.server import LoopbackServer
from fak.kernel import Kernel
from fak.policy import Policy

from .conftest import SECRET

pytestmark = pytest.mark.gateway

ROOT = Path(__file__).resolve().parents[2]
SUPPORT = ROOT / "examples" / "customer-support-readonly-policy.json"
JSON_ACCEPT = {"Accept": "application/json, text/event-stream"}


def kernel() -> Kernel:
    return Kernel(Policy.load(SUPPORT))


def with_client(url: str, body: Callable[[Client], Awaitable[Any]], mode: str = "auto") -> Any:
    async def main() -> Any:
        async with Client(url, mode=mode) as client:
            return await body(client)

    return asyncio.run(main())


def envelope(result: Any) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(result.content[0].text)
    return value


async def three_calls(client: Client) -> dict[str, Any]:
    return {
        "version": client.protocol_version,
        "tools": sorted(t.name for t in (await client.list_tools()).tools),
        "allow": await client.call_tool("fak_adjudicate", {"tool": "get_order_status"}),
        "deny": await client.call_tool("fak_adjudicate", {"tool": "delete_customer"}),
        "held": await client.call_tool(
            "fak_admit", {"tool": "read_doc", "result": f"creds: {SECRET}"}
        ),
    }


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_official_client_over_loopback_http(mode: str) -> None:
    with LoopbackServer(mcp_asgi_app(kernel())) as url:
        out = with_client(f"{url}/mcp", three_calls, mode)
    if mode == "legacy":  # the initialize handshake
        assert out["version"] in {"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"}
    else:  # server/discover, no handshake
        assert out["version"] == "2026-07-28"
    assert out["tools"] == [
        "fak_adjudicate",
        "fak_admit",
        "fak_changes",
        "fak_context_change",
        "fak_page_in",
        "fak_revoke",
        "fak_syscall",
        "fak_witness",
    ]
    assert (out["allow"].is_error, envelope(out["allow"])["code"]) == (False, "EN-GATE-S-001")
    deny = envelope(out["deny"])
    assert out["deny"].is_error is False
    assert (deny["reply_type"], deny["data"]["reason"]) == ("D", "POLICY_BLOCK")
    held = envelope(out["held"])
    assert (held["reply_type"], held["code"]) == ("D", "EN-READ-D-001")
    assert held["data"]["reason"] == "SECRET_EXFIL"
    assert SECRET not in out["held"].model_dump_json()


def test_endpoint_routed_into_a_host_app_with_its_lifespan() -> None:
    # The recipe the gateway uses: route the endpoint, enter its lifespan in the app's own.
    endpoint = McpHttpEndpoint(kernel())

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with endpoint.lifespan():
            yield

    async def health(request: Request) -> PlainTextResponse:
        return PlainTextResponse("ok")

    host = Starlette(
        routes=[Route("/healthz", health), Route("/mcp", endpoint=endpoint)], lifespan=lifespan
    )
    with LoopbackServer(host) as url:
        out = with_client(f"{url}/mcp", three_calls)
        assert httpx.get(f"{url}/healthz").text == "ok"
    assert envelope(out["deny"])["data"]["reason"] == "POLICY_BLOCK"


def test_plain_json_post_and_dns_rebinding_guard() -> None:
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "curl", "version": "0"},
        },
    }
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "fak_adjudicate", "arguments": {"tool": "refund_payment"}},
    }
    with LoopbackServer(mcp_asgi_app(kernel())) as url:
        hello = httpx.post(f"{url}/mcp", json=init, headers=JSON_ACCEPT)
        answer = httpx.post(
            f"{url}/mcp", json=call, headers={**JSON_ACCEPT, "MCP-Protocol-Version": "2025-06-18"}
        )
        rebound = httpx.post(
            f"{url}/mcp", json=init, headers={**JSON_ACCEPT, "Host": "attacker.example"}
        )
    assert hello.status_code == 200
    assert hello.headers["content-type"] == "application/json"
    result = hello.json()["result"]
    assert (result["protocolVersion"], result["serverInfo"]["name"]) == (
        "2025-06-18",
        "fak-gateway",
    )
    assert answer.status_code == 200
    tool_result = answer.json()["result"]
    assert tool_result["isError"] is False
    assert json.loads(tool_result["content"][0]["text"])["data"]["reason"] == "POLICY_BLOCK"
    assert rebound.status_code == 421

    open_app = mcp_asgi_app(kernel(), allowed_hosts=())  # a public bind behind its own auth
    with LoopbackServer(open_app) as url:
        other = httpx.post(f"{url}/mcp", json=init, headers={**JSON_ACCEPT, "Host": "fak.internal"})
    assert other.status_code == 200


def test_E3_fak_witness_on_the_gateway_honours_its_witness_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from fak.gateway.app import build_app
    from fak.gateway.state import GatewayOptions
    from fak.testing.planner import MockPlanner

    monkeypatch.delenv("FAK_WITNESS_KEY", raising=False)
    app = build_app(kernel(), MockPlanner(), GatewayOptions(witness_key="k-from-env-flag"))

    async def both(client: Client) -> tuple[dict[str, Any], dict[str, Any]]:
        good = await client.call_tool("fak_witness", {"id": "w-none", "key": "k-from-env-flag"})
        bad = await client.call_tool("fak_revoke", {"witness": "w-none", "key": "nope"})
        return envelope(good), envelope(bad)

    with LoopbackServer(app) as url:
        good, bad = with_client(f"{url}/mcp", both)
    # the key opened the door: what remains is that no such hold exists
    assert good["data"]["reason"] != "UNWITNESSED" and "why" not in good["data"]
    assert (bad["data"]["reason"], bad["data"]["why"]) == ("UNWITNESSED", "wrong witness key")
