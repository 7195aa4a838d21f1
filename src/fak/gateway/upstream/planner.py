"""The upstream proxy planner (tier T3): an OpenAI-compatible (Chat Completions or Responses) or
Anthropic model over HTTP.

Implements ``fak.abi.Planner`` and, for the gateway, ``forward``/``forward_stream`` that also
take the neutral forwarding options and, for an Anthropic upstream, a ``Passthrough`` (the
client's own request bytes, forwarded unchanged when the kernel changed nothing in them). It
proposes only: replies are parsed into ``PlannerTurn`` for adjudication, and an upstream whose
announced tool calls do not parse fails the turn (502) instead of skipping adjudication.
Upstream failures become ``GatewayError`` values here; raw upstream bodies are never surfaced.
What differs between the wires (endpoint, headers, rendering, parsing, stream reading) is the
``fak.wire.dialect.Dialect`` the planner holds; it never compares wire names.
"""

from __future__ import annotations

import abc
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
from prometheus_client.registry import Collector

from fak.abi import JournalSink, PlannerEvent, PlannerTurn, TextDelta, TurnDone, TurnRequest
from fak.gateway.errors import GatewayError, upstream_status_error
from fak.gateway.upstream.client import (
    UpstreamClient,
    UpstreamFailure,
    UpstreamReply,
    UpstreamUnreachable,
)
from fak.wire import ParsedRequest, SSEDecoder, WireError, WireName
from fak.wire.anthropic.client import ANTHROPIC_VERSION
from fak.wire.dialect import dialect_for

__all__ = [
    "ANTHROPIC_VERSION",
    "ForwardedDone",
    "Forwarder",
    "Passthrough",
    "ProxyPlanner",
    "UpstreamError",
]


@dataclass(frozen=True, slots=True)
class Passthrough:
    """The client's Messages request bytes (None when they must be rebuilt) and the headers
    allowed to travel with the request either way (version, beta flags, the client's key)."""

    body: bytes | None
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ForwardedDone(TurnDone):
    """``TurnDone`` plus the wire-specific usage counters the upstream reported."""

    usage_extra: Mapping[str, int] = field(default_factory=dict)


class UpstreamError(GatewayError):
    """A ``GatewayError`` that came from an upstream, with what the router needs to decide on a
    retry: ``kind`` (``unreachable``, ``timeout``, ``transport``, ``too_large``, ``http``,
    ``bad_response``), the upstream's own HTTP status (0 when none) and its ``Retry-After``."""

    def __init__(
        self,
        base: GatewayError,
        kind: str,
        *,
        upstream_status: int = 0,
        retry_after: str | None = None,
    ) -> None:
        super().__init__(
            base.status, base.code, base.message, param=base.param, headers=base.headers
        )
        self.kind = kind
        self.upstream_status = upstream_status
        self.retry_after = retry_after


class Forwarder(abc.ABC):
    """A planner that forwards turns upstream (one ``ProxyPlanner``, or the ``Router`` over
    many): the turn runner calls ``forward``/``forward_stream`` with the forwarding options and
    the request's trace id, the ops routes ``forward_raw``. ``collector`` is the routing
    metrics to export (None for a single upstream)."""

    @property
    @abc.abstractmethod
    def provider(self) -> WireName: ...

    @abc.abstractmethod
    async def forward(
        self, parsed: ParsedRequest, passthrough: Passthrough | None = None, *, trace_id: str = ""
    ) -> tuple[PlannerTurn, dict[str, int]]: ...

    @abc.abstractmethod
    def forward_stream(
        self, parsed: ParsedRequest, passthrough: Passthrough | None = None, *, trace_id: str = ""
    ) -> AsyncIterator[PlannerEvent]: ...

    @abc.abstractmethod
    async def forward_raw(
        self, method: str, path: str, body: bytes | None, headers: Mapping[str, str] | None = None
    ) -> UpstreamReply: ...

    def collector(self) -> Collector | None:
        return None

    def attach_journal(self, journal: JournalSink | None) -> None:
        """Where routing decisions are journaled (the kernel's journal); a single upstream
        makes none, so this is a no-op unless overridden."""
        return None


class ProxyPlanner(Forwarder):
    """Proposes turns by asking an upstream model. Never executes a tool."""

    def __init__(
        self,
        client: UpstreamClient,
        *,
        base_url: str,
        provider: WireName | str = WireName.OPENAI_CHAT,
        api_key: str | None = None,
        model: str = "",
        on_error: Callable[[str], None] | None = None,
    ) -> None:
        try:
            wire = WireName(provider)
        except ValueError:
            msg = f"unknown provider {provider!r}; use one of {', '.join(WireName)}"
            raise ValueError(msg) from None
        self._client = client
        self._base = base_url.rstrip("/")
        self._dialect = dialect_for(wire)
        self._key = api_key or None
        self._model = model
        self._on_error = on_error or (lambda kind: None)
        self._url = self._dialect.url(self._base)

    def set_error_hook(self, hook: Callable[[str], None]) -> None:
        """Called with a failure kind on every upstream error (the gateway counts them)."""
        self._on_error = hook

    # -- Planner protocol ---------------------------------------------------------------
    @property
    def kind(self) -> str:
        return "proxy"

    @property
    def model(self) -> str:
        return self._model

    @property
    def provider(self) -> WireName:
        return self._dialect.name

    @property
    def base_url(self) -> str:
        return self._base

    async def complete(self, request: TurnRequest) -> PlannerTurn:
        turn, _ = await self.forward(ParsedRequest(request))
        return turn

    def stream(self, request: TurnRequest) -> AsyncIterator[PlannerEvent]:
        return self.forward_stream(ParsedRequest(request))

    async def aclose(self) -> None:
        await self._client.aclose()

    def stats(self) -> Mapping[str, Any] | None:
        """None: the proxy keeps no stats of its own (the gateway counts its turns)."""
        return None

    # -- forwarding ---------------------------------------------------------------------
    def _headers(self, passthrough: Passthrough | None) -> dict[str, str]:
        dialect = self._dialect
        headers = {"content-type": "application/json", "accept": "application/json"}
        headers.update(dialect.headers)
        if passthrough is not None and dialect.passthrough:
            headers.update(passthrough.headers)
        if self._key:
            headers[dialect.auth_header] = dialect.auth_prefix + self._key
        return headers

    def _body(self, parsed: ParsedRequest, passthrough: Passthrough | None, stream: bool) -> bytes:
        if passthrough is not None and passthrough.body is not None and self._dialect.passthrough:
            return passthrough.body
        turn = parsed.turn
        if not turn.model and self._model:
            parsed = ParsedRequest(
                TurnRequest(
                    self._model,
                    turn.messages,
                    turn.tools,
                    turn.max_tokens,
                    turn.temperature,
                    turn.stream,
                    turn.session,
                ),
                parsed.options,
            )
        try:
            return orjson.dumps(self._dialect.render(parsed, stream))
        except WireError as exc:
            raise GatewayError(400, exc.code, exc.message, param=exc.param) from exc

    def _fail(self, exc: UpstreamFailure) -> UpstreamError:
        self._on_error(exc.kind)
        if isinstance(exc, UpstreamUnreachable):
            base = GatewayError(
                502,
                "upstream_unreachable",
                f"cannot reach the upstream at {self._base}; check that --base-url points at a "
                "running server",
            )
        elif exc.kind == "timeout":
            base = GatewayError(
                504, "upstream_timeout", "the upstream model did not answer in time"
            )
        elif exc.kind == "too_large":
            base = GatewayError(
                502,
                "upstream_too_large",
                f"the upstream reply was larger than allowed ({exc}); raise "
                "FAK_UPSTREAM_MAX_BYTES if that is expected",
            )
        else:
            base = GatewayError(502, "upstream_error", "upstream model error (transport)")
        return UpstreamError(base, exc.kind)

    def _status(self, status: int, retry_after: str | None) -> UpstreamError:
        self._on_error(f"http_{status // 100}xx")
        return UpstreamError(
            upstream_status_error(status, retry_after),
            "http",
            upstream_status=status,
            retry_after=retry_after,
        )

    def _bad(self, exc: WireError) -> UpstreamError:
        self._on_error("bad_response")
        if exc.code.endswith("tool_calls"):
            msg = "the upstream's tool calls do not parse; refusing to skip adjudication"
        else:
            msg = "the upstream model sent a response fak could not read"
        return UpstreamError(GatewayError(502, exc.code, msg), "bad_response")

    async def forward(
        self, parsed: ParsedRequest, passthrough: Passthrough | None = None, *, trace_id: str = ""
    ) -> tuple[PlannerTurn, dict[str, int]]:
        """One non-streamed upstream turn → (turn, usage counters)."""
        body = self._body(parsed, passthrough, stream=False)
        try:
            reply = await self._client.request("POST", self._url, body, self._headers(passthrough))
        except UpstreamFailure as exc:
            raise self._fail(exc) from exc
        if not 200 <= reply.status < 300:
            raise self._status(reply.status, reply.retry_after)
        try:
            return self._dialect.parse(orjson.loads(reply.body))
        except orjson.JSONDecodeError as exc:
            raise self._bad(WireError("upstream_bad_response", "not JSON")) from exc
        except WireError as exc:
            raise self._bad(exc) from exc

    async def forward_stream(
        self, parsed: ParsedRequest, passthrough: Passthrough | None = None, *, trace_id: str = ""
    ) -> AsyncIterator[PlannerEvent]:
        """Text deltas as the upstream streams them, then one ``ForwardedDone``."""
        body = self._body(parsed, passthrough, stream=True)
        decoder = SSEDecoder()
        try:
            async with self._client.stream(self._url, body, self._headers(passthrough)) as up:
                if not 200 <= up.status < 300:
                    await up.read()
                    raise self._status(up.status, up.retry_after)
                reader = self._dialect.stream()
                async for chunk in up.chunks():
                    # one delta per network read: what arrived together leaves together
                    text = "".join([reader.feed(ev) for ev in decoder.feed(chunk)])
                    if text:
                        yield TextDelta(text)
                turn, extra = reader.finish()
                yield ForwardedDone(turn, extra)
        except UpstreamFailure as exc:
            raise self._fail(exc) from exc
        except WireError as exc:
            raise self._bad(exc) from exc

    async def forward_raw(
        self, method: str, path: str, body: bytes | None, headers: Mapping[str, str] | None = None
    ) -> UpstreamReply:
        """Forward a non-turn request (models, embeddings, moderations) to ``base_url + path``."""
        h = self._headers(None)
        h.update(headers or {})
        try:
            reply = await self._client.request(method, self._base + path, body, h)
        except UpstreamFailure as exc:
            raise self._fail(exc) from exc
        if not 200 <= reply.status < 300:
            raise self._status(reply.status, reply.retry_after)
        return reply
