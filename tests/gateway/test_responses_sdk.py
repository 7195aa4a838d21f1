"""The OpenAI Responses API through the official ``openai`` SDK on a loopback socket."""

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
    {"type": "function", "name": "read_file", "parameters": {"type": "object", "properties": {}}}
]


@pytest.fixture
def served(
    app_factory: Callable[..., Any], serve_app: Callable[[Any], str]
) -> tuple[MockPlanner, str]:
    planner = MockPlanner(agent_script)
    return planner, serve_app(app_factory(planner))


def test_function_call_kept_and_denied_dropped(served: tuple[MockPlanner, str]) -> None:
    _, url = served
    client = closing(openai.OpenAI(base_url=url + "/v1", api_key="local"))
    r = client.responses.create(model="m", input="read the readme", tools=TOOLS)
    assert r.status == "completed"
    assert r.output_text == LOOK_AND_NOTE  # the model learns of the refusal (issue 24, 6)
    calls = [o for o in r.output if o.type == "function_call"]
    assert [(c.name, c.arguments) for c in calls] == [("read_file", '{"path":"README.md"}')]
    fak = r.model_extra["fak"]  # type: ignore[index]
    assert [(a["tool"], a["admitted"]) for a in fak["adjudications"]] == [
        ("read_file", True),
        ("delete_account", False),
    ]


def test_function_call_output_is_screened(served: tuple[MockPlanner, str]) -> None:
    planner, url = served
    client = closing(openai.OpenAI(base_url=url + "/v1", api_key="local"))
    r = client.responses.create(
        model="m",
        instructions="be careful",
        input=[
            {"role": "user", "content": "read"},
            {"type": "function_call", "call_id": "fc1", "name": "read_file", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "fc1", "output": POISON},
        ],
    )
    assert r.output_text == "I read the results and I am done."
    [adm] = r.model_extra["fak"]["result_admissions"]  # type: ignore[index]
    assert adm["verdict"]["kind"] == "QUARANTINE" and adm["tool"] == "read_file"
    seen = planner.requests[-1]
    assert seen.messages[0].role is Role.SYSTEM and seen.messages[0].content == "be careful"
    assert all(SECRET not in m.content for m in seen.messages)


def test_streaming_events_through_the_sdk_helper(served: tuple[MockPlanner, str]) -> None:
    _, url = served
    client = closing(openai.OpenAI(base_url=url + "/v1", api_key="local"))
    with client.responses.stream(model="m", input="read", tools=TOOLS) as stream:
        types = [e.type for e in stream]
        final = stream.get_final_response()
    assert types[:2] == ["response.created", "response.in_progress"]
    assert types[-1] == "response.completed"
    assert (
        "response.output_text.delta" in types and "response.function_call_arguments.done" in types
    )
    assert final.output_text == LOOK_AND_NOTE
    assert [o.type for o in final.output] == ["message", "function_call"]


def test_all_denied_stream_carries_the_summary(served: tuple[MockPlanner, str]) -> None:
    _, url = served
    client = closing(openai.OpenAI(base_url=url + "/v1", api_key="local"))
    events = list(client.responses.create(model="m", input="delete", stream=True))
    done = events[-1]
    assert done.type == "response.completed"
    text = done.response.output_text
    assert "delete_account" in text and "POLICY_BLOCK" in text
    assert not [o for o in done.response.output if o.type == "function_call"]


def test_async_responses(served: tuple[MockPlanner, str]) -> None:
    _, url = served

    async def main() -> Any:
        async with openai.AsyncOpenAI(base_url=url + "/v1", api_key="local") as client:
            return await client.responses.create(model="m", input="hi")

    assert asyncio.run(main()).output_text == "Hello from the scripted planner, word by word."


def test_previous_response_id_is_refused_with_a_reason(served: tuple[MockPlanner, str]) -> None:
    _, url = served
    client = closing(openai.OpenAI(base_url=url + "/v1", api_key="local", max_retries=0))
    with pytest.raises(openai.BadRequestError) as err:
        client.responses.create(model="m", input="x", previous_response_id="resp_1")
    assert err.value.code == "unsupported_parameter"
