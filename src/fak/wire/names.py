"""The closed set of wires fak speaks (tier T1, stdlib only).

``WireName`` values are the strings ``fak serve --provider`` takes; the gateway names the wire a
client spoke with the same members. ``package`` is the wire's package under ``fak.wire`` (also
the ``wire`` label of the gateway's turn counter). A new wire is a new member here, a package
with ``server`` and ``client``, and a ``Dialect`` in ``fak.wire.dialect``.
"""

from __future__ import annotations

import enum

__all__ = ["WireName"]


class WireName(enum.StrEnum):
    OPENAI_CHAT = "openai"
    OPENAI_RESPONSES = "openai-responses"
    ANTHROPIC = "anthropic"

    @property
    def package(self) -> str:
        """``openai_chat``, ``openai_responses`` or ``anthropic``."""
        return self.name.lower()
