"""The proxy's config file: the mcpServers shape, strict, with stable codes; the CLI's exits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from fak.cli.main import cli
from fak.gateway.mcp import (
    OnChange,
    ProxyConfigError,
    ServerSpec,
    load_proxy_config,
    single_server_config,
)

pytestmark = pytest.mark.gateway

DIGEST = "sha256:" + "ab" * 32


def test_claude_code_block_loads_as_is() -> None:
    doc = {
        "mcpServers": {
            "fs": {
                "type": "stdio",
                "command": "npx",
                "args": ["-y", "@modelcontextprotocol/server-filesystem", "${HOME}/p"],
                "env": {"TOKEN": "${TOKEN:-none}"},
            },
            "docs": {
                "url": "https://mcp.example.com/mcp",
                "headers": {"Authorization": "Bearer ${KEY}"},
                "tool_digests": {"search": DIGEST},
                "allow_sampling": True,
            },
            "off": {"command": "x", "disabled": True},
        },
        "fak": {"separator": "::", "on_schema_change": "admit_and_log", "images": "drop"},
    }
    config = load_proxy_config(json.dumps(doc), {"HOME": "/home/u", "KEY": "k1"})
    assert config.servers == (
        ServerSpec(
            "fs",
            command="npx",
            args=("-y", "@modelcontextprotocol/server-filesystem", "/home/u/p"),
            env={"TOKEN": "none"},
        ),
        ServerSpec(
            "docs",
            url="https://mcp.example.com/mcp",
            headers={"Authorization": "Bearer k1"},
            tool_digests={"search": DIGEST},
            allow_sampling=True,
        ),
    )
    assert (config.separator, config.on_schema_change, config.images) == (
        "::",
        OnChange.ADMIT_AND_LOG,
        False,
    )


@pytest.mark.parametrize(
    ("doc", "code", "words"),
    [
        ({"mcpServers": {}}, "MCPX-CONF-SERVER", "at least one server"),
        ({"mcpServers": {"a": {"command": "x", "bogus": 1}}}, "MCPX-CONF-KEY", "'bogus'"),
        ({"mcpServers": {"a": {}}}, "MCPX-CONF-SERVER", "exactly one of command"),
        ({"mcpServers": {"a": {"command": "x", "url": "http://h"}}}, "MCPX-CONF-SERVER", "exactly"),
        ({"mcpServers": {"a b": {"command": "x"}}}, "MCPX-CONF-NAME", "server names"),
        ({"mcpServers": {"a__b": {"command": "x"}}}, "MCPX-CONF-NAME", "separator '__'"),
        (
            {"mcpServers": {"a.b": {"command": "x"}}, "fak": {"separator": "."}},
            "MCPX-CONF-NAME",
            "separator '.'",
        ),
        ({"mcpServers": {"a": {"command": "${NOPE}"}}}, "MCPX-CONF-ENV", "${NOPE} is not set"),
        ({"mcpServers": {"a": {"url": "ftp://h"}}}, "MCPX-CONF-URL", "http:// or https://"),
        ({"mcpServers": {"a": {"url": "http://h", "type": "sse"}}}, "MCPX-CONF-TYPE", "SSE"),
        (
            {"mcpServers": {"a": {"command": "x", "tool_digests": {"t": "abc"}}}},
            "MCPX-CONF-DIGEST",
            "64 hex",
        ),
        ({"mcpServers": {"a": {"command": "x"}}, "extra": 1}, "MCPX-CONF-KEY", "'extra'"),
        ({"mcpServers": {"a": {"command": "x"}}, "fak": {"images": "x"}}, "MCPX-CONF-TYPE", "pass"),
    ],
)
def test_bad_configs_name_the_field(doc: dict[str, object], code: str, words: str) -> None:
    with pytest.raises(ProxyConfigError) as caught:
        load_proxy_config(json.dumps(doc), {})
    assert caught.value.code == code
    assert words in str(caught.value)


def test_duplicate_keys_and_bad_json_are_refused() -> None:
    with pytest.raises(ProxyConfigError, match="MCPX-CONF-JSON: duplicate key"):
        load_proxy_config('{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}')
    with pytest.raises(ProxyConfigError, match="MCPX-CONF-JSON"):
        load_proxy_config("{")


def test_single_server_shortcut() -> None:
    config = single_server_config("git", "uvx", ("mcp-server-git",))
    assert config.servers == (ServerSpec("git", command="uvx", args=("mcp-server-git",)),)
    with pytest.raises(ProxyConfigError, match="MCPX-CONF-NAME"):
        single_server_config("no spaces", "x", ())


def test_cli_exits(tmp_path: Path) -> None:
    runner = CliRunner()
    bad = tmp_path / "servers.json"
    bad.write_text('{"mcpServers": {"a": {"command": "x", "oops": 1}}}')
    done = runner.invoke(cli, ["mcp", "proxy", "--config", str(bad)])
    assert done.exit_code == 1
    assert "MCPX-CONF-KEY" in done.output
    done = runner.invoke(cli, ["mcp", "proxy"])
    assert done.exit_code == 2
    assert "give --config FILE or `-- COMMAND [ARGS...]`" in done.output
    done = runner.invoke(cli, ["mcp", "proxy", "--config", str(bad), "--", "x"])
    assert done.exit_code == 2
    missing = runner.invoke(cli, ["mcp", "proxy", "--config", str(tmp_path / "nope.json")])
    assert missing.exit_code == 1
    assert "MCPX-CONF-FILE" in missing.output


@pytest.mark.parametrize(
    ("names", "separator", "clash"),
    [
        (["a", "a_"], "__", ("a", "a_")),  # a + __ + _b == a_ + __ + b == a___b
        (["a_", "a"], "__", ("a", "a_")),
        (["x", "x:"], "::", ("x", "x:")),
        (["a", "a-"], "-", None),  # a- holds the separator: refused by the separator rule
        (["a", "a_"], "_.", None),  # a + _. + t never starts with a_ + _.
        (["a", "ab"], "__", None),
        (["git", "git_"], "__", ("git", "git_")),
    ],
)
def test_E6_server_names_whose_tool_names_can_collide_are_refused_at_load(
    names: list[str], separator: str, clash: tuple[str, str] | None
) -> None:
    doc = {"mcpServers": {n: {"command": "x"} for n in names}, "fak": {"separator": separator}}
    if clash is None:
        try:
            load_proxy_config(json.dumps(doc), {})
        except ProxyConfigError as exc:
            assert "same tool name" not in str(exc)
        return
    with pytest.raises(ProxyConfigError) as caught:
        load_proxy_config(json.dumps(doc), {})
    assert caught.value.code == "MCPX-CONF-NAME"
    assert f"mcpServers.{clash[0]} and mcpServers.{clash[1]}" in str(caught.value)
    # the clash named is a real one: both spellings give one exposed name
    short, long = clash
    assert short + separator + long[len(short) :] + "t" == long + separator + "t"
