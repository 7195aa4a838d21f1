"""The router over many upstreams (tier T3): the client's ``model`` picks a group, a strategy
picks a deployment, a retryable failure moves on to the next.

``Router`` is a ``Forwarder`` (what the turn runner calls for a proxied turn). For one turn it
walks the chain ``[group, *group.fallbacks]``: in each group it asks the ``RoutingStrategy`` to
choose among the deployments that are not cooling down, not over their rpm/tpm and not yet
tried, forwards to it, and on a retryable failure (connect error, timeout, transport error, an
upstream 408, 429 or 5xx) counts the failure on the ``HealthBoard`` (cooldown after
``allowed_fails`` in a row, for at least the 429's ``Retry-After``), backs off and tries the
next, at most ``1 + num_retries`` attempts in all. A cross-wire fallback is just a deployment
of another wire: each deployment's ``ProxyPlanner`` renders the canonical turn in its own wire.

What it never does: retry after the turn left the router. A fallback happens only while no
planner turn exists yet; the turn that returns is the one the kernel adjudicates, once. A
streamed attempt that has yielded any event is never retried (its failure reaches the client).
Every attempt is one ``ROUTE`` journal row (group, deployment, OK / RETRY / FAIL, the strategy
or the failure kind, the trace id) and counted in the ``fak_route_*`` metrics.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterator, Mapping
from dataclasses import replace
from typing import Any

import orjson
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from fak.abi import (
    JournalSink,
    Planner,
    PlannerEvent,
    PlannerInputError,
    PlannerTurn,
    TurnDone,
    TurnRequest,
)
from fak.gateway.errors import GatewayError
from fak.gateway.upstream.client import UpstreamClient, UpstreamReply
from fak.gateway.upstream.config import RouterConfig
from fak.gateway.upstream.health import HealthBoard, parse_retry_after
from fak.gateway.upstream.planner import (
    Forwarder,
    Passthrough,
    ProxyPlanner,
    UpstreamError,
)
from fak.gateway.upstream.strategies import (
    Candidate,
    Deployment,
    Group,
    RouteFeatures,
    RoutingStrategy,
    UpstreamKind,
    make_strategy,
)
from fak.journal import JournalKind, journal_record
from fak.wire import ParsedRequest, WireName

__all__ = ["Router", "build_router", "retryable"]

_log = logging.getLogger(__name__)

_WIRE = {
    UpstreamKind.OPENAI: WireName.OPENAI_CHAT,
    UpstreamKind.HOSTED_VLLM: WireName.OPENAI_CHAT,
    UpstreamKind.ANTHROPIC: WireName.ANTHROPIC,
}
_MAX_BACKOFF_S = 2.0
_OUTCOMES = ("OK", "RETRY", "FAIL")


def retryable(exc: GatewayError) -> bool:
    """A failure another deployment may not share: no connection, a timeout, a broken
    transfer, or an upstream 408 / 429 / 5xx. A 4xx the client caused, an unreadable reply and
    a refusal of fak's own are not retried."""
    if not isinstance(exc, UpstreamError):
        return exc.status == 429  # a full in-kernel engine: another deployment may have room
    if exc.kind in ("unreachable", "timeout", "transport"):
        return True
    status = exc.upstream_status
    return exc.kind == "http" and (status in (408, 429) or status >= 500)


def _why(exc: GatewayError) -> str:
    if isinstance(exc, UpstreamError):
        return f"http_{exc.upstream_status}" if exc.kind == "http" else exc.kind
    return exc.code or f"http_{exc.status}"


class _Target:
    """How one deployment is asked: through its ``ProxyPlanner`` or a bare ``Planner`` (the
    in-kernel engine)."""

    __slots__ = ("planner", "proxy")

    def __init__(self, planner: Planner | ProxyPlanner) -> None:
        self.proxy = planner if isinstance(planner, ProxyPlanner) else None
        self.planner = planner

    async def forward(
        self, parsed: ParsedRequest, passthrough: Passthrough | None
    ) -> tuple[PlannerTurn, dict[str, int]]:
        if self.proxy is not None:
            return await self.proxy.forward(parsed, passthrough)
        try:
            return await self.planner.complete(parsed.turn), {}
        except PlannerInputError as exc:
            raise _refused(exc) from exc

    async def stream(
        self, parsed: ParsedRequest, passthrough: Passthrough | None
    ) -> AsyncGenerator[PlannerEvent, None]:
        events = (
            self.proxy.forward_stream(parsed, passthrough)
            if self.proxy is not None
            else self.planner.stream(parsed.turn)
        )
        try:
            async for ev in events:
                yield ev
        except PlannerInputError as exc:
            raise _refused(exc) from exc


def _refused(exc: PlannerInputError) -> GatewayError:
    headers = {"retry-after": str(exc.retry_after)} if exc.retry_after is not None else {}
    return GatewayError(exc.status, exc.code, exc.message, headers=headers)


class _Attempt:
    """One try on one deployment: the bookkeeping shared by the plain and streamed paths."""

    __slots__ = ("deployment", "group", "started")

    def __init__(self, group: Group, deployment: Deployment, started: float) -> None:
        self.group = group
        self.deployment = deployment
        self.started = started


class Router(Forwarder):
    """Many upstreams behind one ``Forwarder``; see the module docstring."""

    def __init__(
        self,
        config: RouterConfig,
        targets: Mapping[str, Planner | ProxyPlanner],
        *,
        strategy: RoutingStrategy | None = None,
        rng: random.Random | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        missing = [d.id for d in config.deployments if d.id not in targets]
        if missing:
            msg = f"no target for deployment(s) {', '.join(missing)}"
            raise ValueError(msg)
        self.config = config
        self._targets = {d.id: _Target(targets[d.id]) for d in config.deployments}
        self.strategy = strategy or make_strategy(config.routing_strategy, rng)
        self.board = HealthBoard(
            config.deployments,
            allowed_fails=config.allowed_fails,
            cooldown_s=config.cooldown_s,
            clock=clock,
        )
        self._sleep = sleep
        self._journal: JournalSink | None = None
        self._on_error: Callable[[str], None] = lambda kind: None
        self._default = next(iter(config.groups))
        self.counts: dict[tuple[str, str, str], int] = {}

    # -- wiring ---------------------------------------------------------------------------
    def attach_journal(self, journal: JournalSink | None) -> None:
        """Where the ``ROUTE`` rows go (the kernel's journal; None: nowhere)."""
        self._journal = journal

    def set_error_hook(self, hook: Callable[[str], None]) -> None:
        self._on_error = hook
        for target in self._targets.values():
            if target.proxy is not None:
                target.proxy.set_error_hook(hook)

    # -- Planner protocol -----------------------------------------------------------------
    @property
    def kind(self) -> str:
        return "router"

    @property
    def model(self) -> str:
        return self._default

    @property
    def provider(self) -> WireName:
        return WireName.OPENAI_CHAT  # no byte passthrough: each deployment renders its own wire

    async def complete(self, request: TurnRequest) -> PlannerTurn:
        turn, _ = await self.forward(ParsedRequest(request))
        return turn

    def stream(self, request: TurnRequest) -> AsyncIterator[PlannerEvent]:
        return self.forward_stream(ParsedRequest(request))

    async def aclose(self) -> None:
        closed: set[int] = set()
        for target in self._targets.values():
            if id(target.planner) not in closed:
                closed.add(id(target.planner))
                await target.planner.aclose()

    def stats(self) -> Mapping[str, Any] | None:
        return None  # the routing numbers have their own collector (labels per deployment)

    def collector(self) -> Collector:
        return _RouteCollector(self)

    # -- choosing -------------------------------------------------------------------------
    def _group(self, model: str) -> Group:
        name = model or self._default
        group = self.config.groups.get(name)
        if group is None:
            raise GatewayError(
                404,
                "model_not_found",
                f"no upstream serves model {name[:200]!r}; this gateway routes "
                f"{', '.join(sorted(self.config.groups))}",
                param="model",
            )
        return group

    def _chain(self, group: Group) -> Iterator[Group]:
        yield group
        for name in group.fallbacks:
            yield self.config.groups[name]

    def _eligible(self, group: Group, tried: set[str]) -> list[Candidate]:
        board = self.board
        return [
            Candidate(d, board.snapshot(d.id))
            for d in group.deployments
            if d.id not in tried and not board.cooling(d.id) and not board.over_limit(d)
        ]

    def _attempts(
        self, features: RouteFeatures, first: Group
    ) -> Iterator[tuple[Group, Deployment]]:
        tried: set[str] = set()
        for group in self._chain(first):
            while True:
                candidates = self._eligible(group, tried)
                if not candidates:
                    break
                choice = self.strategy.choose(features, candidates).deployment
                tried.add(choice.id)
                yield group, choice

    def _exhausted(self, group: Group, last: GatewayError | None) -> GatewayError:
        if last is not None:
            return last
        waits = [
            self.board.cooldown_until(d.id) - self.board.clock()
            for g in self._chain(group)
            for d in g.deployments
        ]
        wait = max(1, int(min((w for w in waits if w > 0), default=1.0) + 0.999))
        return GatewayError(
            503,
            "upstream_unavailable",
            f"every deployment of model {group.name!r} (and its fallbacks) is cooling down or "
            "at its rate limit; retry later",
            headers={"retry-after": str(wait)},
        )

    def _sent(self, parsed: ParsedRequest, d: Deployment) -> ParsedRequest:
        """The request as deployment ``d`` gets it: the group's name replaced by its model."""
        if parsed.turn.model == d.model:
            return parsed
        return ParsedRequest(replace(parsed.turn, model=d.model), parsed.options)

    async def _backoff(self, attempt: int) -> None:
        base = self.config.retry_after_s
        if base > 0 and attempt > 0:
            await self._sleep(min(_MAX_BACKOFF_S, base * (2 ** (attempt - 1))))

    # -- recording ------------------------------------------------------------------------
    def _record(
        self, a: _Attempt, outcome: str, reason: str, trace_id: str, features: RouteFeatures
    ) -> None:
        key = (a.group.name, a.deployment.id, outcome)
        self.counts[key] = self.counts.get(key, 0) + 1
        if self._journal is not None:
            try:
                self._journal.append(
                    journal_record(
                        JournalKind.ROUTE,
                        tool=a.group.name,
                        trace_id=trace_id,
                        verdict=outcome,
                        reason=reason,
                        by=a.deployment.id,
                    )
                )
            except Exception as exc:  # a journal that fails must not take the turn down here
                _log.warning("route journal append failed: %s", type(exc).__name__)

    def _ok(
        self, a: _Attempt, features: RouteFeatures, trace_id: str, usage: PlannerTurn | None
    ) -> None:
        tokens = 0 if usage is None else usage.usage.prompt_tokens + usage.usage.completion_tokens
        latency = self.board.end(a.deployment.id, a.started, ok=True, tokens=tokens)
        self.strategy.observe(features, a.deployment, True, latency)
        self._record(a, "OK", self.strategy.name, trace_id, features)

    def _failed(
        self,
        a: _Attempt,
        exc: GatewayError,
        features: RouteFeatures,
        trace_id: str,
        *,
        final: bool = False,
    ) -> bool:
        """Book a failed attempt; True when another deployment may be tried (never when
        ``final``: a stream that already yielded). A retryable failure counts towards the
        deployment's cooldown either way."""
        latency = self.board.end(a.deployment.id, a.started, ok=False)
        self.strategy.observe(features, a.deployment, False, latency)
        health = retryable(exc)
        again = health and not final
        if health:
            wait = parse_retry_after(exc.headers.get("retry-after"))
            if self.board.fail(a.deployment.id, wait):
                _log.info("route: %s cooling down (%s)", a.deployment.id, _why(exc))
        self._record(a, "RETRY" if again else "FAIL", _why(exc), trace_id, features)
        return again

    async def _tries(self, features: RouteFeatures, first: Group) -> AsyncGenerator[_Attempt, None]:
        """The attempts of one turn, at most ``1 + num_retries``, each after its backoff and
        counted in flight from the moment it is handed out."""
        budget = 1 + self.config.num_retries
        for n, (group, d) in enumerate(self._attempts(features, first)):
            if n >= budget:
                return
            await self._backoff(n)
            yield _Attempt(group, d, self.board.begin(d.id))

    # -- Forwarder ------------------------------------------------------------------------
    async def forward(
        self, parsed: ParsedRequest, passthrough: Passthrough | None = None, *, trace_id: str = ""
    ) -> tuple[PlannerTurn, dict[str, int]]:
        features = RouteFeatures.of(parsed.turn, parsed.turn.model or self._default)
        first = self._group(features.model)
        last: GatewayError | None = None
        async with contextlib.aclosing(self._tries(features, first)) as tries:
            async for a in tries:
                d = a.deployment
                try:
                    turn, extra = await self._targets[d.id].forward(self._sent(parsed, d), None)
                except GatewayError as exc:
                    if not self._failed(a, exc, features, trace_id):
                        raise
                    last = exc
                    continue
                except BaseException:
                    self.board.end(d.id, a.started, ok=False)
                    raise
                self._ok(a, features, trace_id, turn)
                return turn, extra
        raise self._exhausted(first, last)

    async def forward_stream(
        self, parsed: ParsedRequest, passthrough: Passthrough | None = None, *, trace_id: str = ""
    ) -> AsyncIterator[PlannerEvent]:
        features = RouteFeatures.of(parsed.turn, parsed.turn.model or self._default)
        first = self._group(features.model)
        last: GatewayError | None = None
        async with contextlib.aclosing(self._tries(features, first)) as tries:
            async for a in tries:
                d = a.deployment
                events = self._targets[d.id].stream(self._sent(parsed, d), None)
                sent = False
                settled = False
                try:
                    async for ev in events:
                        if isinstance(ev, TurnDone):
                            settled = True
                            self._ok(a, features, trace_id, ev.turn)
                            yield ev
                            return
                        sent = True
                        yield ev
                except GatewayError as exc:
                    settled = True
                    if not self._failed(a, exc, features, trace_id, final=sent):
                        raise  # not retryable, or bytes already left: no replay
                    last = exc
                    continue
                finally:
                    if not settled:  # the consumer went away, or a non-gateway error
                        self.board.end(d.id, a.started, ok=False)
                    await events.aclose()
                raise GatewayError(
                    502, "upstream_bad_response", "the upstream ended without a turn"
                )
        raise self._exhausted(first, last)

    async def forward_raw(
        self, method: str, path: str, body: bytes | None, headers: Mapping[str, str] | None = None
    ) -> UpstreamReply:
        """``GET /models`` lists the groups; a POST goes to the first OpenAI-wire deployment of
        the group its body's ``model`` names (embeddings, moderations)."""
        if method == "GET" and path == "/models":
            data = [
                {"id": name, "object": "model", "created": 0, "owned_by": "fak-router"}
                for name in self.config.groups
            ]
            return UpstreamReply(
                200, orjson.dumps({"object": "list", "data": data}), "application/json"
            )
        model = ""
        if body:
            try:
                decoded = orjson.loads(body)
            except orjson.JSONDecodeError:
                decoded = None
            if isinstance(decoded, dict) and isinstance(decoded.get("model"), str):
                model = decoded["model"]
        group = self._group(model)
        for d in group.deployments:
            target = self._targets[d.id]
            if target.proxy is not None and _WIRE.get(d.kind) is WireName.OPENAI_CHAT:
                return await target.proxy.forward_raw(method, path, body, headers)
        raise GatewayError(
            404, "no_upstream", f"model {group.name!r} has no OpenAI-compatible deployment"
        )


class _RouteCollector:
    """The ``fak_route_*`` families, read from the router at scrape time."""

    def __init__(self, router: Router) -> None:
        self._router = router

    def describe(self) -> list[Any]:
        return []

    def collect(self) -> Iterator[Any]:
        r = self._router
        attempts = CounterMetricFamily(
            "fak_route_attempts",
            "routing attempts by group, deployment and outcome (OK, RETRY, FAIL)",
            labels=["group", "deployment", "outcome"],
        )
        for (group, dep, outcome), n in sorted(r.counts.items()):
            attempts.add_metric([group, dep, outcome], n)
        yield attempts
        in_flight = GaugeMetricFamily(
            "fak_route_in_flight", "requests in flight per deployment", labels=["deployment"]
        )
        latency = GaugeMetricFamily(
            "fak_route_latency_ewma_seconds",
            "latency EWMA of successful attempts per deployment",
            labels=["deployment"],
        )
        cooling = GaugeMetricFamily(
            "fak_route_cooling_down", "1 while a deployment is in cooldown", labels=["deployment"]
        )
        for d in r.config.deployments:
            s = r.board.snapshot(d.id)
            in_flight.add_metric([d.id], s.in_flight)
            if s.latency_ewma_s is not None:
                latency.add_metric([d.id], s.latency_ewma_s)
            cooling.add_metric([d.id], 1.0 if r.board.cooling(d.id) else 0.0)
        yield in_flight
        yield latency
        yield cooling


def build_router(
    config: RouterConfig,
    client: Callable[[float], UpstreamClient],
    *,
    engine: Callable[[], Planner] | None = None,
    rng: random.Random | None = None,
    strategy: RoutingStrategy | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> Router:
    """A ``Router`` whose HTTP deployments each get a ``ProxyPlanner`` over a client from
    ``client(timeout_s)`` (one client per distinct timeout, shared), and whose ``fak/engine``
    deployments share the one planner ``engine()`` builds (``ValueError`` without it)."""
    clients: dict[float, UpstreamClient] = {}
    engine_planner: Planner | None = None
    targets: dict[str, Planner | ProxyPlanner] = {}
    for d in config.deployments:
        if d.kind is UpstreamKind.ENGINE:
            if engine is None:
                msg = f"deployment {d.id} is fak/engine but no in-kernel engine is available"
                raise ValueError(msg)
            engine_planner = engine_planner or engine()
            targets[d.id] = engine_planner
            continue
        timeout = d.timeout_s or config.timeout_s
        if timeout not in clients:
            clients[timeout] = client(timeout)
        targets[d.id] = ProxyPlanner(
            clients[timeout],
            base_url=d.api_base,
            provider=_WIRE[d.kind],
            api_key=d.api_key,
            model=d.model,
        )
    return Router(config, targets, rng=rng, strategy=strategy, clock=clock, sleep=sleep)
