"""The defaults with the real agent binaries (issue 24): Codex guarded by the PreToolUse hook
``fak init codex`` wires, and Claude Code reading its project through a ``fak serve`` started
in another directory with ``--root``.

Codex (0.171.0 and 0.169.0) runs a project's ``.codex/hooks.json`` once the project is trusted
and the hook approved; the test trusts the project in ``config.toml`` as a user would and passes
``--dangerously-bypass-hook-trust`` in place of approving the hook in Codex's ``/hooks`` screen.
The hook process runs this checkout's fak (``PYTHONPATH``), as the launcher ``fak init`` names.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from fak.gateway.server import LoopbackServer
from fak.testing.upstream import MockUpstream

from .conftest import agent, agent_env, run_dir
from .test_agents import _claude, _free_port

pytestmark = pytest.mark.e2e
SRC = str(Path(__file__).resolve().parents[2] / "src")


def _codex_home(home: Path, upstream: str, project: Path) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        'model = "gpt-e2e"\nmodel_provider = "mock"\napproval_policy = "never"\n'
        'sandbox_mode = "danger-full-access"\n\n'
        "[model_providers.mock]\n"
        'name = "mock"\n'
        f'base_url = "{upstream}/v1"\n'
        'env_key = "FAK_E2E_KEY"\n'
        'wire_api = "responses"\n\n'
        f'[projects."{project}"]\n'
        'trust_level = "trusted"\n'
    )
    return home


def _codex(project: Path, home: Path, prompt: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    env = agent_env(
        tmp / "user",
        CODEX_HOME=str(home),
        FAK_E2E_KEY="sk-e2e",
        PYTHONPATH=SRC,
        FAK_RUN_DIR=str(run_dir(tmp)),
        FAK_AUDIT_JOURNAL=str(tmp / "hook-audit.jsonl"),
    )
    return subprocess.run(
        [
            str(agent("codex")),
            "exec",
            "--skip-git-repo-check",
            "--dangerously-bypass-hook-trust",
            prompt,
        ],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def test_codex_with_fak_init_blocks_a_denied_command_through_its_pretooluse_hook(
    tmp_path: Path,
) -> None:
    agent("codex")
    project = tmp_path / "project"
    project.mkdir()
    run_dir(tmp_path)
    init = subprocess.run(
        [sys.executable, "-m", "fak.cli.main", "init", "codex", "--dir", str(project)],
        env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert init.returncode == 0, init.stderr
    assert (project / ".codex" / "hooks.json").is_file()
    user = tmp_path / "user"
    (user / ".ssh").mkdir(parents=True)
    (user / ".ssh" / "id_rsa").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    marker = project / "stolen"
    mock = MockUpstream()  # no fak serve: the hook alone stands between the model and the shell
    with LoopbackServer(mock.app) as up:
        home = _codex_home(tmp_path / "codex-home", up, project)
        denied = _codex(
            project,
            home,
            "call exec_command " + json.dumps({"cmd": f"cat ~/.ssh/id_rsa > {marker}"}),
            tmp_path,
        )
        assert denied.returncode == 0, denied.stderr[-3000:]
        assert not marker.exists(), denied.stdout[-3000:]
        # the refusal reached the model, in band, as Codex words a hook's block
        assert b"Command blocked by PreToolUse hook: fak: DENY" in mock.bodies
        ok = _codex(
            project, home, "call exec_command " + json.dumps({"cmd": "echo hook-ok-7f3a"}), tmp_path
        )
        assert ok.returncode == 0, ok.stderr[-3000:]
        assert b"hook-ok-7f3a" in mock.bodies  # an allowed command ran
    rows = [json.loads(x) for x in (tmp_path / "hook-audit.jsonl").read_text().splitlines()]
    assert [r["verdict"] for r in rows if r.get("tool") == "Bash"] == ["DENY", "ALLOW"]


@pytest.fixture
def serve_elsewhere(tmp_path: Path) -> Iterator[tuple[MockUpstream, Path, list[str]]]:
    """The mock upstream and the command that starts fak serve in a directory that is not the
    project (the caller appends flags)."""
    mock = MockUpstream()
    with LoopbackServer(mock.app) as up:
        project = tmp_path / "project"
        project.mkdir()
        policy = tmp_path / "policy.json"
        policy.write_text(
            json.dumps(
                {
                    "allow": ["Read"],
                    "arg_rules": [{"tool": "Read", "arg": "file_path", "allow_glob": "**"}],
                }
            )
        )
        cmd = [
            sys.executable,
            "-m",
            "fak.cli.main",
            "serve",
            "--provider",
            "anthropic",
            "--base-url",
            up,
            "--policy",
            str(policy),
            "--access-log",
            "off",
        ]
        yield mock, project, cmd


def _serve(cmd: list[str], cwd: Path, home: Path) -> tuple[subprocess.Popen[str], str]:
    port = _free_port()
    proc = subprocess.Popen(
        [*cmd, "--addr", f"127.0.0.1:{port}"],
        cwd=cwd,
        env={**agent_env(home), "PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"},
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            httpx.get(url + "/healthz", timeout=2)
            return proc, url
        except httpx.TransportError:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline
            time.sleep(0.1)


@pytest.mark.parametrize("rooted", [True, False])
def test_claude_code_reads_its_project_through_fak_serve_started_elsewhere(
    rooted: bool, serve_elsewhere: tuple[MockUpstream, Path, list[str]], tmp_path: Path
) -> None:
    agent("claude")
    mock, project, cmd = serve_elsewhere
    notes = project / "NOTES.md"
    notes.write_text("# Notes\nThe build artifacts land in out/7f3a.\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc, url = _serve([*cmd, "--root", str(project)] if rooted else cmd, elsewhere, tmp_path)
    try:
        prompt = "call Read " + json.dumps({"file_path": str(notes)})
        result = _claude(url, project, prompt, tmp_path / "home")
    finally:
        proc.terminate()
        proc.communicate(timeout=10)
    assert result["_exit"] == 0, result
    if rooted:
        assert b"out/7f3a" in mock.bodies  # the project's file reached the model
    else:  # the control: without --root the rule resolves against fak serve's directory
        assert b"out/7f3a" not in mock.bodies
        assert "POLICY_BLOCK" in result["result"]


def test_claude_codes_stated_directory_narrows_a_parent_root(
    serve_elsewhere: tuple[MockUpstream, Path, list[str]], tmp_path: Path
) -> None:
    """One fak serve rooted at the parent of several projects: Claude Code, working in one of
    them, reads its own files and is refused a sibling's (its system prompt names its cwd)."""
    agent("claude")
    mock, project, cmd = serve_elsewhere
    (project / "NOTES.md").write_text("mine: out/7f3a\n")
    sibling = tmp_path / "sibling"
    sibling.mkdir()
    (sibling / "NOTES.md").write_text("theirs: out/9c1d\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc, url = _serve([*cmd, "--root", str(tmp_path)], elsewhere, tmp_path)
    try:
        for path in (project / "NOTES.md", sibling / "NOTES.md"):
            prompt = "call Read " + json.dumps({"file_path": str(path)})
            result = _claude(url, project, prompt, tmp_path / "home")
            assert result["_exit"] == 0, result
    finally:
        proc.terminate()
        proc.communicate(timeout=10)
    assert b"out/7f3a" in mock.bodies
    assert b"out/9c1d" not in mock.bodies
    assert "POLICY_BLOCK" in result["result"]


def test_codex_rollout_gives_the_hook_its_run_context(tmp_path: Path) -> None:
    """``after_untrusted`` through Codex's own PreToolUse hook: the decider reads the run from
    Codex's rollout (``transcript_path``), so in one session the first command runs and the
    one proposed after a command's output is in the run is refused."""
    from fak.abi import FinishReason, PlannerTurn, ProposedCall, Role, TurnRequest, Usage

    agent("codex")
    project = tmp_path / "project"
    (project / ".codex").mkdir(parents=True)
    run_dir(tmp_path)
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps({"allow": ["Bash"], "after_untrusted": {"Bash": "deny"}}))
    hook = f"{sys.executable} -m fak.cli.launch hook --policy {policy}"
    entry = [{"matcher": ".*", "hooks": [{"type": "command", "command": hook}]}]
    (project / ".codex" / "hooks.json").write_text(json.dumps({"hooks": {"PreToolUse": entry}}))
    marker = project / "after-output"
    steps = [{"cmd": "echo fetched-7f3a"}, {"cmd": f"touch {marker}"}]

    def script(request: TurnRequest) -> PlannerTurn:
        done = sum(1 for m in request.messages if m.role is Role.TOOL)
        if done >= len(steps):
            return PlannerTurn("done", usage=Usage(10, 1), model=request.model)
        call = ProposedCall(f"call_{done}", "exec_command", json.dumps(steps[done]))
        return PlannerTurn("", (call,), FinishReason.TOOL_CALLS, Usage(10, 8), request.model)

    mock = MockUpstream(script=script)
    with LoopbackServer(mock.app) as up:
        home = _codex_home(tmp_path / "codex-home", up, project)
        run = _codex(project, home, "echo, then touch", tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    assert b"fetched-7f3a" in mock.bodies  # the first command ran
    assert not marker.exists(), run.stdout[-3000:]  # the one after its output did not
    assert b"after_untrusted Bash" in mock.bodies  # the model read why, in band
    rows = [json.loads(x) for x in (tmp_path / "hook-audit.jsonl").read_text().splitlines()]
    assert [r["verdict"] for r in rows if r.get("tool") == "Bash"] == ["ALLOW", "DENY"]
