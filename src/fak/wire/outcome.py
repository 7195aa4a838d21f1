"""The wire-neutral turn the gateway sends back after adjudication (tier T1, pure).

A ``TurnOutcome`` is what every wire renders: the surviving tool calls (arguments already
rewritten on TRANSFORM), the text (or the in-band deny summary), the finish reason, usage and
the ``fak`` extension. ``ParsedRequest`` is what every wire parses into: the canonical
``TurnRequest`` plus neutral forwarding options (top_p, stop, tool_choice, ...).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fak.abi import FinishReason, ProposedCall, TurnRequest, Usage
from fak.wire.extension import FakExtension

__all__ = ["ParsedRequest", "TurnOutcome", "split_after_spaces"]


@dataclass(frozen=True, slots=True)
class ParsedRequest:
    """A client request in canonical form.

    ``options`` holds sampling and routing knobs under neutral names: ``top_p`` (float),
    ``stop`` (tuple of str), ``tool_choice`` (``auto|none|required`` or ``tool:<name>``),
    ``seed`` (int), ``parallel_tool_calls`` (bool), ``include_usage`` (bool). A request a
    wire parsed also carries ``wire`` (the ``WireName`` it came in on), ``extra`` (every
    top-level field that wire does not govern, exactly as the client sent it: what
    ``fak.wire.carry`` forwards, maps or refuses), and the client's own tool objects
    (``raw_tools``; ``responses_tools`` on the Responses wire). A request without ``wire`` (a
    native route's turn) renders its settings from the neutral names alone.
    """

    turn: TurnRequest
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TurnOutcome:
    id: str
    model: str
    created: int
    text: str
    tool_calls: tuple[ProposedCall, ...] = ()
    finish_reason: FinishReason = FinishReason.STOP
    usage: Usage = field(default_factory=Usage)
    extension: FakExtension | None = None
    note: str = ""
    usage_extra: Mapping[str, int] = field(default_factory=dict)
    """Wire-specific usage counters the upstream reported (e.g. ``cache_read_input_tokens``)."""
    tool_kinds: Mapping[str, str] = field(default_factory=dict)
    """How the client declared a tool, when not as a plain function (``custom``,
    ``namespace:<ns>``), so its calls render back in the client's own item type."""


def split_after_spaces(text: str) -> list[str]:
    """Split after every space, dropping empties; ``"".join(result) == text`` always."""
    out: list[str] = []
    start = 0
    while True:
        nxt = text.find(" ", start)
        if nxt < 0:
            break
        out.append(text[start : nxt + 1])
        start = nxt + 1
    if start < len(text):
        out.append(text[start:])
    return out
