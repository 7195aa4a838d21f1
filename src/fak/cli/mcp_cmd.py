"""Verb ``mcp`` (tier T4): serve fak's MCP tools over stdio for Claude Code, Cursor, any client.

Builds the kernel from settings (``FAK_AUDIT_JOURNAL`` and the other ``FAK_*`` names) and an
optional strict ``--policy`` manifest, registers the tools named by ``--tools`` on it, then hands
stdin/stdout to the MCP SDK. stdout is the protocol: this module writes only to stderr. Exit
codes: 0 when the client hangs up, 1 on a bad policy file or an unopenable journal, 2 on bad
usage (``--policy -``, a bad ``--tools`` spec) or a missing ``gateway`` extra.
"""

from __future__ import annotations

import contextlib
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

    @group.command("mcp")
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
    def mcp(policy_path: str | None, tool_specs: tuple[str, ...]) -> None:
        """Serve fak as an MCP server over stdio (fak_adjudicate, fak_syscall, fak_admit, ...)."""
        if policy_path == "-":
            raise click.UsageError("--policy -: stdin carries the MCP protocol; pass a file path")
        try:
            import anyio

            from fak.gateway.mcp_server import serve_stdio
        except ImportError as exc:
            _fail(f"needs the gateway extra ({exc.name}): pip install 'fak[gateway]'", 2)

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
            kernel = build_kernel(settings, policy)
        except (OSError, JournalCorruptError) as exc:
            _fail(open_error_line(str(settings.audit_journal), exc), 1)
        for spec in tool_specs:
            load_tools(kernel, spec)
        click.echo(
            f"fak mcp: serving on stdio (policy {policy_path or 'built-in default'}, "
            f"journal {settings.audit_journal or 'off'})",
            err=True,
        )
        with contextlib.suppress(KeyboardInterrupt):  # the client's ^C is a normal exit
            anyio.run(serve_stdio, kernel)
