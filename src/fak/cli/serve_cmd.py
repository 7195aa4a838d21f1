"""The ``fak serve`` verb (tier T5): flags, the planner choice and exit codes.

The flags fill a ``fak.gateway.serving.ServeConfig`` (with ``fak.config.Settings``, the flags
winning); ``fak.gateway.serving.serve`` assembles the kernel, the app, the workers and the
policy follower from it. Planner precedence (the choice stays here: only the CLI may import the
engine): ``--upstreams FILE`` → the router over a LiteLLM-format ``model_list`` (docs/routing.md;
a ``fak/engine`` deployment is the in-kernel engine); ``--base-url`` → upstream proxy
(``--provider``, ``--api-key-env`` names the variable holding the upstream key); else
``--gguf`` or an installed engine with its model → ``fak.engine.load_engine_planner`` (imported
lazily; the gateway never imports the engine); else the scripted mock with a loud warning (also
when the default model cannot be loaded).
``--threads``, ``--engine-mode``, ``--max-batch`` and ``--max-kv-bytes`` go to the engine.
``--workers N`` forks N worker processes on one listening socket (each builds its own kernel
after the fork); N > 1 needs the shared stores (``FAK_CAS_URL`` / ``--cas-url``, see
docs/deploy.md) and is refused on process-local ones.
Exit codes: 1 bad policy or upstreams file (one line per problem, and one per key fak's router
does not support unless ``--upstreams-ignore-unsupported``) or a store that cannot be opened, 2
bad usage (an empty ``--require-key-env`` variable, an unknown flag value, an unloadable or
unsupported ``--gguf``, ``--workers`` on process-local stores, ``--upstreams`` with
``--base-url``).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NoReturn, assert_never

import click

from fak.config import Settings, process_environ
from fak.wire import WireName

if TYPE_CHECKING:
    from fak.gateway.serving import Console, ServeConfig, StartError

__all__ = ["build_planner", "register"]

_log = logging.getLogger(__name__)


def _warn(msg: str) -> None:
    click.secho(f"WARNING: {msg}", fg="yellow", err=True)


def _split_addr(addr: str) -> tuple[str, int]:
    host, sep, port = addr.rpartition(":")
    if not sep or not port.isdigit():
        raise click.BadParameter("use HOST:PORT, e.g. 127.0.0.1:8080", param_hint="--addr")
    return host.strip("[]") or "127.0.0.1", int(port)


def _secret(environ: Mapping[str, str], var: str, flag: str) -> str:
    value = environ.get(var, "")
    if not value:
        click.secho(
            f"error: {flag} {var}: the variable is unset or empty; refusing to start",
            fg="red",
            err=True,
        )
        sys.exit(2)
    return value


def build_planner(
    *,
    base_url: str | None,
    provider: str,
    model: str,
    api_key: str | None,
    gguf: str | None,
    mock: bool,
    upstream_client: str,
    timeout_s: float,
    threads: int | None = None,
    upstream_max_bytes: int | None = None,
    engine_options: Mapping[str, Any] | None = None,
    upstreams: Any = None,
) -> Any:
    """The planner by the precedence in the module docstring.

    ``engine_options`` are keyword arguments for ``load_engine_planner`` (``max_batch``,
    ``max_kv_bytes``, ``mode``); they are ignored by the upstream proxy and the mock.
    ``upstreams`` is a loaded ``fak.gateway.upstream.config.RouterConfig``.
    """
    from fak.testing.planner import MockPlanner

    if upstreams is not None:
        from fak.gateway.upstream.client import default_upstream
        from fak.gateway.upstream.router import build_router

        limit = {} if upstream_max_bytes is None else {"max_body_bytes": upstream_max_bytes}

        def upstream(timeout: float) -> Any:
            return default_upstream(upstream_client, timeout_s=timeout or timeout_s, **limit)

        def engine() -> Any:
            from fak.engine import load_engine_planner

            try:
                return load_engine_planner(gguf, threads=threads, **dict(engine_options or {}))
            except (ImportError, OSError, AttributeError, ValueError) as exc:
                click.secho(f"error: --upstreams names fak/engine: {exc}", fg="red", err=True)
                sys.exit(2)

        return build_router(upstreams, upstream, engine=engine)
    if base_url:
        from fak.gateway.upstream.client import default_upstream
        from fak.gateway.upstream.planner import ProxyPlanner

        limit = {} if upstream_max_bytes is None else {"max_body_bytes": upstream_max_bytes}
        client = default_upstream(upstream_client, timeout_s=timeout_s, **limit)
        return ProxyPlanner(
            client, base_url=base_url, provider=provider, api_key=api_key, model=model
        )
    if not mock:
        try:
            from fak.engine import load_engine_planner

            return load_engine_planner(gguf, threads=threads, **dict(engine_options or {}))
        except (ImportError, OSError, AttributeError, ValueError) as exc:
            if gguf:
                click.secho(f"error: cannot load --gguf {gguf}: {exc}", fg="red", err=True)
                sys.exit(2)
            if isinstance(exc, ValueError):  # installed, but its model is not one it can run
                _warn(f"the in-kernel model cannot be served: {exc}")
            _log.debug("engine unavailable: %s", type(exc).__name__)
    _warn(
        "no --base-url and no in-kernel model: serving the SCRIPTED MOCK planner. Replies are "
        "canned; use --base-url to front a real model."
    )
    return MockPlanner(model=model or "mock")


_SIZE_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "kib": 1 << 10}
_SIZE_UNITS |= {"mib": 1 << 20, "gib": 1 << 30, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


class ByteSize(click.ParamType[int]):
    """A byte count: ``1073741824``, ``512MiB``, ``4GiB``, ``2GB`` (k/m/g mean KiB/MiB/GiB)."""

    name = "size"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        text = str(value).strip().lower().replace(" ", "")
        digits = text.rstrip("abcdefghijklmnopqrstuvwxyz")
        unit = text[len(digits) :]
        try:
            number = float(digits)
        except ValueError:
            number = -1.0
        if unit not in _SIZE_UNITS or number <= 0:
            self.fail(f"{value!r} is not a size; use e.g. 4GiB, 512MiB or a byte count", param, ctx)
        return int(number * _SIZE_UNITS[unit])


def _workers_refusal(settings: Settings, workers: int) -> str | None:
    local = settings.process_local_stores()
    if workers <= 1 or not local:
        return None
    return (
        f"--workers {workers} needs decision state shared by every worker, but "
        f"{', '.join(local)} is not set: each worker would hold its own quarantine ledger, "
        "CAS and vDSO epochs. Set FAK_CAS_URL=redis://HOST:6379/0 (or --cas-url), and "
        "FAK_JOURNAL_URL=postgresql://USER@HOST/DB (or --journal-url) for one journal chain "
        "(docs/deploy.md); or run one worker."
    )


def _load_upstreams(path: str, environ: Mapping[str, str], ignore: bool) -> Any:
    """The ``--upstreams`` file as a ``RouterConfig``; a bad file exits 1 with one line per
    problem (each unsupported key once, by name)."""
    from fak.gateway.upstream.config import UpstreamsError, load_upstreams

    try:
        config = load_upstreams(path, environ, ignore_unsupported=ignore)
    except UpstreamsError as exc:
        for line in exc.lines:
            click.secho(f"error: --upstreams {path}: {line}", fg="red", err=True)
        sys.exit(1)
    for line in config.unsupported:
        _warn(f"--upstreams {path}: {line} (ignored: --upstreams-ignore-unsupported)")
    return config


def _start_failure(exc: StartError, *, addr: str, config: ServeConfig) -> tuple[str, int]:
    """The message and exit code for a start-up failure (1: a file or a store; 2: usage)."""
    from fak.gateway.serving import StartStage
    from fak.journal import open_error_line

    cause = exc.cause
    match exc.stage:
        case StartStage.POLICY:
            return f"--policy {config.policy_path}: {cause}", 1
        case StartStage.KERNEL:
            if isinstance(cause, ImportError):
                extra = "the shared stores need the shared extra (pip install 'fak[shared]')"
                return f"{extra}: {cause}", 2
            if isinstance(cause, ValueError):
                return f"{cause}", 2
            if isinstance(cause, ConnectionError):
                return f"[FAK-STORE-DOWN] {cause}", 1
            return open_error_line(str(config.settings.audit_journal), cause), 1
        case StartStage.MCP_PROXY:
            return f"--mcp-proxy {config.mcp_proxy_config}: {cause}", 1
        case StartStage.BIND:
            reason = cause.strerror if isinstance(cause, OSError) else None
            return f"cannot bind {addr}: {reason or cause}", 2
        case unreachable:
            assert_never(unreachable)


def _say(line: str) -> None:
    click.echo(line, err=True)


def _console() -> Console:
    from fak.gateway.serving import Console

    return Console(say=_say, warn=_warn)


def register(group: click.Group) -> None:
    """Attach ``serve`` to the ``fak`` group."""

    @group.command("serve")
    @click.option("--addr", default="127.0.0.1:8080", show_default=True, help="HOST:PORT to bind.")
    @click.option("--base-url", default=None, help="Upstream model URL (OpenAI: include /v1).")
    @click.option(
        "--upstreams",
        "upstreams_path",
        default=None,
        type=click.Path(dir_okay=False),
        help="A LiteLLM proxy config (model_list, router_settings, fallbacks): route each "
        "request by its model over many upstreams (docs/routing.md).",
    )
    @click.option(
        "--upstreams-ignore-unsupported",
        is_flag=True,
        help="Start even when --upstreams has keys fak's router does not support (each is "
        "printed once and has no effect); without it such a file is refused.",
    )
    @click.option(
        "--provider",
        type=click.Choice([str(w) for w in WireName]),
        default=str(WireName.OPENAI_CHAT),
        show_default=True,
        help="Upstream wire: Chat Completions, the Responses API (Codex, reasoning models), "
        "or Anthropic Messages.",
    )
    @click.option("--model", default="", help="Model name when the client sends none.")
    @click.option(
        "--api-key-env", default=None, metavar="VAR", help="Variable holding the upstream key."
    )
    @click.option(
        "--policy",
        "policy_path",
        default=None,
        type=click.Path(dir_okay=False),
        help="Policy manifest.",
    )
    @click.option(
        "--root",
        default=None,
        type=click.Path(file_okay=False, exists=True, resolve_path=True),
        help="The project directory path rules resolve against (default: the manifest's "
        "root, else the directory fak serve starts in).",
    )
    @click.option(
        "--pageout/--no-pageout",
        default=None,
        help="Page benign results over FAK_PAGEOUT_BYTES out behind a pointer for every "
        "client on the model wires (default off: only for a request with x-fak-pageout: on; "
        "FAK_PAGEOUT).",
    )
    @click.option(
        "--require-key-env",
        default=None,
        metavar="VAR",
        help="Variable holding the key clients must send.",
    )
    @click.option(
        "--witness-key-env",
        default=None,
        metavar="VAR",
        help="Variable holding the key that approves held calls (X-Fak-Witness-Key).",
    )
    @click.option(
        "--gguf", default=None, type=click.Path(dir_okay=False), help="In-kernel model file."
    )
    @click.option(
        "--threads",
        type=click.IntRange(min=1),
        default=None,
        help="CPU threads for the in-kernel engine (default: the engine's choice).",
    )
    @click.option(
        "--engine-mode",
        type=click.Choice(["exact", "fast"]),
        default="exact",
        show_default=True,
        help="In-kernel engine numerics: exact (float32 weights) or fast (4-bit weights, "
        "bfloat16 projections; ~2.5x the decode speed, not bit-equal to float32). Both keep "
        "reuse and eviction bit-exact within the mode.",
    )
    @click.option(
        "--max-batch",
        type=click.IntRange(min=1, max=256),
        default=8,
        show_default=True,
        help="In-kernel engine: requests decoded together at most; more wait for a 429.",
    )
    @click.option(
        "--max-kv-bytes",
        type=ByteSize(),
        default="4GiB",
        show_default=True,
        help="In-kernel engine: KV memory reserved for running requests (prompt + budget "
        "rows each); a request that does not fit now gets 429, one that never can 400.",
    )
    @click.option("--mock", is_flag=True, help="Force the scripted mock planner.")
    @click.option(
        "--no-console",
        is_flag=True,
        help="Do not serve the operator's console at /console (docs/console.md).",
    )
    @click.option(
        "--upstream-client",
        type=click.Choice(["auto", "aiohttp", "httpx"]),
        default="auto",
        show_default=True,
        help="HTTP client used for the upstream.",
    )
    @click.option(
        "--stdio",
        is_flag=True,
        help="Serve MCP over stdin/stdout instead of HTTP (the same as `fak mcp`).",
    )
    @click.option(
        "--examples",
        is_flag=True,
        help="Once ready, print curl commands to try against this server.",
    )
    @click.option(
        "--access-log",
        type=click.Choice(["stdout", "stderr", "off"]),
        default="stdout",
        show_default=True,
    )
    @click.option(
        "--mcp-proxy",
        "mcp_proxy_config",
        default=None,
        type=click.Path(dir_okay=False),
        help="An mcpServers file: /mcp serves `fak mcp proxy` in front of those servers.",
    )
    @click.option(
        "--recall-dir",
        default=None,
        type=click.Path(file_okay=False),
        help="Persist each session (x-fak-session header, else trace id) as a recall image here.",
    )
    @click.option(
        "--workers",
        type=click.IntRange(min=1, max=256),
        default=1,
        show_default=True,
        help="Worker processes on one port; more than 1 needs the shared stores. With the "
        "in-kernel engine: one gateway and N engine processes, each turn routed to the one "
        "whose KV cache holds its longest prefix (docs/routing_fleet.md).",
    )
    @click.option(
        "--cas-url",
        default=None,
        metavar="URL",
        help="redis://… for the CAS, quarantine ledger and vDSO epochs (FAK_CAS_URL).",
    )
    @click.option(
        "--journal-url",
        default=None,
        metavar="URL",
        help="postgresql://… for the decision journal, one chain for all workers "
        "(FAK_JOURNAL_URL).",
    )
    def serve(
        addr: str,
        base_url: str | None,
        upstreams_path: str | None,
        upstreams_ignore_unsupported: bool,
        provider: str,
        model: str,
        api_key_env: str | None,
        policy_path: str | None,
        root: str | None,
        pageout: bool | None,
        require_key_env: str | None,
        witness_key_env: str | None,
        gguf: str | None,
        threads: int | None,
        engine_mode: str,
        max_batch: int,
        max_kv_bytes: int,
        mock: bool,
        no_console: bool,
        upstream_client: str,
        stdio: bool,
        examples: bool,
        access_log: str,
        mcp_proxy_config: str | None,
        recall_dir: str | None,
        workers: int,
        cas_url: str | None,
        journal_url: str | None,
    ) -> None:
        """Serve the adjudicating gateway (OpenAI, Anthropic and fak-native wires on one port)."""
        if stdio:
            ctx = click.get_current_context()
            mcp = group.get_command(ctx, "mcp")
            if mcp is None:  # pragma: no cover - registered by fak.cli.main
                raise click.UsageError("--stdio needs the mcp verb")
            ctx.invoke(mcp, policy_path=policy_path, tool_specs=())
            return
        environ = process_environ()
        settings = Settings.from_environ(environ)
        if upstreams_path and base_url:
            click.secho(
                "error: --upstreams and --base-url both name upstreams; use one", fg="red", err=True
            )
            sys.exit(2)
        upstreams = (
            _load_upstreams(upstreams_path, environ, upstreams_ignore_unsupported)
            if upstreams_path
            else None
        )
        if cas_url or journal_url:
            settings = settings.with_overrides(
                cas_url=cas_url or settings.cas_url, journal_url=journal_url or settings.journal_url
            )
        if pageout is not None:
            settings = settings.with_overrides(pageout_wire=pageout)
        from fak.cli.engine_workers import engine_worker_planner, engine_workers_apply

        engine_workers = (
            workers
            if engine_workers_apply(workers=workers, base_url=base_url, mock=mock, gguf=gguf)
            else 1
        )
        if engine_workers > 1:  # one gateway, N engine processes behind the cache-aware router
            workers = 1
        refusal = _workers_refusal(settings, workers)
        if refusal is not None:
            click.secho(f"error: {refusal}", fg="red", err=True)
            sys.exit(2)
        host, port = _split_addr(addr)
        required = (
            _secret(environ, require_key_env, "--require-key-env") if require_key_env else None
        )
        upstream_key = _secret(environ, api_key_env, "--api-key-env") if api_key_env else None
        witness_key = (
            _secret(environ, witness_key_env, "--witness-key-env") if witness_key_env else None
        )

        from fak.gateway.serving import AccessLogSink, ServeConfig, serve

        config = ServeConfig(
            settings=settings,
            host=host,
            port=port,
            workers=workers,
            access_log=AccessLogSink(access_log),
            policy_path=policy_path,
            root=root,
            require_key=required,
            witness_key=witness_key,
            mcp_proxy_config=mcp_proxy_config,
            recall_dir=recall_dir,
            examples=examples,
            console=not no_console,
        )

        def planner() -> Any:
            if engine_workers > 1:
                return engine_worker_planner(
                    engine_workers,
                    gguf=gguf,
                    threads=threads,
                    engine_options={
                        "max_batch": max_batch,
                        "max_kv_bytes": max_kv_bytes,
                        "mode": engine_mode,
                    },
                )
            return build_planner(
                base_url=base_url,
                provider=provider,
                model=model,
                api_key=upstream_key,
                gguf=gguf,
                mock=mock,
                upstream_client=upstream_client,
                timeout_s=settings.http_write_timeout_s,
                threads=threads,
                upstream_max_bytes=settings.upstream_max_bytes,
                engine_options={
                    "max_batch": max_batch,
                    "max_kv_bytes": max_kv_bytes,
                    "mode": engine_mode,
                },
                upstreams=upstreams,
            )

        def fail(exc: StartError) -> NoReturn:
            message, code = _start_failure(exc, addr=addr, config=config)
            click.secho(f"error: {message}", fg="red", err=True)
            sys.exit(code)

        code = serve(config, planner, environ=environ, console=_console(), fail=fail)
        if code:
            sys.exit(code)
