"""Conformance with the official ``openai`` SDK over a real loopback socket (Chat Completions)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import openai
import pytest

from fak.abi import Role
from fak.testing.planner import MockPlanner

from .conftest import POISON, SECRET, closing
from .scripts import agent_script

pytestmark = pytest.mark.gateway

# a partly refused turn: the surviving text, then the refusal note (issue 24, item 6)
LOOK_AND_NOTE = (
    "Let me look. \n\n[fak] refused 1 tool call(s): delete_account → DENY "
    "(POLICY_BLOCK/TERMINAL). Propose a different approach rather than repeating a refused "
    "call unchanged."
)
TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]


@pytest.fixture
def served(
    app_factory: Callable[..., Any], serve_app: Callable[[Any], str]
) -> tuple[MockPlanner, str]:
    planner = MockPlanner(agent_script)
    return planner, serve_app(app_factory(planner))


def test_sync_allowed_call_survives_and_denied_call_is_dropped(
    served: tuple[MockPlanner, str],
) -> None:
    _, url = served
    client = closing(openai.OpenAI(base_url=url + "/v1", api_key="local"))
    r = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "please read"}], tools=TOOLS
    )
    choice = r.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert [c.function.name for c in choice.message.tool_calls or []] == ["read_file"]
    assert choice.message.tool_calls[0].function.arguments == '{"path":"README.md"}'  # type: ignore[index]
    assert choice.message.content == LOOK_AND_NOTE  # the model learns of the refusal
    fak = r.model_extra["fak"]  # type: ignore[index]
    kinds = {a["tool"]: (a["admitted"], a["verdict"]["kind"]) for a in fak["adjudications"]}
    assert kinds == {"read_file": (True, "ALLOW"), "delete_account": (False, "DENY")}
    assert fak["result_admissions"] == []


def test_all_denied_turn_stops_with_an_in_band_summary(served: tuple[MockPlanner, str]) -> None:
    _, url = served
    client = closing(openai.OpenAI(base_url=url + "/v1", api_key="local"))
    r = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "delete bob"}]
    )
    choice = r.choices[0]
    assert choice.finish_reason == "stop"
    assert choice.message.tool_calls is None
    assert choice.message.content is not None and "delete_account" in choice.message.content
    assert "POLICY_BLOCK" in choice.message.content


def test_no_tool_activity_means_no_extension(served: tuple[MockPlanner, str]) -> None:
    _, url = served
    client = closing(openai.OpenAI(base_url=url + "/v1", api_key="local"))
    r = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert r.choices[0].message.content == "Hello from the scripted planner, word by word."
    assert "fak" not in (r.model_extra or {})


def test_quarantined_result_is_replaced_before_the_planner_sees_it(
    served: tuple[MockPlanner, str],
) -> None:
    planner, url = served
    client = closing(openai.OpenAI(base_url=url + "/v1", api_key="local"))
    r = client.chat.completions.create(
        model="m",
        messages=[
            {"role": "user", "content": "read it"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": POISON},
        ],
    )
    fak = r.model_extra["fak"]  # type: ignore[index]
    [adm] = fak["result_admissions"]
    assert adm["tool_call_id"] == "c1" and adm["tool"] == "read_file"
    assert adm["verdict"]["kind"] == "QUARANTINE"
    seen = planner.requests[-1]
    [tool_msg] = [m for m in seen.messages if m.role is Role.TOOL]
    assert SECRET not in tool_msg.content and "IGNORE" not in tool_msg.content
    assert '"_quarantined":true' in tool_msg.content
    assert r.choices[0].message.content == "I read the results and I am done."


def test_streaming_text_then_adjudicated_tool_calls(served: tuple[MockPlanner, str]) -> None:
    _, url = served
    client = closing(openai.OpenAI(base_url=url + "/v1", api_key="local"))
    stream = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "read please"}], tools=TOOLS, stream=True
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    calls = [tc for c in chunks if c.choices for tc in (c.choices[0].delta.tool_calls or [])]
    assert text == LOOK_AND_NOTE  # the refusal note follows the streamed text (issue 24, 6)
    assert [tc.function.name for tc in calls if tc.function] == ["read_file"]
    assert chunks[-1].choices[0].finish_reason == "tool_calls"
    assert chunks[-1].model_extra["fak"]["adjudications"][1]["verdict"]["kind"] == "DENY"  # type: ignore[index]
    # the stream re-concatenates byte-exactly to the non-streamed content
    plain = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "read please"}]
    )
    assert plain.choices[0].message.content == text


def test_sdk_stream_helper_accumulates_the_final_message(served: tuple[MockPlanner, str]) -> None:
    _, url = served
    client = closing(openai.OpenAI(base_url=url + "/v1", api_key="local"))
    with client.chat.completions.stream(
        model="m", messages=[{"role": "user", "content": "read"}], tools=TOOLS
    ) as s:
        final = s.get_final_completion()
    msg = final.choices[0].message
    assert [t.function.name for t in msg.tool_calls or []] == ["read_file"]


def test_async_client_concurrent_turns(served: tuple[MockPlanner, str]) -> None:
    _, url = served

    async def main() -> list[Any]:
        async with openai.AsyncOpenAI(base_url=url + "/v1", api_key="local") as client:
            coros = [
                client.chat.completions.create(model="m", messages=[{"role": "user", "content": q}])
                for q in ("read", "delete", "hi")
            ]
            return list(await asyncio.gather(*coros))

    read, delete, hi = asyncio.run(main())
    assert read.choices[0].finish_reason == "tool_calls"
    assert delete.choices[0].finish_reason == "stop"
    assert hi.choices[0].message.content.startswith("Hello")


def test_async_streaming(served: tuple[MockPlanner, str]) -> None:
    _, url = served

    async def main() -> str:
        async with openai.AsyncOpenAI(base_url=url + "/v1", api_key="local") as client:
            stream = await client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}], stream=True
            )
            return "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])

    assert asyncio.run(main()) == "Hello from the scripted planner, word by word."


def test_bad_request_is_a_400_with_a_stable_code(served: tuple[MockPlanner, str]) -> None:
    _, url = served
    client = closing(openai.OpenAI(base_url=url + "/v1", api_key="local", max_retries=0))
    with pytest.raises(openai.BadRequestError) as err:
        client.chat.completions.create(model="m", messages=[])
    assert err.value.code == "invalid_request"
