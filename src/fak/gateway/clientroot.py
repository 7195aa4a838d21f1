"""The client's working directory, as the agent itself states it in the request (tier T3).

Claude Code writes ``Primary working directory: /abs`` into its system text; Codex sends an
``<environment_context>`` user message with ``<cwd>/abs</cwd>``. ``client_root`` reads the first
of these from the system and user messages of the conversation (never from tool results or the
model's own turns) and returns the path, or ``""``. What it returns is only a request: the
policy takes it as a root for path rules when it lies inside the operator's root
(``fak.policy.globs.narrower_root``), so it can narrow what a rule admits, never widen it.
"""

from __future__ import annotations

from typing import Final

from fak.abi import Message, Role

__all__ = ["client_root"]

_CLAUDE: Final = "Primary working directory:"
_SCAN_MAX: Final = 64 * 1024  # the statement sits near the start of the agent's own text


def _stated(text: str) -> str:
    """The directory ``text`` states, or ``""``: plain ``str.find`` (no regex on the hot path)."""
    at = text.find(_CLAUDE)
    if at >= 0:
        line_start = text.rfind("\n", 0, at) + 1
        if not text[line_start:at].strip(" \t-"):  # the statement opens its line
            end = text.find("\n", at)
            value = text[at + len(_CLAUDE) : end if end >= 0 else len(text)].strip()
            if value.startswith("/"):
                return value
    at = text.find("<cwd>")
    if at >= 0:
        end = text.find("</cwd>", at)
        value = text[at + 5 : end].strip() if end >= 0 else ""
        if value.startswith("/") and "\n" not in value:
            return value
    return ""


def client_root(history: tuple[Message, ...]) -> str:
    """The working directory the client states in ``history``, or ``""``."""
    for m in history:
        if m.role is Role.SYSTEM or m.role is Role.USER:
            found = _stated(m.content[:_SCAN_MAX])
            if found:
                return found
    return ""
