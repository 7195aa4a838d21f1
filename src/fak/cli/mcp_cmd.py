"""Verb ``mcp`` (tier T5): fak's MCP tools over stdio, and ``mcp proxy`` in front of MCP servers.

Builds the kernel from settings (``FAK_AUDIT_JOURNAL`` and the other ``FAK_*`` names) and an
optional strict ``--policy`` manifest, registers the tools named by ``--tools`` on it, then hands
stdin/stdout to the MCP SDK. ``mcp proxy`` loads an ``mcpServers`` file (``--config``) or takes
one server after ``--`` and serves ``fak.gateway.mcp.McpProxy``. stdout is the protocol: this
module writes only to stderr. Exit codes: 0 when the client hangs up, 1 on a bad policy or proxy
config file or an unopenable journal, 2 on bad usage (``--policy -``, a bad ``--tools`` spec,
neither or both of ``--config`` and ``-- CMD``) or a missing ``gateway`` extra.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.util
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from fak.config import Settings, process_environ

if TYPE_CHECKING:
    from fak.kernel import Kernel

__all__ = ["load_tools", "register"]


def _fail(message: str, code: int) -> NoReturn:
    click.secho(f"fak mcp: {message}", fg="red", err=True)
    sys.exit(code)


def _module(ref: str) -> Any:
    """A module by dotted name, or a ``.py`` file by path."""
    if ref.endswith(".py"):
        path = Path(ref)
        spec = importlib.util.spec_from_file_location(f"fak_mcp_tools_{path.stem}", path)
        if spec is None or spec.loader is None or not path.is_file():
            msg = f"no such file {ref}"
            raise ImportError(msg)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    return importlib.import_module(ref)


def load_tools(kernel: Kernel, spec: str) -> None:
    """Call ``FUNC(kernel)`` for a ``MODULE:FUNC`` or ``PATH.py:FUNC`` spec (it registers tools).

    Raises ``click.UsageError`` saying what to fix when the spec cannot be used.
    """
    ref, sep, attr = spec.rpartition(":")
    if not sep or not ref or not attr.isidentifier():
        msg = f"--tools {spec!r}: expected MODULE:FUNC or PATH.py:FUNC"
        raise click.UsageError(msg)
    try:
        module = _module(ref)
    except Exception as exc:  # an import error in user code: say which spec and what kind
        msg = f"--tools {spec!r}: cannot import {ref}: {type(exc).__name__}: {exc}"
        raise click.UsageError(msg) from exc
    func = getattr(module, attr, None)
    if not callable(func):
        msg = f"--tools {spec!r}: {ref} has no callable {attr!r}"
        raise click.UsageError(msg)
    try:
        func(kernel)
    except Exception as exc:
        msg = f"--tools {spec!r}: {attr}(kernel) raised {type(exc).__name__}: {exc}"
        raise click.UsageError(msg) from exc


def register(group: click.Group) -> None:
    """Attach ``mcp`` to the ``fak`` group."""

    @group.group("mcp", invoke_without_command=True)
    @click.option(
        "--policy",
        "policy_path",
        default=None,
        type=click.Path(dir_okay=False),
        help="Policy manifest (default: the built-in floor); absolute in client configs.",
    )
    @click.option(
        "--tools",
        "tool_specs",
        multiple=True,
        metavar="MODULE:FUNC",
        help="Call FUNC(kernel) to register tools for fak_syscall (repeat; PATH.py:FUNC too).",
    )
    @click.pass_context
    def mcp(ctx: click.Context, policy_path: str | None, tool_specs: tuple[str, ...]) -> None:
        """Serve fak as an MCP server over stdio (fak_adjudicate, fak_syscall, fak_admit, ...).

        `fak mcp proxy` instead puts fak in front of other MCP servers.
        """
        if ctx.invoked_subcommand is not None:
            return
        try:
            import anyio

            from fak.gateway.mcp.server import serve_stdio
        except ImportError as exc:
            _fail(f"needs the gateway extra ({exc.name}): pip install 'fak[gateway]'", 2)
        kernel = _kernel(policy_path)
        for spec in tool_specs:
            load_tools(kernel, spec)
        settings = Settings.from_environ(process_environ())
        click.echo(
            f"fak mcp: serving on stdio (policy {policy_path or 'built-in default'}, "
            f"journal {settings.audit_journal or 'off'})",
            err=True,
        )
        with contextlib.suppress(KeyboardInterrupt):  # the client's ^C is a normal exit
            anyio.run(functools.partial(serve_stdio, kernel, witness_key=settings.witness_key))

    @mcp.command("proxy", context_settings={"ignore_unknown_options": True})
    @click.option(
        "--config",
        "config_path",
        default=None,
        type=click.Path(dir_okay=False),
        help="A file with an mcpServers block (the shape Claude Code and Cursor use).",
    )
    @click.option(
        "--policy",
        "policy_path",
        default=None,
        type=click.Path(dir_okay=False),
        help="Policy manifest naming <server>__<tool> names (default: the built-in floor).",
    )
    @click.option(
        "--name",
        "server_name",
        default="server",
        show_default=True,
        help="With `-- CMD ARGS`: the server name that prefixes its tools.",
    )
    @click.argument("command", nargs=-1, type=click.UNPROCESSED)
    def proxy(
        config_path: str | None,
        policy_path: str | None,
        server_name: str,
        command: tuple[str, ...],
    ) -> None:
        """Put fak in front of MCP servers: serve their tools over stdio, every call adjudicated.

        \b
        fak mcp proxy --config servers.json --policy floor.json
        fak mcp proxy --name time --policy floor.json -- uvx mcp-server-time
        """
        if (config_path is None) == (not command):
            raise click.UsageError("give --config FILE or `-- COMMAND [ARGS...]` (one of them)")
        if policy_path == "-" or config_path == "-":
            raise click.UsageError("stdin carries the MCP protocol; pass file paths")
        try:
            import anyio

            from fak.gateway.mcp import (
                ProxyConfigError,
                load_proxy_config_file,
                serve_proxy_stdio,
                single_server_config,
            )
        except ImportError as exc:
            _fail(f"needs the gateway extra ({exc.name}): pip install 'fak[gateway]'", 2)
        try:
            if config_path is not None:
                config = load_proxy_config_file(config_path, process_environ())
            else:
                config = single_server_config(server_name, command[0], tuple(command[1:]))
        except ProxyConfigError as exc:
            _fail(f"--config {config_path or '-'}: {exc}", 1)
        kernel = _kernel(policy_path)
        settings = Settings.from_environ(process_environ())
        names = ", ".join(s.name for s in config.servers)
        click.echo(
            f"fak mcp proxy: serving on stdio in front of {names} (policy "
            f"{policy_path or 'built-in default'}, journal {settings.audit_journal or 'off'})",
            err=True,
        )
        with contextlib.suppress(KeyboardInterrupt):
            anyio.run(
                serve_proxy_stdio,
                kernel,
                config,
                settings.witness_key,
                backend_options=_loop_options(),
            )


def _kernel(policy_path: str | None) -> Kernel:
    """The kernel from FAK_* settings and a strict policy file; exits 1 on a bad one."""
    if policy_path == "-":
        raise click.UsageError("--policy -: stdin carries the MCP protocol; pass a file path")
    from fak.journal import JournalCorruptError, open_error_line
    from fak.kernel import build_kernel
    from fak.policy import Policy, PolicyError

    policy = None
    if policy_path is not None:
        try:
            policy = Policy.load(policy_path)
        except PolicyError as exc:
            _fail(f"--policy {policy_path}: {exc}", 1)
    settings = Settings.from_environ(process_environ())
    try:
        return build_kernel(settings, policy)
    except (OSError, JournalCorruptError) as exc:
        _fail(open_error_line(str(settings.audit_journal), exc), 1)


def _loop_options() -> dict[str, Any]:
    """uvloop when installed (the gateway extra brings it): fewer microseconds per hop."""
    return {"use_uvloop": importlib.util.find_spec("uvloop") is not None}
