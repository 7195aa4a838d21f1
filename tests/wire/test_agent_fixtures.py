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
    # thinking blocks are not carried by the canonical form, so neither is the thinking switch
    assert "thinking" not in rebuilt and "context_management" not in rebuilt
    assert orjson.dumps(rebuilt)  # renders


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
