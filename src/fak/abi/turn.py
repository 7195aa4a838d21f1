"""The canonical turn IR every wire translates to and from (tier T0, stdlib only).

A ``TurnRequest`` is one model call: the conversation so far, the tools on offer and sampling
settings. A ``PlannerTurn`` is what a planner (mock, upstream proxy, in-kernel engine) proposed:
text plus tool calls, before the kernel adjudicates them. Wires (OpenAI Chat, OpenAI Responses,
Anthropic Messages) translate to this shape in ``fak.wire``; nothing here does I/O.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

__all__ = [
    "FinishReason",
    "Message",
    "Part",
    "PlannerTurn",
    "ProposedCall",
    "Role",
    "ToolSpec",
    "TurnRequest",
    "Usage",
]

_EMPTY: Mapping[str, Any] = MappingProxyType({})


class Role(enum.StrEnum):
    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class FinishReason(enum.StrEnum):
    STOP = "stop"
    LENGTH = "length"
    TOOL_CALLS = "tool_calls"


@dataclass(frozen=True, slots=True)
class ProposedCall:
    """A tool call a model proposed. ``arguments`` is the raw JSON text it emitted."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class Part:
    """A non-text part of a user's own message (an image, a file, audio), kept as the client's
    wire wrote it: ``wire`` names that wire (a ``WireName`` value), ``raw`` is the part object,
    ``at`` where it sat in the request (what a refusal names when it cannot cross a wire)."""

    wire: str
    raw: Mapping[str, Any]
    at: str


@dataclass(frozen=True, slots=True)
class Message:
    """One conversation message.

    For ``role == TOOL`` the message is a tool result: ``tool_call_id`` names the call it answers,
    ``name`` the tool, and ``content`` the (already admitted) result text.

    ``parts`` is set only on a user message that carried media: its content in order, each a
    text (``str``) or a ``Part``; ``content`` is then the text parts joined, what screens read.
    """

    role: Role
    content: str = ""
    tool_calls: tuple[ProposedCall, ...] = ()
    tool_call_id: str = ""
    name: str = ""
    parts: tuple[str | Part, ...] = ()


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool on offer. ``strict`` is the client's strict-schema flag (None when it sent none)."""

    name: str
    description: str = ""
    parameters: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)
    strict: bool | None = None


@dataclass(frozen=True, slots=True)
class TurnRequest:
    model: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    max_tokens: int | None = None
    temperature: float | None = None
    stream: bool = False
    session: str = ""


@dataclass(frozen=True, slots=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass(frozen=True, slots=True)
class PlannerTurn:
    """What the planner proposed, before adjudication."""

    text: str
    tool_calls: tuple[ProposedCall, ...] = ()
    finish_reason: FinishReason = FinishReason.STOP
    usage: Usage = field(default_factory=Usage)
    model: str = ""
