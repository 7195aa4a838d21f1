"""Assembles the gateway ASGI app (tier T3): routes, middleware, error rendering, lifespan.

``build_app(kernel, planner, options)`` returns a Starlette app serving every wire on one port
through one ``Boundary``. Errors are rendered once here: ``GatewayError`` with its status and
code (Anthropic-shaped under /v1/messages), unknown paths 404 and wrong methods 405 as JSON, and
any other exception as a 500 with no traceback. The app owns the planner and closes it on
shutdown. A planner with a ``stats()`` method (the in-kernel engine) gets its numbers exported
on /metrics, /debug/vars and /healthz, found by duck typing (the gateway never imports it).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from fak.abi import Planner
from fak.gateway.accesslog import AccessLog
from fak.gateway.boundary import Boundary, KernelPort
from fak.gateway.errors import GatewayError, error_body
from fak.gateway.http import GatewayMiddleware, KeyCheck, TraceIds
from fak.gateway.metrics import Metrics
from fak.gateway.origin import Cors, HostCheck
from fak.gateway.routes import native, ops, recall, turns
from fak.gateway.state import GatewayOptions, GatewayState
from fak.gateway.turns import TurnRunner
from fak.kernel import QuarantineLedger
from fak.recall import CoherencePlane, SessionDirectory
from fak.screen import ResultAdmitter

__all__ = ["build_app"]

_log = logging.getLogger(__name__)


def _is_anthropic(request: Request) -> bool:
    return request.url.path.startswith(("/v1/messages", "/v1/v1/messages"))


async def _gateway_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, GatewayError)
    return Response(
        exc.body(anthropic=_is_anthropic(request)),
        status_code=exc.status,
        media_type="application/json",
        headers=exc.headers,
    )


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 405:
        code, msg = "method_not_allowed", f"{request.method} is not allowed on {request.url.path}"
    elif exc.status_code == 404 and request.url.path.startswith("/v1/v1/"):
        code, msg = (
            "not_found",
            f"no route {request.url.path}: the base URL has /v1 twice. Anthropic clients "
            "(Claude Code, the Anthropic SDKs) use the origin as base URL, without /v1; "
            "OpenAI clients use origin + /v1",
        )
    elif exc.status_code == 404:
        code, msg = "not_found", f"no route {request.url.path}"
    else:
        code, msg = "http_error", str(exc.detail)
    return Response(
        error_body(exc.status_code, code, msg, anthropic=_is_anthropic(request)),
        status_code=exc.status_code,
        media_type="application/json",
        headers=exc.headers,
    )


async def _route_error(request: Request, exc: Exception) -> Response:
    """What the exception handlers below would answer, for the direct-dispatch fast path."""
    if isinstance(exc, GatewayError):
        return await _gateway_error(request, exc)
    if isinstance(exc, HTTPException):
        return await _http_error(request, exc)
    return await _internal_error(request, exc)


async def _internal_error(request: Request, exc: Exception) -> Response:
    _log.error("internal error on %s: %s", request.url.path[:200], type(exc).__name__)
    return Response(
        error_body(
            500, "internal_error", "internal gateway error", anthropic=_is_anthropic(request)
        ),
        status_code=500,
        media_type="application/json",
    )


def _sdk_host_patterns(hosts: tuple[str, ...] | None) -> tuple[str, ...] | None:
    """The MCP SDK's own rebinding check, told the same names (``()`` turns it off)."""
    if hosts is None:
        return None
    if "*" in hosts:
        return ()
    names = [*HostCheck(hosts).names, "127.0.0.1", "localhost", "[::1]"]
    return tuple(p for n in names for p in (n, f"{n}:*"))


def _live_chain(ledger: QuarantineLedger) -> Callable[[], tuple[ResultAdmitter, ...]]:
    return lambda: ledger.admitters


def build_app(
    kernel: KernelPort, planner: Planner, options: GatewayOptions | None = None
) -> Starlette:
    o = options or GatewayOptions()
    ledger = kernel.ledger

    def pollution_rate() -> float | None:
        return float(ledger.pollution_rate)

    sessions = None
    if o.recall_dir:
        sessions = SessionDirectory(
            o.recall_dir,
            admitters=_live_chain(ledger),  # re-screens use the kernel's current chain
            journal=kernel.journal,
        )
    plane = CoherencePlane(kernel, sessions=sessions, clock=o.clock, log=o.change_log)
    metrics = Metrics(
        counters=lambda: kernel.counters,
        pollution_rate=pollution_rate,
        planner=planner.kind,
        model=planner.model,
        planner_stats=planner.stats,
        clock=o.clock,
        vdso=plane.vdso_counts,
    )
    log = AccessLog(o.access_log, clock=o.clock)
    boundary = Boundary(kernel, metrics, log)
    if sessions is not None:
        boundary.recorder = plane.record
    runner = TurnRunner(boundary, planner, metrics, clock=o.clock, max_tool_calls=o.max_tool_calls)
    if o.ids:
        runner.ids = o.ids
    state = GatewayState(kernel, runner, boundary, metrics, log, o, plane)

    planner.set_error_hook(metrics.upstream_error)
    if runner.proxy is not None:
        runner.proxy.attach_journal(kernel.journal)  # the router's ROUTE rows
        routing = runner.proxy.collector()  # the router's fak_route_* families
        if routing is not None:
            metrics.registry.register(routing)

    stores = ops.StoreWatch(kernel, metrics.registry)  # registered before the MCP collectors
    routes: list[Route] = [*turns.ROUTES, *native.ROUTES, *ops.ROUTES, *recall.ROUTES]
    open_paths: tuple[str, ...] = ("/healthz",)
    if o.console:  # the page's files carry no data: served without a key, like /healthz
        from fak.gateway import console

        routes += console.ROUTES
        open_paths += console.ASSET_PATHS
    mcp_endpoint = None
    if o.mcp:
        from fak.gateway.mcp.server import McpHttpEndpoint

        proxy = o.mcp_proxy
        mcp_endpoint = McpHttpEndpoint(
            kernel,
            allowed_hosts=_sdk_host_patterns(o.allowed_hosts),
            body_cap=o.body_cap,
            server=proxy.server if proxy is not None else None,
            plane=plane,
            witness_key=o.witness_key,
        )
        if proxy is not None:
            from fak.gateway.mcp.metrics import ProxyCollector

            metrics.registry.register(ProxyCollector(proxy))
        routes.append(Route("/mcp", endpoint=mcp_endpoint))  # it answers 405 to all but POST

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            if mcp_endpoint is not None:
                if o.mcp_proxy is not None:  # its downstream servers live as long as the app
                    await stack.enter_async_context(o.mcp_proxy.running())
                await stack.enter_async_context(mcp_endpoint.lifespan())
            try:
                yield
            finally:
                runner.close()
                await planner.aclose()

    app = Starlette(
        routes=routes,
        exception_handlers={
            GatewayError: _gateway_error,
            HTTPException: _http_error,
            Exception: _internal_error,
        },
        lifespan=lifespan,
    )
    app.state.gateway = state  # the endpoints read what they serve from here
    app.state.stores = stores
    if o.console:
        from fak.gateway.console import Findings

        app.state.console_findings = Findings()  # the console's per-hold findings, memoized
    app.add_middleware(
        GatewayMiddleware,
        metrics=metrics,
        log=log,
        trace_ids=TraceIds(),
        routes=[r.path for r in routes],
        key=KeyCheck(o.require_key) if o.require_key is not None else None,
        open_paths=open_paths,
        hosts=HostCheck(o.allowed_hosts),
        cors=Cors(o.cors_origins),
        # the model-turn routes are dispatched directly (same handlers, same error answers):
        # the hot path skips the router's scan and two exception-handling layers
        direct={r.path: r.endpoint for r in turns.ROUTES},
        on_error=_route_error,
    )
    return app
