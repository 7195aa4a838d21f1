"""Assembles ``fak serve`` from a ``ServeConfig`` (tier T3): policy, kernel, app, workers.

``serve(config, planner, ...)`` loads the policy once, then per worker (after the fork when
``config.workers > 1``) builds the kernel from ``config.settings``, the policy follower (shared
epochs only), the planner (the caller's factory: only the CLI may import the engine), the MCP
proxy and the app, and serves it. A start-up failure is a ``StartError`` naming its stage, handed
to the caller's ``fail`` (which renders it and exits with the CLI's code): this module chooses
no exit code and prints nothing except through the caller's ``Console``.
"""

from __future__ import annotations

import enum
import ipaddress
import os
import socket
import sys
from collections.abc import Callable, Mapping
from typing import Any, NoReturn, assert_never

from fak.abi import Planner
from fak.gateway.app import build_app
from fak.gateway.routes.native import file_events
from fak.gateway.server import bind
from fak.gateway.server import serve as run_server
from fak.gateway.serving.config import AccessLogSink, ServeConfig
from fak.gateway.serving.follower import follow_policy, shared_change_log, trust_feed
from fak.gateway.serving.workers import Console, run_workers
from fak.gateway.state import GatewayOptions, PolicyReloader
from fak.journal import JournalCorruptError
from fak.kernel import Kernel, build_kernel
from fak.policy import Policy, PolicyError, default_manifest

__all__ = ["RootConflict", "StartError", "StartStage", "serve"]

PlannerFactory = Callable[[], Planner]


class StartStage(enum.StrEnum):
    """Which part of start-up failed (the CLI picks the message and exit code by it)."""

    POLICY = "policy"  # the --policy file: PolicyError or OSError
    KERNEL = "kernel"  # the stores: ImportError, ValueError, ConnectionError, OSError, corrupt
    MCP_PROXY = "mcp-proxy"  # the --mcp-proxy file: ProxyConfigError
    BIND = "bind"  # the listening socket: OSError


class StartError(Exception):
    """``fak serve`` could not start; ``cause`` is the exception from ``stage``."""

    def __init__(self, stage: StartStage, cause: BaseException) -> None:
        message = f"{stage}: {cause}"
        super().__init__(message)
        self.stage = stage
        self.cause = cause


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class _LineWriter:
    """Access-log sink: lines go to the stream's byte buffer; the log flushes once a request."""

    __slots__ = ("_buffer",)

    def __init__(self, stream: Any) -> None:
        self._buffer = stream.buffer

    def __call__(self, line: bytes) -> None:
        self._buffer.write(line)

    def flush(self) -> None:
        self._buffer.flush()


def _access_log(sink: AccessLogSink) -> _LineWriter | None:
    match sink:
        case AccessLogSink.STDOUT:
            return _LineWriter(sys.stdout)
        case AccessLogSink.STDERR:
            return _LineWriter(sys.stderr)
        case AccessLogSink.OFF:
            return None
        case unreachable:
            assert_never(unreachable)


def _examples(origin: str, model: str) -> str:
    json_header = "-H 'content-type: application/json'"
    chat = (
        f'{{"model":"{model}","max_tokens":40,"messages":[{{"role":"user",'
        '"content":"What is the capital of France?"}]}'
    )
    return "\n".join(
        [
            "try, in another shell:",
            f"  curl -s {origin}/healthz",
            f"  curl -s {origin}/v1/fak/adjudicate {json_header} "
            """-d '{"tool":"delete_account","arguments":{}}'""",
            f"  curl -s {origin}/v1/chat/completions {json_header} -d '{chat}'",
        ]
    )


class RootConflict(ValueError):
    """``--root`` and the manifest's ``root`` name different directories."""


def _rooted(policy: Policy, root: str | None) -> Policy:
    """``policy`` once its path rules resolve against ``root`` (``--root``): a manifest naming
    another root is refused rather than silently preferred."""
    if root is None or policy.root == root:
        return policy
    if policy.manifest.root is not None:
        msg = (
            f"[FAK-ROOT-CONFLICT] the manifest's root {policy.manifest.root} and --root {root} "
            "differ; drop one of them"
        )
        raise RootConflict(msg)
    return Policy(policy.manifest, root=root)


def _open_policy(
    path: str | None, root: str | None = None
) -> tuple[Policy | None, PolicyReloader | None]:
    if not path:
        return (None, None) if root is None else (Policy(default_manifest(), root=root), None)
    try:
        policy = _rooted(Policy.load(path, root=root), root)
    except (PolicyError, RootConflict, OSError) as exc:
        raise StartError(StartStage.POLICY, exc) from exc

    def reloader() -> tuple[Any, Mapping[str, Any]]:
        fresh = _rooted(Policy.load(path, root=root), root)
        return fresh, fresh.summary()

    return policy, reloader


def _open_kernel(config: ServeConfig, policy: Policy | None) -> Kernel:
    try:
        return build_kernel(config.settings, policy)
    except (ImportError, ValueError, OSError, JournalCorruptError) as exc:
        raise StartError(StartStage.KERNEL, exc) from exc


def _events(config: ServeConfig, kernel: Kernel) -> Callable[[int, int], Any] | None:
    """The /v1/fak/events reader: the journal file, or the PostgreSQL journal's own rows."""
    settings = config.settings
    if settings.audit_journal:
        return file_events(settings.audit_journal, kernel.journal)
    if settings.journal_url:
        from fak.journal.postgres import PostgresJournal

        journal = kernel.journal
        return journal.rows_after if isinstance(journal, PostgresJournal) else None
    return None


def _journal_verify(config: ServeConfig) -> Callable[[], Any] | None:
    """The console's chain check: the journal file, or the PostgreSQL journal."""
    settings = config.settings
    if settings.audit_journal:
        from fak.journal import verify

        path = settings.audit_journal
        return lambda: verify(path)
    if settings.journal_url:
        from fak.journal.postgres import verify_dsn

        dsn = settings.journal_url
        return lambda: verify_dsn(dsn)
    return None


def _mcp_proxy(config: ServeConfig, kernel: Kernel, environ: Mapping[str, str]) -> Any:
    if config.mcp_proxy_config is None:
        return None
    from fak.gateway.mcp import McpProxy, ProxyConfigError, load_proxy_config_file

    try:
        proxy_config = load_proxy_config_file(config.mcp_proxy_config, environ)
        return McpProxy(kernel, proxy_config, witness_key=config.witness_key)
    except ProxyConfigError as exc:
        raise StartError(StartStage.MCP_PROXY, exc) from exc


def _serve_worker(
    config: ServeConfig,
    index: int,
    sock: socket.socket | None,
    *,
    policy: Policy | None,
    reloader: PolicyReloader | None,
    planner_factory: PlannerFactory,
    environ: Mapping[str, str],
    console: Console,
) -> None:
    """Build this worker's kernel, planner and app (after any fork), then serve."""
    settings, host = config.settings, config.host
    kernel = _open_kernel(config, policy)
    if reloader is not None and settings.cas_url:
        follow_policy(kernel, reloader, trust_feed(settings.cas_url), console.warn)
    planner = planner_factory()
    loopback = _is_loopback(host)
    if not loopback and config.require_key is None:
        console.warn(
            f"binding {host}:{config.port} with NO client key: anyone who can reach it can use "
            "it. Add --require-key-env."
        )
    sink = _access_log(config.access_log)
    mcp_proxy = _mcp_proxy(config, kernel, environ)
    options = GatewayOptions.from_settings(
        settings,
        require_key=config.require_key,
        witness_key=config.witness_key,
        policy_reloader=reloader,
        policy_source=config.policy_path or "",
        events=_events(config, kernel),
        journal_verify=_journal_verify(config),
        console=config.console,
        access_log=sink,
        # loopback names on a loopback bind; a public bind answers to whatever names reach it
        # (its key is the guard) unless FAK_ALLOWED_HOSTS narrows them
        allowed_hosts=settings.allowed_hosts or (None if loopback else ("*",)),
        mcp_proxy=mcp_proxy,
        recall_dir=config.recall_dir,
        change_log=shared_change_log(settings.cas_url) if settings.cas_url else None,
    )
    app = build_app(kernel, planner, options)
    shown = f"[{host}]" if ":" in host else host

    def ready(bound: int) -> None:
        origin = f"http://{shown}:{bound}"
        workers = config.workers
        who = f"worker {index + 1}/{workers} (pid {os.getpid()}) " if workers > 1 else ""
        console.say(
            f"fak serve: {who}ready: planner={planner.kind} "
            f"model={planner.model or '-'} on {origin} (OpenAI base URL {origin}/v1, "
            f"Anthropic base URL {origin})"
        )
        if config.examples:
            console.say(_examples(origin, planner.model or "mock"))
        if config.console:
            console.say(f"fak serve: operator's console at {origin}/console (docs/console.md)")

    try:
        run_server(
            app,
            host=host,
            port=config.port,
            idle_timeout_s=settings.http_idle_timeout_s,
            on_ready=ready,
            sock=sock,
        )
    except OSError as exc:
        raise StartError(StartStage.BIND, exc) from exc


def serve(
    config: ServeConfig,
    planner: PlannerFactory,
    *,
    environ: Mapping[str, str],
    console: Console,
    fail: Callable[[StartError], NoReturn],
) -> int:
    """Serve ``config`` until interrupted; returns the exit code (0, or that of a worker that
    failed at start). ``planner()`` builds each worker's planner; ``environ`` expands the MCP
    proxy file's variables; ``fail`` gets every ``StartError`` (in the worker it happened in)."""
    try:
        policy, reloader = _open_policy(config.policy_path, config.root)
    except StartError as exc:
        fail(exc)

    def start(index: int, sock: socket.socket | None) -> None:
        try:
            _serve_worker(
                config,
                index,
                sock,
                policy=policy,
                reloader=reloader,
                planner_factory=planner,
                environ=environ,
                console=console,
            )
        except StartError as exc:
            fail(exc)

    if config.workers <= 1:
        start(0, None)
        return 0
    try:
        shared = bind(config.host, config.port)
    except OSError as exc:
        fail(StartError(StartStage.BIND, exc))
    return run_workers(config.workers, shared, lambda index: start(index, shared), console)
