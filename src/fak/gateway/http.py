"""HTTP plumbing shared by every route (tier T3): body limits, JSON replies, the middleware.

``read_json`` reads a request body under the size cap (413 ``payload_too_large``) and the read
timeout (408 ``request_timeout``) and decodes it strictly (400 ``invalid_json``, or
``duplicate_key`` when an object names a key twice). ``GatewayMiddleware``
is a plain ASGI wrapper (no per-request task hop) that mints or accepts the trace id, enforces
auth, counts in-flight requests, sets ``X-Trace-Id`` and writes the ``gateway_http_request``
access-log line and metrics. Credentials are compared in constant time over SHA-256 digests.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import itertools
import secrets
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Mapping, MutableMapping
from typing import Any, Final

import orjson
from starlette.requests import Request
from starlette.responses import Response

from fak.gateway.accesslog import AccessLog
from fak.gateway.errors import GatewayError, error_body
from fak.gateway.metrics import Metrics
from fak.gateway.origin import Cors, HostCheck
from fak.wire.strictjson import DuplicateKey, InvalidJson, loads_strict

__all__ = [
    "DEFAULT_BODY_CAP",
    "EventStream",
    "GatewayMiddleware",
    "KeyCheck",
    "TraceIds",
    "decode_json",
    "json_response",
    "read_body",
    "read_json",
]

DEFAULT_BODY_CAP = 4 * 1024 * 1024
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
_JSON = "application/json"
_MESSAGES_PATHS = ("/v1/messages", "/v1/v1/messages")  # as app._is_anthropic reads them


def json_response(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(data), status_code=status, media_type=_JSON, headers=headers)


class EventStream:
    """A ``text/event-stream`` response written frame by frame.

    Lighter than a task-group streaming response: one watcher task notices a client disconnect
    and interrupts the frame loop wherever it waits, closing the producer (and with it any
    upstream stream) within moments, not at the next frame.
    """

    __slots__ = ("_frames", "_headers")

    def __init__(self, frames: Any, headers: dict[str, str] | None = None) -> None:
        self._frames = frames
        raw = [
            (b"content-type", b"text/event-stream; charset=utf-8"),
            (b"cache-control", b"no-cache"),
        ]
        raw.append((b"x-accel-buffering", b"no"))
        raw.extend((k.encode(), v.encode()) for k, v in (headers or {}).items())
        self._headers = raw

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        gone = asyncio.Event()
        writer = asyncio.current_task()

        async def watch() -> None:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    gone.set()
                    # the frame loop may be parked in a long wait (a ping interval, a slow
                    # upstream): interrupt it now so the producer and its upstream stop at once
                    if writer is not None:
                        writer.cancel()
                    return

        watcher = asyncio.ensure_future(watch())
        frames = self._frames
        try:
            await send({"type": "http.response.start", "status": 200, "headers": self._headers})
            async for frame in frames:
                if gone.is_set():
                    break
                await send({"type": "http.response.body", "body": frame, "more_body": True})
            if not gone.is_set():
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        except OSError:
            pass  # the client went away mid-write
        except asyncio.CancelledError:
            if not gone.is_set():
                raise  # not ours: the server is shutting down
            if writer is not None:
                writer.uncancel()
        finally:
            watcher.cancel()
            if isinstance(frames, AsyncGenerator):
                try:
                    await frames.aclose()
                except asyncio.CancelledError:  # the client left just as the stream ended
                    if not gone.is_set():
                        raise
                    if writer is not None:
                        writer.uncancel()


async def read_body(request: Request, cap: int, timeout_s: float) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > cap:
        raise GatewayError(413, "payload_too_large", f"request body exceeds {cap} bytes")

    async def _read() -> bytes:
        parts: list[bytes] = []
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > cap:
                raise GatewayError(413, "payload_too_large", f"request body exceeds {cap} bytes")
            parts.append(chunk)
        return b"".join(parts)

    if timeout_s <= 0:
        return await _read()
    try:
        async with asyncio.timeout(timeout_s):
            return await _read()
    except TimeoutError as exc:
        raise GatewayError(
            408, "request_timeout", "the request body was not received in time"
        ) from exc


async def read_json(request: Request, cap: int, timeout_s: float) -> tuple[Any, bytes]:
    _require_json(request.headers.get("content-type"))
    raw = await read_body(request, cap, timeout_s)
    return decode_json(raw), raw


def _require_json(content_type: str | None) -> None:
    """415 unless the body is declared JSON: a page on another site can send ``text/plain`` or a
    form without asking first, but not ``application/json``."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    if media == _JSON or (media.startswith("application/") and media.endswith("+json")):
        return
    raise GatewayError(
        415,
        "unsupported_media_type",
        f"send the body as JSON with Content-Type: application/json (got {media or 'none'})",
    )


def decode_json(raw: bytes) -> Any:
    """Strictly decode a request body: 400 ``duplicate_key`` or ``invalid_json``."""
    try:
        return loads_strict(raw)
    except DuplicateKey as exc:
        raise GatewayError(400, "duplicate_key", f"request body: {exc}") from exc
    except InvalidJson as exc:
        raise GatewayError(400, "invalid_json", f"request body is not valid JSON: {exc}") from exc


class KeyCheck:
    """One required secret, checked in constant time over SHA-256 digests."""

    __slots__ = ("_digest",)

    def __init__(self, secret: str) -> None:
        if not secret:
            msg = "the required API key is empty"
            raise ValueError(msg)
        self._digest = hashlib.sha256(secret.encode()).digest()

    def check(self, token: str | None) -> bool:
        candidate = hashlib.sha256((token or "").encode()).digest()
        return hmac.compare_digest(candidate, self._digest) and token is not None


class TraceIds:
    """Accepts a client's ``X-Trace-Id`` (printable, ≤128 chars) or mints ``gw-<run>-<n>``."""

    __slots__ = ("_counter", "_run")

    def __init__(self, run: str | None = None) -> None:
        self._run = run if run is not None else secrets.token_hex(4)
        self._counter = itertools.count(1)

    def take(self, offered: str | None) -> str:
        if offered and len(offered) <= 128 and offered.isprintable() and " " not in offered:
            return offered
        return f"gw-{self._run}-{next(self._counter)}"


# Metric labels come from closed vocabularies, so no request can mint a new time series.
_METHODS: Final = {m: m for m in ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")}


def _status_label(status: int) -> str:
    return str(status) if 100 <= status <= 599 else "other"


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return bytes(value).decode("latin-1")
    return None


class GatewayMiddleware:
    """Trace id, auth, in-flight count, ``X-Trace-Id``, access log and HTTP metrics."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        metrics: Metrics,
        log: AccessLog,
        trace_ids: TraceIds,
        routes: Iterable[str],
        key: KeyCheck | None = None,
        open_paths: Iterable[str] = ("/healthz",),
        hosts: HostCheck | None = None,
        cors: Cors | None = None,
        direct: Mapping[str, Callable[[Request], Awaitable[Any]]] | None = None,
        on_error: Callable[[Request, Exception], Awaitable[Any]] | None = None,
    ) -> None:
        self._app = app
        self._direct = dict(direct or {}) if on_error is not None else {}
        self._on_error = on_error
        self._hosts = hosts if hosts is not None else HostCheck()
        self._cors = cors if cors is not None else Cors()
        self._metrics = metrics
        self._log = log
        self._ids = trace_ids
        self._routes = frozenset(routes)
        self._key = key
        self._open = frozenset(open_paths)
        self._children: dict[tuple[str, str, int], Any] = {}
        self._hists: dict[str, Any] = {}

    async def _dispatch(
        self,
        endpoint: Callable[[Request], Awaitable[Any]],
        scope: Scope,
        receive: Receive,
        send: Send,
    ) -> None:
        request = Request(scope, receive, send)
        try:
            response = await endpoint(request)
        except Exception as exc:
            assert self._on_error is not None
            response = await self._on_error(request, exc)
        await response(scope, receive, send)

    def _route(self, path: str) -> str:
        if path in self._routes:
            return path
        return "/v1/fak/*" if path.startswith("/v1/fak/") else "unmatched"

    def _authorized(self, scope: Scope) -> bool:
        assert self._key is not None
        auth = _header(scope, b"authorization")
        if auth is not None and auth.startswith("Bearer "):
            return self._key.check(auth[7:])
        api_key = _header(scope, b"x-api-key")
        return api_key is not None and self._key.check(api_key)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        t0 = time.perf_counter()
        trace_id = self._ids.take(_header(scope, b"x-trace-id"))
        scope["fak.trace_id"] = trace_id
        path = scope["path"]
        route = self._route(path)
        status = 500
        nbytes = 0
        trace_header = (b"x-trace-id", trace_id.encode())

        origin = _header(scope, b"origin")
        extra = [trace_header]
        if origin is not None and self._cors.allows(origin):
            extra += Cors.response_headers(origin)

        async def send_wrapper(message: Message) -> None:
            nonlocal status, nbytes
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", ()), *extra]
            elif message["type"] == "http.response.body":
                nbytes += len(message.get("body", b""))
            await send(message)

        async def refuse(code: int, name: str, text: str, *headers: tuple[bytes, bytes]) -> None:
            start = [(b"content-type", b"application/json"), *headers]
            # the Messages routes answer in their own envelope, {"type": "error", "error": ...}
            body = error_body(code, name, text, anthropic=path.startswith(_MESSAGES_PATHS))
            await send_wrapper({"type": "http.response.start", "status": code, "headers": start})
            await send_wrapper({"type": "http.response.body", "body": body})

        self._metrics.inflight.inc()
        try:
            if not self._hosts.allowed(_header(scope, b"host")):
                await refuse(
                    421,
                    "host_not_allowed",
                    "this gateway does not answer to that Host name; add it to "
                    "FAK_ALLOWED_HOSTS if it is yours",
                )
            elif scope.get("method") == "OPTIONS" and origin is not None:
                if self._cors.allows(origin):
                    requested = _header(scope, b"access-control-request-headers")
                    headers = Cors.preflight_headers(requested)
                    await send_wrapper(
                        {"type": "http.response.start", "status": 204, "headers": headers}
                    )
                    await send_wrapper({"type": "http.response.body", "body": b""})
                else:
                    await refuse(
                        403,
                        "origin_not_allowed",
                        "cross-origin requests are refused; list the origin in "
                        "FAK_CORS_ORIGINS to allow it",
                    )
            elif self._key is not None and path not in self._open and not self._authorized(scope):
                await refuse(
                    401,
                    "unauthorized",
                    "missing or invalid credentials",
                    (b"www-authenticate", b"Bearer"),
                )
            else:
                endpoint = self._direct.get(path) if scope.get("method") == "POST" else None
                if endpoint is None:
                    await self._app(scope, receive, send_wrapper)
                else:
                    await self._dispatch(endpoint, scope, receive, send_wrapper)
        finally:
            self._metrics.inflight.dec()
            seconds = time.perf_counter() - t0
            method = scope.get("method", "")
            key = (route, _METHODS.get(method, "other"), status)
            child = self._children.get(key)
            if child is None:
                child = self._children[key] = self._metrics.http_requests.labels(
                    key[0], key[1], _status_label(status)
                )
            child.inc()
            hist = self._hists.get(route)
            if hist is None:
                hist = self._hists[route] = self._metrics.http_duration.labels(route)
            hist.observe(seconds)
            self._log.http(
                method=method[:16],
                route=route,
                status=status,
                nbytes=nbytes,
                seconds=seconds,
                trace_id=trace_id,
                user_agent=_header(scope, b"user-agent") or "",
            )
