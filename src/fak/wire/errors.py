"""The one error a wire parser raises on bad input (tier T1, pure).

A ``WireError`` carries a stable machine code, a message that says what to fix, and the request
field it concerns. The gateway turns it into a 400 for client bodies and a 502 for upstream
bodies; nothing here knows about HTTP.
"""

from __future__ import annotations

__all__ = ["WireError"]


class WireError(ValueError):
    """A body that does not follow its wire's shape."""

    def __init__(self, code: str, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.param = param
