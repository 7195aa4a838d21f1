"""Where the text an agent has seen came from (tier T0, stdlib only).

A ``Context`` is an append-only record of the text in one agent run, each piece tagged with its
source: the user's messages and the system prompt are *trusted*; each tool result is
*untrusted* and remembers its tool and call id. The policy's sink rules (``fak.policy.
provenance``) ask it where an argument value came from. Quarantined bytes are never added: add
what the model was actually given (the stub, for a held result). ``ToolCall.context`` carries it
into the kernel; ``Kernel.syscall`` appends each admitted result to it.
"""

from __future__ import annotations

import enum
import threading
from dataclasses import dataclass

__all__ = ["Context", "Piece", "PieceKind"]


class PieceKind(enum.StrEnum):
    USER = "user"  # the user's messages, the system prompt, operator-pinned values
    RESULT = "result"  # a tool result (untrusted unless the manifest names its tool a source)


@dataclass(frozen=True, slots=True)
class Piece:
    kind: PieceKind
    text: str
    tool: str = ""
    call_id: str = ""


class Context:
    """Append-only and thread-safe; ``version`` counts the pieces (indexes key on it)."""

    __slots__ = ("__weakref__", "_lock", "_pieces")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pieces: list[Piece] = []

    def user(self, text: str) -> Context:
        """Trusted text: a user message or the system prompt."""
        return self._add(Piece(PieceKind.USER, text))

    system = user

    def result(self, tool: str, call_id: str, text: str) -> Context:
        """A tool result as the model was given it (after the wall)."""
        return self._add(Piece(PieceKind.RESULT, text, tool, call_id))

    def _add(self, piece: Piece) -> Context:
        if piece.text:
            with self._lock:
                self._pieces.append(piece)
        return self

    @property
    def pieces(self) -> tuple[Piece, ...]:
        with self._lock:
            return tuple(self._pieces)

    @property
    def version(self) -> int:
        return len(self._pieces)

    def __len__(self) -> int:
        return len(self._pieces)

    def __repr__(self) -> str:
        kinds = [p.kind.value for p in self.pieces]
        return f"Context({kinds.count('user')} user, {kinds.count('result')} result pieces)"
