"""Verb ``init`` (tier T5): put fak in front of an agent in the current project.

``fak init claude-code`` writes ``.fak/claude-code-policy.json`` (the pack) and, unless the
project already has one, ``.claude/settings.json`` with ``fak hook`` as the PreToolUse and
PostToolUse hook; an existing settings file is left alone and the block to merge is printed.
``fak init codex`` writes ``.fak/codex-policy.json`` and ``.fak/codex-provider.toml``, the
``model_providers`` entry that points Codex at ``fak serve``. Every file written, and every one
skipped, is printed. Exit 0, or 1 if a file could not be written.
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

_PACKS = {"claude-code": "claude-code.json", "codex": "codex.json"}


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


@click.command("init")
@click.argument("agent", type=click.Choice(sorted(_PACKS)))
@click.option("--dir", "directory", default=".", show_default=True, help="The project root.")
@click.option("--port", default=8080, show_default=True, help="fak serve's port (codex).")
@click.option("--force", is_flag=True, help="Replace files that already exist.")
def init(agent: str, directory: str, port: int, force: bool) -> None:
    """Write the policy pack and the client configuration for AGENT in this project."""
    root = Path(directory).resolve()
    pack = resources.files("fak.policy").joinpath("packs", _PACKS[agent]).read_text("utf-8")
    policy = root / ".fak" / f"{agent}-policy.json"
    try:
        _write(policy, pack, force=force)
        if agent == "claude-code":
            hook = f"{_fak_command()} hook --policy {shlex.quote(str(policy))}"
            entry = [{"matcher": "*", "hooks": [{"type": "command", "command": hook}]}]
            settings = {"hooks": {"PreToolUse": entry, "PostToolUse": entry}}
            text = json.dumps(settings, indent=2) + "\n"
            if not _write(root / ".claude" / "settings.json", text, force=force):
                click.echo("merge this hooks block into it:\n" + text)
            click.echo(
                "for result screening too, run `FAK_PAGEOUT_BYTES=0 fak serve --provider anthropic "
                "--base-url "
                f"https://api.anthropic.com --policy {policy}` and set "
                f"ANTHROPIC_BASE_URL=http://127.0.0.1:{port}"
            )
        else:
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
                "add it to $CODEX_HOME/config.toml (~/.codex/config.toml), then run "
                "`FAK_PAGEOUT_BYTES=0 fak serve --provider openai-responses "
                "--base-url https://api.openai.com/v1 "
                f"--policy {policy} --addr 127.0.0.1:{port}`"
            )
    except OSError as exc:
        click.echo(f"fak init: cannot write under {root}: {exc.strerror or exc}", err=True)
        sys.exit(1)


def register(group: click.Group) -> None:
    """Attach ``init`` to the ``fak`` group."""
    group.add_command(init)
