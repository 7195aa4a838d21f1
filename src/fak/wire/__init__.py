"""Pure translation between client wires and the canonical turn IR (tier T1, no I/O).

One package per wire: ``openai_chat`` (Chat Completions), ``openai_responses`` (Responses API),
``anthropic`` (Messages), each by direction: ``server`` (we are the server: parse the request,
render the response, its events and errors) and ``client`` (we are an upstream's client: render
the request, parse the response, accumulate the stream). Shared pieces: ``extension`` (the
``fak`` object, deny summary, ``[fak]`` note), ``outcome`` (what parsers return and renderers
take), ``sse`` (event framing), ``errors`` (``WireError``), ``fields`` and ``strictjson``
(strict field and JSON reading), ``names`` (``WireName``, the closed set of wires) and
``dialect`` (one ``Dialect`` per wire: how the proxy speaks it to an upstream). Nothing here
opens a socket, reads a file or logs a payload.
"""

from fak.wire import anthropic, openai_chat, openai_responses
from fak.wire.dialect import Dialect, dialect_for
from fak.wire.errors import WireError
from fak.wire.extension import (
    ADMIT_ERROR,
    Adjudication,
    FakExtension,
    ResultAdmission,
    WireVerdict,
    anthropic_note,
    deny_summary,
    refusal_note,
)
from fak.wire.names import WireName
from fak.wire.outcome import ParsedRequest, TurnOutcome, split_after_spaces
from fak.wire.sse import SSEDecoder, SSEEvent, encode_event

__all__ = [
    "ADMIT_ERROR",
    "Adjudication",
    "Dialect",
    "FakExtension",
    "ParsedRequest",
    "ResultAdmission",
    "SSEDecoder",
    "SSEEvent",
    "TurnOutcome",
    "WireError",
    "WireName",
    "WireVerdict",
    "anthropic",
    "anthropic_note",
    "deny_summary",
    "dialect_for",
    "encode_event",
    "openai_chat",
    "openai_responses",
    "refusal_note",
    "split_after_spaces",
]
