"""The access log reaches its descriptor once per request, not once per line."""

from __future__ import annotations

import orjson

from fak.gateway.accesslog import AccessLog
from fak.wire import WireVerdict


class Sink:
    def __init__(self) -> None:
        self.lines: list[bytes] = []
        self.flushed_after: list[int] = []

    def __call__(self, line: bytes) -> None:
        self.lines.append(line)

    def flush(self) -> None:
        self.flushed_after.append(len(self.lines))


def test_operation_lines_wait_for_the_request_line() -> None:
    sink = Sink()
    log = AccessLog(sink)
    allow = WireVerdict("ALLOW")
    for _ in range(3):
        log.operation(operation="decide", tool="t", trace_id="x", verdict=allow, seconds=0.001)
    assert sink.flushed_after == []
    log.http(
        method="POST",
        route="/v1/chat/completions",
        status=200,
        nbytes=1,
        seconds=0.01,
        trace_id="x",
    )
    assert sink.flushed_after == [4]
    events = [orjson.loads(line)["event"] for line in sink.lines]
    assert events == ["gateway_operation"] * 3 + ["gateway_http_request"]


def test_a_plain_callable_sink_still_works() -> None:
    lines: list[bytes] = []
    log = AccessLog(lines.append)
    log.http(method="GET", route="/healthz", status=200, nbytes=2, seconds=0.0, trace_id="y")
    assert len(lines) == 1
