"""Verb ``init`` (tier T5): put fak in front of an agent in the current project.

``fak init AGENT`` writes ``.fak/<agent>-policy.json`` (the pack) and the agent's own wiring,
then prints the ``fak serve`` command that works from any directory (absolute ``--policy`` and
``--root``). ``claude-code``: ``.claude/settings.json`` with ``fak hook`` as the PreToolUse and
PostToolUse hook. ``codex``: ``.codex/hooks.json`` with ``fak hook`` as the PreToolUse hook
(Codex >= 0.124 runs it once the project is trusted and the hook approved) and
``.fak/codex-provider.toml``, the ``model_providers`` entry that points Codex at ``fak serve``.
``openai-agents``, ``langgraph``, ``pydantic-ai``, ``opencode``: the pack naming the framework's
own tools (handoffs, output tools), to which the user adds theirs. An existing agent file is
left alone and the block to merge is printed. Exit 0, or 1 if a file could not be written.
"""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from importlib import resources
from pathlib import Path

import click

__all__ = ["register"]

_PACKS = {
    "claude-code": "claude-code.json",
    "codex": "codex.json",
    "langgraph": "langgraph.json",
    "openai-agents": "openai-agents.json",
    "opencode": "opencode.json",
    "pydantic-ai": "pydantic-ai.json",
}
# the upstream each agent talks to by default: fak serve's --provider and --base-url
_UPSTREAM = {
    "claude-code": ("anthropic", "https://api.anthropic.com"),
    "codex": ("openai-responses", "https://api.openai.com/v1"),
}
_OPENAI = ("openai", "https://api.openai.com/v1")
_FRAMEWORK_NOTE = {
    "openai-agents": "add your function tools to allow; handoffs (transfer_to_<agent>) are in",
    "langgraph": "add your tools to allow; handoffs (transfer_to_<agent>, transfer_back_to_"
    "<agent>) are in",
    "pydantic-ai": "add your tools to allow; the output tools (final_result, "
    "final_result_<name>) are in",
    "opencode": "point opencode's provider baseURL at fak serve (/v1)",
}


def _fak_command() -> str:
    """The ``fak`` of this installation (its launcher keeps ``fak hook`` fast), by absolute path
    so the agent's PATH does not matter."""
    beside = Path(sys.executable).with_name("fak")
    if beside.is_file():
        return shlex.quote(str(beside))
    found = shutil.which("fak")
    if found:
        return shlex.quote(found)
    return f"{shlex.quote(sys.executable)} -m fak.cli.launch"


def _write(path: Path, text: str, *, force: bool) -> bool:
    if path.exists() and not force:
        click.echo(f"kept     {path} (exists; --force replaces it)")
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    click.echo(f"wrote    {path}")
    return True


def _serve_line(agent: str, policy: Path, root: Path, port: int) -> str:
    """``fak serve`` for this project, runnable from any directory."""
    provider, base = _UPSTREAM.get(agent, _OPENAI)
    return (
        f"{_fak_command()} serve --provider {provider} --base-url {base} "
        f"--policy {shlex.quote(str(policy))} --root {shlex.quote(str(root))} "
        f"--addr 127.0.0.1:{port}"
    )


def _hooks_block(hook: str, events: tuple[str, ...], matcher: str) -> str:
    entry = [{"matcher": matcher, "hooks": [{"type": "command", "command": hook}]}]
    return json.dumps({"hooks": dict.fromkeys(events, entry)}, indent=2) + "\n"


@click.command("init")
@click.argument("agent", type=click.Choice(sorted(_PACKS)))
@click.option("--dir", "directory", default=".", show_default=True, help="The project root.")
@click.option("--port", default=8080, show_default=True, help="fak serve's port.")
@click.option("--force", is_flag=True, help="Replace files that already exist.")
def init(agent: str, directory: str, port: int, force: bool) -> None:
    """Write the policy pack and the client configuration for AGENT in this project."""
    root = Path(directory).resolve()
    pack = resources.files("fak.policy").joinpath("packs", _PACKS[agent]).read_text("utf-8")
    policy = root / ".fak" / f"{agent}-policy.json"
    hook = f"{_fak_command()} hook --policy {shlex.quote(str(policy))}"
    serve = _serve_line(agent, policy, root, port)
    try:
        _write(policy, pack, force=force)
        if agent == "claude-code":
            text = _hooks_block(hook, ("PreToolUse", "PostToolUse"), "*")
            if not _write(root / ".claude" / "settings.json", text, force=force):
                click.echo("merge this hooks block into it:\n" + text)
            click.echo(
                f"for result screening too, run `{serve}` and set "
                f"ANTHROPIC_BASE_URL=http://127.0.0.1:{port}"
            )
        elif agent == "codex":
            text = _hooks_block(hook, ("PreToolUse",), ".*")
            if not _write(root / ".codex" / "hooks.json", text, force=force):
                click.echo("merge this hooks block into it:\n" + text)
            toml = (
                'model_provider = "fak"\n\n'
                "[model_providers.fak]\n"
                'name = "fak"\n'
                f'base_url = "http://127.0.0.1:{port}/v1"\n'
                'env_key = "OPENAI_API_KEY"\n'
                'wire_api = "responses"\n'
            )
            _write(root / ".fak" / "codex-provider.toml", toml, force=force)
            click.echo(
                "Codex runs the hook once this project is trusted and the hook approved "
                "(codex asks; /hooks reviews it). For result screening too, add the provider "
                f"to $CODEX_HOME/config.toml (~/.codex/config.toml) and run `{serve}`"
            )
        else:
            click.echo(f"{_FRAMEWORK_NOTE[agent]}; then run `{serve}`")
    except OSError as exc:
        click.echo(f"fak init: cannot write under {root}: {exc.strerror or exc}", err=True)
        sys.exit(1)


def register(group: click.Group) -> None:
    """Attach ``init`` to the ``fak`` group."""
    group.add_command(init)
