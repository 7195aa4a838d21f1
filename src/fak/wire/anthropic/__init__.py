"""Anthropic Messages ⇄ canonical turn IR (tier T1, pure, no I/O), by direction.

``server``: we are the server (``parse_request``, ``forwardable_as_is``, ``render_response``,
``MessageEvents``). ``client``: we are an upstream's client (``render_request``,
``parse_response``, ``usage_extra``, ``MessagesStreamAccumulator``). Both are re-exported here.
"""

from fak.wire.anthropic.client import (
    MessagesStreamAccumulator,
    parse_response,
    render_request,
    usage_extra,
)
from fak.wire.anthropic.server import (
    MessageEvents,
    forwardable_as_is,
    parse_request,
    render_response,
)

__all__ = [
    "MessageEvents",
    "MessagesStreamAccumulator",
    "forwardable_as_is",
    "parse_request",
    "parse_response",
    "render_request",
    "render_response",
    "usage_extra",
]
