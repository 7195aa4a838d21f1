"""Verb ``hook`` (tier T5): fak as an agent's own pre/post tool hook.

Reads one hook call on stdin — Claude Code's ``PreToolUse`` / ``PostToolUse`` object, or fak's
own ``{tool, args, meta}`` — and answers in that client's terms (``fak.hooks.protocol``).
Exit 0 lets the call run (or the result through); exit 2 blocks. Anything that goes wrong —
input that is not a hook call, an unreadable policy, a journal that cannot be opened, a fault
anywhere — is a refusal with exit 2 and the reason on stderr, never exit 1, which Claude Code
treats as a warning and runs the tool anyway. With ``FAK_AUDIT_JOURNAL`` set every decision is
journaled; quarantined result bytes go to ``FAK_BLOB_DIR`` (default: the user cache directory).
"""

from __future__ import annotations

import sys

import click

__all__ = ["register"]


@click.command()
@click.option("--policy", "policy_path", help="Policy manifest (default: the built-in floor).")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["auto", "claude-code", "codex", "fak"]),
    default="auto",
    show_default=True,
    help="Input shape; auto detects Claude Code's and Codex's hook objects.",
)
def hook(policy_path: str | None, fmt: str) -> None:
    """Judge one tool call (or screen one tool result) from stdin; exit 2 blocks it.

    Started as the ``fak`` command, the call is handed to a resident decider (started on first
    use, stopped when idle; ``FAK_HOOK_DAEMON=0`` turns it off) so a hook costs milliseconds."""
    import os

    from fak.config import process_environ
    from fak.hooks.decider import answer

    raw = sys.stdin.buffer.read()
    done = answer(raw, policy_path=policy_path, fmt=fmt, cwd=os.getcwd(), environ=process_environ())
    sys.stdout.write(done.stdout)
    sys.stderr.write(done.stderr)
    sys.stdout.flush()
    sys.exit(done.exit_code)


def register(group: click.Group) -> None:
    """Attach ``hook`` to the ``fak`` group."""
    group.add_command(hook)
