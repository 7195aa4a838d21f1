"""Wire and upstream hardening (findings 1, 8, 11 and 12 of the first hostile run).

Every upstream here is a real server on a loopback socket; fak is reached over a real socket too.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import socket
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import orjson
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from fak.gateway.upstream.client import AiohttpUpstream, HttpxUpstream
from fak.gateway.upstream.planner import ProxyPlanner
from fak.testing.upstream import MockUpstream

pytestmark = pytest.mark.gateway

AKIA = "AKIAQ3EGRTWK5NX7LB4M"
CLIENTS = [HttpxUpstream, AiohttpUpstream]
JSON = {"content-type": "application/json"}


def _proxy(url: str, provider: str, client: Any = None) -> ProxyPlanner:
    base = url + "/v1" if provider == "openai" else url
    return ProxyPlanner(client or HttpxUpstream(), base_url=base, provider=provider, model="m")


def _anthropic_history(tool_result: str) -> str:
    """A Messages request (as text, so a test can splice keys into the tool_result block)."""
    return (
        '{"model":"claude-x","max_tokens":50,"messages":['
        '{"role":"user","content":"read it"},'
        '{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"read_file",'
        '"input":{"path":"a.txt"}}]},'
        '{"role":"user","content":[' + tool_result + "]}]}"
    )


# -- finding 1: passthrough forwards only bytes that were screened ----------------------------
@pytest.fixture
def anthropic_gateway(
    serve_app: Callable[[Any], str], app_factory: Callable[..., Any]
) -> tuple[MockUpstream, str]:
    mock = MockUpstream()
    up = serve_app(mock.app)
    return mock, serve_app(app_factory(_proxy(up, "anthropic")))


def test_finding_1_duplicate_key_in_a_tool_result_is_refused(
    anthropic_gateway: tuple[MockUpstream, str],
) -> None:
    mock, url = anthropic_gateway
    block = f'{{"type":"tool_result","tool_use_id":"t1","content":"{AKIA}","content":"benign"}}'
    r = httpx.post(url + "/v1/messages", content=_anthropic_history(block), headers=JSON)
    assert r.status_code == 400
    assert r.json()["error"]["type"] == "duplicate_key" or "duplicate_key" in r.text
    assert len(mock.received) == 0  # nothing went upstream


def test_finding_1_extra_key_in_a_block_is_not_forwarded(
    anthropic_gateway: tuple[MockUpstream, str],
) -> None:
    mock, url = anthropic_gateway
    block = f'{{"type":"tool_result","tool_use_id":"t1","content":"ok","extra":"{AKIA}"}}'
    r = httpx.post(url + "/v1/messages", content=_anthropic_history(block), headers=JSON)
    assert r.status_code == 200, r.text
    assert AKIA.encode() not in mock.bodies  # rebuilt from what was parsed and screened
    assert b'"tool_result"' in mock.bodies


def test_finding_1_mcp_servers_and_duplicate_tools_never_reach_the_upstream(
    anthropic_gateway: tuple[MockUpstream, str],
) -> None:
    mock, url = anthropic_gateway
    doc = json.loads(_anthropic_history('{"type":"tool_result","tool_use_id":"t1","content":"ok"}'))
    doc["mcp_servers"] = [{"type": "url", "url": "https://evil.example/mcp", "name": "x"}]
    r = httpx.post(url + "/v1/messages", content=json.dumps(doc), headers=JSON)
    assert r.status_code == 200, r.text
    assert b"mcp_servers" not in mock.bodies and b"evil.example" not in mock.bodies
    hidden = (
        '{"model":"c","max_tokens":5,"messages":[{"role":"user","content":"hi"}],'
        '"tools":[{"type":"web_search_20250305","name":"web_search"}],'
        '"tools":[{"name":"read_file","input_schema":{"type":"object"}}]}'
    )
    before = len(mock.received)
    r = httpx.post(url + "/v1/messages", content=hidden, headers=JSON)
    assert r.status_code == 400 and "duplicate_key" in r.text
    assert len(mock.received) == before


def test_finding_1_a_plain_request_still_passes_through_byte_for_byte(
    anthropic_gateway: tuple[MockUpstream, str],
) -> None:
    mock, url = anthropic_gateway
    raw = _anthropic_history('{"type":"tool_result","tool_use_id":"t1","content":"ok"}')
    raw = raw.replace(
        '"read it"', '[{"type":"text","text":"read it","cache_control":{"type":"ephemeral"}}]'
    )
    r = httpx.post(url + "/v1/messages", content=raw, headers=JSON)
    assert r.status_code == 200, r.text
    assert mock.received[-1].body == raw.encode()


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/responses", "/v1/fak/adjudicate"])
def test_finding_1_duplicate_keys_are_refused_on_every_wire(
    path: str, serve_app: Callable[[Any], str], app_factory: Callable[..., Any]
) -> None:
    mock = MockUpstream()
    url = serve_app(app_factory(_proxy(serve_app(mock.app), "openai")))
    body = '{"model":"m","model":"n","messages":[{"role":"user","content":"hi"}],"input":"hi"}'
    if path == "/v1/fak/adjudicate":
        body = '{"tool":"read_file","tool":"delete_all","arguments":{}}'
    r = httpx.post(url + path, content=body, headers=JSON)
    assert r.status_code == 400, r.text
    assert "duplicate_key" in r.text
    assert len(mock.received) == 0


# -- upstreams that misbehave -----------------------------------------------------------------
class OddUpstream:
    """Answers every turn with canned bytes; records when a streaming client went away."""

    def __init__(
        self, body: bytes, media: str = "text/event-stream", gzip_it: bool = False
    ) -> None:
        self.body = body
        self.media = media
        self.gzip_it = gzip_it
        self.closed_at: float | None = None
        self.app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._turn, methods=["POST"]),
                Route("/v1/messages", self._turn, methods=["POST"]),
            ]
        )

    async def _turn(self, request: Request) -> Response:
        await request.body()
        if self.gzip_it:
            data = gzip.compress(self.body, compresslevel=9)
            return Response(data, media_type=self.media, headers={"content-encoding": "gzip"})
        return Response(self.body, media_type=self.media)


def _chat_truncated() -> bytes:
    chunk = {
        "id": "c1",
        "object": "chat.completion.chunk",
        "model": "m",
        "choices": [
            {
                "index": 0,
                "delta": {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "delete_all", "arguments": "{}"},
                        }
                    ],
                },
                "finish_reason": None,
            }
        ],
    }
    return b"data: " + orjson.dumps(chunk) + b"\n\n"  # no finish_reason, no [DONE]


def _messages_truncated() -> bytes:
    def ev(name: str, data: dict[str, Any]) -> bytes:
        return f"event: {name}\ndata: ".encode() + orjson.dumps({"type": name, **data}) + b"\n\n"

    message = {
        "id": "m1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [],
        "stop_reason": None,
        "usage": {"input_tokens": 1, "output_tokens": 0},
    }
    block = {"type": "tool_use", "id": "tu1", "name": "delete_all", "input": {}}
    return b"".join(
        [
            ev("message_start", {"message": message}),
            ev("content_block_start", {"index": 0, "content_block": block}),
            ev(
                "content_block_delta",
                {"index": 0, "delta": {"type": "input_json_delta", "partial_json": "{}"}},
            ),
            ev("content_block_stop", {"index": 0}),
        ]
    )  # cut before message_delta / message_stop


WIRES = {
    "chat": (
        "openai",
        "/v1/chat/completions",
        {"model": "m", "stream": True, "messages": [{"role": "user", "content": "go"}]},
    ),
    "responses": ("openai", "/v1/responses", {"model": "m", "stream": True, "input": "go"}),
    "messages": (
        "anthropic",
        "/v1/messages",
        {
            "model": "m",
            "stream": True,
            "max_tokens": 20,
            "messages": [{"role": "user", "content": "go"}],
        },
    ),
}


@pytest.mark.parametrize("wire", list(WIRES))
@pytest.mark.parametrize("kind", ["not-json", "html", "truncated"])
def test_finding_11_bad_upstream_streams_are_502(
    wire: str,
    kind: str,
    serve_app: Callable[[Any], str],
    app_factory: Callable[..., Any],
    access: Any,
) -> None:
    provider, path, body = WIRES[wire]
    if kind == "not-json":
        odd = OddUpstream(b"{not json")
    elif kind == "html":
        odd = OddUpstream(b"<html><body>502 Bad Gateway</body></html>", media="text/html")
    else:
        odd = OddUpstream(_chat_truncated() if provider == "openai" else _messages_truncated())
    url = serve_app(app_factory(_proxy(serve_app(odd.app), provider)))
    r = httpx.post(url + path, json=body, timeout=30)
    assert r.status_code == 502, r.text
    assert "upstream_bad_response" in r.text
    assert "delete_all" not in r.text  # the cut-off call is never admitted or shown
    decided = [x for x in access.lines if x.get("operation") == "proxy_decide"]
    assert decided == []


# -- finding 8: decompressed size cap -----------------------------------------------------------
@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize("stream", [False, True])
def test_finding_8_gzip_bomb_upstream_is_capped(
    client: type, stream: bool, serve_app: Callable[[Any], str], app_factory: Callable[..., Any]
) -> None:
    bomb = b"data: " + b"0" * (8 * 1024 * 1024) + b"\n\n"  # 8 MiB inflated, ~8 KiB on the wire
    odd = OddUpstream(
        bomb, media="text/event-stream" if stream else "application/json", gzip_it=True
    )
    planner = _proxy(serve_app(odd.app), "openai", client(max_body_bytes=1024 * 1024))
    url = serve_app(app_factory(planner))
    body = {"model": "m", "stream": stream, "messages": [{"role": "user", "content": "go"}]}
    r = httpx.post(url + "/v1/chat/completions", json=body, timeout=30)
    assert r.status_code == 502, r.text
    assert "upstream_too_large" in r.text


# -- finding 12: an Anthropic stream stops its upstream when the client leaves ------------------
class SlowAnthropic:
    def __init__(self) -> None:
        self.closed_at: float | None = None
        self.started_at: float | None = None
        self.app = Starlette(routes=[Route("/v1/messages", self._turn, methods=["POST"])])

    async def _turn(self, request: Request) -> StreamingResponse:
        await request.body()

        async def gen() -> AsyncIterator[bytes]:
            message = {
                "id": "m1",
                "type": "message",
                "role": "assistant",
                "model": "m",
                "content": [],
                "usage": {"input_tokens": 1, "output_tokens": 0},
            }
            yield (
                b"event: message_start\ndata: "
                + orjson.dumps({"type": "message_start", "message": message})
                + b"\n\n"
            )
            self.started_at = time.monotonic()
            try:
                await asyncio.sleep(60)  # a model that keeps generating
                yield b""
            finally:
                self.closed_at = time.monotonic()

        return StreamingResponse(gen(), media_type="text/event-stream")


def _open_messages_stream(url: str) -> socket.socket:
    """A raw client that sends one streamed Messages request and can then just vanish."""
    host, port = url.removeprefix("http://").split(":")
    body = json.dumps(WIRES["messages"][2]).encode()
    sock = socket.create_connection((host, int(port)))
    sock.sendall(
        b"POST /v1/messages HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        + f"content-length: {len(body)}\r\n\r\n".encode()
        + body
    )
    return sock


def test_finding_12_anthropic_stream_disconnect_stops_the_upstream_quickly(
    serve_app: Callable[[Any], str], app_factory: Callable[..., Any]
) -> None:
    slow = SlowAnthropic()
    url = serve_app(app_factory(_proxy(serve_app(slow.app), "anthropic")))
    with contextlib.closing(_open_messages_stream(url)):
        deadline = time.monotonic() + 5
        while slow.started_at is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert slow.started_at is not None  # the upstream is generating; the gateway waits
        time.sleep(0.3)
        left = time.monotonic()  # the client leaves as the block closes its socket
    deadline = left + 5
    while slow.closed_at is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert slow.closed_at is not None, "the upstream kept generating after the client left"
    assert slow.closed_at - left < 2.0  # well before the 15 s ping that used to notice


def test_finding_12_disconnect_mid_stream_stops_the_upstream_before_the_next_ping(
    serve_app: Callable[[Any], str], app_factory: Callable[..., Any]
) -> None:
    slow = SlowAnthropic()
    app = app_factory(_proxy(serve_app(slow.app), "anthropic"), ping_interval_s=3.0)
    url = serve_app(app)
    with contextlib.closing(_open_messages_stream(url)) as sock:
        sock.settimeout(10)
        seen = b""
        while b"event: ping" not in seen:  # the event stream is open (after one interval)
            chunk = sock.recv(65536)
            assert chunk, "the gateway closed the stream"
            seen += chunk
        left = time.monotonic()  # the client leaves as the block closes its socket
    while slow.closed_at is None and time.monotonic() < left + 5:
        time.sleep(0.02)
    assert slow.closed_at is not None
    assert slow.closed_at - left < 1.5  # not at the next ping, 3 s later


# -- second hostile run, N1: what a tool result holds is screened or held out, never passed ----
_N1_BLOCKS = {
    "document-text": '{"type":"document","source":{"type":"text","media_type":"text/plain",'
    '"data":"aws_access_key_id=%s"}}',
    "document-content": '{"type":"document","source":{"type":"content","content":['
    '{"type":"text","text":"aws_access_key_id=%s"}]}}',
    "document-title": '{"type":"document","title":"aws_access_key_id=%s","source":'
    '{"type":"text","media_type":"text/plain","data":"fine"}}',
    "document-context": '{"type":"document","context":"aws_access_key_id=%s","source":'
    '{"type":"text","media_type":"text/plain","data":"fine"}}',
    "citations": '{"type":"text","text":"see","citations":[{"type":"char_location",'
    '"cited_text":"aws_access_key_id=%s","document_index":0,"start_char_index":0,'
    '"end_char_index":5}]}',
    "image-url": '{"type":"image","source":{"type":"url","url":"https://x.example/%s.png"}}',
    "pdf-base64": '{"type":"document","source":{"type":"base64","media_type":'
    '"application/pdf","data":"JVBERi0%s"}}',
}


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("shape", sorted(_N1_BLOCKS))
def test_N1_anthropic_tool_result_blocks_never_reach_the_upstream_unseen(
    anthropic_gateway: tuple[MockUpstream, str], shape: str, stream: bool
) -> None:
    mock, url = anthropic_gateway
    block = _N1_BLOCKS[shape].replace("%s", AKIA)
    result = '{"type":"tool_result","tool_use_id":"t1","content":[' + block + "]}"
    doc = json.loads(_anthropic_history(result))
    doc["stream"] = stream
    r = httpx.post(url + "/v1/messages", content=json.dumps(doc), headers=JSON)
    assert r.status_code == 200, r.text
    assert mock.bodies and AKIA.encode() not in mock.bodies
