"""OpenAI Chat Completions ⇄ canonical turn IR (tier T1, pure, no I/O), by direction.

``server``: we are the server (``parse_request``, ``render_response``, ``ChatChunks``).
``client``: we are an upstream's client (``render_request``, ``parse_response``,
``ChatStreamAccumulator``). Both are re-exported here, so ``openai_chat.parse_request`` reads
as the wire's name plus the step.
"""

from fak.wire.openai_chat.client import ChatStreamAccumulator, parse_response, render_request
from fak.wire.openai_chat.server import ChatChunks, parse_request, render_response

__all__ = [
    "ChatChunks",
    "ChatStreamAccumulator",
    "parse_request",
    "parse_response",
    "render_request",
    "render_response",
]
