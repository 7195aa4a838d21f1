"""fak as an MCP server (tier T3): its tools over one Kernel, on stdio or Streamable HTTP.

``build_mcp_server(kernel)`` returns the official SDK's low-level ``Server`` exposing
``fak_adjudicate`` (verdict only), ``fak_syscall`` (decide, run a tool registered on the kernel,
admit its result), ``fak_admit`` (screen a result the client ran) and ``fak_page_in``. Every answer
is the reply-system envelope as JSON text; a refusal is a value (``isError: false``). ``isError`` is
true only when no decision was reached: malformed input at this layer (I) or a fault (E, naming
the exception type only). Tool bodies live in ``fak.gateway.mcp.tools``; this module owns the
SDK wiring and never logs arguments, results or held bytes.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as package_version
from typing import Any, Final

import anyio
import mcp.types as types
import orjson
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from starlette.applications import Starlette
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from fak.gateway.mcp.tools import TOOL_SPECS, McpTools, ToolAnswer
from fak.kernel import Kernel
from fak.recall import CoherencePlane
from fak.wire.strictjson import DuplicateKey, InvalidJson, loads_strict

__all__ = [
    "SERVER_NAME",
    "McpHttpEndpoint",
    "build_mcp_server",
    "mcp_asgi_app",
    "serve_server_stdio",
    "serve_stdio",
    "tool_definitions",
    "tool_result",
]

_log = logging.getLogger(__name__)

SERVER_NAME: Final = "fak-gateway"
_INSTRUCTIONS: Final = (
    "fak is an agent kernel. Before running a tool, ask fak_adjudicate for a verdict and run the "
    "call only if the reply is a success (type S); a denial (type D) is an answer, not an error. "
    "Pass every tool result you ran through fak_admit and put only its `content` into context."
)
_LOOPBACK_HOSTS: Final = ("127.0.0.1:*", "localhost:*", "[::1]:*")
_LOOPBACK_ORIGINS: Final = ("http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*")
_THREADED: Final = frozenset({"fak_syscall", "fak_admit", "fak_page_in", "fak_context_change"})


def _fak_version() -> str:
    try:
        return package_version("fak")
    except PackageNotFoundError:  # running from a source tree without an install
        return "0"


def tool_definitions() -> list[types.Tool]:
    """fak's own MCP tools as the SDK lists them."""
    return [
        types.Tool(
            name=spec.name,
            title=spec.title,
            description=spec.description,
            input_schema=dict(spec.input_schema),
            annotations=types.ToolAnnotations(
                title=spec.title,
                read_only_hint=spec.read_only,
                destructive_hint=None if spec.read_only else True,
                open_world_hint=not spec.read_only,
            ),
        )
        for spec in TOOL_SPECS
    ]


def tool_result(answer: ToolAnswer) -> types.CallToolResult:
    """A tool answer as the SDK's result: the envelope as text and structured content."""
    wire = answer.wire()
    text = orjson.dumps(wire).decode("utf-8")
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=wire,
        is_error=answer.is_error,
    )


def build_mcp_server(
    kernel: Kernel,
    *,
    name: str = SERVER_NAME,
    plane: CoherencePlane | None = None,
    witness_key: str | None = None,
) -> Server[Any]:
    """An MCP server whose tools are answered by ``kernel`` (one decision path); ``plane`` is
    the gateway's coherence plane (change feed, recall sessions), else a private one;
    ``witness_key`` opens fak_witness and fak_revoke (the gateway's ``--witness-key-env``)."""
    tools = McpTools(kernel, plane=plane, witness_key=witness_key)
    definitions = tool_definitions()
    known = frozenset(spec.name for spec in TOOL_SPECS)

    async def list_tools(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=definitions)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name not in known:
            # Not a decision: the client asked for a tool this server does not have.
            raise MCPError(types.INVALID_PARAMS, f"unknown tool: {params.name}")
        arguments: dict[str, Any] = params.arguments or {}
        if params.name in _THREADED:  # may run a tool or screen a large result: off the loop
            answer = await anyio.to_thread.run_sync(tools.call, params.name, arguments)
        else:
            answer = tools.call(params.name, arguments)
        return tool_result(answer)

    return Server(
        name,
        version=_fak_version(),
        title="fak agent kernel",
        instructions=_INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def serve_stdio(
    kernel: Kernel, *, witness_key: str | None = None, drain_timeout_s: float = 30.0
) -> None:
    """Serve the MCP tools over this process's stdin/stdout until the client hangs up.

    A client may write its last requests and close stdin at once (a pipe does exactly that):
    every request read before EOF is still answered (up to ``drain_timeout_s``), then we exit.
    """
    from fak.gateway.mcp.pipes import loop_pipes

    server = build_mcp_server(kernel, witness_key=witness_key)
    async with loop_pipes() as streams:
        await serve_server_stdio(
            server,
            server.create_initialization_options(),
            drain_timeout_s=drain_timeout_s,
            streams=streams,
        )


async def serve_server_stdio(
    server: Server[Any],
    init_options: Any,
    *,
    drain_timeout_s: float = 30.0,
    streams: tuple[Any, Any] | None = None,
) -> None:
    """Serve ``server`` over stdin/stdout; requests read before EOF are answered (drained).

    ``streams``: explicit ``(stdin, stdout)`` async text streams for the SDK's stdio transport
    (``fak.gateway.mcp.pipes.loop_pipes``); None uses the SDK's own.
    """
    stdin, stdout = streams if streams is not None else (None, None)
    async with stdio_server(stdin, stdout) as (read_stream, write_stream):
        pending: set[Any] = set()
        answered = anyio.Event()
        to_server, server_in = anyio.create_memory_object_stream[Any](0)
        server_out, from_server = anyio.create_memory_object_stream[Any](0)

        async def pump_in() -> None:
            nonlocal answered
            async with to_server:
                async for item in read_stream:
                    message = item.message if isinstance(item, SessionMessage) else None
                    if isinstance(message, types.JSONRPCRequest):
                        pending.add(message.id)
                    await to_server.send(item)
                with anyio.move_on_after(drain_timeout_s):
                    while pending:  # EOF: hold the server open until it has answered
                        await answered.wait()
                        answered = anyio.Event()

        async def pump_out() -> None:
            async with write_stream:
                async for item in from_server:
                    message = item.message if isinstance(item, SessionMessage) else None
                    if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
                        pending.discard(message.id)
                        answered.set()
                    await write_stream.send(item)

        async with anyio.create_task_group() as tg:
            tg.start_soon(pump_in)
            tg.start_soon(pump_out)
            async with server_out:
                await server.run(server_in, server_out, init_options)


class McpHttpEndpoint:
    """The Streamable-HTTP MCP endpoint as a plain ASGI app, plus the lifespan it needs.

    Route it (``Route("/mcp", endpoint=ep)``) and enter ``ep.lifespan()`` in the host app's
    lifespan: a mounted Starlette app's own lifespan would never run. ``stateless`` with
    ``json_response`` (the defaults) answers each POST with one JSON body, no session state.
    ``allowed_hosts`` guards against DNS rebinding; the default admits loopback names only,
    ``()`` turns the check off (for a gateway bound to a public address behind its own auth).
    """

    def __init__(
        self,
        kernel: Kernel,
        *,
        stateless: bool = True,
        json_response: bool = True,
        allowed_hosts: Sequence[str] | None = None,
        allowed_origins: Sequence[str] | None = None,
        body_cap: int = 4 * 1024 * 1024,
        server: Server[Any] | None = None,
        plane: CoherencePlane | None = None,
        witness_key: str | None = None,
    ) -> None:
        # ``server``: serve another SDK server on this endpoint (the MCP proxy's), same guards
        if server is None:
            server = build_mcp_server(kernel, plane=plane, witness_key=witness_key)
        self.server = server
        self.body_cap = body_cap
        hosts = _LOOPBACK_HOSTS if allowed_hosts is None else tuple(allowed_hosts)
        origins = _LOOPBACK_ORIGINS if allowed_origins is None else tuple(allowed_origins)
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=bool(hosts),
            allowed_hosts=list(hosts),
            allowed_origins=list(origins),
        )
        self.session_manager = StreamableHTTPSessionManager(
            app=self.server,
            json_response=json_response,
            stateless=stateless,
            security_settings=security,
        )

    def lifespan(self) -> contextlib.AbstractAsyncContextManager[None]:
        """Runs the session manager's task group; enter it once, for the app's lifetime."""
        return self.session_manager.run()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # stateless: no server-initiated stream to GET, no session to DELETE
        if scope.get("method") != "POST":
            await _reply(
                send,
                405,
                _rpc_error(-32000, "use POST: this endpoint is stateless"),
                (b"allow", b"POST"),
            )
            return
        body, more = b"", True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            more = bool(message.get("more_body"))
            if len(body) > self.body_cap:
                await _reply(send, 413, _rpc_error(-32600, f"body exceeds {self.body_cap} bytes"))
                return
        try:
            loads_strict(body)
        except DuplicateKey as exc:
            await _reply(send, 400, _rpc_error(-32700, f"duplicate_key: {exc}"))
            return
        except InvalidJson:
            pass  # the SDK answers malformed JSON-RPC in its own terms
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.session_manager.handle_request(scope, replay, send)


def _rpc_error(code: int, message: str) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}})


async def _reply(send: Send, status: int, body: bytes, *extra: tuple[bytes, bytes]) -> None:
    headers = [(b"content-type", b"application/json"), *extra]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def mcp_asgi_app(kernel: Kernel, *, path: str = "/mcp", **options: Any) -> Starlette:
    """A standalone Starlette app serving the MCP endpoint at ``path`` (lifespan included).

    ``options`` go to ``McpHttpEndpoint``. To add MCP to an existing app instead, route an
    ``McpHttpEndpoint`` and enter its ``lifespan()`` in that app's lifespan.
    """
    endpoint = McpHttpEndpoint(kernel, **options)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with endpoint.lifespan():
            yield

    app = Starlette(routes=[Route(path, endpoint=endpoint)], lifespan=lifespan)
    app.state.mcp = endpoint
    return app
