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

import base64
import binascii
import contextlib
import logging
import threading
import time
import weakref
from collections import Counter
from collections.abc import AsyncIterator, Mapping
from typing import Any, Final

import anyio
import mcp.types as types
import orjson
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.shared.exceptions import MCPError

from fak.abi import Context, Reason, ToolCall, Verdict, VerdictKind
from fak.abi.replies import Reply, ReplyBuilder, envelope, new_trace_id, reply_for_verdict
from fak.gateway.mcp.catalog import Catalog, ToolState
from fak.gateway.mcp.config import ProxyConfig
from fak.gateway.mcp.downstream import Downstream, DownstreamHooks, DownstreamUnavailable
from fak.gateway.mcp.server import serve_server_stdio, tool_definitions, tool_result
from fak.gateway.mcp.tools import McpTools
from fak.journal import JournalKind, journal_record
from fak.kernel import Kernel
from fak.kernel.outcome import held_as_deny
from fak.kernel.views import decoded_view
from fak.policy import args_digest

__all__ = ["PROXY_NAME", "McpProxy", "serve_proxy_stdio"]

_log = logging.getLogger(__name__)

PROXY_NAME: Final = "fak-mcp-proxy"
_BY: Final = "mcp-proxy"
_TOOL_FAILED: Final = "MCP-EXEC-E-001"
_READY_WAIT_S: Final = 15.0
PAGE_IN: Final = "fak_page_in"
MAX_RESULT_BLOCKS: Final = 1024
"""Content blocks in one downstream result; more is refused whole (OVERSIZE)."""
MAX_RESULT_BYTES: Final = 16 * 1024 * 1024
"""Serialized bytes of one downstream result's content; more is refused whole (OVERSIZE)."""
"""The one tool the proxy adds: bytes behind a paged-out pointer (re-screened first)."""
_INSTRUCTIONS: Final = (
    "Tools here are served through fak, an agent kernel. A refused call answers with a reply "
    "envelope whose reply_type is D (denied) or I (invalid): read its reason and adapt, do not "
    "retry the same call. Content held by the result screen is replaced by a quarantine stub."
)


def _blob_text(res: types.BlobResourceContents) -> str | None:
    """A blob resource's bytes as text when its MIME type says text or they decode as UTF-8."""
    try:
        data = base64.b64decode(res.blob, validate=False)
    except (binascii.Error, ValueError):
        return None
    mime = (res.mime_type or "").lower()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1") if mime.startswith("text/") else None
    return text


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
        witness_key: str | None = None,
    ) -> None:
        self.kernel = kernel
        self.config = config
        self.context: Context | None = Context() if session_context else None
        # per MCP session (Streamable HTTP serves many): what its model was shown, for sink and
        # after_untrusted rules; dropped with the session
        self._session_contexts: weakref.WeakKeyDictionary[Any, Context] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()
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
        self._tools = McpTools(kernel, witness_key=witness_key)
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
    def context_for(self, session: Any) -> Context | None:
        """The run context of one client session: the stdio proxy's one context, else one per
        MCP session object (kept while the session lives)."""
        if self.context is not None or session is None:
            return self.context
        with self._lock:
            found = self._session_contexts.get(session)
            if found is None:
                found = self._session_contexts[session] = Context()
            return found

    def _admit(
        self, tool: str, value: Any, trace_id: str, context: Context | None = None
    ) -> tuple[str, bool]:
        """One admission (text, or a JSON value screened decoded): what the model is shown and
        whether it passed whole; what it is shown joins the session's run context."""
        admission = self.kernel.admit_value(tool, value, trace_id=trace_id)
        clean = admission.verdict.kind == VerdictKind.ALLOW
        shown = admission.payload.decode("utf-8", "replace")
        run = context if context is not None else self.context
        if run is not None:
            run.result(tool, trace_id, shown)
        return shown, clean

    def _held_meta(
        self, tool: str, block: Any, trace_id: str, context: Context | None = None
    ) -> str | None:
        """A block's ``_meta`` is screened too: the stub when it does not pass, else None."""
        meta = block.meta  # every SDK content type has the optional ``_meta``
        if not meta:
            return None
        text, clean = self._admit(tool, meta, trace_id, context)
        return None if clean else text

    def _wall_block(
        self, tool: str, block: Any, trace_id: str, context: Context | None = None
    ) -> tuple[Any, bool]:
        held = self._held_meta(tool, block, trace_id, context)
        if held is not None:
            return types.TextContent(type="text", text=held), False
        match block:
            case types.TextContent():
                text, clean = self._admit(tool, block.text, trace_id, context)
                return (block if clean else types.TextContent(type="text", text=text)), clean
            case types.EmbeddedResource(resource=types.TextResourceContents() as res):
                text, clean = self._admit(tool, res.text, trace_id, context)
                if clean:
                    return block, True
                return types.TextContent(type="text", text=text), False
            case types.EmbeddedResource(resource=types.BlobResourceContents() as res):
                decoded = _blob_text(res)  # a text blob is text: screened as the model reads it
                if decoded is not None:
                    text, clean = self._admit(tool, decoded, trace_id, context)
                    if clean:
                        return block, True
                    return types.TextContent(type="text", text=text), False
                return self._media(block)
            case types.ImageContent() | types.AudioContent() | types.EmbeddedResource():
                return self._media(block)
            case types.ResourceLink():
                dumped = block.model_dump(mode="json", by_alias=True, exclude_none=True)
                text, clean = self._admit(
                    tool, dumped, trace_id, context
                )  # name, title, description
                return (block if clean else types.TextContent(type="text", text=text)), clean
        note = f'{{"_dropped":true,"type":"unknown","by":"{_BY}"}}'
        return types.TextContent(type="text", text=note), False

    def _clean_definition(self, definition: Any) -> bool:
        """A listed definition (a prompt) whose every string passes the screen, as JSON and
        decoded; it is not admitted (nothing is held), only judged."""
        dumped = definition.model_dump(mode="json", by_alias=True, exclude_none=True)
        ledger = self.kernel.ledger
        for text in (orjson.dumps(dumped), decoded_view(dumped).encode("utf-8", "replace")):
            if ledger.screen(text).kind != VerdictKind.ALLOW:
                return False
        return True

    def _media(self, block: Any) -> tuple[Any, bool]:
        if self.config.images:
            return block, True
        note = f'{{"_dropped":true,"type":"{block.type}","by":"{_BY}"}}'
        return types.TextContent(type="text", text=note), False

    def _too_big(self, result: types.CallToolResult) -> str:
        """Why ``result`` is past the proxy's caps ('' when it is not)."""
        if len(result.content) > MAX_RESULT_BLOCKS:
            return f"{len(result.content)} content blocks (at most {MAX_RESULT_BLOCKS})"
        size = 0
        for block in result.content:
            size += len(orjson.dumps(block.model_dump(mode="json", exclude_none=True)))
            if size > MAX_RESULT_BYTES:
                return f"more than {MAX_RESULT_BYTES} bytes"
        return ""

    def _wall(
        self,
        tool: str,
        result: types.CallToolResult,
        trace_id: str,
        context: Context | None = None,
    ) -> types.CallToolResult:
        """Every part of a result the client may show the model passes the kernel's one
        admission — content blocks, their ``_meta``, ``structuredContent`` and the result's
        ``_meta`` — journaled with one group commit; past the caps it is refused whole."""
        too_big = self._too_big(result)
        if too_big:
            verdict = Verdict.deny(Reason.OVERSIZE, _BY, claim=f"the result has {too_big}")
            return self._refusal(verdict, tool, trace_id, time.perf_counter())
        content: list[Any] = []
        all_clean = True
        with self.kernel.batch():
            for block in result.content:
                out, clean = self._wall_block(tool, block, trace_id, context)
                content.append(out)
                all_clean = all_clean and clean
            structured = None
            if result.structured_content is not None and all_clean:
                _, clean = self._admit(tool, result.structured_content, trace_id, context)
                structured = result.structured_content if clean else None
            meta = None
            if result.meta:
                _, clean = self._admit(tool, result.meta, trace_id, context)
                meta = result.meta if clean else None
        return types.CallToolResult(
            content=content, structured_content=structured, is_error=result.is_error, _meta=meta
        )

    # -- tools ----------------------------------------------------------------------------------
    async def call(
        self,
        name: str,
        arguments: Mapping[str, Any] | None,
        progress_token: Any = None,
        session: Any = None,
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
        run = self.context_for(session)
        call = ToolCall(name, args, trace_id=trace_id, context=run)
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
            walled = await anyio.to_thread.run_sync(self._wall, name, result, trace_id, run)
        else:
            walled = self._wall(name, result, trace_id, run)
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
            return await proxy.call(params.name, params.arguments, token, ctx.session)

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
                    text, _ = proxy._admit(tool, item.text, new_trace_id())
                    contents.append(item.model_copy(update={"text": text}))
                    continue
                decoded = _blob_text(item)  # a text blob is screened as the text it holds
                if decoded is not None:
                    text, clean = proxy._admit(tool, decoded, new_trace_id())
                    if not clean:
                        held = types.TextResourceContents(uri=item.uri, text=text)
                        contents.append(held)
                        continue
                    contents.append(item)
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
                        if not proxy._clean_definition(prompt):  # hidden, like a poisoned tool
                            continue
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
            if result.description:
                shown, _ = proxy._admit(tool, result.description, new_trace_id())
                result = result.model_copy(update={"description": shown})
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


async def serve_proxy_stdio(
    kernel: Kernel, config: ProxyConfig, witness_key: str | None = None
) -> None:
    """Run the proxy on this process's stdin/stdout until the client hangs up."""
    from fak.gateway.mcp.pipes import loop_pipes

    proxy = McpProxy(kernel, config, session_context=True, witness_key=witness_key)
    async with loop_pipes() as streams, proxy.running():
        await serve_server_stdio(proxy.server, proxy.initialization_options(), streams=streams)
