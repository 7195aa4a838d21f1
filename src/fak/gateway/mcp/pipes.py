"""Event-loop stdin/stdout for an MCP server on pipes, without a worker thread per line (tier T3).

The SDK's ``stdio_server()`` reads and writes the standard streams through anyio worker threads:
three thread hops per message, measured at several milliseconds per proxied call on a busy
machine. ``loop_pipes()`` hands it explicit streams instead, built on asyncio's pipe transports
over private duplicates of fd 0 and fd 1 (fd 1 is then pointed at stderr so stray prints cannot
corrupt the protocol). Only bytes move here; the SDK still frames and parses every message.
When a standard stream is not a pipe or socket (a file, a terminal), it yields ``None`` and the
caller uses the SDK's own streams.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
from collections.abc import AsyncIterator
from typing import Any

__all__ = ["loop_pipes"]


def _pipe_like(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


class _LineReader:
    """``async for line in reader``: decoded lines, like anyio's wrapped text file."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    def __aiter__(self) -> _LineReader:
        return self

    async def __anext__(self) -> str:
        line = await self._reader.readline()
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", errors="replace")


class _Writer:
    """``await write(text)`` / ``await flush()`` over a pipe transport."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    async def write(self, text: str) -> None:
        self._writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self._writer.drain()


@contextlib.asynccontextmanager
async def loop_pipes() -> AsyncIterator[tuple[Any, Any] | None]:
    """``(stdin, stdout)`` for ``stdio_server(stdin, stdout)``, or None when not on pipes."""
    if not (_pipe_like(0) and _pipe_like(1)):
        yield None
        return
    loop = asyncio.get_running_loop()
    in_fd, out_fd = os.dup(0), os.dup(1)
    saved_out = os.dup(1)
    os.dup2(2, 1)  # stray writes to fd 1 go to the log, never into the protocol
    reader = asyncio.StreamReader(limit=64 * 1024 * 1024)
    read_transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(in_fd, "rb", buffering=0)
    )
    write_transport, write_protocol = await loop.connect_write_pipe(
        lambda: asyncio.streams.FlowControlMixin(), os.fdopen(out_fd, "wb", buffering=0)
    )
    writer = asyncio.StreamWriter(write_transport, write_protocol, None, loop)
    try:
        yield _LineReader(reader), _Writer(writer)
    finally:
        read_transport.close()
        with contextlib.suppress(Exception):
            await writer.drain()
        write_transport.close()
        os.dup2(saved_out, 1)
        os.close(saved_out)
