"""OpenAI Responses API ⇄ canonical turn IR (tier T1, pure, no I/O), by direction.

``server``: we are the server (``parse_request``, ``render_response``, ``ResponseEvents``).
``client``: we are a Responses upstream's client (``render_request``, ``parse_response``,
``ResponsesStreamAccumulator``). Both are re-exported here.
"""

from fak.wire.openai_responses.client import (
    ResponsesStreamAccumulator,
    parse_response,
    render_request,
)
from fak.wire.openai_responses.server import ResponseEvents, parse_request, render_response

__all__ = [
    "ResponseEvents",
    "ResponsesStreamAccumulator",
    "parse_request",
    "parse_response",
    "render_request",
    "render_response",
]
