"""The README's tour must run as written: every repo file it names exists, and doctor flags one."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def _named_files() -> list[str]:
    blocks = re.findall(r"```sh\n(.*?)```", README, flags=re.S)
    return sorted({m for b in blocks for m in re.findall(r"\b(?:examples|docs)/[\w./-]+", b)})


def test_finding_readme_tour_names_files_that_exist() -> None:
    named = _named_files()
    assert "examples/fetched-page.html" in named
    missing = [p for p in named if not (ROOT / p).is_file()]
    assert missing == []


def test_finding_readme_doctor_example_has_a_finding() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "fak.cli.main", "doctor", str(ROOT / "examples/fetched-page.html")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "TRUST_VIOLATION" in proc.stdout


def test_finding_readme_says_where_fak_is_installed() -> None:
    assert ".venv/bin/fak" in README
    assert "source .venv/bin/activate" in README
