"""Anthropic Messages, the block pieces both directions share (tier T1, pure, no I/O).

``input_object``: a proposed call's arguments as the ``tool_use`` block's ``input`` object (in a
request rebuilt for an upstream, and in a response rendered for a client).
"""

from __future__ import annotations

from typing import Any

import orjson

from fak.abi import ProposedCall
from fak.wire.errors import WireError
from fak.wire.fields import INVALID

__all__ = ["input_object"]


def input_object(call: ProposedCall) -> Any:
    try:
        value = orjson.loads(call.arguments or "{}")
    except orjson.JSONDecodeError:
        value = None
    if not isinstance(value, dict):
        raise WireError(
            INVALID,
            f"tool call {call.id!r} has arguments that are not a JSON object; "
            "the Messages wire carries tool input as an object",
            "messages",
        )
    return value
