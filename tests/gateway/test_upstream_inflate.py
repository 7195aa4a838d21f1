"""The upstream clients inflate a compressed reply a slice at a time under the cap (finding D3 of
the second hostile run): a bomb never inflates past the cap in memory, on either client, whole or
streamed; an encoding fak did not ask for is refused, not decoded."""

from __future__ import annotations

import asyncio
import gzip
import resource
import zlib
from collections.abc import Callable
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from fak.gateway.upstream.client import (
    ACCEPT_ENCODING,
    AiohttpUpstream,
    HttpxUpstream,
    UpstreamFailure,
)

CLIENTS = [HttpxUpstream, AiohttpUpstream]
CAP = 1024 * 1024


class Encoded:
    """Answers every request with the given bytes and content-encoding; records what was asked."""

    def __init__(self, body: bytes, encoding: str) -> None:
        self.body = body
        self.encoding = encoding
        self.asked: list[str] = []
        self.app = Starlette(routes=[Route("/x", self._answer, methods=["GET", "POST"])])

    async def _answer(self, request: Request) -> Response:
        await request.body()
        self.asked.append(request.headers.get("accept-encoding", ""))
        headers = {"content-encoding": self.encoding} if self.encoding else {}
        return Response(self.body, media_type="application/json", headers=headers)


def _read(client: Any, url: str, *, stream: bool) -> bytes:
    async def go() -> bytes:
        try:
            if stream:
                async with client.stream(url, b"{}", {"accept-encoding": "br, zstd"}) as s:
                    return bytes(await s.read())
            reply = await client.request("POST", url, b"{}", {"accept-encoding": "br, zstd"})
            return bytes(reply.body)
        finally:
            await client.aclose()

    return asyncio.run(go())


def _max_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


@pytest.mark.parametrize("client_type", CLIENTS)
@pytest.mark.parametrize("stream", [False, True])
def test_D3_a_gzip_bomb_stops_at_the_cap_without_inflating_in_memory(
    client_type: type, stream: bool, serve_app: Callable[[Any], str]
) -> None:
    bomb = gzip.compress(b"0" * (384 * 1024 * 1024), compresslevel=9)  # ~370 KiB on the wire
    upstream = Encoded(bomb, "gzip")
    url = serve_app(upstream.app) + "/x"
    before = _max_rss_mib()
    with pytest.raises(UpstreamFailure) as caught:
        _read(client_type(max_body_bytes=CAP), url, stream=stream)
    assert caught.value.kind == "too_large"
    # a whole raw chunk inflated at once is tens of MiB; slices of 64 KiB stay far below that
    assert _max_rss_mib() - before < 64
    assert upstream.asked == [ACCEPT_ENCODING]  # the client's own accept-encoding is replaced


@pytest.mark.parametrize("client_type", CLIENTS)
@pytest.mark.parametrize("encoding", ["zstd", "br", "compress"])
def test_D3_an_encoding_not_asked_for_is_refused_not_decoded(
    client_type: type, encoding: str, serve_app: Callable[[Any], str]
) -> None:
    upstream = Encoded(b"\x28\xb5\x2f\xfd" + b"\x00" * 64, encoding)
    url = serve_app(upstream.app) + "/x"
    with pytest.raises(UpstreamFailure) as caught:
        _read(client_type(max_body_bytes=CAP), url, stream=False)
    assert caught.value.kind == "transport"
    assert encoding in str(caught.value)


@pytest.mark.parametrize("client_type", CLIENTS)
@pytest.mark.parametrize("encoding", ["gzip", "deflate", ""])
@pytest.mark.parametrize("stream", [False, True])
def test_D3_ordinary_compressed_replies_arrive_whole(
    client_type: type, encoding: str, stream: bool, serve_app: Callable[[Any], str]
) -> None:
    text = b'{"ok": true, "pad": "' + b"abc" * 200_000 + b'"}'  # 600 KB: many slices, under cap
    body = {"gzip": gzip.compress, "deflate": zlib.compress, "": bytes}[encoding](text)
    url = serve_app(Encoded(body, encoding).app) + "/x"
    assert _read(client_type(max_body_bytes=CAP), url, stream=stream) == text


@pytest.mark.parametrize("client_type", CLIENTS)
def test_D3_a_corrupt_compressed_body_is_a_transport_failure(
    client_type: type, serve_app: Callable[[Any], str]
) -> None:
    url = serve_app(Encoded(b"\x1f\x8b\x08\x00garbage-not-deflate", "gzip").app) + "/x"
    with pytest.raises(UpstreamFailure) as caught:
        _read(client_type(max_body_bytes=CAP), url, stream=False)
    assert caught.value.kind == "transport"
