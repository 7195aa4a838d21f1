"""The structured access log: JSON lines correlated by trace id (tier T3).

Two kinds of line: ``gateway_operation`` (one per kernel operation: tool, verdict, reason,
disposition, duration) and ``gateway_http_request`` (one per request: route, method, status,
bytes, duration). Both carry ``trace_id``, which is also returned as ``X-Trace-Id``. A line
never holds a body, an argument, a result or a digest of one. The sink is injected (the CLI
passes a buffered stdout/stderr writer; tests pass a list); with no sink nothing is written. A
``BufferedSink`` (a sink with a ``flush`` method) is flushed once per request, after its
``gateway_http_request`` line, so a request's lines cost one write to the descriptor rather than
one each. Every string field is bounded (``bounded``: 200 characters and the count of the
rest), so a 500 KB tool name proposed by an upstream costs the log one short line.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import orjson

from fak.wire import WireVerdict

__all__ = ["FIELD_LIMIT", "AccessLog", "BufferedSink", "bounded"]

FIELD_LIMIT = 200


def bounded(value: str, limit: int = FIELD_LIMIT) -> str:
    """``value`` cut to ``limit`` characters, with how many more there were."""
    if len(value) <= limit:
        return value
    return f"{value[:limit]}...(+{len(value) - limit} chars)"


@runtime_checkable
class BufferedSink(Protocol):
    """A sink that buffers lines until ``flush`` (the CLI's stdout/stderr writer)."""

    def __call__(self, line: bytes) -> Any: ...

    def flush(self) -> Any: ...


class AccessLog:
    __slots__ = ("_clock", "_flush", "_sink")

    def __init__(
        self, sink: Callable[[bytes], Any] | None = None, clock: Callable[[], float] = time.time
    ) -> None:
        self._sink = sink
        self._clock = clock
        self._flush: Callable[[], Any] | None = (
            sink.flush if isinstance(sink, BufferedSink) else None
        )

    @property
    def enabled(self) -> bool:
        return self._sink is not None

    def _write(self, line: dict[str, Any]) -> None:
        if self._sink is not None:
            self._sink(orjson.dumps(line) + b"\n")

    def operation(
        self,
        *,
        operation: str,
        tool: str,
        trace_id: str,
        verdict: WireVerdict | None,
        seconds: float,
        error: str = "",
    ) -> None:
        if self._sink is None:
            return
        line: dict[str, Any] = {
            "event": "gateway_operation",
            "ts": round(self._clock(), 6),
            "operation": operation,
            "tool": bounded(tool),
            "trace_id": bounded(trace_id),
            "verdict": verdict.kind if verdict is not None else "ERROR",
            "duration_ms": round(seconds * 1000, 3),
        }
        if verdict is not None:
            if verdict.reason:
                line["reason"] = bounded(verdict.reason)
            if verdict.by:
                line["by"] = bounded(verdict.by)
            if verdict.disposition:
                line["disposition"] = bounded(verdict.disposition)
        if error:
            line["error"] = bounded(error)
        self._write(line)

    def http(
        self,
        *,
        method: str,
        route: str,
        status: int,
        nbytes: int,
        seconds: float,
        trace_id: str,
        user_agent: str = "",
    ) -> None:
        if self._sink is None:
            return
        line: dict[str, Any] = {
            "event": "gateway_http_request",
            "ts": round(self._clock(), 6),
            "method": bounded(method, 16),
            "route": bounded(route),
            "status": status,
            "bytes": nbytes,
            "duration_ms": round(seconds * 1000, 3),
            "trace_id": bounded(trace_id),
        }
        if user_agent:
            line["user_agent"] = user_agent[:128]
        self._write(line)
        if self._flush is not None:
            self._flush()
