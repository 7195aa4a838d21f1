"""HTTP error values of the gateway and their JSON envelopes (tier T3).

A ``GatewayError`` is raised inside a handler for a malformed request (400), auth (401), size
(413) or an upstream fault (502/4xx pass-through), and rendered once by the app as
``{"error": {"message", "type", "code", "param"}}`` (Anthropic routes wrap it the Anthropic
way). Messages are ours; a raw upstream body never becomes a message. A policy refusal is never
a ``GatewayError``: it is a 200 carrying the verdict.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

__all__ = ["GatewayError", "error_body", "error_type", "upstream_status_error"]


def error_type(status: int) -> str:
    if status in (401, 403):
        return "authentication_error"
    if status == 404:
        return "not_found_error"
    if status == 429:
        return "rate_limit_error"
    if status == 529:
        return "overloaded_error"
    if status >= 500:
        return "api_error" if status != 502 else "server_error"
    return "invalid_request_error"


class GatewayError(Exception):
    """An HTTP-level failure with a stable code; the message says what to fix."""

    def __init__(
        self,
        status: int,
        code: str | None,
        message: str,
        *,
        param: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.param = param
        self.headers = dict(headers or {})

    def body(self, *, anthropic: bool = False) -> bytes:
        return error_body(self.status, self.code, self.message, self.param, anthropic=anthropic)


def error_body(
    status: int,
    code: str | None,
    message: str,
    param: str | None = None,
    *,
    anthropic: bool = False,
) -> bytes:
    err: dict[str, Any] = {
        "message": message,
        "type": error_type(status),
        "code": code,
        "param": param,
    }
    if anthropic:
        return orjson.dumps({"type": "error", "error": err})
    return orjson.dumps({"error": err})


_UPSTREAM_4XX = {
    400: "upstream_invalid_request",
    401: "upstream_unauthorized",
    403: "upstream_forbidden",
    404: "upstream_model_not_found",
    408: "upstream_request_timeout",
    413: "upstream_payload_too_large",
    429: "upstream_rate_limited",
}


def upstream_status_error(status: int, retry_after: str | None = None) -> GatewayError:
    """Map a non-2xx upstream status to what the client sees (never the upstream's body)."""
    headers = {"retry-after": retry_after} if retry_after else {}
    if 400 <= status < 500:
        code = _UPSTREAM_4XX.get(status, "upstream_request_rejected")
        return GatewayError(
            status,
            code,
            f"the upstream model rejected the request (HTTP {status})",
            headers=headers,
        )
    if status == 529:
        return GatewayError(
            529, "upstream_overloaded", "the upstream model is overloaded", headers=headers
        )
    if status == 503 and retry_after:
        return GatewayError(
            503,
            "upstream_unavailable",
            "the upstream model is unavailable; retry later",
            headers=headers,
        )
    return GatewayError(502, "upstream_error", f"upstream model error (HTTP {status})")
