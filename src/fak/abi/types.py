"""The values that cross the kernel boundary: ToolCall, ToolResult, Ref (tier T0, stdlib only).

A ToolCall is what the model proposed: a tool name and its arguments, either already decoded
(a mapping) or as the raw JSON text the wire carried (so the preflight ladder can refuse text that
is not a JSON object). A ToolResult is the bytes a tool returned. A Ref names bytes by digest.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fak.abi.context import Context

__all__ = ["INLINE_MAX", "Ref", "RefKind", "ToolCall", "ToolResult"]

INLINE_MAX = 256
"""Payloads up to this many bytes travel inline on the Ref; larger ones live in a blob store."""

_EMPTY: Mapping[str, str] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A proposed tool call.

    ``args`` is either a decoded mapping or the raw JSON text from the wire (``str``/``bytes``);
    ``None`` means "no arguments". ``caller`` identifies the agent/principal, ``trace_id`` the
    request it belongs to; ``meta`` carries bounded string hints (e.g. ``read_only``).
    ``context`` is where the run's text came from (``fak.abi.Context``), for sink rules; it
    takes no part in equality or hashing.
    """

    tool: str
    args: Mapping[str, Any] | str | bytes | None = None
    caller: str = ""
    trace_id: str = ""
    call_id: str = ""
    meta: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    context: Context | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool returned, as bytes, with the call it answers.

    ``view`` is what the model will read of ``payload`` when that differs from its bytes: for a
    JSON value, its keys and string leaves decoded (``fak.kernel.views``). The wall screens both;
    it takes no part in equality.
    """

    tool: str
    payload: bytes
    call_id: str = ""
    trace_id: str = ""
    meta: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    view: bytes | None = field(default=None, compare=False, repr=False)


class RefKind(enum.StrEnum):
    INLINE = "inline"
    BLOB = "blob"


@dataclass(frozen=True, slots=True)
class Ref:
    """Names bytes by their sha256 (lower-case hex). Small payloads ride along inline."""

    digest: str
    length: int
    kind: RefKind = RefKind.BLOB
    inline: bytes | None = None

    def __post_init__(self) -> None:
        if (self.kind == RefKind.INLINE) != (self.inline is not None):
            msg = "an inline Ref carries its bytes; a blob Ref does not"
            raise ValueError(msg)
