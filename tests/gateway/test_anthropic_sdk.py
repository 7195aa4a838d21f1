"""Conformance with the official ``anthropic`` SDK over a real loopback socket (Messages)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import anthropic
import httpx
import pytest

from fak.abi import Role
from fak.testing.planner import MockPlanner

from .conftest import POISON, SECRET, closing
from .scripts import agent_script

pytestmark = pytest.mark.gateway
TOOLS: list[Any] = [
    {
        "name": "read_file",
        "description": "read a file",
        "input_schema": {"type": "object", "properties": {}},
    }
]


@pytest.fixture
def served(
    app_factory: Callable[..., Any], serve_app: Callable[[Any], str]
) -> tuple[MockPlanner, str]:
    planner = MockPlanner(agent_script)
    return planner, serve_app(app_factory(planner, ping_interval_s=0.05))


def _client(url: str) -> anthropic.Anthropic:
    # Anthropic clients take the origin: the SDK appends /v1 itself.
    return closing(anthropic.Anthropic(base_url=url, api_key="local", max_retries=0))


def test_tool_use_kept_denied_dropped_and_noted(served: tuple[MockPlanner, str]) -> None:
    _, url = served
    msg = _client(url).messages.create(
        model="m", max_tokens=64, messages=[{"role": "user", "content": "read it"}], tools=TOOLS
    )
    assert msg.stop_reason == "tool_use"
    kinds = [b.type for b in msg.content]
    assert kinds == ["text", "text", "tool_use"]
    note = msg.content[0]
    assert note.type == "text" and note.text.startswith(
        "[fak] refused 1 tool call(s): delete_account"
    )
    assert msg.content[1].type == "text" and msg.content[1].text == "Let me look. "
    tool = msg.content[2]
    assert (
        tool.type == "tool_use" and tool.name == "read_file" and tool.input == {"path": "README.md"}
    )
    fak = msg.model_extra["fak"]  # type: ignore[index]
    assert [a["admitted"] for a in fak["adjudications"]] == [True, False]


def test_all_denied_is_end_turn(served: tuple[MockPlanner, str]) -> None:
    _, url = served
    msg = _client(url).messages.create(
        model="m", max_tokens=64, messages=[{"role": "user", "content": "delete"}]
    )
    assert msg.stop_reason == "end_turn"
    assert all(b.type == "text" for b in msg.content)
    assert "delete_account" in msg.content[0].text  # type: ignore[union-attr]


def test_quarantined_tool_result_is_replaced_and_reported(served: tuple[MockPlanner, str]) -> None:
    planner, url = served
    msg = _client(url).messages.create(
        model="m",
        max_tokens=64,
        messages=[
            {"role": "user", "content": "read it"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "tu1", "name": "read_file", "input": {}}],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "tu1", "content": POISON}],
            },
        ],
    )
    [adm] = msg.model_extra["fak"]["result_admissions"]  # type: ignore[index]
    assert adm["tool"] == "read_file" and adm["verdict"]["kind"] == "QUARANTINE"
    assert msg.content[0].type == "text" and "held out of context" in msg.content[0].text
    [tool_msg] = [m for m in planner.requests[-1].messages if m.role is Role.TOOL]
    assert SECRET not in tool_msg.content and '"_quarantined":true' in tool_msg.content


def test_streaming_event_sequence_and_accumulation(served: tuple[MockPlanner, str]) -> None:
    _, url = served
    client = _client(url)
    with client.messages.stream(
        model="m", max_tokens=64, messages=[{"role": "user", "content": "read"}], tools=TOOLS
    ) as stream:
        events = [e.type for e in stream]
        final = stream.get_final_message()
    assert events[0] == "message_start" and events[-1] == "message_stop"
    assert "content_block_start" in events and "message_delta" in events
    assert final.stop_reason == "tool_use"
    assert [b.type for b in final.content] == ["text", "text", "tool_use"]
    assert final.content[2].input == {"path": "README.md"}  # type: ignore[union-attr]
    plain = client.messages.create(
        model="m", max_tokens=64, messages=[{"role": "user", "content": "read"}], tools=TOOLS
    )
    assert [b.model_dump() for b in plain.content] == [b.model_dump() for b in final.content]


def test_stream_pings_while_the_planner_is_in_flight(
    app_factory: Callable[..., Any], serve_app: Callable[[Any], str]
) -> None:
    url = serve_app(app_factory(MockPlanner(agent_script, delay_s=0.3), ping_interval_s=0.05))
    body = {
        "model": "m",
        "max_tokens": 8,
        "stream": True,
        "messages": [{"role": "user", "content": "hi"}],
    }
    with httpx.stream("POST", url + "/v1/messages", json=body) as r:
        names = [line[7:] for line in r.iter_lines() if line.startswith("event: ")]
    assert names[0] == "message_start"
    assert names.count("ping") >= 2  # the SDK hides pings, so read the raw events
    assert names[-2:] == ["message_delta", "message_stop"]
    # and the SDK accumulates that same delayed, pinged stream
    with _client(url).messages.stream(
        model="m", max_tokens=8, messages=[{"role": "user", "content": "hi"}]
    ) as s:
        assert s.get_final_text() == "Hello from the scripted planner, word by word."


def test_async_client(served: tuple[MockPlanner, str]) -> None:
    _, url = served

    async def main() -> Any:
        async with anthropic.AsyncAnthropic(base_url=url, api_key="local", max_retries=0) as client:
            return await client.messages.create(
                model="m", max_tokens=16, messages=[{"role": "user", "content": "hi"}]
            )

    msg = asyncio.run(main())
    assert msg.content[0].text == "Hello from the scripted planner, word by word."
    assert "fak" not in (msg.model_extra or {})


def test_missing_max_tokens_is_a_400(served: tuple[MockPlanner, str]) -> None:
    _, url = served
    r = httpx.post(
        url + "/v1/messages", json={"model": "m", "messages": [{"role": "user", "content": "x"}]}
    )
    assert r.status_code == 400
    assert r.json() == {
        "type": "error",
        "error": {
            "message": "max_tokens is required on the Messages wire",
            "type": "invalid_request_error",
            "code": "invalid_request",
            "param": "max_tokens",
        },
    }


def test_count_tokens(served: tuple[MockPlanner, str]) -> None:
    _, url = served
    n = _client(url).messages.count_tokens(
        model="m", messages=[{"role": "user", "content": "hello there"}]
    )
    assert n.input_tokens > 0
