"""The router on the live path: two and three upstreams on loopback, the official SDKs as
clients. Routing by model name, fallback on a killed upstream, a 429 with Retry-After, a 500,
cooldown and recovery, a cross-wire fallback, and no duplicate dispatch across a fallback."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import openai
import orjson
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from fak.abi import PlannerInputError, PlannerTurn, TurnRequest
from fak.gateway.upstream.client import HttpxUpstream
from fak.gateway.upstream.config import parse_upstreams
from fak.gateway.upstream.router import build_router
from fak.journal import MemoryJournal
from fak.kernel import Kernel
from fak.policy import Policy
from fak.testing.planner import MockPlanner
from fak.testing.upstream import MockUpstream

from ..conftest import closing
from ..scripts import agent_script
from .conftest import Clock, Gateway, _ask, _entry, _killed

pytestmark = pytest.mark.gateway


class Flaky:
    """An OpenAI-compatible upstream that answers ``status`` (with ``headers``) while set, and
    a plain reply otherwise; ``hits`` counts requests."""

    def __init__(self, status: int | None, headers: dict[str, str] | None = None) -> None:
        self.status = status
        self.headers = headers or {}
        self.hits = 0
        self.app = Starlette(routes=[Route("/v1/chat/completions", self._chat, methods=["POST"])])

    async def _chat(self, request: Request) -> Response:
        await request.body()
        self.hits += 1
        if self.status is not None:
            return Response(b'{"error":{"message":"SECRET"}}', self.status, headers=self.headers)
        body = {
            "id": "c1",
            "object": "chat.completion",
            "created": 1,
            "model": "flaky",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "from flaky"},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
        }
        return Response(orjson.dumps(body), media_type="application/json")


class DiesMidStream:
    """Streams one text chunk, then drops the connection."""

    def __init__(self) -> None:
        self.hits = 0
        self.app = Starlette(routes=[Route("/v1/chat/completions", self._chat, methods=["POST"])])

    async def _chat(self, request: Request) -> Response:
        await request.body()
        self.hits += 1

        async def frames() -> AsyncIterator[bytes]:
            chunk = {
                "id": "c1",
                "object": "chat.completion.chunk",
                "created": 1,
                "model": "m",
                "choices": [{"index": 0, "delta": {"role": "assistant", "content": "partial "}}],
            }
            yield b"data: " + orjson.dumps(chunk) + b"\n\n"
            raise RuntimeError("the upstream died")

        return StreamingResponse(frames(), media_type="text/event-stream")


def test_the_client_model_picks_the_group(
    gateway: Callable[..., Gateway], serve_app: Callable[[Any], str]
) -> None:
    a, b = MockUpstream(agent_script), MockUpstream(agent_script)
    gw = gateway(
        {
            "model_list": [
                _entry("fast", "a", serve_app(a.app), model="small-1"),
                _entry("smart", "b", serve_app(b.app), model="large-2"),
            ]
        }
    )
    _ask(gw, "fast")
    _ask(gw, "smart")
    _ask(gw, "smart")
    assert [orjson.loads(r.body)["model"] for r in a.received] == ["small-1"]
    assert [orjson.loads(r.body)["model"] for r in b.received] == ["large-2", "large-2"]
    assert gw.routes() == [
        ("fast", "a", "OK", "simple-shuffle"),
        ("smart", "b", "OK", "simple-shuffle"),
        ("smart", "b", "OK", "simple-shuffle"),
    ]
    with pytest.raises(openai.NotFoundError) as err:
        _ask(gw, "nope")
    assert err.value.code == "model_not_found"
    models = gw.client().models.list()
    assert [m.id for m in models.data] == ["fast", "smart"]


def test_a_killed_upstream_falls_back_then_cools_down(
    gateway: Callable[..., Gateway], serve_app: Callable[[Any], str]
) -> None:
    b = MockUpstream(agent_script)
    clock = Clock()
    doc = {
        "model_list": [_entry("g", "a", _killed()), _entry("g", "b", serve_app(b.app))],
        "router_settings": {"routing_strategy": "least-busy", "retry_after": 0.25},
    }
    gw = gateway(doc, clock)
    r = _ask(gw, "g")
    assert r.choices[0].message.content == "Hello from the scripted planner, word by word."
    assert gw.routes() == [("g", "a", "RETRY", "unreachable"), ("g", "b", "OK", "least-busy")]
    assert clock.slept == [0.25]  # one backoff before the second attempt
    _ask(gw, "g")  # a is cooling down: b directly
    assert gw.routes()[2:] == [("g", "b", "OK", "least-busy")]
    assert len(b.received) == 2
    metrics = httpx.get(gw.url + "/metrics").text
    assert 'fak_route_attempts_total{deployment="a",group="g",outcome="RETRY"} 1.0' in metrics
    assert 'fak_route_attempts_total{deployment="b",group="g",outcome="OK"} 2.0' in metrics
    assert 'fak_route_cooling_down{deployment="a"} 1.0' in metrics


def test_a_429_with_retry_after_cools_that_long_then_recovers(
    gateway: Callable[..., Gateway], serve_app: Callable[[Any], str]
) -> None:
    a, b = Flaky(429, {"retry-after": "30"}), MockUpstream(agent_script)
    clock = Clock()
    doc = {
        "model_list": [_entry("g", "a", serve_app(a.app)), _entry("g", "b", serve_app(b.app))],
        "router_settings": {"routing_strategy": "least-busy", "cooldown_time": 5},
    }
    gw = gateway(doc, clock)
    _ask(gw, "g")
    assert gw.routes() == [("g", "a", "RETRY", "http_429"), ("g", "b", "OK", "least-busy")]
    assert gw.router.board.cooldown_until("a") == 1030.0  # Retry-After beats cooldown_time
    a.status = None  # a recovers, but it is not asked before its Retry-After passes
    clock.now = 1029.0
    _ask(gw, "g")
    assert (a.hits, len(b.received)) == (1, 2)
    clock.now = 1031.0
    r = _ask(gw, "g")
    assert r.choices[0].message.content == "from flaky"
    assert (a.hits, len(b.received)) == (2, 2)
    assert gw.routes()[-1] == ("g", "a", "OK", "least-busy")


def test_a_500_moves_on_a_400_does_not(
    gateway: Callable[..., Gateway], serve_app: Callable[[Any], str]
) -> None:
    a, b = Flaky(500), MockUpstream(agent_script)
    doc = {
        "model_list": [_entry("g", "a", serve_app(a.app)), _entry("g", "b", serve_app(b.app))],
        "router_settings": {"routing_strategy": "least-busy", "cooldown_time": 0},
    }
    gw = gateway(doc)
    _ask(gw, "g")
    assert gw.routes() == [("g", "a", "RETRY", "http_500"), ("g", "b", "OK", "least-busy")]
    a.status = 400  # the client's fault: the same request fails everywhere, so no retry
    with pytest.raises(openai.BadRequestError) as err:
        _ask(gw, "g")
    assert err.value.code == "upstream_invalid_request" and "SECRET" not in str(err.value)
    assert gw.routes()[2:] == [("g", "a", "FAIL", "http_400")]
    assert len(b.received) == 1


@pytest.mark.parametrize("stream", [False, True])
def test_an_adjudicated_call_is_dispatched_once_across_a_fallback(
    stream: bool, gateway: Callable[..., Gateway], serve_app: Callable[[Any], str]
) -> None:
    a, b = Flaky(503), MockUpstream(agent_script)
    doc = {
        "model_list": [_entry("g", "a", serve_app(a.app)), _entry("g", "b", serve_app(b.app))],
        "router_settings": {"routing_strategy": "least-busy"},
    }
    gw = gateway(doc)
    if stream:
        chunks = list(_ask(gw, "g", "read it", stream=True))
        names = [
            t.function.name
            for c in chunks
            if c.choices
            for t in (c.choices[0].delta.tool_calls or [])
        ]
    else:
        r = _ask(gw, "g", "read it")
        names = [t.function.name for t in r.choices[0].message.tool_calls or []]
    assert names == ["read_file"]  # delete_account refused, read_file kept, once
    assert (a.hits, len(b.received)) == (1, 1)
    assert gw.decided() == ["read_file"]  # one adjudication, after the fallback, never before
    assert gw.routes() == [("g", "a", "RETRY", "http_503"), ("g", "b", "OK", "least-busy")]


def test_a_stream_that_already_sent_bytes_is_not_replayed(
    gateway: Callable[..., Gateway], serve_app: Callable[[Any], str]
) -> None:
    a, b = DiesMidStream(), MockUpstream(agent_script)
    doc = {
        "model_list": [_entry("g", "a", serve_app(a.app)), _entry("g", "b", serve_app(b.app))],
        "router_settings": {"routing_strategy": "least-busy"},
    }
    gw = gateway(doc)
    body = {"model": "g", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    with httpx.stream("POST", gw.url + "/v1/chat/completions", json=body) as r:
        text = r.read().decode()
    assert "partial " in text and "upstream_error" in text  # what was sent, then the failure
    assert (a.hits, len(b.received)) == (1, 0)
    assert gw.routes() == [("g", "a", "FAIL", "transport")]


def test_cross_wire_fallback_an_anthropic_model_behind_an_openai_client(
    gateway: Callable[..., Gateway], serve_app: Callable[[Any], str]
) -> None:
    claude = MockUpstream(agent_script)
    doc = {
        "model_list": [
            _entry("gpt", "openai-down", _killed()),
            _entry("claude", "anthropic-up", serve_app(claude.app), "anthropic", "claude-x"),
        ],
        "litellm_settings": {"fallbacks": [{"gpt": ["claude"]}]},
    }
    gw = gateway(doc)
    r = _ask(gw, "gpt")
    assert r.choices[0].message.content == "Hello from the scripted planner, word by word."
    (got,) = claude.received
    assert got.path == "/v1/messages" and orjson.loads(got.body)["model"] == "claude-x"
    assert gw.routes() == [
        ("gpt", "openai-down", "RETRY", "unreachable"),
        ("claude", "anthropic-up", "OK", "simple-shuffle"),
    ]


def test_three_upstreams_at_their_rpm_then_503_with_retry_after(
    gateway: Callable[..., Gateway], serve_app: Callable[[Any], str]
) -> None:
    ups = [MockUpstream(agent_script), MockUpstream(agent_script), MockUpstream(agent_script)]
    entries = [_entry("g", f"d{i}", serve_app(u.app)) for i, u in enumerate(ups)]
    for e in entries:
        e["litellm_params"]["rpm"] = 1
    clock = Clock()
    gw = gateway(
        {"model_list": entries, "router_settings": {"routing_strategy": "usage-based-routing"}},
        clock,
    )
    for _ in range(3):
        _ask(gw, "g")
    assert [len(u.received) for u in ups] == [1, 1, 1]
    assert [by for _, by, _, _ in gw.routes()] == ["d0", "d1", "d2"]
    r = httpx.post(
        gw.url + "/v1/chat/completions",
        json={"model": "g", "messages": [{"role": "user", "content": "hi"}]},
    )
    assert (r.status_code, r.json()["error"]["code"]) == (503, "upstream_unavailable")
    clock.now += 61  # a minute later the window is empty again
    _ask(gw, "g")
    assert [len(u.received) for u in ups] == [2, 1, 1]


def test_an_anthropic_client_falls_back_across_wires_to_an_openai_upstream(
    gateway: Callable[..., Gateway], serve_app: Callable[[Any], str]
) -> None:
    import anthropic

    oai = MockUpstream(agent_script)
    doc = {
        "model_list": [
            _entry("claude", "anthropic-down", _killed(), "anthropic", "claude-x"),
            _entry("local", "openai-up", serve_app(oai.app), model="qwen"),
        ],
        "litellm_settings": {"fallbacks": [{"claude": ["local"]}]},
    }
    gw = gateway(doc)
    client = closing(anthropic.Anthropic(base_url=gw.url, api_key="c", max_retries=0))
    msg = client.messages.create(
        model="claude", max_tokens=50, messages=[{"role": "user", "content": "hello"}]
    )
    assert [b.text for b in msg.content if b.type == "text"] == [
        "Hello from the scripted planner, word by word."
    ]
    (got,) = oai.received
    assert got.path == "/v1/chat/completions" and orjson.loads(got.body)["model"] == "qwen"
    assert gw.routes() == [
        ("claude", "anthropic-down", "RETRY", "unreachable"),
        ("local", "openai-up", "OK", "simple-shuffle"),
    ]


class FullEngine(MockPlanner):
    """An in-kernel engine whose batch is full: every turn is a 429 with a retry hint."""

    async def complete(self, request: TurnRequest) -> PlannerTurn:
        raise PlannerInputError("engine_busy", "the batch is full", status=429, retry_after=2)


@pytest.mark.parametrize("full", [False, True])
def test_the_in_kernel_engine_is_one_more_upstream(
    full: bool,
    app_factory: Callable[..., Any],
    serve_app: Callable[[Any], str],
) -> None:
    b = MockUpstream(agent_script)
    config = parse_upstreams(
        {
            "model_list": [
                {"model_name": "g", "litellm_params": {"model": "fak/engine"}},
                _entry("g", "b", serve_app(b.app)),
            ],
            "router_settings": {"routing_strategy": "least-busy"},
        },
        {},
    )
    engine = FullEngine(agent_script) if full else MockPlanner(agent_script)
    clock = Clock()
    router = build_router(
        config, lambda t: HttpxUpstream(), engine=lambda: engine, clock=clock, sleep=clock.sleep
    )
    journal = MemoryJournal()
    url = serve_app(app_factory(router, kernel=Kernel(Policy.default(), journal=journal)))
    gw = Gateway(router, url, journal)
    r = _ask(gw, "g")
    assert r.choices[0].message.content == "Hello from the scripted planner, word by word."
    if full:  # the engine's 429 moves the turn on, and parks the engine for its Retry-After
        assert gw.routes() == [("g", "g/0", "RETRY", "engine_busy"), ("g", "b", "OK", "least-busy")]
        assert router.board.cooldown_until("g/0") == clock.now + 5.0  # cooldown_time beats 2 s
    else:
        assert gw.routes() == [("g", "g/0", "OK", "least-busy")]
        assert len(b.received) == 0
