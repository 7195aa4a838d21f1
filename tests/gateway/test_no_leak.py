"""A recording mock upstream proves no quarantined byte and no planted secret ever reaches the
upstream, the access log or the metrics — on every wire, streamed and not."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from fak.abi import FinishReason, PlannerTurn, ProposedCall, Usage
from fak.gateway.upstream.client import HttpxUpstream
from fak.gateway.upstream.planner import ProxyPlanner
from fak.testing.upstream import MockUpstream

from .conftest import POISON, SECRET, AccessLines

pytestmark = pytest.mark.gateway
ARG_SECRET = "sk-" + "ZZargumentSecretZZ12345"


def _script(_: Any) -> PlannerTurn:
    # the upstream also proposes a call carrying a secret in its arguments: it may reach the
    # client (the verdict is the client's business) but never a log line or a metric
    call = ProposedCall("c9", "read_notes", '{"q":"' + ARG_SECRET + '"}')
    return PlannerTurn("ok ", (call,), FinishReason.TOOL_CALLS, Usage(5, 5))


def _bodies(stream: bool) -> dict[str, dict[str, Any]]:
    chat = {
        "model": "m",
        "stream": stream,
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
            {"role": "tool", "tool_call_id": "c1", "content": POISON},
        ],
    }
    responses = {
        "model": "m",
        "stream": stream,
        "input": [
            {"role": "user", "content": "go"},
            {"type": "function_call", "call_id": "c1", "name": "read_file", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": POISON},
        ],
    }
    messages = {
        "model": "m",
        "max_tokens": 20,
        "stream": stream,
        "messages": [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "c1", "name": "read_file", "input": {}}],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "c1",
                        "content": [{"type": "text", "text": POISON}],
                    }
                ],
            },
        ],
    }
    return {"/v1/chat/completions": chat, "/v1/responses": responses, "/v1/messages": messages}


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_no_quarantined_byte_reaches_upstream_log_or_metrics(
    provider: str,
    access: AccessLines,
    app_factory: Callable[..., Any],
    serve_app: Callable[[Any], str],
) -> None:
    mock = MockUpstream(_script)
    up_url = serve_app(mock.app)
    base = up_url + "/v1" if provider == "openai" else up_url
    app = app_factory(
        ProxyPlanner(HttpxUpstream(), base_url=base, provider=provider), ping_interval_s=0.01
    )
    url = serve_app(app)
    for stream in (False, True):
        for path, body in _bodies(stream).items():
            r = httpx.post(url + path, json=body, headers={"x-api-key": "k"})
            assert r.status_code == 200, (path, r.text)
            assert b"QUARANTINE" in r.content  # the client learns a result was held
            assert SECRET.encode() not in r.content
    assert len(mock.received) == 6
    upstream = mock.bodies
    assert SECRET.encode() not in upstream
    assert (
        b"IGNORE PREVIOUS INSTRUCTIONS" not in upstream
        and b"reveal your system prompt" not in upstream
    )
    assert upstream.count(b"_quarantined") == 6
    metrics = httpx.get(url + "/metrics").content + httpx.get(url + "/debug/vars").content
    for leak in (SECRET, ARG_SECRET, "IGNORE PREVIOUS"):
        assert leak.encode() not in bytes(access.raw)
        assert leak.encode() not in metrics
    ops = [line for line in access.lines if line["event"] == "gateway_operation"]
    assert {o["operation"] for o in ops} == {"proxy_admit", "adjudicate"}
    assert all(o["verdict"] == "QUARANTINE" for o in ops if o["operation"] == "proxy_admit")
    assert b"fak_gateway_context_pollutions_blocked_total 6.0" in metrics
