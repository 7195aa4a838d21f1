"""fak in front of real MCP servers: the proxy's upstream server and its one call path (tier T3).

``McpProxy(kernel, config)`` builds the official SDK's low-level ``Server`` the client talks to and
one supervised ``Downstream`` per configured server. ``tools/list`` answers the catalogue's
visible menu; ``tools/call`` is a syscall: the kernel decides (journaled), an admitted call is
forwarded under the downstream name with the (possibly rewritten) arguments, and every text or
resource block of the result passes the kernel's result admission (a quarantined block becomes
the stub, a large one pages out). A refusal is a result with ``isError: false`` carrying the
reply envelope. ``resources/read`` and ``prompts/get`` pass the same wall; sampling and
elicitation from a server are refused unless its config entry allows them. A proxy that serves
one client session (stdio) keeps that session's provenance ``Context``: every admitted result is
appended, so sink rules and ``after_untrusted`` judge later calls against what the model was
handed (an MCP client sends no user text: only the manifest's ``pinned`` values count as the
user's). The stateless HTTP proxy keeps none. No JSON-RPC here.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections import Counter
from collections.abc import AsyncIterator, Mapping
from typing import Any, Final

import anyio
import mcp.types as types
import orjson
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.shared.exceptions import MCPError

from fak.abi import Context, Reason, ToolCall, ToolResult, Verdict, VerdictKind
from fak.abi.replies import Reply, ReplyBuilder, envelope, new_trace_id, reply_for_verdict
from fak.gateway.mcp.catalog import Catalog, ToolState
from fak.gateway.mcp.config import ProxyConfig
from fak.gateway.mcp.downstream import Downstream, DownstreamHooks, DownstreamUnavailable
from fak.gateway.mcp.server import serve_server_stdio, tool_definitions, tool_result
from fak.gateway.mcp.tools import McpTools
from fak.journal import JournalKind, journal_record
from fak.kernel import Kernel
from fak.kernel.outcome import held_as_deny
from fak.policy import args_digest

__all__ = ["PROXY_NAME", "McpProxy", "serve_proxy_stdio"]

_log = logging.getLogger(__name__)

PROXY_NAME: Final = "fak-mcp-proxy"
_BY: Final = "mcp-proxy"
_TOOL_FAILED: Final = "MCP-EXEC-E-001"
_READY_WAIT_S: Final = 15.0
PAGE_IN: Final = "fak_page_in"
"""The one tool the proxy adds: bytes behind a paged-out pointer (re-screened first)."""
_INSTRUCTIONS: Final = (
    "Tools here are served through fak, an agent kernel. A refused call answers with a reply "
    "envelope whose reply_type is D (denied) or I (invalid): read its reason and adapt, do not "
    "retry the same call. Content held by the result screen is replaced by a quarantine stub."
)


def _progress_token(meta: Mapping[str, Any] | None) -> Any:
    if not meta:
        return None
    return meta.get("progressToken", meta.get("progress_token"))


class McpProxy:
    """The MCP proxy: one upstream server, N supervised downstream sessions, one kernel."""

    def __init__(
        self,
        kernel: Kernel,
        config: ProxyConfig,
        *,
        name: str = PROXY_NAME,
        session_context: bool = False,
    ) -> None:
        self.kernel = kernel
        self.config = config
        self.context: Context | None = Context() if session_context else None
        self.catalog = Catalog(
            kernel,
            separator=config.separator,
            on_change=config.on_schema_change,
            pins={s.name: s.tool_digests for s in config.servers},
        )
        hooks = DownstreamHooks(self._tools_changed, self._sampling, self._elicitation, self._log)
        self.downstreams = {spec.name: Downstream(spec, hooks) for spec in config.servers}
        self.counts: Counter[tuple[str, str, str]] = Counter()  # (server, tool, outcome)
        self.latency_s: dict[tuple[str, str], float] = {}
        self._upstream: Any = None  # the client's ServerSession, once it has spoken
        self._resources: dict[str, str] = {}  # uri -> server
        self._journal_threaded = kernel.journal is not None
        self._started = False
        self._tools = McpTools(kernel)
        self._page_in_tool = next(t for t in tool_definitions() if t.name == PAGE_IN)
        self.server = self._build_server(name)

    # -- lifecycle ----------------------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[McpProxy]:
        """Start every downstream (supervised) for the block's lifetime; stop them after."""
        async with anyio.create_task_group() as tg:
            for downstream in self.downstreams.values():
                tg.start_soon(downstream.run)
            try:
                yield self
            finally:
                tg.cancel_scope.cancel()

    def initialization_options(self) -> InitializationOptions:
        return self.server.create_initialization_options(
            notification_options=NotificationOptions(tools_changed=True)
        )

    async def _all_ready(self) -> None:
        """Wait (once, bounded) for every downstream's first connection, so the first menu is
        whole; a server that never comes up is simply absent from it."""
        if self._started:
            return
        with anyio.move_on_after(_READY_WAIT_S):
            for downstream in self.downstreams.values():
                while downstream.connects == 0:
                    await anyio.sleep(0.01)
        self._started = True

    # -- downstream hooks -----------------------------------------------------------------------
    async def _tools_changed(self, downstream: Downstream) -> None:
        changed = self.catalog.update(downstream.name, downstream.tools)
        if changed and self._started and self._upstream is not None:  # not the first menu
            with contextlib.suppress(Exception):  # the client may have gone; nothing to tell
                await self._upstream.send_tool_list_changed()

    async def _refuse_request(self, downstream: Downstream, what: str) -> types.ErrorData:
        self._journal(
            journal_record(
                JournalKind.MCP_SERVER_REQUEST,
                tool=f"{downstream.name}/{what}",
                verdict="DENY",
                reason="POLICY_BLOCK",
                by=_BY,
            )
        )
        self.counts[(downstream.name, what, "refused")] += 1
        message = f"fak: {what} by server {downstream.name!r} is not allowed (allow_{what})"
        return types.ErrorData(code=types.INVALID_REQUEST, message=message)

    async def _sampling(
        self, downstream: Downstream, params: types.CreateMessageRequestParams
    ) -> Any:
        if not downstream.spec.allow_sampling or self._upstream is None:
            return await self._refuse_request(downstream, "sampling")
        self._journal(
            journal_record(
                JournalKind.MCP_SERVER_REQUEST,
                tool=f"{downstream.name}/sampling",
                verdict="ALLOW",
                by=_BY,
            )
        )
        return await self._upstream.send_request(
            types.CreateMessageRequest(params=params), types.CreateMessageResult
        )

    async def _elicitation(self, downstream: Downstream, params: types.ElicitRequestParams) -> Any:
        if not downstream.spec.allow_elicitation or self._upstream is None:
            return await self._refuse_request(downstream, "elicitation")
        self._journal(
            journal_record(
                JournalKind.MCP_SERVER_REQUEST,
                tool=f"{downstream.name}/elicitation",
                verdict="ALLOW",
                by=_BY,
            )
        )
        return await self._upstream.send_request(
            types.ElicitRequest(params=params), types.ElicitResult
        )

    async def _log(
        self, downstream: Downstream, params: types.LoggingMessageNotificationParams
    ) -> None:
        if self._upstream is None:
            return
        verdict = self.kernel.ledger.screen(orjson.dumps(params.data, default=str))
        if verdict.kind != VerdictKind.ALLOW:
            return  # a log line the screen holds never reaches the client
        with contextlib.suppress(Exception):
            await self._upstream.send_log_message(
                params.level, params.data, logger=f"{downstream.name}/{params.logger or ''}"
            )

    # -- journal & replies ----------------------------------------------------------------------
    def _journal(self, record: dict[str, str]) -> bool:
        journal = self.kernel.journal
        if journal is None:
            return True
        try:
            journal.append(record)
        except Exception as exc:
            _log.error("journal append failed (%s)", type(exc).__name__)
            return False
        return True

    @staticmethod
    def _answer(reply: Reply, trace_id: str, start: float) -> types.CallToolResult:
        elapsed = (time.perf_counter() - start) * 1000.0
        wire = envelope(reply, trace_id=trace_id, duration_ms=elapsed).to_wire()
        text = orjson.dumps(wire).decode("utf-8")
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            is_error=reply.reply_type == "E",
        )

    def _refusal(
        self, verdict: Verdict, tool: str, trace_id: str, start: float
    ) -> types.CallToolResult:
        data: dict[str, Any] = {"tool": tool, "by": verdict.by}
        if verdict.disposition is not None:
            data["disposition"] = str(verdict.disposition)
        if verdict.claim:
            data["claim"] = verdict.claim
        return self._answer(reply_for_verdict(verdict, data), trace_id, start)

    def _proxy_deny(self, call: ToolCall, verdict: Verdict) -> None:
        """A refusal the proxy makes before the kernel folds (unknown, poisoned, held tool)."""
        self._journal(
            journal_record(
                JournalKind.DENY,
                tool=call.tool,
                trace_id=call.trace_id,
                verdict=str(verdict.kind),
                reason=verdict.reason.name,
                by=verdict.by,
                digest=args_digest(call.args),
                policy=self.kernel.policy_version,
            )
        )

    # -- the wall -------------------------------------------------------------------------------
    def _admit_text(self, tool: str, text: str, trace_id: str) -> tuple[str, bool]:
        admission = self.kernel.admit_result(
            ToolResult(tool, text.encode("utf-8"), trace_id=trace_id)
        )
        clean = admission.verdict.kind == VerdictKind.ALLOW
        shown = admission.payload.decode("utf-8", "replace")
        if self.context is not None:
            self.context.result(tool, trace_id, shown)
        return shown, clean

    def _wall_block(self, tool: str, block: Any, trace_id: str) -> tuple[Any, bool]:
        match block:
            case types.TextContent():
                text, clean = self._admit_text(tool, block.text, trace_id)
                return (block if clean else types.TextContent(type="text", text=text)), clean
            case types.EmbeddedResource(resource=types.TextResourceContents() as res):
                text, clean = self._admit_text(tool, res.text, trace_id)
                if clean:
                    return block, True
                return types.TextContent(type="text", text=text), False
            case types.ImageContent() | types.AudioContent() | types.EmbeddedResource():
                if self.config.images:
                    return block, True
                note = f'{{"_dropped":true,"type":"{block.type}","by":"{_BY}"}}'
                return types.TextContent(type="text", text=note), False
            case types.ResourceLink():
                text, clean = self._admit_text(
                    tool, orjson.dumps(block.model_dump(mode="json")).decode(), trace_id
                )
                return (block if clean else types.TextContent(type="text", text=text)), clean
        note = f'{{"_dropped":true,"type":"unknown","by":"{_BY}"}}'
        return types.TextContent(type="text", text=note), False

    def _wall(self, tool: str, result: types.CallToolResult, trace_id: str) -> types.CallToolResult:
        content: list[Any] = []
        all_clean = True
        for block in result.content:
            out, clean = self._wall_block(tool, block, trace_id)
            content.append(out)
            all_clean = all_clean and clean
        structured = None
        if result.structured_content is not None and all_clean:
            # screened like the text it mirrors; not paged, so not journaled a second time
            verdict = self.kernel.ledger.screen(orjson.dumps(result.structured_content))
            structured = result.structured_content if verdict.kind == VerdictKind.ALLOW else None
        return types.CallToolResult(
            content=content, structured_content=structured, is_error=result.is_error
        )

    # -- tools ----------------------------------------------------------------------------------
    async def call(
        self, name: str, arguments: Mapping[str, Any] | None, progress_token: Any = None
    ) -> types.CallToolResult:
        """One tools/call through the kernel; never raises for a refusal or a dead server."""
        if name == PAGE_IN:  # fak's own page-in, never a downstream tool
            answer = await anyio.to_thread.run_sync(
                self._tools.call, PAGE_IN, dict(arguments or {})
            )
            return tool_result(answer)
        start = time.perf_counter()
        trace_id = new_trace_id()
        args = dict(arguments or {})
        call = ToolCall(name, args, trace_id=trace_id, context=self.context)
        entry = self.catalog.get(name)
        if entry is None and not self._started:  # called before the first tools/list
            await self._all_ready()
            entry = self.catalog.get(name)
        server = entry.server if entry is not None else ""
        if entry is None or entry.state is not ToolState.LISTED:
            if entry is None:
                verdict = Verdict.deny(
                    Reason.UNKNOWN_TOOL, _BY, claim="no such tool behind the proxy"
                )
            elif entry.state is ToolState.POISONED:
                verdict = Verdict.deny(
                    Reason.TRUST_VIOLATION, _BY, claim="tool definition quarantined"
                )
            else:
                verdict = Verdict.deny(
                    Reason.TRUST_VIOLATION, _BY, claim="tool definition changed; pin its digest"
                )
            self._proxy_deny(call, verdict)
            self.counts[(server, name, "deny")] += 1
            return self._refusal(verdict, name, trace_id, start)
        if self._journal_threaded:  # an fsync'd row: off the event loop
            verdict = await anyio.to_thread.run_sync(self.kernel.decide, call)
        else:
            verdict = self.kernel.decide(call)
        if not verdict.admits:
            self.counts[(server, name, "deny")] += 1
            return self._refusal(held_as_deny(verdict), name, trace_id, start)
        if verdict.kind == VerdictKind.TRANSFORM and verdict.new_args is not None:
            args = dict(verdict.new_args)
        downstream = self.downstreams[server]
        relay = self._progress_relay(progress_token)
        try:
            result = await downstream.call_tool(entry.tool.name, args, relay)
        except DownstreamUnavailable:
            self.counts[(server, name, "unavailable")] += 1
            fault = {
                "tool": name,
                "server": server,
                "exception": "DownstreamUnavailable",
                "restarting": True,
            }
            return self._answer(ReplyBuilder().error(_TOOL_FAILED, fault), trace_id, start)
        except MCPError as exc:  # the server answered a JSON-RPC error: its text is untrusted
            self.counts[(server, name, "error")] += 1
            fault = {
                "tool": name,
                "server": server,
                "exception": "MCPError",
                "rpc_code": exc.error.code,
            }
            return self._answer(ReplyBuilder().error(_TOOL_FAILED, fault), trace_id, start)
        if self._journal_threaded:
            walled = await anyio.to_thread.run_sync(self._wall, name, result, trace_id)
        else:
            walled = self._wall(name, result, trace_id)
        self.counts[(server, name, "allow")] += 1
        key = (server, name)
        self.latency_s[key] = self.latency_s.get(key, 0.0) + time.perf_counter() - start
        return walled

    def _progress_relay(self, token: Any) -> Any:
        upstream = self._upstream
        if token is None or upstream is None:
            return None

        async def relay(progress: float, total: float | None, message: str | None) -> None:
            with contextlib.suppress(Exception):
                await upstream.send_progress_notification(token, progress, total, None)

        return relay

    # -- the upstream server ----------------------------------------------------------------------
    def _build_server(self, name: str) -> Server[Any]:
        proxy = self

        async def list_tools(
            ctx: Any, params: types.PaginatedRequestParams | None
        ) -> types.ListToolsResult:
            proxy._upstream = ctx.session
            await proxy._all_ready()
            return types.ListToolsResult(tools=[*proxy.catalog.visible(), proxy._page_in_tool])

        async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
            proxy._upstream = ctx.session
            token = _progress_token(ctx.meta) or _progress_token(params.meta)
            return await proxy.call(params.name, params.arguments, token)

        async def list_resources(
            ctx: Any, params: types.PaginatedRequestParams | None
        ) -> types.ListResourcesResult:
            proxy._upstream = ctx.session
            await proxy._all_ready()
            found: list[types.Resource] = []
            for server, downstream in proxy.downstreams.items():
                with contextlib.suppress(DownstreamUnavailable, MCPError):
                    page = await downstream.list_resources()
                    for resource in page.resources:
                        proxy._resources.setdefault(str(resource.uri), server)
                        found.append(resource)
            return types.ListResourcesResult(resources=found)

        async def read_resource(
            ctx: Any, params: types.ReadResourceRequestParams
        ) -> types.ReadResourceResult:
            uri = str(params.uri)
            server = proxy._resources.get(uri)
            if server is None:
                raise MCPError(
                    types.INVALID_PARAMS, f"unknown resource: list resources first ({uri})"
                )
            try:
                result = await proxy.downstreams[server].read_resource(uri)
            except DownstreamUnavailable as exc:
                raise MCPError(
                    types.INTERNAL_ERROR, f"server {server!r} unavailable; restarting"
                ) from exc
            tool = f"{server}{proxy.config.separator}resource"
            contents: list[Any] = []
            for item in result.contents:
                if isinstance(item, types.TextResourceContents):
                    text, _ = proxy._admit_text(tool, item.text, new_trace_id())
                    contents.append(item.model_copy(update={"text": text}))
                elif proxy.config.images:
                    contents.append(item)
            return types.ReadResourceResult(contents=contents)

        async def list_prompts(
            ctx: Any, params: types.PaginatedRequestParams | None
        ) -> types.ListPromptsResult:
            proxy._upstream = ctx.session
            await proxy._all_ready()
            found: list[types.Prompt] = []
            for server, downstream in proxy.downstreams.items():
                with contextlib.suppress(DownstreamUnavailable, MCPError):
                    page = await downstream.list_prompts()
                    for prompt in page.prompts:
                        exposed = f"{server}{proxy.config.separator}{prompt.name}"
                        found.append(prompt.model_copy(update={"name": exposed}))
            return types.ListPromptsResult(prompts=found)

        async def get_prompt(
            ctx: Any, params: types.GetPromptRequestParams
        ) -> types.GetPromptResult:
            server, sep, prompt = params.name.partition(proxy.config.separator)
            downstream = proxy.downstreams.get(server)
            if not sep or downstream is None:
                raise MCPError(types.INVALID_PARAMS, f"unknown prompt: {params.name}")
            try:
                result = await downstream.get_prompt(prompt, params.arguments)
            except DownstreamUnavailable as exc:
                raise MCPError(
                    types.INTERNAL_ERROR, f"server {server!r} unavailable; restarting"
                ) from exc
            tool = f"{server}{proxy.config.separator}prompt"
            messages = []
            for message in result.messages:
                block, _ = proxy._wall_block(tool, message.content, new_trace_id())
                messages.append(message.model_copy(update={"content": block}))
            return result.model_copy(update={"messages": messages})

        return Server(
            name,
            version="1",
            title="fak MCP proxy",
            instructions=_INSTRUCTIONS,
            on_list_tools=list_tools,
            on_call_tool=call_tool,
            on_list_resources=list_resources,
            on_read_resource=read_resource,
            on_list_prompts=list_prompts,
            on_get_prompt=get_prompt,
        )


async def serve_proxy_stdio(kernel: Kernel, config: ProxyConfig) -> None:
    """Run the proxy on this process's stdin/stdout until the client hangs up."""
    from fak.gateway.mcp.pipes import loop_pipes

    proxy = McpProxy(kernel, config, session_context=True)
    async with loop_pipes() as streams, proxy.running():
        await serve_server_stdio(proxy.server, proxy.initialization_options(), streams=streams)
