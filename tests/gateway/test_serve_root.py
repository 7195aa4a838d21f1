"""``fak serve --root DIR``: path rules resolve against the project, not fak serve's cwd (issue
24, item 4). Claude Code and opencode send absolute paths; with ``fak serve`` started anywhere
else, a relative ``allow_glob`` must still admit the project's files and only them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from fak.abi import Reason, ToolCall, VerdictKind
from fak.cli.main import cli
from fak.gateway.serving import StartError, StartStage
from fak.gateway.serving.assembly import _open_policy
from fak.kernel import Kernel

pytestmark = pytest.mark.gateway

RULES = {"allow": ["Read"], "arg_rules": [{"tool": "Read", "arg": "file_path", "allow_glob": "**"}]}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("print('hi')\n")
    return root


def _read(kernel: Kernel, path: Path) -> tuple[VerdictKind, Reason]:
    verdict = kernel.decide(ToolCall("Read", {"file_path": str(path)}))
    return verdict.kind, verdict.reason


def test_root_admits_the_projects_absolute_paths_from_anywhere(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    manifest = tmp_path / "policy.json"
    manifest.write_text(json.dumps(RULES))
    unrooted, _ = _open_policy(str(manifest))
    rooted, reloader = _open_policy(str(manifest), str(project))
    assert unrooted is not None and rooted is not None and reloader is not None
    target = project / "src" / "a.py"
    assert _read(Kernel(unrooted), target) == (VerdictKind.DENY, Reason.POLICY_BLOCK)
    assert _read(Kernel(rooted), target) == (VerdictKind.ALLOW, Reason.NONE)
    assert _read(Kernel(rooted), tmp_path / "policy.json")[0] == VerdictKind.DENY  # outside
    assert reloader()[0].root == str(project)  # a reload keeps the root


def test_root_without_a_policy_roots_the_default_floor(project: Path) -> None:
    policy, reloader = _open_policy(None, str(project))
    assert policy is not None and policy.root == str(project) and reloader is None
    assert _open_policy(None) == (None, None)


def test_a_manifest_root_that_differs_from_root_refuses_to_start(
    project: Path, tmp_path: Path
) -> None:
    manifest = tmp_path / "policy.json"
    manifest.write_text(json.dumps({**RULES, "root": str(tmp_path)}))
    with pytest.raises(StartError) as caught:
        _open_policy(str(manifest), str(project))
    assert caught.value.stage is StartStage.POLICY
    assert "[FAK-ROOT-CONFLICT]" in str(caught.value)
    same, _ = _open_policy(str(manifest), str(tmp_path))  # the same directory: fine
    assert same is not None and same.root == str(tmp_path)
    r = CliRunner().invoke(
        cli, ["serve", "--mock", "--policy", str(manifest), "--root", str(project)]
    )
    assert r.exit_code == 1
    assert "[FAK-ROOT-CONFLICT]" in r.output


def test_root_must_be_an_existing_directory(tmp_path: Path) -> None:
    r = CliRunner().invoke(cli, ["serve", "--mock", "--root", str(tmp_path / "missing")])
    assert r.exit_code == 2
    assert "--root" in r.output
