"""``fak recall`` (the demo, in a fresh process), ``recall inspect`` and ``recall tombstone``."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from fak.cli.main import cli
from fak.journal import verify

SRC = str(Path(__file__).resolve().parents[2] / "src")


@pytest.fixture
def demo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PYTHONPATH", SRC)  # the demo's reload runs in a child interpreter
    image = tmp_path / "img"
    out = tmp_path / "report.json"
    result = CliRunner().invoke(cli, ["recall", "--dir", str(image), "--out", str(out)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("recorded session airline-mia: 4 pages, 2 sealed -> ")
    assert "step 1  read_refund_policy   sealed_not_cleared" in result.output
    assert "read_file: [sealed: SECRET_EXFIL, 110 bytes]" in result.output
    assert "-> step 1: sealed_by_rescreen (a clearance alone never launders)" in result.output
    assert "k=3 -> steps [0, 2]" in result.output
    assert "ignore previous" not in result.output and "sk-proj-Q7vN3" not in result.output
    report = orjson.loads(out.read_bytes())
    assert report["pid"] != os.getpid()  # reloaded in another process
    assert [p["status"] for p in report["pages"]] == [
        "ok",
        "sealed_not_cleared",
        "ok",
        "sealed_not_cleared",
    ]
    assert report["after_clear"] == {"qid": "q1", "step": 1, "status": "sealed_by_rescreen"}
    return image


def test_demo_then_inspect(demo: Path) -> None:
    result = CliRunner().invoke(cli, ["recall", "inspect", str(demo), "--json"])
    assert result.exit_code == 0, result.output
    body = orjson.loads(result.output)
    assert body["session_id"] == "airline-mia"
    assert body["cleared"] == {"q1": True}
    assert [p["status"] for p in body["pages"]] == [
        "ok",
        "sealed_by_rescreen",
        "ok",
        "sealed_not_cleared",
    ]


def test_inspect_a_tampered_image_exits_1_with_the_code(demo: Path) -> None:
    blob = next(p for p in (demo / "cas").rglob("*") if p.is_file())
    raw = bytearray(blob.read_bytes())
    raw[0] ^= 1
    blob.write_bytes(bytes(raw))
    result = CliRunner().invoke(cli, ["recall", "inspect", str(demo)])
    assert result.exit_code == 1
    assert result.output.startswith("[FAK-RECALL-BLOB-CORRUPT] blob ")


def test_tombstone_is_idempotent_and_journaled(demo: Path, tmp_path: Path) -> None:
    journal = tmp_path / "journal.jsonl"
    args = ["recall", "tombstone", str(demo), "--step", "2", "--reason", "stale fares"]
    args += ["--journal", str(journal)]
    first = CliRunner().invoke(cli, args)
    second = CliRunner().invoke(cli, args)
    assert first.exit_code == 0 and second.exit_code == 0, first.output + second.output
    one, two = orjson.loads(first.output), orjson.loads(second.output)
    assert one["applied"] is True and two["applied"] is False
    assert one["change"] == two["change"]
    assert one["change"]["requested_by"] == "operator"
    report = verify(journal)
    assert report.ok and report.rows == 1
    shown = CliRunner().invoke(cli, ["recall", "inspect", str(demo), "--json"])
    assert orjson.loads(shown.output)["pages"][2]["status"] == "tombstoned"


def test_tombstone_of_a_missing_step_changes_nothing(demo: Path, tmp_path: Path) -> None:
    before = (demo / "manifest.json").read_bytes()
    journal = tmp_path / "journal.jsonl"
    args = ["recall", "tombstone", str(demo), "--step", "7", "--reason", "x"]
    result = CliRunner().invoke(cli, [*args, "--journal", str(journal)])
    assert result.exit_code == 1
    assert result.output.startswith("[FAK-RECALL-STEP-UNKNOWN] step 7 does not exist")
    assert (demo / "manifest.json").read_bytes() == before
    assert not journal.exists() or journal.read_bytes() == b""


def test_inspect_of_a_directory_without_an_image(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["recall", "inspect", str(tmp_path)])
    assert result.exit_code == 1
    assert result.output.startswith("[FAK-RECALL-IMAGE-MISSING] no core image at ")
