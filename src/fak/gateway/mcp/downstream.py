"""One downstream MCP server behind the proxy: connect, supervise, restart (tier T3).

``Downstream(spec, hooks).run()`` owns an official-SDK ``Client`` session to a stdio child process
or a Streamable HTTP url for as long as the proxy runs: it fetches the tool list, watches for
``notifications/tools/list_changed``, and when the connection breaks (the child died, the socket
closed, a call failed at the transport) it reconnects with exponential backoff. Requests the
server makes of the client (sampling, elicitation) and its log messages go to the hooks; this
module decides nothing. The child's stderr goes to the proxy's stderr (the log). Never logs
arguments or results.

A server that writes what is not JSON-RPC breaks its session at the first such line, even while
the session is still being set up: the child is stopped and restarted after the backoff, which
only resets once a session has stayed up for ``STABLE_S``. The SDK's per-line parse traceback is
logged once per burst (``BURST_S``), with the count of the lines it stands for.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import IO, Any, Final

import anyio
import anyio.abc
import mcp.types as types
from mcp import Client, StdioServerParameters
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError

from fak.gateway.mcp.config import ServerSpec

__all__ = ["BACKOFF_S", "Downstream", "DownstreamHooks", "DownstreamUnavailable"]

_log = logging.getLogger(__name__)

BACKOFF_S: Final = (0.05, 0.2, 0.5, 1.0, 2.0, 5.0)
"""Delays before reconnect attempts 1, 2, 3...; the last one repeats."""
STABLE_S: Final = 10.0
"""A session that stayed up this long resets the backoff; a shorter one keeps climbing it."""
BURST_S: Final = 10.0
_PAGE_CAP: Final = 64
_READY_WAIT_S: Final = 10.0
_TRANSPORT_CODES: Final = frozenset({types.CONNECTION_CLOSED})


class _OncePerBurst(logging.Filter):
    """Lets one parse-failure record of the SDK's stdio client through per ``BURST_S``, without
    its traceback and with the number of lines it stands for; drops the rest of the burst."""

    _MARK = "Failed to parse JSONRPC"

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self._clock = clock
        self._last = -BURST_S
        self._dropped = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if not str(record.msg).startswith(self._MARK):
            return True
        now = self._clock()
        if now - self._last < BURST_S:
            self._dropped += 1
            return False
        record.msg = f"{self._MARK} message from an MCP server (+{self._dropped} since the last)"
        record.args = ()
        record.exc_info = None
        record.exc_text = None
        self._last = now
        self._dropped = 0
        return True


_SDK_STDIO_LOG = logging.getLogger("mcp.client.stdio")
if not any(isinstance(f, _OncePerBurst) for f in _SDK_STDIO_LOG.filters):
    _SDK_STDIO_LOG.addFilter(_OncePerBurst())


class DownstreamUnavailable(ConnectionError):
    """The server could not be reached or dropped the call; it is being restarted."""


@dataclass(frozen=True, slots=True)
class DownstreamHooks:
    """What the proxy does with what a downstream server sends unasked."""

    tools_changed: Callable[[Downstream], Awaitable[None]]
    sampling: Callable[[Downstream, types.CreateMessageRequestParams], Awaitable[Any]]
    elicitation: Callable[[Downstream, types.ElicitRequestParams], Awaitable[Any]]
    log: Callable[[Downstream, types.LoggingMessageNotificationParams], Awaitable[None]]


class Downstream:
    """A supervised client session to one MCP server."""

    def __init__(
        self,
        spec: ServerSpec,
        hooks: DownstreamHooks,
        *,
        backoff: Sequence[float] = BACKOFF_S,
        errlog: IO[str] | None = None,
        call_timeout_s: float | None = None,
    ) -> None:
        self.spec = spec
        self._hooks = hooks
        self._backoff = tuple(backoff) or BACKOFF_S
        self._errlog = errlog if errlog is not None else sys.stderr
        self._call_timeout_s = call_timeout_s
        self._client: Client | None = None
        self._ready = anyio.Event()
        self._broken = anyio.Event()
        self._dirty = anyio.Event()
        self.tools: tuple[types.Tool, ...] = ()
        self.connects = 0
        self.protocol_errors = 0  # lines from the server that were not JSON-RPC
        self.last_error = ""

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def connected(self) -> bool:
        return self._client is not None

    def _client_for(self, http: Any) -> Client:
        spec = self.spec
        server: Any
        if spec.command is not None:
            server = StdioServerParameters(
                command=spec.command, args=list(spec.args), env=dict(spec.env) or None, cwd=spec.cwd
            )
        else:
            from mcp.client.streamable_http import streamable_http_client

            assert spec.url is not None
            server = streamable_http_client(spec.url, http_client=http)
        return Client(
            server,
            mode="legacy",  # list_changed, progress and logging arrive as notifications
            cache=None,
            read_timeout_seconds=self._call_timeout_s,
            sampling_callback=self._on_sampling,
            elicitation_callback=self._on_elicitation,
            logging_callback=self._on_log,
            message_handler=self._on_message,
            client_info=types.Implementation(name="fak-mcp-proxy", version="1"),
        )

    def _http_client(self) -> contextlib.AbstractAsyncContextManager[Any]:
        """The HTTP client (with the configured headers) for a url server; closed on exit."""
        if self.spec.url is None:
            return contextlib.nullcontext()
        import httpx2

        return httpx2.AsyncClient(headers=dict(self.spec.headers), timeout=30.0)

    # -- callbacks from the SDK ---------------------------------------------------------------
    async def _on_sampling(self, context: Any, params: types.CreateMessageRequestParams) -> Any:
        return await self._hooks.sampling(self, params)

    async def _on_elicitation(self, context: Any, params: types.ElicitRequestParams) -> Any:
        return await self._hooks.elicitation(self, params)

    async def _on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        await self._hooks.log(self, params)

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, Exception):
            self.protocol_errors += 1
            if not self._broken.is_set():  # once per session: the session ends here
                _log.warning(
                    "mcp downstream %s: transport error %s; restarting it",
                    self.name,
                    type(message).__name__,
                )
            self.last_error = type(message).__name__
            self._broken.set()
        elif isinstance(message, types.ToolListChangedNotification):
            self._dirty.set()

    # -- supervision --------------------------------------------------------------------------
    async def run(self) -> None:
        """Connect and stay connected until cancelled; reconnect with backoff after a break."""
        attempt = 0
        while True:
            up_since: float | None = None
            try:
                async with anyio.create_task_group() as guard:
                    # a break while the session is still being set up ends the attempt too
                    guard.start_soon(self._end_on_break, guard.cancel_scope)
                    async with (
                        self._http_client() as http,
                        self._client_for(http) as client,
                        anyio.create_task_group() as tg,
                    ):
                        self.tools = await self._fetch_tools(client)
                        self._client = client
                        self.connects += 1
                        up_since = time.monotonic()
                        _log.info(
                            "mcp downstream %s: connected (%d tools, connect #%d)",
                            self.name,
                            len(self.tools),
                            self.connects,
                        )
                        await self._hooks.tools_changed(self)
                        self._ready.set()
                        tg.start_soon(self._watch_tools, client)
                        await self._broken.wait()
                        tg.cancel_scope.cancel()
                    guard.cancel_scope.cancel()
            except anyio.get_cancelled_exc_class():
                raise
            except Exception as exc:  # a dead child or refused socket: retry after a pause
                self.last_error = type(exc).__name__
                _log.warning(
                    "mcp downstream %s: connection failed (%s)", self.name, self.last_error
                )
            finally:
                self._client = None
                self._ready = anyio.Event()
                self._broken = anyio.Event()
            if up_since is not None and time.monotonic() - up_since >= STABLE_S:
                attempt = 0
            delay = self._backoff[min(attempt, len(self._backoff) - 1)]
            attempt += 1
            _log.info("mcp downstream %s: reconnecting in %.2fs", self.name, delay)
            await anyio.sleep(delay)

    async def _end_on_break(self, scope: anyio.CancelScope) -> None:
        await self._broken.wait()
        scope.cancel()

    async def _fetch_tools(self, client: Client) -> tuple[types.Tool, ...]:
        if client.server_capabilities.tools is None:  # a resources- or prompts-only server
            return ()
        tools: list[types.Tool] = []
        cursor: str | None = None
        for _ in range(_PAGE_CAP):
            page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                break
        return tuple(tools)

    async def _watch_tools(self, client: Client) -> None:
        while True:
            await self._dirty.wait()
            self._dirty = anyio.Event()
            try:
                self.tools = await self._fetch_tools(client)
            except Exception as exc:
                _log.warning("mcp downstream %s: relist failed (%s)", self.name, type(exc).__name__)
                self._broken.set()
                return
            await self._hooks.tools_changed(self)

    def mark_broken(self) -> None:
        self._broken.set()

    async def _session(self) -> Client:
        client = self._client
        if client is not None:
            return client
        with anyio.move_on_after(_READY_WAIT_S):
            await self._ready.wait()
        client = self._client
        if client is None:
            msg = f"{self.name} is not connected"
            raise DownstreamUnavailable(msg)
        return client

    async def _guard(self, call: Callable[[Client], Awaitable[Any]]) -> Any:
        client = await self._session()
        try:
            return await call(client)
        except MCPError as exc:
            if exc.error.code in _TRANSPORT_CODES:
                self.mark_broken()
                msg = f"{self.name} dropped the request"
                raise DownstreamUnavailable(msg) from exc
            raise
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError, EOFError) as exc:
            self.mark_broken()
            msg = f"{self.name} dropped the request"
            raise DownstreamUnavailable(msg) from exc

    # -- requests -----------------------------------------------------------------------------
    async def call_tool(
        self, name: str, arguments: dict[str, Any], progress: ProgressFnT | None = None
    ) -> types.CallToolResult:
        """tools/call as a plain typed request: the SDK's output-schema validation is skipped
        (the proxy lists no output schemas upstream, and the result passes fak's wall)."""
        request = types.CallToolRequest(
            params=types.CallToolRequestParams(name=name, arguments=arguments)
        )
        return await self._guard(  # type: ignore[no-any-return]
            lambda c: c.session.send_request(
                request, types.CallToolResult, progress_callback=progress
            )
        )

    async def list_resources(self) -> types.ListResourcesResult:
        return await self._guard(lambda c: c.list_resources())  # type: ignore[no-any-return]

    async def read_resource(self, uri: str) -> types.ReadResourceResult:
        return await self._guard(lambda c: c.read_resource(uri))  # type: ignore[no-any-return]

    async def list_prompts(self) -> types.ListPromptsResult:
        return await self._guard(lambda c: c.list_prompts())  # type: ignore[no-any-return]

    async def get_prompt(
        self, name: str, arguments: dict[str, str] | None
    ) -> types.GetPromptResult:
        return await self._guard(  # type: ignore[no-any-return]
            lambda c: c.get_prompt(name, arguments)
        )
