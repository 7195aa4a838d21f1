"""Running the gateway app under uvicorn (tier T3): the CLI's server and a loopback server.

``serve`` blocks in the foreground (``fak serve``). ``LoopbackServer`` binds 127.0.0.1 on a free
port itself (no bind race), runs uvicorn in a background thread and stops it cleanly — the test
fixtures and the gateway benchmark use it to put real clients on a real socket.
"""

from __future__ import annotations

import asyncio
import importlib.util
import socket
import threading
import time
from collections.abc import Callable
from typing import Any, Final

import uvicorn

from fak.config import Settings

__all__ = ["LoopbackServer", "bind", "serve", "uvicorn_config"]


_IDLE_TIMEOUT_S: Final = Settings().http_idle_timeout_s  # FAK_HTTP_IDLE_TIMEOUT_S's default


def _fastest(module: str, name: str) -> str:
    return name if importlib.util.find_spec(module) is not None else "auto"


def uvicorn_config(
    app: Any, *, host: str, port: int, idle_timeout_s: float = _IDLE_TIMEOUT_S, **extra: Any
) -> uvicorn.Config:
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        loop=_fastest("uvloop", "uvloop"),
        http=_fastest("httptools", "httptools"),
        lifespan="on",
        access_log=False,
        log_level="warning",
        timeout_keep_alive=int(idle_timeout_s) if idle_timeout_s > 0 else 10**6,
        server_header=False,
        date_header=False,
        **extra,
    )


class _Server(uvicorn.Server):
    """uvicorn's server, telling its caller once it really serves (bound, app started)."""

    def __init__(self, config: uvicorn.Config, on_ready: Callable[[], None] | None) -> None:
        super().__init__(config)
        self._on_ready = on_ready

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.started and not self.should_exit and self._on_ready is not None:
            self._on_ready()


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (``OSError`` at once if it cannot bind)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto=IPPROTO_TCP matters: asyncio sets TCP_NODELAY on accepted sockets only when the
    # listening socket says TCP, and without it Nagle + delayed ACK add ~40 ms per response
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    return sock


def serve(
    app: Any,
    *,
    host: str,
    port: int,
    idle_timeout_s: float = _IDLE_TIMEOUT_S,
    on_ready: Callable[[int], None] | None = None,
    sock: socket.socket | None = None,
) -> None:
    """Bind first (a bind failure raises ``OSError`` at once), then serve until interrupted.

    ``on_ready(port)`` runs once the socket is listening and the app's startup has finished:
    the moment a client can connect, and the only moment to say so. ``sock``: an already
    listening socket (``bind``), shared by N worker processes.
    """
    if sock is None:
        sock = bind(host, port)
    bound = int(sock.getsockname()[1])
    config = uvicorn_config(app, host=host, port=bound, idle_timeout_s=idle_timeout_s)
    ready = (lambda: on_ready(bound)) if on_ready is not None else None
    _Server(config, ready).run(sockets=[sock])


class LoopbackServer:
    """``with LoopbackServer(app) as url:`` serves ``app`` on ``http://127.0.0.1:<free port>``."""

    def __init__(self, app: Any, *, idle_timeout_s: float = _IDLE_TIMEOUT_S) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(512)
        self.port = int(self._sock.getsockname()[1])
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn_config(
            app, host="127.0.0.1", port=self.port, idle_timeout_s=idle_timeout_s
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._run, name=f"loopback-{self.port}", daemon=True)

    def _run(self) -> None:
        async def main() -> None:
            await self._server.serve(sockets=[self._sock])
            await asyncio.sleep(0.02)  # let closing transports release their sockets

        asyncio.run(main())

    def start(self) -> str:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                msg = "the loopback server did not start"
                raise RuntimeError(msg)
            time.sleep(0.005)
        return self.url

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._sock.close()

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
