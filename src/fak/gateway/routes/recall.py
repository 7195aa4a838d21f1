"""The coherence routes under /v1/fak/ (tier T3): context changes, the change feed, trace reset.

``POST /v1/fak/context/change`` tombstones a page of a recorded session (``--recall-dir``; 404
``recall_not_configured`` without one): negative-only, idempotent (``applied`` false the second
time), persisted and journaled. Bad input is a 400/404 with the recall error code (``step`` that
does not exist, a digest guard that does not match, a missing reason) and changes nothing.
``GET /v1/fak/changes?since=N`` (or POST ``{since}``) answers ``{events, cursor, truncated}``
(the fleet's feed when the workers share a Redis; 503 ``change_feed_unavailable`` while it is
down);
``POST /v1/fak/trace/reset`` forgets a trace's open recording and publishes the reset.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from fak.gateway.errors import GatewayError
from fak.gateway.http import json_response
from fak.gateway.routes.inputs import gateway, read_object
from fak.recall import CoherencePlane, RecallError, RecallErrorCode

__all__ = ["ROUTES", "change_request", "changes", "context_change", "trace_reset"]

_NOT_FOUND = frozenset({RecallErrorCode.IMAGE_MISSING, RecallErrorCode.STEP_UNKNOWN})
_CHANGE_KEYS = frozenset(
    {"session_id", "trace_id", "action", "step", "digest", "reason", "requested_by", "witness"}
)


def _text(body: Mapping[str, Any], key: str, default: str = "") -> str:
    value = body.get(key, default)
    if value is None:
        return default
    if not isinstance(value, str):
        raise RecallError(RecallErrorCode.BAD_REQUEST, f"{key} must be a string")
    return value


def change_request(plane: CoherencePlane, body: Mapping[str, Any]) -> dict[str, Any]:
    """Apply one context change (shared by the route and the MCP tool); ``RecallError`` on bad
    input, ``LookupError`` when no recall directory is configured."""
    unknown = sorted(set(body) - _CHANGE_KEYS)
    if unknown:
        msg = f"unknown field {unknown[0][:40]!r}; allowed: {', '.join(sorted(_CHANGE_KEYS))}"
        raise RecallError(RecallErrorCode.BAD_REQUEST, msg)
    session = _text(body, "session_id") or _text(body, "trace_id")
    if not session:
        raise RecallError(RecallErrorCode.BAD_REQUEST, "session_id is required")
    step = body.get("step")
    if isinstance(step, bool) or not isinstance(step, int):
        raise RecallError(RecallErrorCode.BAD_REQUEST, "step is required: an integer page step")
    change, applied = plane.tombstone(
        session,
        step,
        _text(body, "reason"),
        digest=_text(body, "digest"),
        requested_by=_text(body, "requested_by", "agent") or "agent",
        witness=_text(body, "witness"),
        action=_text(body, "action", "tombstone_page"),
    )
    return {"applied": applied, "session_id": session, "change": change.model_dump(mode="json")}


_CURSOR_MAX = 2**63 - 1


def _since(value: object, param: str = "since") -> tuple[int, int]:
    """A cursor (or limit) as the events route takes it: an integer in [0, 2**63 - 1]."""
    try:
        cursor = int(str(value))
    except ValueError as exc:
        raise GatewayError(
            400, "invalid_cursor", f"{param} must be an integer", param=param
        ) from exc
    if not 0 <= cursor <= _CURSOR_MAX:
        raise GatewayError(
            400, "invalid_cursor", f"{param} must be between 0 and {_CURSOR_MAX}", param=param
        )
    return cursor, 256


def _plane(request: Request) -> CoherencePlane:
    plane: CoherencePlane = gateway(request).plane
    return plane


async def context_change(request: Request) -> Response:
    body = await read_object(gateway(request), request)
    try:
        # fsyncs the image and the journal: off the event loop
        out = await asyncio.to_thread(change_request, _plane(request), body)
    except LookupError as exc:
        raise GatewayError(
            404,
            "recall_not_configured",
            "this gateway records no sessions: start it with --recall-dir DIR",
        ) from exc
    except RecallError as err:
        status = 404 if err.code in _NOT_FOUND else 400
        raise GatewayError(status, str(err.code), err.message) from err
    return json_response(out)


async def changes(request: Request) -> Response:
    if request.method == "POST":
        body = await read_object(gateway(request), request)
        since, limit = _since(body.get("since", 0))
    else:
        since, limit = _since(request.query_params.get("since", "0"))
        if "limit" in request.query_params:
            limit = _since(request.query_params["limit"], "limit")[0]
    feed, limit = _plane(request).feed, min(max(limit, 1), 1024)
    try:  # a shared feed is a Redis round trip: off the event loop
        page = (
            await asyncio.to_thread(feed.since, since, limit)
            if feed.shared
            else feed.since(since, limit)
        )
    except ConnectionError as exc:
        raise GatewayError(
            503,
            "change_feed_unavailable",
            "the shared change feed cannot be reached; poll again shortly",
            headers={"Retry-After": "1"},
        ) from exc
    return json_response(
        {"events": page.events, "cursor": page.cursor, "truncated": page.truncated}
    )


async def trace_reset(request: Request) -> Response:
    body = await read_object(gateway(request), request)
    trace_id = body.get("trace_id")
    if not isinstance(trace_id, str) or not trace_id:
        raise GatewayError(400, "missing_trace_id", "trace_id is required", param="trace_id")
    _plane(request).trace_reset(trace_id[:256])
    return json_response({"reset": True, "trace_id": trace_id[:256]})


ROUTES: list[Route] = [
    Route("/v1/fak/context/change", context_change, methods=["POST"]),
    Route("/v1/fak/changes", changes, methods=["GET", "POST"]),
    Route("/v1/fak/trace/reset", trace_reset, methods=["POST"]),
]
