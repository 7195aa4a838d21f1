"""Bad input on every verb (finding 13 of the first hostile run): a bad manifest or journal
gives one clean line and exit 1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

FAK = [sys.executable, "-m", "fak.cli.main"]


def _run(
    args: list[str], env: dict[str, str] | None = None, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*FAK, *args],
        capture_output=True,
        text=True,
        timeout=60,
        input=stdin,
        env={**os.environ, **(env or {})},
        check=False,
    )


def _clean(proc: subprocess.CompletedProcess[str]) -> None:
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout


@pytest.mark.parametrize("glob", ["[z-a]"])
@pytest.mark.parametrize(
    "verb",
    [
        ["policy", "--check"],
        ["preflight", "--tool", "w", "--policy"],
        ["serve", "--mock", "--addr", "127.0.0.1:0", "--policy"],
        ["mcp", "--policy"],
    ],
)
def test_finding_13_bad_glob_is_one_clean_line(tmp_path: Path, verb: list[str], glob: str) -> None:
    manifest = tmp_path / "m.json"
    manifest.write_text(json.dumps({"allow": ["w"], "self_modify_globs": [glob]}))
    proc = _run([*verb, str(manifest)])
    _clean(proc)
    assert "FAK-POLICY-BAD-GLOB" in proc.stderr + proc.stdout


def _journals(tmp_path: Path) -> dict[str, str]:
    directory = tmp_path / "jdir"
    directory.mkdir()
    plain = tmp_path / "plain-file"
    plain.write_text("not a directory")
    corrupt = tmp_path / "corrupt.jsonl"
    corrupt.write_text('{"a":1}\n{broken')
    return {
        "directory": str(directory),
        "unwritable": str(plain / "j.jsonl"),  # its parent is a file: cannot be created
        "corrupt": str(corrupt),
    }


@pytest.mark.parametrize("kind", ["directory", "unwritable", "corrupt"])
def test_finding_13_bad_journal_serve_is_one_clean_line(tmp_path: Path, kind: str) -> None:
    path = _journals(tmp_path)[kind]
    proc = _run(["serve", "--mock", "--addr", "127.0.0.1:0"], env={"FAK_AUDIT_JOURNAL": path})
    _clean(proc)
    assert "[FAK-JOURNAL-" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_finding_13_bad_journal_preflight_and_mcp(tmp_path: Path) -> None:
    path = _journals(tmp_path)["directory"]
    for verb in (["preflight", "--tool", "x"], ["mcp"]):
        proc = _run(verb, env={"FAK_AUDIT_JOURNAL": path})
        _clean(proc)
        assert "[FAK-JOURNAL-OPEN]" in proc.stderr
