"""The field table across wires (``fak.wire.carry``), on requests real agents sent.

The recorded Claude Code and Codex requests (tests/fixtures) cross to every other upstream
wire: what they ask for arrives in the other wire's terms, what is vacuous there is stated and
left out, and nothing they send is refused; a field with no equivalent is refused by name.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fak.wire import WireError, anthropic, openai_chat, openai_responses

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _body(name: str) -> dict[str, Any]:
    body: dict[str, Any] = json.loads((FIXTURES / name).read_text())["body"]
    return body


def test_codex_request_crosses_to_a_chat_upstream() -> None:
    parsed = openai_responses.parse_request(_body("codex-0.169.0-responses.json"))
    sent = openai_chat.render_request(parsed, stream=True)
    carried = {k: v for k, v in sent.items() if k not in ("model", "messages", "tools")}
    assert carried == {
        "tool_choice": "auto",
        "parallel_tool_calls": True,
        "store": False,
        "prompt_cache_key": "00000000-0000-0000-0000-000000000000",
        "stream": True,
        "stream_options": {"include_usage": True},
    }  # reasoning.summary, include (encrypted reasoning), client_metadata: nothing to ask for


def test_codex_request_crosses_to_a_messages_upstream() -> None:
    parsed = openai_responses.parse_request(_body("codex-0.169.0-responses.json"))
    sent = anthropic.render_request(parsed)
    assert sent["tool_choice"] == {"type": "auto"}
    assert sent["max_tokens"] == 4096
    for key in ("store", "prompt_cache_key", "include", "reasoning", "client_metadata"):
        assert key not in sent


def test_claude_code_request_crosses_to_openai_upstreams() -> None:
    body = _body("claude-code-2.1.328-messages.json")
    parsed = anthropic.parse_request(body)
    chat = openai_chat.render_request(parsed)
    assert chat["max_completion_tokens"] == 128000
    assert chat["reasoning_effort"] == "medium"
    assert chat["user"] == body["metadata"]["user_id"]
    assert "thinking" not in chat and "context_management" not in chat
    responses = openai_responses.render_request(parsed)
    assert responses["max_output_tokens"] == 128000
    assert responses["reasoning"] == {"effort": "medium"}
    assert responses["user"] == body["metadata"]["user_id"]


@pytest.mark.parametrize(
    ("extra", "param"),
    [
        ({"thinking": {"type": "enabled", "budget_tokens": 2048}}, "thinking"),
        (
            {"context_management": {"edits": [{"type": "clear_tool_uses_20250919"}]}},
            "context_management (clear_tool_uses_20250919)",
        ),
        (
            {"output_config": {"format": {"type": "json_schema", "schema": {}}, "task": "x"}},
            "output_config.task",
        ),
        ({"top_k": 5}, "top_k"),
    ],
)
def test_a_messages_field_with_no_openai_equivalent_is_refused_by_name(
    extra: dict[str, Any], param: str
) -> None:
    body = {"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}
    parsed = anthropic.parse_request({**body, **extra})
    for render in (openai_chat.render_request, openai_responses.render_request):
        with pytest.raises(WireError) as caught:
            render(parsed)
        assert caught.value.code == "unsupported_parameter"
        assert caught.value.param == param


def test_same_wire_fields_travel_unchanged_beside_governed_ones() -> None:
    body = {
        "model": "o3",
        "messages": [{"role": "user", "content": "hi"}],
        "max_completion_tokens": 50,
        "reasoning_effort": "high",
        "response_format": {"type": "json_object"},
        "x_future_field": {"nested": [1, 2]},
    }
    sent = openai_chat.render_request(openai_chat.parse_request(body))
    assert sent == body


def test_an_effort_messages_lacks_is_refused_naming_the_client_field() -> None:
    body = {"model": "o3", "messages": [{"role": "user", "content": "hi"}]}
    parsed = openai_chat.parse_request({**body, "reasoning_effort": "minimal"})
    with pytest.raises(WireError) as caught:
        anthropic.render_request(parsed)
    assert caught.value.param == "reasoning_effort"
    responses = openai_responses.parse_request(
        {"model": "o3", "input": "hi", "reasoning": {"effort": "none"}}
    )
    with pytest.raises(WireError) as caught:
        anthropic.render_request(responses)
    assert caught.value.param == "reasoning.effort"


def test_messages_disable_parallel_tool_use_crosses_as_parallel_tool_calls() -> None:
    body = {
        "model": "m",
        "max_tokens": 8,
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [{"name": "read_file", "input_schema": {"type": "object"}}],
        "tool_choice": {"type": "auto", "disable_parallel_tool_use": True},
    }
    parsed = anthropic.parse_request(body)
    assert openai_chat.render_request(parsed)["parallel_tool_calls"] is False
    assert openai_responses.render_request(parsed)["parallel_tool_calls"] is False
    rebuilt = anthropic.render_request(parsed)
    assert rebuilt["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}


def test_a_chat_custom_tool_stays_custom_to_a_chat_upstream() -> None:
    tool = {"type": "custom", "custom": {"name": "apply_patch", "description": "patch"}}
    call = {"id": "c1", "type": "custom", "custom": {"name": "apply_patch", "input": "*** x"}}
    body = {
        "model": "m",
        "messages": [
            {"role": "user", "content": "patch"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "done"},
        ],
        "tools": [tool],
    }
    sent = openai_chat.render_request(openai_chat.parse_request(body))
    assert sent["tools"] == [tool]
    assert sent["messages"][1]["tool_calls"] == [call]
