"""Real requests recorded from the agents people run (ids and paths scrubbed), parsed and
forwarded without node. Recorded against a loopback recorder: Claude Code 2.1.328 with
``claude -p``; Codex 0.169.0 with ``codex exec`` and a ``wire_api = "responses"`` provider."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson

from fak.abi import Role
from fak.wire import anthropic

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _fixture(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((FIXTURES / name).read_text())
    return doc


def test_claude_code_request_parses_with_its_mid_conversation_system_message() -> None:
    body = _fixture("claude-code-2.1.328-messages.json")["body"]
    parsed = anthropic.parse_request(body)
    roles = [m.role for m in parsed.turn.messages]
    assert roles.count(Role.SYSTEM) == 2  # the top-level system and the in-messages one
    assert [t.name for t in parsed.turn.tools] == [t["name"] for t in body["tools"]]
    assert {"Bash", "Read", "Write", "Edit"} <= {t.name for t in parsed.turn.tools}


def test_claude_code_request_is_forwarded_byte_for_byte() -> None:
    body = _fixture("claude-code-2.1.328-messages.json")["body"]
    assert anthropic.forwardable_as_is(body)  # thinking, context_management, output_config ...


def test_a_rebuilt_claude_code_request_keeps_its_inert_fields() -> None:
    body = _fixture("claude-code-2.1.328-messages.json")["body"]
    rebuilt = anthropic.render_request(anthropic.parse_request(body), stream=True)
    assert rebuilt["output_config"] == body["output_config"]
    assert rebuilt["metadata"] == body["metadata"]
    # thinking blocks ride beside their turn, so the thinking settings travel too
    assert rebuilt["thinking"] == body["thinking"]
    assert rebuilt["context_management"] == body["context_management"]
    assert orjson.dumps(rebuilt)  # renders


def test_a_rebuilt_request_puts_every_thinking_block_back_in_its_turn() -> None:
    signed = {"type": "thinking", "thinking": "check the file first", "signature": "sig-1"}
    redacted = {"type": "redacted_thinking", "data": "opaque-2"}
    body = {
        "model": "m",
        "max_tokens": 64,
        "thinking": {"type": "enabled", "budget_tokens": 32},
        "messages": [
            {"role": "user", "content": "read a, then b"},
            {
                "role": "assistant",
                "content": [signed, {"type": "tool_use", "id": "t1", "name": "Read", "input": {}}],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "A"}],
            },
            {"role": "assistant", "content": [redacted, {"type": "text", "text": "now b"}]},
            {"role": "user", "content": "go on"},
        ],
    }
    rebuilt = anthropic.render_request(anthropic.parse_request(body))
    first, second = (m for m in rebuilt["messages"] if m["role"] == "assistant")
    assert first["content"][0] == signed and first["content"][1]["type"] == "tool_use"
    assert second["content"] == [redacted, {"type": "text", "text": "now b"}]
    assert rebuilt["thinking"] == body["thinking"]


def test_server_tools_and_mcp_servers_are_stripped_not_refused() -> None:
    body = {
        "model": "m",
        "max_tokens": 10,
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [
            {"type": "web_search_20250305", "name": "web_search"},
            {"name": "Read", "input_schema": {"type": "object"}},
        ],
        "mcp_servers": [{"type": "url", "url": "https://x.example/mcp", "name": "x"}],
    }
    parsed = anthropic.parse_request(body)
    assert [t.name for t in parsed.turn.tools] == ["Read"]
    assert not anthropic.forwardable_as_is(body)
    rebuilt = anthropic.render_request(parsed)
    assert "mcp_servers" not in rebuilt
    assert [t["name"] for t in rebuilt["tools"]] == ["Read"]
    assert parsed.options["stripped"] == ("mcp_servers", "tools[0] (web_search_20250305)")


def test_codex_request_parses_namespace_tools_and_strips_server_tools() -> None:
    from fak.wire import openai_responses

    body = _fixture("codex-0.169.0-responses.json")["body"]
    parsed = openai_responses.parse_request(body)
    names = [t.name for t in parsed.turn.tools]
    assert "exec_command" in names
    assert "multi_agent_v1.spawn_agent" in names  # adjudicated under its qualified name
    assert parsed.options["tool_kinds"]["multi_agent_v1.spawn_agent"] == "namespace:multi_agent_v1"
    assert any("web_search" in s for s in parsed.options["stripped"])
    assert [m.role for m in parsed.turn.messages][:2] == [Role.SYSTEM, Role.SYSTEM]  # developer


def test_custom_and_namespaced_calls_render_back_as_the_client_declared_them() -> None:
    from fak.abi import ProposedCall
    from fak.wire import TurnOutcome, openai_responses

    body = {
        "model": "m",
        "input": [
            {"type": "message", "role": "user", "content": "patch it"},
            {"type": "custom_tool_call", "call_id": "c0", "name": "apply_patch", "input": "*** A"},
            {"type": "custom_tool_call_output", "call_id": "c0", "output": "ok"},
        ],
        "tools": [
            {
                "type": "custom",
                "name": "apply_patch",
                "description": "edit files",
                "format": {"type": "grammar", "syntax": "lark", "definition": "start: /.+/"},
            },
            {
                "type": "namespace",
                "name": "ns",
                "description": "d",
                "tools": [{"type": "function", "name": "f", "parameters": {"type": "object"}}],
            },
        ],
    }
    parsed = openai_responses.parse_request(body)
    history = parsed.turn.messages[1].tool_calls[0]
    assert history.name == "apply_patch" and json.loads(history.arguments) == {"input": "*** A"}
    outcome = TurnOutcome(
        id="r1",
        model="m",
        created=0,
        text="",
        tool_calls=(
            ProposedCall("c1", "apply_patch", '{"input":"*** Begin Patch"}'),
            ProposedCall("c2", "ns.f", "{}"),
        ),
        tool_kinds=parsed.options["tool_kinds"],
    )
    out = openai_responses.render_response(outcome)["output"]
    assert out[0]["type"] == "custom_tool_call" and out[0]["input"] == "*** Begin Patch"
    assert out[1]["type"] == "function_call"
    assert (out[1]["name"], out[1]["namespace"]) == ("f", "ns")


def test_images_in_tool_results_and_user_turns_are_not_a_400_and_never_pass_unseen() -> None:
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"},
    }
    body = {
        "model": "m",
        "max_tokens": 10,
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "look"}, image]},
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "t1",
                        "name": "Read",
                        "input": {"file_path": "a.png"},
                    }
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "content": [{"type": "text", "text": "a screenshot"}, image],
                    }
                ],
            },
        ],
    }
    parsed = anthropic.parse_request(body)
    # a tool's image cannot be screened: it is held out with a note the model reads, and the
    # request is rebuilt rather than passed through (issue 23 N1); the user's own image is theirs
    assert parsed.turn.messages[-1].content == (
        "a screenshot\n\n[fak] an image in this tool result was held out: fak cannot screen it"
    )
    assert not anthropic.forwardable_as_is(body)
    user_only = {**body, "messages": body["messages"][:1]}
    assert anthropic.forwardable_as_is(user_only)


def test_chat_custom_tools_and_media_parts() -> None:
    from fak.abi import ProposedCall
    from fak.wire import TurnOutcome, openai_chat

    body = {
        "model": "m",
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "apply this"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBO"}},
                ],
            },
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c0",
                        "type": "custom",
                        "custom": {"name": "apply_patch", "input": "*** A"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c0", "content": "done"},
        ],
        "tools": [{"type": "custom", "custom": {"name": "apply_patch", "description": "edit"}}],
    }
    parsed = openai_chat.parse_request(body)
    assert parsed.turn.tools[0].name == "apply_patch"
    assert json.loads(parsed.turn.messages[1].tool_calls[0].arguments) == {"input": "*** A"}
    assert parsed.turn.messages[0].content == "apply this"
    outcome = TurnOutcome(
        id="c1",
        model="m",
        created=0,
        text="",
        tool_calls=(ProposedCall("c1", "apply_patch", '{"input":"*** B"}'),),
        tool_kinds=parsed.options["tool_kinds"],
    )
    call = openai_chat.render_response(outcome)["choices"][0]["message"]["tool_calls"][0]
    assert call == {
        "id": "c1",
        "type": "custom",
        "custom": {"name": "apply_patch", "input": "*** B"},
    }
