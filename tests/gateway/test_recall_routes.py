"""Recall over the gateway: sessions recorded as they go, tombstones, the change feed, trace
reset, the MCP tools and vDSO miss attribution — on real loopback sockets with official SDKs."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from mcp import Client

from fak.kernel import Kernel
from fak.policy import Policy
from fak.recall import DirectoryImage, ResolveStatus, Session
from fak.testing.planner import MockPlanner

from .conftest import POISON, SECRET, closing

pytestmark = pytest.mark.gateway
FLIGHTS = "Flights JFK to MIA: HAT136 08:00 $129, HAT212 13:30 $154 (refund fee 25 EUR)."


def _call(cid: str) -> dict[str, Any]:
    fn = {"name": "read_file", "arguments": "{}"}
    return {"id": cid, "type": "function", "function": fn}


def _history(n: int) -> list[dict[str, Any]]:
    results = [FLIGHTS, POISON, "Seat map: 12A window, 12B middle."][:n]
    messages: list[dict[str, Any]] = [{"role": "user", "content": "plan my trip"}]
    for i, content in enumerate(results):
        messages.append({"role": "assistant", "content": None, "tool_calls": [_call(f"c{i}")]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": content})
    return messages


@pytest.fixture
def served(
    app_factory: Callable[..., Any], serve_app: Callable[[Any], str], tmp_path: Path
) -> tuple[str, Path, Kernel]:
    kernel = Kernel(Policy.default())
    kernel.register_tool("get_fare", lambda args: {"fare": 129})
    kernel.register_tool("transfer_to_human_agents", lambda args: {"ok": True})
    kernel.register_tool("get_and_reset", lambda args: {"n": 1}, read_only=False)
    root = tmp_path / "recall"
    app = app_factory(MockPlanner(), kernel=kernel, recall_dir=str(root))
    return serve_app(app), root, kernel


def test_a_chat_session_is_recorded_once_per_result_with_poison_sealed(
    served: tuple[str, Path, Kernel],
) -> None:
    url, root, _ = served
    client = closing(openai.OpenAI(base_url=url + "/v1", api_key="local"))
    for turn in (2, 2, 3):  # the client re-sends its history every turn
        client.chat.completions.create(
            model="m", messages=_history(turn), extra_headers={"x-fak-session": "trip-42"}
        )
    session = Session.load(DirectoryImage(root / "trip-42"))
    assert [(p.step, p.role, p.quarantined) for p in session.pages] == [
        (0, "read_file", False),
        (1, "read_file", True),
        (2, "read_file", False),
    ]
    assert session.resolve(0).data == FLIGHTS.encode()
    assert session.resolve(1).status is ResolveStatus.NOT_CLEARED
    manifest = (root / "trip-42" / "manifest.json").read_text()
    assert SECRET not in manifest and "IGNORE" not in manifest


def test_context_change_changes_feed_and_trace_reset(served: tuple[str, Path, Kernel]) -> None:
    url, root, _ = served
    http = httpx.Client(base_url=url)
    client = closing(openai.OpenAI(base_url=url + "/v1", api_key="local"))
    client.chat.completions.create(
        model="m", messages=_history(2), extra_headers={"x-fak-session": "trip-7"}
    )
    change = {"session_id": "trip-7", "step": 0, "reason": "user asked to forget the fares"}
    first = http.post("/v1/fak/context/change", json=change)
    again = http.post("/v1/fak/context/change", json={**change, "requested_by": "ops"})
    assert first.status_code == 200 and again.status_code == 200
    assert (first.json()["applied"], again.json()["applied"]) == (True, False)
    assert first.json()["change"] == again.json()["change"]
    assert first.json()["change"]["action"] == "tombstone_page"
    bad = {
        "missing step": ({**change, "step": 9}, 404, "FAK-RECALL-STEP-UNKNOWN"),
        "digest guard": ({**change, "digest": "0" * 64}, 400, "FAK-RECALL-DIGEST-GUARD"),
        "no reason": ({**change, "reason": ""}, 400, "FAK-RECALL-BAD-REQUEST"),
        "no session": ({**change, "session_id": "nope"}, 404, "FAK-RECALL-IMAGE-MISSING"),
        "unknown key": ({**change, "delete": True}, 400, "FAK-RECALL-BAD-REQUEST"),
    }
    for name, (body, status, code) in bad.items():
        r = http.post("/v1/fak/context/change", json=body)
        assert (r.status_code, r.json()["error"]["code"]) == (status, code), name
    assert Session.load(DirectoryImage(root / "trip-7")).resolve(0).status is (
        ResolveStatus.TOMBSTONED
    )

    feed = http.get("/v1/fak/changes", params={"since": 0}).json()
    assert [e["kind"] for e in feed["events"]] == ["tombstone"]
    event = feed["events"][0]
    assert (event["seq"], event["session_id"], event["step"]) == (1, "trip-7", 0)
    assert feed["cursor"] == 1 and feed["truncated"] is False
    reset = http.post("/v1/fak/trace/reset", json={"trace_id": "trip-7"})
    assert reset.json() == {"reset": True, "trace_id": "trip-7"}
    later = http.get("/v1/fak/changes", params={"since": feed["cursor"]}).json()
    assert [e["kind"] for e in later["events"]] == ["trace_reset"] and later["cursor"] == 2
    assert http.post("/v1/fak/changes", json={"since": 2}).json()["events"] == []
    for bad in ({"since": -5}, {"since": 10**23}, {"since": "x"}, {"limit": "-1"}):
        refused = http.get("/v1/fak/changes", params=bad)  # as /v1/fak/events answers (E1)
        assert refused.status_code == 400, bad
        assert refused.json()["error"]["code"] == "invalid_cursor", bad
    assert http.post("/v1/fak/trace/reset", json={}).status_code == 400
    http.close()


def test_vdso_misses_are_attributed_on_metrics(served: tuple[str, Path, Kernel]) -> None:
    url, _, kernel = served
    http = httpx.Client(base_url=url)
    for tool in ("get_fare", "get_fare", "transfer_to_human_agents", "get_and_reset", "read_x"):
        assert http.post("/v1/fak/syscall", json={"tool": tool}).status_code == 200
    text = http.get("/metrics").text
    assert "fak_vdso_lookups_total 5.0" in text
    for reason, n in {
        "NOT_CACHED": 1,
        "DESTRUCTIVE": 1,
        "RESOURCE_MISNAMED": 1,
        "MISSING_HINTS": 1,
        "WITNESS_REVOKED": 0,
    }.items():
        assert f'fak_vdso_misses_total{{reason="{reason}"}} {n}.0' in text, reason
    events = http.get("/v1/fak/changes").json()["events"]
    mutations = [(e["kind"], e["tool"]) for e in events]
    assert mutations == [("mutation", "transfer_to_human_agents"), ("mutation", "get_and_reset")]
    assert events[-1]["world_ver"] == kernel.world_version == 2
    http.close()


def test_mcp_tools_over_loopback(served: tuple[str, Path, Kernel]) -> None:
    url, _, _ = served
    client = closing(openai.OpenAI(base_url=url + "/v1", api_key="local"))
    client.chat.completions.create(
        model="m", messages=_history(2), extra_headers={"x-fak-session": "mcp-s"}
    )

    async def main() -> dict[str, Any]:
        async with Client(f"{url}/mcp") as mcp:
            change = {"session_id": "mcp-s", "step": 1, "reason": "poisoned policy page"}
            return {
                "change": await mcp.call_tool("fak_context_change", change),
                "again": await mcp.call_tool("fak_context_change", change),
                "bad": await mcp.call_tool("fak_context_change", {**change, "step": 5}),
                "feed": await mcp.call_tool("fak_changes", {"since": 0}),
            }

    out = asyncio.run(main())
    first = out["change"].structured_content
    assert out["change"].is_error is False and first["data"]["applied"] is True
    assert out["again"].structured_content["data"]["applied"] is False
    assert out["bad"].is_error is True
    assert "FAK-RECALL-STEP-UNKNOWN" in out["bad"].structured_content["data"]["problem"]
    events = out["feed"].structured_content["data"]["events"]
    assert [(e["kind"], e["step"]) for e in events] == [("tombstone", 1)]


def test_without_a_recall_dir_context_change_is_404(
    app_factory: Callable[..., Any], serve_app: Callable[[Any], str]
) -> None:
    url = serve_app(app_factory(MockPlanner()))
    r = httpx.post(url + "/v1/fak/context/change", json={"session_id": "s", "step": 0})
    assert (r.status_code, r.json()["error"]["code"]) == (404, "recall_not_configured")
    assert httpx.get(url + "/v1/fak/changes").json() == {
        "events": [],
        "cursor": 0,
        "truncated": False,
    }
