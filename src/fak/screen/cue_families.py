"""The injection cue families: the names a cue's family goes by in findings (tier T1, data).

``fak.screen.cues`` and ``fak.screen.cues_world`` write their tables' rows with these.
"""

from __future__ import annotations

import enum

__all__ = ["Cue"]


class Cue(enum.StrEnum):
    """Cue families; the values are stable names reported in findings."""

    OVERRIDE = "override"
    ROLE = "role_marker"
    TEMPLATE = "chat_template"
    ADDRESSEE = "addressee"
    NEW_TASK = "new_instructions"
    SECRECY = "secrecy"
    TOOL_CALL = "tool_call"
    TOOL_DIRECTIVE = "tool_directive"
    ENVELOPE = "envelope"
    HIDDEN = "hidden_carrier"
    EXFIL = "exfil_action"
    IMAGE_EXFIL = "image_exfil"
    META = "discussion"
    CANDIDATE = "candidate"
