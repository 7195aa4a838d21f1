"""Operational and pass-through routes (tier T3): health, metrics, debug vars, models,
embeddings, moderations.

``/healthz`` is the one route auth never gates (it adds ``exact`` when the planner's stats
report it). With shared stores (a kernel whose CAS, ledger or journal can ``ping``) it reports
each store and answers 503 ``degraded`` while one is down; ``/metrics`` has ``fak_store_up``.
``/metrics`` is Prometheus text; ``/debug/vars`` the same view as one JSON object.
``/v1/models`` answers from the upstream in proxy mode and lists the planner's model otherwise.
``/v1/embeddings`` and ``/v1/moderations`` forward the client's bytes to an OpenAI-compatible
upstream; without one they answer 404 ``no_upstream``. The store probes and their gauge are one
``StoreWatch`` per app, on ``app.state.stores`` beside the gateway state.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import anyio.to_thread
from prometheus_client import CollectorRegistry, Gauge
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from fak.abi import Reachable
from fak.gateway.errors import GatewayError
from fak.gateway.http import json_response
from fak.gateway.metrics import CONTENT_TYPE
from fak.gateway.routes.inputs import gateway, read_body
from fak.kernel import Kernel
from fak.wire import WireName

__all__ = [
    "ROUTES",
    "StoreWatch",
    "debug_vars",
    "embeddings",
    "healthz",
    "models",
    "moderations",
    "prometheus",
    "store_probes",
]


def store_probes(kernel: Kernel) -> dict[str, Callable[[], bool]]:
    """The kernel's stores that can say whether they are reachable (the shared ones)."""
    probes: dict[str, Callable[[], bool]] = {}
    parts: tuple[tuple[str, Reachable | None], ...] = (
        ("cas", kernel.store),
        ("ledger", kernel.ledger),
        ("journal", kernel.journal),
    )
    for name, part in parts:
        if part is not None and part.shared:
            probes[name] = part.ping
    return probes


class StoreWatch:
    """The kernel's stores that can say whether they are up, and the ``fak_store_up`` gauge
    that reports them (registered once, when the app is built, only if there are any)."""

    __slots__ = ("_gauge", "probes")

    def __init__(self, kernel: Kernel, registry: CollectorRegistry) -> None:
        self.probes = store_probes(kernel)
        self._gauge = (
            Gauge("fak_store_up", "1 when the shared store answers", ["store"], registry=registry)
            if self.probes
            else None
        )

    async def check(self) -> dict[str, bool]:
        """Ping every store off the event loop; the gauge follows."""

        def probe() -> dict[str, bool]:
            up = {name: bool(ping()) for name, ping in self.probes.items()}
            if self._gauge is not None:
                for name, ok in up.items():
                    self._gauge.labels(name).set(1 if ok else 0)
            return up

        return await anyio.to_thread.run_sync(probe)


def _stores(request: Request) -> StoreWatch:
    watch: StoreWatch = request.app.state.stores
    return watch


async def healthz(request: Request) -> Response:
    state, stores = gateway(request), _stores(request)
    planner = state.runner.planner
    body: dict[str, object] = {"ok": True, "planner": planner.kind, "model": planner.model}
    stats = state.metrics.planner_stats()
    if stats is not None and "exact" in stats:
        body["exact"] = bool(stats["exact"])  # the engine's batch-invariant mode held
        if "fast_mode" in stats:  # which numerics: float32 (exact) or 4-bit weights (fast)
            body["engine_mode"] = "fast" if stats["fast_mode"] else "exact"
    if stores.probes:
        up = await stores.check()
        body["stores"] = up
        body["worker"] = os.getpid()
        down = sorted(name for name, ok in up.items() if not ok)
        if down:  # decisions that need these stores are being refused (fail closed)
            body.update(ok=False, degraded=down)
            return json_response(body, status=503)
    return json_response(body)


async def prometheus(request: Request) -> Response:
    stores = _stores(request)
    if stores.probes:
        await stores.check()
    return Response(gateway(request).metrics.exposition(), media_type=CONTENT_TYPE)


async def debug_vars(request: Request) -> Response:
    state = gateway(request)
    return json_response(
        state.metrics.snapshot(auth_required=state.options.require_key is not None)
    )


async def models(request: Request) -> Response:
    runner = gateway(request).runner
    planner = runner.planner
    proxy = runner.proxy
    if proxy is not None and proxy.provider is WireName.OPENAI_CHAT:
        reply = await proxy.forward_raw("GET", "/models", None)
        return Response(reply.body, media_type="application/json")
    owner = "fak" if planner.kind == "mock" else planner.kind
    model = planner.model or "mock"
    return json_response(
        {
            "object": "list",
            "data": [{"id": model, "object": "model", "created": 0, "owned_by": owner}],
        }
    )


async def _forward(request: Request, path: str, what: str) -> Response:
    """The client's body, checked as JSON, forwarded as-is to an OpenAI-compatible upstream."""
    state = gateway(request)
    proxy = state.runner.proxy
    if proxy is None or proxy.provider is not WireName.OPENAI_CHAT:
        raise GatewayError(
            404,
            "no_upstream",
            f"{what} is forwarded to an OpenAI-compatible upstream; start fak serve with "
            "--base-url and --provider openai",
        )
    _, body = await read_body(state, request)  # strict: 400/415
    reply = await proxy.forward_raw("POST", path, body)
    return Response(reply.body, media_type="application/json")


async def embeddings(request: Request) -> Response:
    return await _forward(request, "/embeddings", "/v1/embeddings")


async def moderations(request: Request) -> Response:
    return await _forward(request, "/moderations", "/v1/moderations")


ROUTES: list[Route] = [
    Route("/healthz", healthz, methods=["GET", "HEAD"]),
    Route("/metrics", prometheus, methods=["GET"]),
    Route("/debug/vars", debug_vars, methods=["GET"]),
    Route("/v1/models", models, methods=["GET"]),
    Route("/v1/embeddings", embeddings, methods=["POST"]),
    Route("/v1/moderations", moderations, methods=["POST"]),
]
