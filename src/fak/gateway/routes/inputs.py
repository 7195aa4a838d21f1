"""What every route reads from its request (tier T3): the gateway's shared state, the JSON body
and the request context.

``build_app`` puts one ``GatewayState`` on ``app.state.gateway``; endpoints are module-level
functions that find it here, so no route closes over a factory's locals. Bodies are read under
the gateway's size cap and read timeout (400/413/415 from ``read_json``); ``read_object`` adds
the one check the fak-native routes share: the body is a JSON object.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from starlette.requests import Request

from fak.gateway.boundary import RequestContext
from fak.gateway.errors import GatewayError
from fak.gateway.http import read_json
from fak.gateway.state import GatewayState

__all__ = ["context", "gateway", "read_body", "read_object"]


def gateway(request: Request) -> GatewayState:
    """The state the app serving this request was built with."""
    state: GatewayState = request.app.state.gateway
    return state


def context(request: Request, *, pageout: bool | None = None) -> RequestContext:
    """The request's trace id, principal, session, and whether its client can page a pointer
    back in: ``x-fak-pageout: on|off`` when sent, else ``pageout`` (the route's own answer: the
    fak-native routes can), else the gateway's ``--pageout`` setting."""
    asked = request.headers.get("x-fak-pageout", "").strip().lower()
    if asked in ("on", "off"):
        pageout = asked == "on"
    elif pageout is None:
        pageout = gateway(request).options.pageout
    return RequestContext(
        trace_id=request.scope.get("fak.trace_id", ""),
        principal=request.headers.get("x-fak-principal", ""),
        session=request.headers.get("x-fak-session", "")[:256],
        pageout=pageout,
    )


async def read_body(state: GatewayState, request: Request) -> tuple[Any, bytes]:
    """The parsed JSON body and its raw bytes, under the gateway's body cap and read timeout."""
    o = state.options
    return await read_json(request, o.body_cap, o.read_timeout_s)


async def read_object(state: GatewayState, request: Request) -> Mapping[str, Any]:
    body, _ = await read_body(state, request)
    if not isinstance(body, Mapping):
        raise GatewayError(400, "invalid_request", "request body must be a JSON object")
    return body
