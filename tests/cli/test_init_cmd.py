"""``fak init``: the packs and client configuration it writes, and what it leaves alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from fak.cli.main import cli
from fak.policy import Policy

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_init_claude_code_writes_the_pack_and_the_hook_settings(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["init", "claude-code", "--dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    policy = tmp_path / ".fak" / "claude-code-policy.json"
    assert Policy.load(policy).summary()["allow"] > 10  # a valid manifest
    settings = json.loads((tmp_path / ".claude" / "settings.json").read_text())
    command = settings["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    assert "hook --policy" in command and str(policy) in command
    assert settings["hooks"]["PostToolUse"][0]["matcher"] == "*"
    assert f"wrote    {policy}" in result.output


def test_init_keeps_existing_settings_and_prints_the_block(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    mine = '{"permissions": {"allow": ["Bash(ls)"]}}'
    (tmp_path / ".claude" / "settings.json").write_text(mine)
    result = CliRunner().invoke(cli, ["init", "claude-code", "--dir", str(tmp_path)])
    assert result.exit_code == 0
    assert (tmp_path / ".claude" / "settings.json").read_text() == mine  # untouched
    assert "merge this hooks block" in result.output and "PreToolUse" in result.output


def test_init_codex_writes_the_provider_entry(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["init", "codex", "--dir", str(tmp_path), "--port", "9090"])
    assert result.exit_code == 0, result.output
    toml = (tmp_path / ".fak" / "codex-provider.toml").read_text()
    assert 'base_url = "http://127.0.0.1:9090/v1"' in toml and 'wire_api = "responses"' in toml
    assert (tmp_path / ".fak" / "codex-policy.json").exists()
    hooks = json.loads((tmp_path / ".codex" / "hooks.json").read_text())
    (group,) = hooks["hooks"]["PreToolUse"]
    assert group["matcher"] == ".*" and list(hooks["hooks"]) == ["PreToolUse"]
    (handler,) = group["hooks"]
    assert handler["type"] == "command"
    assert handler["command"].endswith(f"hook --policy {tmp_path / '.fak' / 'codex-policy.json'}")


@pytest.mark.parametrize(
    ("agent", "provider"),
    [
        ("claude-code", "anthropic --base-url https://api.anthropic.com"),
        ("codex", "openai-responses --base-url https://api.openai.com/v1"),
        ("openai-agents", "openai --base-url https://api.openai.com/v1"),
        ("langgraph", "openai --base-url https://api.openai.com/v1"),
        ("pydantic-ai", "openai --base-url https://api.openai.com/v1"),
        ("opencode", "openai --base-url https://api.openai.com/v1"),
    ],
)
def test_init_prints_a_serve_command_that_works_from_anywhere(
    agent: str, provider: str, tmp_path: Path
) -> None:
    result = CliRunner().invoke(cli, ["init", agent, "--dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    policy = tmp_path / ".fak" / f"{agent}-policy.json"
    assert Policy.load(policy).version  # a valid manifest
    wanted = (
        f" serve --provider {provider} --policy {policy} --root {tmp_path} --addr 127.0.0.1:8080`"
    )
    assert wanted in result.output
    assert "FAK_PAGEOUT_BYTES" not in result.output  # the defaults no longer hide big files


def test_the_shipped_packs_are_the_examples() -> None:
    from importlib import resources

    for name, example in (
        ("claude-code.json", "claude-code-policy.json"),
        ("codex.json", "codex-policy.json"),
        ("openai-agents.json", "openai-agents-policy.json"),
        ("langgraph.json", "langgraph-policy.json"),
        ("pydantic-ai.json", "pydantic-ai-policy.json"),
        ("opencode.json", "opencode-policy.json"),
    ):
        shipped = resources.files("fak.policy").joinpath("packs", name).read_text("utf-8")
        assert shipped == (EXAMPLES / example).read_text("utf-8"), name
