"""``fak serve --provider openai-responses``: a Responses client (the official ``openai`` SDK)
in front of a Responses upstream keeps the wire's own shapes — namespaces, custom tools,
``local_shell``/``shell`` calls and the request fields fak does not read — while every call is
adjudicated and every result screened."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import openai
import pytest

from fak.abi import FinishReason, PlannerTurn, ProposedCall, Role, TurnRequest, Usage
from fak.gateway.upstream.client import HttpxUpstream
from fak.gateway.upstream.planner import ProxyPlanner
from fak.kernel import Kernel
from fak.policy import Policy
from fak.testing.planner import default_rule
from fak.testing.upstream import MockUpstream

from .conftest import POISON, SECRET, closing

pytestmark = pytest.mark.gateway

POLICY = {
    "allow": ["local_shell", "shell", "apply_patch", "multi_agent.spawn_agent", "read_file"],
    "arg_rules": [
        {
            "tool": "local_shell",
            "arg": "command",
            "deny_regex": "rm\\s+-rf",
            "reason": "POLICY_BLOCK",
        },
        {"tool": "shell", "arg": "command", "deny_regex": "rm\\s+-rf", "reason": "POLICY_BLOCK"},
    ],
}
TOOLS: list[Any] = [
    {"type": "function", "name": "read_file", "parameters": {"type": "object", "properties": {}}},
    {
        "type": "namespace",
        "name": "multi_agent",
        "description": "agents",
        "tools": [
            {"type": "function", "name": "spawn_agent", "parameters": {"type": "object"}},
            {"type": "function", "name": "kill_agent", "parameters": {"type": "object"}},
        ],
    },
    {
        "type": "custom",
        "name": "apply_patch",
        "description": "apply a patch",
        "format": {"type": "grammar", "syntax": "lark", "definition": "start: /.+/s"},
    },
    {"type": "local_shell"},
    {"type": "shell"},
    {"type": "web_search"},
]
EXTRA = {
    "reasoning": {"effort": "low", "summary": "auto"},
    "include": ["reasoning.encrypted_content"],
    "store": False,
    "prompt_cache_key": "k-1",
}


def _script(request: TurnRequest) -> PlannerTurn:
    last = request.messages[-1]
    if last.role is Role.USER and last.content == "patch and spawn":
        calls = (
            ProposedCall("c_patch", "apply_patch", json.dumps({"input": "*** Begin Patch\n"})),
            ProposedCall("c_spawn", "multi_agent.spawn_agent", '{"task":"t"}'),
            ProposedCall("c_kill", "multi_agent.kill_agent", "{}"),
        )
        return PlannerTurn("", calls, FinishReason.TOOL_CALLS, Usage(5, 5))
    return default_rule(request)


@pytest.fixture
def stack(
    serve_app: Callable[[Any], str], app_factory: Callable[..., Any]
) -> tuple[MockUpstream, openai.OpenAI]:
    mock = MockUpstream(_script)
    up = serve_app(mock.app)
    planner = ProxyPlanner(
        HttpxUpstream(), base_url=up + "/v1", provider="openai-responses", api_key="k"
    )
    kernel = Kernel(Policy.loads(json.dumps(POLICY)))
    url = serve_app(app_factory(planner, kernel))
    return mock, closing(openai.OpenAI(base_url=url + "/v1", api_key="local"))


def _sent(mock: MockUpstream) -> dict[str, Any]:
    assert mock.received[-1].path == "/v1/responses"
    body: dict[str, Any] = json.loads(mock.received[-1].body)
    return body


HISTORY: list[Any] = [
    {"role": "user", "content": "look around"},
    {
        "type": "local_shell_call",
        "id": "lsh_1",
        "call_id": "ls1",
        "status": "completed",
        "action": {"type": "exec", "command": ["ls", "-la"], "env": {}},
    },
    {"type": "local_shell_call_output", "id": "ls1", "output": "README.md\nsrc\n"},
    {
        "type": "shell_call",
        "call_id": "sh1",
        "status": "completed",
        "action": {"commands": ["git status", "git log -1"], "timeout_ms": 1000},
    },
    {
        "type": "shell_call_output",
        "call_id": "sh1",
        "output": [
            {"stdout": "clean", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}},
            {"stdout": "", "stderr": "no log", "outcome": {"type": "exit", "exit_code": 1}},
        ],
    },
    {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "opaque"},
]


def test_native_shapes_and_unread_fields_reach_the_upstream(
    stack: tuple[MockUpstream, openai.OpenAI],
) -> None:
    mock, client = stack
    r = client.responses.create(
        model="gpt-x",
        input=[*HISTORY, {"role": "user", "content": 'call local_shell {"command":"ls -la src"}'}],
        tools=TOOLS,
        **EXTRA,
    )
    sent = _sent(mock)
    for key, value in EXTRA.items():
        assert sent[key] == value
    kinds = [t["type"] for t in sent["tools"]]
    assert kinds == ["function", "namespace", "custom", "local_shell", "shell"]  # no web_search
    assert sent["tools"][2]["format"]["type"] == "grammar"  # the grammar travels
    assert all("." not in t.get("name", "") for t in sent["tools"])
    items = {i["type"]: i for i in sent["input"]}
    assert items["local_shell_call"]["action"]["command"] == ["ls", "-la"]
    assert items["local_shell_call_output"] == {
        "type": "local_shell_call_output",
        "id": "ls1",
        "output": "README.md\nsrc\n",
    }
    assert items["shell_call"]["action"]["commands"] == ["git status", "git log -1"]
    assert "[exit 1]" in items["shell_call_output"]["output"][0]["stdout"]
    # the allowed call comes back to the client in its own shape, as the SDK parses it
    [call] = [o for o in r.output if o.type == "local_shell_call"]
    assert call.action.command == ["ls", "-la", "src"]


def test_a_denied_shell_call_never_reaches_the_client(
    stack: tuple[MockUpstream, openai.OpenAI],
) -> None:
    _, client = stack
    for tool in ("local_shell", "shell"):
        r = client.responses.create(
            model="gpt-x",
            input=f'call {tool} {{"command":"rm -rf /"}}',
            tools=TOOLS,
        )
        assert not [o for o in r.output if o.type.endswith("shell_call")]
        fak = r.model_extra["fak"]  # type: ignore[index]
        assert [(a["tool"], a["admitted"]) for a in fak["adjudications"]] == [(tool, False)]


def test_custom_and_namespaced_calls_are_adjudicated_by_their_qualified_names(
    stack: tuple[MockUpstream, openai.OpenAI],
) -> None:
    mock, client = stack
    r = client.responses.create(model="gpt-x", input="patch and spawn", tools=TOOLS)
    up_out = json.loads(mock.received[-1].body)
    assert up_out["tools"][1]["tools"][0]["name"] == "spawn_agent"
    by_type = {o.type: o for o in r.output}
    assert by_type["custom_tool_call"].name == "apply_patch"
    assert by_type["custom_tool_call"].input == "*** Begin Patch\n"
    spawn = by_type["function_call"]
    assert (spawn.name, spawn.model_dump().get("namespace")) == ("spawn_agent", "multi_agent")
    fak = r.model_extra["fak"]  # type: ignore[index]
    assert [(a["tool"], a["admitted"]) for a in fak["adjudications"]] == [
        ("apply_patch", True),
        ("multi_agent.spawn_agent", True),
        ("multi_agent.kill_agent", False),
    ]


def test_streamed_from_a_streaming_upstream(stack: tuple[MockUpstream, openai.OpenAI]) -> None:
    mock, client = stack
    with client.responses.stream(
        model="gpt-x",
        input='call shell {"command":"git status"}\ncall shell {"command":"rm -rf ~"}',
        tools=TOOLS,
    ) as stream:
        types = [e.type for e in stream]
        final = stream.get_final_response()
    assert json.loads(mock.received[-1].body)["stream"] is True
    assert types[-1] == "response.completed"
    calls = [o for o in final.output if o.type == "shell_call"]
    assert [c.action.commands for c in calls] == [["git status"]]


def test_a_poisoned_shell_output_is_held_before_the_upstream(
    stack: tuple[MockUpstream, openai.OpenAI],
) -> None:
    mock, client = stack
    history = [
        {"role": "user", "content": "check"},
        {"type": "shell_call", "call_id": "sh9", "action": {"commands": ["cat notes"]}},
        {
            "type": "shell_call_output",
            "call_id": "sh9",
            "output": [
                {"stdout": POISON, "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}
            ],
        },
    ]
    client.responses.create(model="gpt-x", input=history, tools=TOOLS)
    assert SECRET.encode() not in mock.bodies
    assert b"_quarantined" in mock.bodies


@pytest.mark.parametrize("field", ["conversation", "prompt"])
def test_server_side_state_is_refused_with_a_fix(
    stack: tuple[MockUpstream, openai.OpenAI], field: str
) -> None:
    mock, client = stack
    before = len(mock.received)
    value: Any = "conv_1" if field == "conversation" else {"id": "pmpt_1"}
    with pytest.raises(openai.BadRequestError) as info:
        client.responses.create(model="gpt-x", input="hi", extra_body={field: value})
    assert "whole conversation in input" in str(info.value)
    assert len(mock.received) == before
