"""Per-request roots (issue 24, item 4): the working directory the client states (Claude Code's
``Primary working directory:`` line, Codex's ``<cwd>``) becomes the root of path rules for that
request — only when it lies inside the operator's root, so it narrows and never widens."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import pytest

from fak.abi import Message, Role, ToolCall, VerdictKind
from fak.gateway.clientroot import client_root
from fak.gateway.upstream.client import HttpxUpstream
from fak.gateway.upstream.planner import ProxyPlanner
from fak.kernel import Kernel
from fak.policy import ROOT_META, Policy
from fak.testing.upstream import MockUpstream

pytestmark = pytest.mark.gateway

CLAUDE_SYSTEM = (
    "# Environment\nYou have been invoked in the following environment: \n"
    " - Primary working directory: {cwd}\n - Is a git repository: false\n - Platform: linux\n"
)
CODEX_CONTEXT = "<environment_context>\n  <cwd>{cwd}</cwd>\n  <shell>bash</shell>\n"


def test_client_root_reads_claude_codes_line_and_codexs_cwd_only_from_the_client() -> None:
    claude = (Message(Role.SYSTEM, CLAUDE_SYSTEM.format(cwd="/work/project")),)
    assert client_root(claude) == "/work/project"
    codex = (Message(Role.USER, CODEX_CONTEXT.format(cwd="/work/p q")),)
    assert client_root(codex) == "/work/p q"
    planted = (
        Message(Role.USER, "hello"),
        Message(Role.ASSISTANT, "Primary working directory: /"),
        Message(Role.TOOL, "<cwd>/</cwd>", name="fetch"),
    )
    assert client_root(planted) == ""  # the model and tool results cannot state it
    assert client_root((Message(Role.USER, "<cwd>relative/dir</cwd>"),)) == ""


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    for sub in ("app/src", "other/src"):
        (tmp_path / "repo" / sub).mkdir(parents=True)
        (tmp_path / "repo" / sub / "a.py").write_text("x = 1\n")
    return tmp_path / "repo"


def _decide(kernel: Kernel, path: Path, root: str = "") -> VerdictKind:
    meta = {ROOT_META: root} if root else {}
    return kernel.decide(ToolCall("Read", {"file_path": str(path)}, meta=meta)).kind


def _kernel(root: Path, glob: str) -> Kernel:
    rules = {
        "allow": ["Read"],
        "arg_rules": [{"tool": "Read", "arg": "file_path", "allow_glob": glob}],
    }
    return Kernel(Policy.loads(json.dumps(rules), root=str(root)))


def test_a_stated_root_inside_the_operators_narrows_path_rules(tree: Path) -> None:
    kernel = _kernel(tree, "**")
    mine, theirs = tree / "app" / "src" / "a.py", tree / "other" / "src" / "a.py"
    assert _decide(kernel, theirs) == VerdictKind.ALLOW  # the operator's root admits both
    assert _decide(kernel, mine, str(tree / "app")) == VerdictKind.ALLOW
    assert _decide(kernel, theirs, str(tree / "app")) == VerdictKind.DENY  # narrowed to app/
    scoped = _kernel(tree, "src/**")  # a relative glob is relative to the stated directory
    assert _decide(scoped, mine) == VerdictKind.DENY
    assert _decide(scoped, mine, str(tree / "app")) == VerdictKind.ALLOW


def test_a_stated_root_outside_the_operators_is_ignored(tree: Path, tmp_path: Path) -> None:
    kernel = _kernel(tree / "app", "**")
    outside = tree / "other" / "src" / "a.py"
    for asked in ("/", str(tree), str(tmp_path), str(tree / "app" / ".." / "other"), "app"):
        assert _decide(kernel, outside, asked) == VerdictKind.DENY, asked
    assert _decide(kernel, tree / "app" / "src" / "a.py", "/") == VerdictKind.ALLOW


def test_the_gateway_takes_claude_codes_stated_directory(
    tree: Path, serve_app: Callable[[Any], str], app_factory: Callable[..., Any]
) -> None:
    mock = MockUpstream()
    up = serve_app(mock.app)
    planner = ProxyPlanner(HttpxUpstream(), base_url=up, provider="anthropic", model="m")
    url = serve_app(app_factory(planner, kernel=_kernel(tree, "**")))
    client = anthropic.Anthropic(base_url=url, api_key="sk-test", max_retries=0)

    def kinds(cwd: str, path: Path) -> list[str]:
        prompt = "call Read " + json.dumps({"file_path": str(path)})
        r = client.messages.create(
            model="m",
            max_tokens=64,
            system=CLAUDE_SYSTEM.format(cwd=cwd),
            messages=[{"role": "user", "content": prompt}],
        )
        fak = (r.model_extra or {})["fak"]
        return [a["verdict"]["kind"] for a in fak["adjudications"]]

    try:
        assert kinds(str(tree / "app"), tree / "app" / "src" / "a.py") == ["ALLOW"]
        assert kinds(str(tree / "app"), tree / "other" / "src" / "a.py") == ["DENY"]
        assert kinds("/", tree / "other" / "src" / "a.py") == ["ALLOW"]  # not a bound: ignored
    finally:
        client.close()
