"""fak serve as an adjudicating proxy in front of a (mock) upstream, over real sockets."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from typing import Any

import anthropic
import httpx
import openai
import orjson
import pytest

from fak.abi import FinishReason, PlannerTurn, Usage
from fak.gateway.upstream.client import AiohttpUpstream, HttpxUpstream
from fak.gateway.upstream.planner import ProxyPlanner
from fak.testing.upstream import MockUpstream

from .conftest import POISON, SECRET
from .scripts import agent_script

pytestmark = pytest.mark.gateway

# a partly refused turn: the surviving text, then the refusal note (issue 24, item 6)
LOOK_AND_NOTE = (
    "Let me look. \n\n[fak] refused 1 tool call(s): delete_account → DENY "
    "(POLICY_BLOCK/TERMINAL). Propose a different approach rather than repeating a refused "
    "call unchanged."
)
CLIENTS = [HttpxUpstream, AiohttpUpstream]


def _proxy(
    kind: type, url: str, provider: str = "openai", key: str | None = "upstream-key"
) -> ProxyPlanner:
    base = url + "/v1" if provider == "openai" else url
    return ProxyPlanner(
        kind(), base_url=base, provider=provider, api_key=key, model="default-model"
    )


@pytest.fixture
def up(serve_app: Callable[[Any], str]) -> tuple[MockUpstream, str]:
    mock = MockUpstream(agent_script)
    return mock, serve_app(mock.app)


@pytest.mark.parametrize("kind", CLIENTS)
def test_openai_upstream_turn_is_adjudicated(
    kind: type,
    up: tuple[MockUpstream, str],
    app_factory: Callable[..., Any],
    serve_app: Callable[[Any], str],
) -> None:
    mock, up_url = up
    url = serve_app(app_factory(_proxy(kind, up_url)))
    with openai.OpenAI(base_url=url + "/v1", api_key="client") as client:
        r = client.chat.completions.create(
            model="gpt-x", messages=[{"role": "user", "content": "read"}]
        )
    assert [c.function.name for c in r.choices[0].message.tool_calls or []] == ["read_file"]
    assert r.model == "gpt-x"
    sent = json.loads(mock.received[-1].body)
    assert sent["model"] == "gpt-x"  # the model name passes through
    assert mock.received[-1].headers["authorization"] == "Bearer upstream-key"


@pytest.mark.parametrize("kind", CLIENTS)
def test_openai_upstream_streaming(
    kind: type,
    up: tuple[MockUpstream, str],
    app_factory: Callable[..., Any],
    serve_app: Callable[[Any], str],
) -> None:
    _, up_url = up
    url = serve_app(app_factory(_proxy(kind, up_url)))
    with openai.OpenAI(base_url=url + "/v1", api_key="client") as client:
        chunks = list(
            client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "read"}], stream=True
            )
        )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    names = [
        t.function.name for c in chunks if c.choices for t in (c.choices[0].delta.tool_calls or [])
    ]
    assert text == LOOK_AND_NOTE and names == ["read_file"]


def test_anthropic_passthrough_forwards_the_client_bytes_unchanged(
    up: tuple[MockUpstream, str], app_factory: Callable[..., Any], serve_app: Callable[[Any], str]
) -> None:
    mock, up_url = up
    url = serve_app(app_factory(_proxy(HttpxUpstream, up_url, "anthropic", key=None)))
    body = {
        "model": "claude-x",
        "max_tokens": 50,
        "system": [{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "read", "cache_control": {"type": "ephemeral"}}
                ],
            }
        ],
    }
    raw = orjson.dumps(body) + b"  "
    r = httpx.post(
        url + "/v1/messages",
        content=raw,
        headers={
            "content-type": "application/json",
            "x-api-key": "client-key",
            "anthropic-beta": "b1",
        },
    )
    assert r.status_code == 200
    assert mock.received[-1].body == raw
    assert mock.received[-1].headers["x-api-key"] == "client-key"
    assert mock.received[-1].headers["anthropic-beta"] == "b1"
    out = r.json()
    assert (
        out["usage"]["cache_read_input_tokens"] == 7
    )  # the upstream's cache accounting reaches the client
    assert [b["type"] for b in out["content"]] == ["text", "text", "tool_use"]


def test_anthropic_passthrough_streaming(
    up: tuple[MockUpstream, str], app_factory: Callable[..., Any], serve_app: Callable[[Any], str]
) -> None:
    mock, up_url = up
    url = serve_app(app_factory(_proxy(HttpxUpstream, up_url, "anthropic")))
    with (
        anthropic.Anthropic(base_url=url, api_key="c", max_retries=0) as client,
        client.messages.stream(
            model="claude-x", max_tokens=50, messages=[{"role": "user", "content": "read"}]
        ) as s,
    ):
        final = s.get_final_message()
    assert b'"stream":true' in mock.received[-1].body
    assert final.stop_reason == "tool_use" and final.content[-1].name == "read_file"  # type: ignore[union-attr]


def test_a_quarantined_result_breaks_passthrough_and_never_reaches_the_upstream(
    up: tuple[MockUpstream, str], app_factory: Callable[..., Any], serve_app: Callable[[Any], str]
) -> None:
    mock, up_url = up
    url = serve_app(app_factory(_proxy(HttpxUpstream, up_url, "anthropic")))
    with anthropic.Anthropic(base_url=url, api_key="c", max_retries=0) as client:
        msg = client.messages.create(
            model="claude-x",
            max_tokens=50,
            messages=[
                {"role": "user", "content": "read"},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "t1", "name": "read_file", "input": {}}],
                },
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "t1", "content": POISON}],
                },
            ],
        )
    assert msg.model_extra["fak"]["result_admissions"][0]["verdict"]["kind"] == "QUARANTINE"  # type: ignore[index]
    body = mock.received[-1].body
    assert SECRET.encode() not in body and b"IGNORE PREVIOUS" not in body
    assert b"_quarantined" in body


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = int(s.getsockname()[1])
    s.close()
    return port


@pytest.mark.parametrize("kind", CLIENTS)
def test_unreachable_upstream_is_a_502_with_a_code(
    kind: type, app_factory: Callable[..., Any], serve_app: Callable[[Any], str]
) -> None:
    url = serve_app(app_factory(_proxy(kind, f"http://127.0.0.1:{_closed_port()}")))
    r = httpx.post(
        url + "/v1/chat/completions",
        json={"model": "m", "messages": [{"role": "user", "content": "x"}]},
    )
    assert r.status_code == 502
    assert r.json()["error"]["code"] == "upstream_unreachable"
    assert "--base-url" in r.json()["error"]["message"]


@pytest.mark.parametrize(
    ("status", "expect", "code"),
    [
        (404, 404, "upstream_model_not_found"),
        (429, 429, "upstream_rate_limited"),
        (500, 502, "upstream_error"),
    ],
)
def test_upstream_errors_map_without_leaking_the_body(
    status: int,
    expect: int,
    code: str,
    up: tuple[MockUpstream, str],
    app_factory: Callable[..., Any],
    serve_app: Callable[[Any], str],
) -> None:
    mock, up_url = up
    mock.fail_with = status
    app = app_factory(_proxy(HttpxUpstream, up_url))
    url = serve_app(app)
    for stream in (False, True):
        r = httpx.post(
            url + "/v1/chat/completions",
            json={"model": "m", "stream": stream, "messages": [{"role": "user", "content": "x"}]},
        )
        assert r.status_code == expect
        assert r.json()["error"]["code"] == code
        assert b"UPSTREAM-SECRET-DETAIL" not in r.content
    assert app.state.gateway.metrics.snapshot(auth_required=False)["upstream"]["errors_by_kind"]


def test_garbage_upstream_body_is_a_502(
    up: tuple[MockUpstream, str], app_factory: Callable[..., Any], serve_app: Callable[[Any], str]
) -> None:
    mock, up_url = up
    mock.garbage = True
    url = serve_app(app_factory(_proxy(HttpxUpstream, up_url)))
    r = httpx.post(
        url + "/v1/chat/completions",
        json={"model": "m", "messages": [{"role": "user", "content": "x"}]},
    )
    assert r.status_code == 502 and r.json()["error"]["code"] == "upstream_bad_response"


def test_announced_tool_calls_that_do_not_parse_fail_closed(
    app_factory: Callable[..., Any], serve_app: Callable[[Any], str]
) -> None:
    mock = MockUpstream([PlannerTurn("", (), FinishReason.TOOL_CALLS, Usage())])
    up_url = serve_app(mock.app)
    url = serve_app(app_factory(_proxy(HttpxUpstream, up_url)))
    r = httpx.post(
        url + "/v1/chat/completions",
        json={"model": "m", "messages": [{"role": "user", "content": "x"}]},
    )
    assert r.status_code == 502
    assert r.json()["error"]["code"] == "upstream_bad_tool_calls"


def test_models_embeddings_moderations_are_forwarded(
    up: tuple[MockUpstream, str], app_factory: Callable[..., Any], serve_app: Callable[[Any], str]
) -> None:
    mock, up_url = up
    url = serve_app(app_factory(_proxy(HttpxUpstream, up_url)))
    with openai.OpenAI(base_url=url + "/v1", api_key="c") as client:
        assert [m.id for m in client.models.list()] == ["mock-upstream"]
        emb = client.embeddings.create(model="e", input="hello")
        assert emb.data[0].embedding == [0.25, -0.5, 1.0]
        mod = client.moderations.create(input="hello")
        assert mod.results[0].flagged is False
    assert [r.path for r in mock.received] == ["/v1/models", "/v1/embeddings", "/v1/moderations"]


def test_without_an_upstream_embeddings_answer_404(
    app_factory: Callable[..., Any], serve_app: Callable[[Any], str]
) -> None:
    from fak.testing.planner import MockPlanner

    url = serve_app(app_factory(MockPlanner()))
    r = httpx.post(url + "/v1/embeddings", json={"model": "e", "input": "x"})
    assert r.status_code == 404 and r.json()["error"]["code"] == "no_upstream"
    assert httpx.get(url + "/v1/models").json()["data"][0]["id"] == "mock"
