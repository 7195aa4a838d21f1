"""Operational and pass-through routes (tier T3): health, metrics, debug vars, models,
embeddings, moderations.

``/healthz`` is the one route auth never gates (it adds ``exact`` when the planner's stats
report it). With shared stores (a kernel whose CAS, ledger or journal can ``ping``) it reports
each store and answers 503 ``degraded`` while one is down; ``/metrics`` has ``fak_store_up``.
``/metrics`` is Prometheus text; ``/debug/vars`` the same view as one JSON object.
``/v1/models`` answers from the upstream in proxy mode and lists the planner's model otherwise.
``/v1/embeddings`` and ``/v1/moderations`` forward the client's bytes to an OpenAI-compatible
upstream; without one they answer 404 ``no_upstream``.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable

import anyio.to_thread
from prometheus_client import Gauge
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from fak.abi import Reachable
from fak.gateway.errors import GatewayError
from fak.gateway.http import json_response, read_json
from fak.gateway.metrics import CONTENT_TYPE
from fak.gateway.state import GatewayState
from fak.kernel import Kernel

__all__ = ["ops_routes", "store_probes"]


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


def ops_routes(state: GatewayState) -> list[Route]:
    runner, metrics, o = state.runner, state.metrics, state.options
    planner = runner.planner
    probes = store_probes(state.kernel)
    store_up = (
        Gauge(
            "fak_store_up", "1 when the shared store answers", ["store"], registry=metrics.registry
        )
        if probes
        else None
    )

    async def stores() -> dict[str, bool]:
        def probe() -> dict[str, bool]:
            up = {name: bool(ping()) for name, ping in probes.items()}
            if store_up is not None:
                for name, ok in up.items():
                    store_up.labels(name).set(1 if ok else 0)
            return up

        return await anyio.to_thread.run_sync(probe)

    async def healthz(request: Request) -> Response:
        body: dict[str, object] = {"ok": True, "planner": planner.kind, "model": planner.model}
        stats = metrics.planner_stats()
        if stats is not None and "exact" in stats:
            body["exact"] = bool(stats["exact"])  # the engine's batch-invariant mode held
            if "fast_mode" in stats:  # which numerics: float32 (exact) or 4-bit weights (fast)
                body["engine_mode"] = "fast" if stats["fast_mode"] else "exact"
        if probes:
            up = await stores()
            body["stores"] = up
            body["worker"] = os.getpid()
            down = sorted(name for name, ok in up.items() if not ok)
            if down:  # decisions that need these stores are being refused (fail closed)
                body.update(ok=False, degraded=down)
                return json_response(body, status=503)
        return json_response(body)

    async def prometheus(request: Request) -> Response:
        if probes:
            await stores()
        return Response(metrics.exposition(), media_type=CONTENT_TYPE)

    async def debug_vars(request: Request) -> Response:
        return json_response(metrics.snapshot(auth_required=o.require_key is not None))

    def proxy_or_404(what: str) -> None:
        proxy = runner.proxy
        if proxy is None or proxy.provider != "openai":
            raise GatewayError(
                404,
                "no_upstream",
                f"{what} is forwarded to an OpenAI-compatible upstream; start fak serve with "
                "--base-url and --provider openai",
            )

    async def models(request: Request) -> Response:
        proxy = runner.proxy
        if proxy is not None and proxy.provider == "openai":
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

    def forwarder(path: str, what: str) -> Callable[[Request], Awaitable[Response]]:
        async def forward(request: Request) -> Response:
            proxy_or_404(what)
            _, body = await read_json(request, o.body_cap, o.read_timeout_s)  # strict: 400/415
            assert runner.proxy is not None
            reply = await runner.proxy.forward_raw("POST", path, body)
            return Response(reply.body, media_type="application/json")

        return forward

    return [
        Route("/healthz", healthz, methods=["GET", "HEAD"]),
        Route("/metrics", prometheus, methods=["GET"]),
        Route("/debug/vars", debug_vars, methods=["GET"]),
        Route("/v1/models", models, methods=["GET"]),
        Route("/v1/embeddings", forwarder("/embeddings", "/v1/embeddings"), methods=["POST"]),
        Route("/v1/moderations", forwarder("/moderations", "/v1/moderations"), methods=["POST"]),
    ]
