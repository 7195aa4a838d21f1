"""Server-sent events: encode frames and decode a byte stream into events (tier T1, pure).

Encoding writes ``event:`` (optional) and one ``data:`` line per frame. The decoder is incremental
(feed bytes as they arrive, get whole events back) and follows the WHATWG rules the SDKs use:
``data`` lines join with newlines, comments are skipped, CRLF and LF both end a line.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SSEDecoder", "SSEEvent", "encode_event"]


@dataclass(frozen=True, slots=True)
class SSEEvent:
    event: str
    data: str


def encode_event(data: bytes, event: str | None = None) -> bytes:
    """One SSE frame. ``data`` must be a single line (JSON from orjson always is)."""
    if event is None:
        return b"data: " + data + b"\n\n"
    return b"event: " + event.encode() + b"\ndata: " + data + b"\n\n"


class SSEDecoder:
    """Incremental decoder: ``feed(chunk)`` returns the events completed by that chunk."""

    __slots__ = ("_buf", "_data", "_event")

    def __init__(self) -> None:
        self._buf = b""
        self._event = ""
        self._data: list[str] = []

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        self._buf += chunk
        out: list[SSEEvent] = []
        while True:
            nl = self._buf.find(b"\n")
            if nl < 0:
                break
            raw = self._buf[:nl]
            self._buf = self._buf[nl + 1 :]
            line = raw[:-1] if raw.endswith(b"\r") else raw
            event = self._line(line.decode("utf-8", errors="replace"))
            if event is not None:
                out.append(event)
        return out

    def close(self) -> list[SSEEvent]:
        """Flush a final event that was not followed by a blank line."""
        out = self.feed(b"\n") if self._buf else []
        if self._data:
            out.append(SSEEvent(self._event, "\n".join(self._data)))
            self._event, self._data = "", []
        return out

    def _line(self, line: str) -> SSEEvent | None:
        if not line:
            if not self._data and not self._event:
                return None
            event = SSEEvent(self._event, "\n".join(self._data))
            self._event, self._data = "", []
            return event
        if line.startswith(":"):
            return None
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        return None
