"""The upstream HTTP client seam (tier T3): one small Protocol, two implementations.

``UpstreamClient`` is what the proxy planner and the forwarding routes call; below it sits a
pooled ``httpx.AsyncClient`` (``HttpxUpstream``) or an ``aiohttp`` session (``AiohttpUpstream``,
used when aiohttp is installed; the gateway benchmark measures both). Transport exceptions are
translated here, once, into ``UpstreamUnreachable`` / ``UpstreamFailure`` values; nothing above
sees an httpx or aiohttp exception. Response bodies are returned as bytes, never logged, and are
capped *during* decompression (``max_body_bytes``, kind ``too_large``): both clients ask for
``gzip, deflate`` only and read the raw bytes, and ``_Inflater`` inflates them at most 64 KiB at a
time, so a small compressed reply (a gzip, brotli or zstd bomb) cannot inflate into gigabytes of
memory, whole or streamed. An encoding fak did not ask for is refused, not decoded.
"""

from __future__ import annotations

import contextlib
import importlib.util
import zlib
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import httpx

from fak.config import Settings

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "AiohttpUpstream",
    "HttpxUpstream",
    "UpstreamClient",
    "UpstreamFailure",
    "UpstreamReply",
    "UpstreamStream",
    "UpstreamUnreachable",
    "default_upstream",
]

DEFAULT_MAX_BODY_BYTES = Settings().upstream_max_bytes  # FAK_UPSTREAM_MAX_BYTES' default


class UpstreamFailure(Exception):
    """The upstream could not be used: a transport error, a timeout or a stall."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class _Budget:
    """Counts decompressed bytes of one reply; past the cap it fails as ``too_large``."""

    __slots__ = ("_cap", "_seen")

    def __init__(self, cap: int) -> None:
        self._cap = cap
        self._seen = 0

    def take(self, chunk: bytes) -> bytes:
        self._seen += len(chunk)
        if self._cap and self._seen > self._cap:
            raise UpstreamFailure(
                "too_large", f"the upstream reply exceeds {self._cap} bytes (decompressed)"
            )
        return chunk


ACCEPT_ENCODING = "gzip, deflate"
"""What both clients ask the upstream for: encodings ``_Inflater`` inflates a slice at a time."""

_SLICE = 64 * 1024


class _Inflater:
    """Inflates one reply's raw bytes as they arrive, ``_SLICE`` bytes of output at a time, each
    counted by the budget before the next is made: the cap holds inside one compressed chunk."""

    __slots__ = ("_budget", "_z")

    def __init__(self, content_encoding: str | None, budget: _Budget) -> None:
        self._budget = budget
        coding = (content_encoding or "").strip().lower()
        if coding in ("", "identity"):
            self._z = None
        elif coding in ("gzip", "x-gzip"):
            self._z = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif coding == "deflate":
            self._z = zlib.decompressobj(32 + zlib.MAX_WBITS)  # zlib-wrapped (auto header)
        else:
            raise UpstreamFailure(
                "transport", f"the upstream sent content-encoding {coding[:40]!r}, not asked for"
            )

    def feed(self, raw: bytes) -> Iterator[bytes]:
        if self._z is None:
            yield self._budget.take(raw)
            return
        data = raw
        try:
            while data:
                out = self._z.decompress(data, _SLICE)
                data = self._z.unconsumed_tail
                if out:
                    yield self._budget.take(out)
        except zlib.error as exc:
            raise UpstreamFailure("transport", "the upstream's compressed body is corrupt") from exc

    def flush(self) -> Iterator[bytes]:
        if self._z is None:
            return
        while True:  # output held back by the slice limit
            out = self._z.decompress(b"", _SLICE)
            if not out:
                break
            yield self._budget.take(out)


class UpstreamUnreachable(UpstreamFailure):
    """The connection could not be made (refused, DNS, TLS)."""

    def __init__(self, message: str) -> None:
        super().__init__("unreachable", message)


@dataclass(frozen=True, slots=True)
class UpstreamReply:
    status: int
    body: bytes
    content_type: str = ""
    retry_after: str | None = None


class UpstreamStream(Protocol):
    """An open streamed response: status known, body read incrementally."""

    status: int
    retry_after: str | None

    def chunks(self) -> AsyncIterator[bytes]: ...

    async def read(self) -> bytes: ...


class UpstreamClient(Protocol):
    """Above: the proxy planner and forwarding routes. Below: a pooled HTTP client."""

    name: str

    async def request(
        self, method: str, url: str, body: bytes | None, headers: Mapping[str, str]
    ) -> UpstreamReply: ...

    def stream(
        self, url: str, body: bytes, headers: Mapping[str, str]
    ) -> contextlib.AbstractAsyncContextManager[UpstreamStream]: ...

    async def aclose(self) -> None: ...


def _ask(headers: Mapping[str, str]) -> dict[str, str]:
    """The request headers, asking only for encodings ``_Inflater`` inflates in slices."""
    out = {k: v for k, v in headers.items() if k.lower() != "accept-encoding"}
    out["accept-encoding"] = ACCEPT_ENCODING
    return out


# -- httpx ------------------------------------------------------------------------------------
@contextlib.contextmanager
def _map_httpx() -> Iterator[None]:
    try:
        yield
    except httpx.ConnectError as exc:
        raise UpstreamUnreachable(f"cannot connect to the upstream: {type(exc).__name__}") from exc
    except httpx.TimeoutException as exc:
        raise UpstreamFailure("timeout", "the upstream timed out") from exc
    except httpx.HTTPError as exc:
        raise UpstreamFailure(
            "transport", f"upstream transport error: {type(exc).__name__}"
        ) from exc


class _HttpxStream:
    def __init__(self, response: httpx.Response, cap: int) -> None:
        self._response = response
        self._inflater = _Inflater(response.headers.get("content-encoding"), _Budget(cap))
        self.status = response.status_code
        self.retry_after = response.headers.get("retry-after")

    async def chunks(self) -> AsyncIterator[bytes]:
        with _map_httpx():
            async for raw in self._response.aiter_raw():  # as sent: inflated here, capped
                for chunk in self._inflater.feed(raw):
                    yield chunk
        for chunk in self._inflater.flush():
            yield chunk

    async def read(self) -> bytes:
        return b"".join([chunk async for chunk in self.chunks()])


class HttpxUpstream:
    """A pooled ``httpx.AsyncClient`` behind the seam."""

    name = "httpx"

    def __init__(
        self,
        *,
        timeout_s: float = 60.0,
        max_connections: int = 256,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    ) -> None:
        self._cap = max_body_bytes
        self._client = httpx.AsyncClient(
            timeout=httpx.Timeout(timeout_s or None, connect=10.0),
            limits=httpx.Limits(max_connections=max_connections, max_keepalive_connections=64),
            trust_env=False,
        )

    async def request(
        self, method: str, url: str, body: bytes | None, headers: Mapping[str, str]
    ) -> UpstreamReply:
        with _map_httpx():
            req = self._client.build_request(method, url, content=body, headers=_ask(headers))
            r = await self._client.send(req, stream=True)
        try:
            data = await _HttpxStream(r, self._cap).read()
        finally:
            await r.aclose()
        return UpstreamReply(
            r.status_code, data, r.headers.get("content-type", ""), r.headers.get("retry-after")
        )

    @contextlib.asynccontextmanager
    async def stream(
        self, url: str, body: bytes, headers: Mapping[str, str]
    ) -> AsyncIterator[UpstreamStream]:
        with _map_httpx():
            req = self._client.build_request("POST", url, content=body, headers=_ask(headers))
            response = await self._client.send(req, stream=True)
        try:
            yield _HttpxStream(response, self._cap)
        finally:
            await response.aclose()

    async def aclose(self) -> None:
        await self._client.aclose()


# -- aiohttp ----------------------------------------------------------------------------------
class _AiohttpStream:
    def __init__(self, response: Any, mapper: Any, cap: int) -> None:
        self._response = response
        self._map = mapper
        self._inflater = _Inflater(response.headers.get("content-encoding"), _Budget(cap))
        self.status = int(response.status)
        self.retry_after = response.headers.get("retry-after")

    async def chunks(self) -> AsyncIterator[bytes]:
        with self._map():
            async for raw in self._response.content.iter_any():  # as sent: inflated here, capped
                for chunk in self._inflater.feed(bytes(raw)):
                    yield chunk
        for chunk in self._inflater.flush():
            yield chunk

    async def read(self) -> bytes:
        return b"".join([chunk async for chunk in self.chunks()])


class AiohttpUpstream:
    """An ``aiohttp.ClientSession`` behind the seam (created lazily inside the running loop)."""

    name = "aiohttp"

    def __init__(
        self,
        *,
        timeout_s: float = 60.0,
        max_connections: int = 256,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    ) -> None:
        import aiohttp

        self._cap = max_body_bytes
        self._aiohttp = aiohttp
        self._timeout = aiohttp.ClientTimeout(total=timeout_s or None, connect=10.0)
        self._limit = max_connections
        self._session: Any = None

    def _get(self) -> Any:
        if self._session is None or self._session.closed:
            connector = self._aiohttp.TCPConnector(limit=self._limit, ttl_dns_cache=300)
            self._session = self._aiohttp.ClientSession(
                connector=connector, timeout=self._timeout, auto_decompress=False, trust_env=False
            )
        return self._session

    @contextlib.contextmanager
    def _map(self) -> Iterator[None]:
        aiohttp = self._aiohttp
        try:
            yield
        except (aiohttp.ClientConnectorError, aiohttp.ClientSSLError) as exc:
            raise UpstreamUnreachable(
                f"cannot connect to the upstream: {type(exc).__name__}"
            ) from exc
        except TimeoutError as exc:
            raise UpstreamFailure("timeout", "the upstream timed out") from exc
        except aiohttp.ClientError as exc:
            raise UpstreamFailure(
                "transport", f"upstream transport error: {type(exc).__name__}"
            ) from exc

    async def request(
        self, method: str, url: str, body: bytes | None, headers: Mapping[str, str]
    ) -> UpstreamReply:
        with self._map():
            async with self._get().request(method, url, data=body, headers=_ask(headers)) as r:
                data = await _AiohttpStream(r, self._map, self._cap).read()
                return UpstreamReply(
                    int(r.status),
                    bytes(data),
                    r.headers.get("content-type", ""),
                    r.headers.get("retry-after"),
                )

    @contextlib.asynccontextmanager
    async def stream(
        self, url: str, body: bytes, headers: Mapping[str, str]
    ) -> AsyncIterator[UpstreamStream]:
        with self._map():
            response = await self._get().post(url, data=body, headers=_ask(headers))
        try:
            yield _AiohttpStream(response, self._map, self._cap)
        finally:
            response.release()

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()


def default_upstream(
    kind: str = "auto", *, timeout_s: float = 60.0, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
) -> UpstreamClient:
    """``aiohttp`` when installed (measured faster on this hot path), else ``httpx``."""
    if kind == "httpx" or (kind == "auto" and importlib.util.find_spec("aiohttp") is None):
        return HttpxUpstream(timeout_s=timeout_s, max_body_bytes=max_body_bytes)
    return AiohttpUpstream(timeout_s=timeout_s, max_body_bytes=max_body_bytes)
