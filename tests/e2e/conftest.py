"""The real agent binaries (Claude Code, Codex) from tests/e2e/node_modules, or one loud skip.

``make test`` installs them with ``npm ci`` (pinned in package-lock.json) when node >= 20 is
present: the newest release of each (Claude Code 2.1.332, Codex 0.171.0) and one older pinned
release beside it (2.1.328 and 0.169.0, as npm aliases). Every e2e test runs once per release
(``release`` parameter: ``newest`` / ``older``). No model and no network: each scenario fronts
fak with the scripted mock upstream.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
MODULES = HERE / "node_modules"
BIN = MODULES / ".bin"
OLDER = {  # the older pinned release of each agent (package.json aliases), by its binary
    "claude": MODULES / "claude-code-2.1.328" / "bin" / "claude.exe",
    "codex": MODULES / "codex-0.169.0" / "bin" / "codex.js",
}
_RELEASE = {"now": "newest"}
_RUN_DIRS: dict[Path, Path] = {}


def _node_ok() -> str:
    node = shutil.which("node")
    if node is None:
        return "node is not installed"
    try:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"node does not run: {exc}"
    major = int(out.stdout.strip().lstrip("v").split(".")[0] or 0)
    return "" if major >= 20 else f"node {out.stdout.strip()} is older than 20"


def agent(name: str) -> Path:
    """The agent binary, or a skip that says exactly what is missing."""
    why = _node_ok()
    if why:
        pytest.skip(f"E2E SKIPPED: {why}; the real-agent tests need node >= 20")
    path = OLDER[name] if _RELEASE["now"] == "older" and name in OLDER else BIN / name
    if not path.exists():
        pytest.skip(f"E2E SKIPPED: {path} missing; run `make e2e-deps` (npm ci in tests/e2e)")
    return path


def agent_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    env.update(
        HOME=str(home),
        DISABLE_TELEMETRY="1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_AUTOUPDATER="1",
        NO_COLOR="1",
    )
    env.update(extra)
    return env


@pytest.fixture(autouse=True, params=["newest", "older"])
def release(request: pytest.FixtureRequest) -> Iterator[str]:
    """Which release of each agent ``agent`` hands out: the newest, or the older pinned one."""
    _RELEASE["now"] = request.param
    yield request.param
    _RELEASE["now"] = "newest"


def run_dir(tmp_path: Path) -> Path:
    """The test's hook run directory (``FAK_RUN_DIR``): private and short, outside
    ``tmp_path``, whose depth (the user's name, pytest's run counter, a worker's directory) can
    take the decider's socket path past the 100 bytes a Unix socket allows."""
    if tmp_path not in _RUN_DIRS:
        _RUN_DIRS[tmp_path] = Path(tempfile.mkdtemp(prefix="fak-run-"))
    return _RUN_DIRS[tmp_path]


@pytest.fixture(autouse=True)
def _no_decider_outlives_its_test(tmp_path: Path) -> Iterator[None]:
    """Hook deciders the agents started (in the test's run dir or its home's cache) stop."""
    yield
    from fak.hooks.daemon import stop_deciders

    short = _RUN_DIRS.pop(tmp_path, None)
    for found in (short, tmp_path / "run", *tmp_path.glob("**/.cache/fak/run")):
        if found is not None and found.is_dir():
            stop_deciders(found)
    if short is not None:
        shutil.rmtree(short, ignore_errors=True)
