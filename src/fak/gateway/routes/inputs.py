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


async def read_object(
    state: GatewayState, request: Request, fields: frozenset[str] | None = None
) -> Mapping[str, Any]:
    """The JSON object a fak route was sent. With ``fields``, a key the route does not read is
    refused by name (``unknown_field``): a typo'd key (``args`` for ``arguments``) would
    otherwise be judged as absent, and the verdict would be about a call nobody made."""
    body, _ = await read_body(state, request)
    if not isinstance(body, Mapping):
        raise GatewayError(400, "invalid_request", "request body must be a JSON object")
    if fields is not None:
        unknown = sorted(str(key) for key in body if key not in fields)
        if unknown:
            raise GatewayError(
                400,
                "unknown_field",
                f"unknown field {unknown[0]!r} in {request.url.path}; its fields are "
                + ", ".join(sorted(fields)),
                param=unknown[0],
            )
    return body
