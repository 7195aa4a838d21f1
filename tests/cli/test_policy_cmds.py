"""CLI verbs preflight, policy, hook, agent: exact output and exit codes (in-process and real)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from fak.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
SUPPORT = str(ROOT / "examples" / "customer-support-readonly-policy.json")
FAK = [sys.executable, "-m", "fak.cli.main"]


def _run(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), input=stdin)
    return result.exit_code, result.stdout, result.stderr


# -- must-show, as real processes --------------------------------------------------------------
def test_preflight_refund_is_denied_and_search_allowed_real_process() -> None:
    denied = subprocess.run(
        [*FAK, "preflight", "--policy", SUPPORT, "--tool", "refund_payment", "--args", "{}"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert denied.returncode == 0
    assert denied.stdout.splitlines()[0] == "verdict=DENY reason=POLICY_BLOCK by=monitor"
    allowed = subprocess.run(
        [*FAK, "preflight", "--policy", SUPPORT, "--tool", "search_kb", "--args", "{}"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert allowed.returncode == 0
    assert allowed.stdout.splitlines()[0] == "verdict=ALLOW reason=NONE by=monitor"


def test_dump_piped_into_check_exits_zero_real_processes() -> None:
    dump = subprocess.run([*FAK, "policy", "--dump"], capture_output=True, check=True)
    check = subprocess.run(
        [*FAK, "policy", "--check", "-"], input=dump.stdout, capture_output=True, check=False
    )
    assert check.returncode == 0, check.stderr
    assert check.stdout.decode().startswith("OK  <stdin>  (fak-policy/v1, posture=fail_closed")


# -- preflight ---------------------------------------------------------------------------------
def test_preflight_explain_lists_every_rung() -> None:
    code, out, _ = _run(
        "preflight", "--policy", SUPPORT, "--tool", "refund_payment", "--args", "{}", "--explain"
    )
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "verdict=DENY reason=POLICY_BLOCK by=monitor"
    assert lines[1] == "witness=deny refund_payment"
    rungs = [line.split()[0] for line in lines[3:6]]
    assert rungs == ["grammar", "preflight", "monitor"]
    assert "DENY POLICY_BLOCK" in lines[5]


def test_preflight_json_has_verdict_and_trace() -> None:
    code, out, _ = _run("preflight", "--tool", "get_x", "--args", "not json", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["verdict"] == {
        "kind": "DENY",
        "by": "preflight",
        "reason": "MALFORMED",
        "disposition": "RETRYABLE",
        "detail": {"claim": "rung-0: arguments are not a JSON object"},
    }
    assert [t["rung"] for t in doc["trace"]] == ["grammar", "preflight", "monitor"]
    assert [t["counted"] for t in doc["trace"]] == [True, True, False]
    assert len(doc["policy"]["hash"]) == 64


def test_preflight_default_floor_and_transform(tmp_path: Path) -> None:
    assert _run("preflight", "--tool", "get_user", "--args", '{"id": 1}')[1].startswith(
        "verdict=ALLOW reason=NONE by=monitor"
    )
    code, out, _ = _run("preflight", "--tool", "get_user", "--args", '{"token": "abc"}')
    assert out.splitlines()[:2] == [
        "verdict=TRANSFORM reason=NONE by=monitor",
        'dispatched_args={"token": "[REDACTED]"}',
    ]
    schema = tmp_path / "schema.json"
    schema.write_text(
        json.dumps(
            {
                "properties": {"from_currency": {}, "to_currency": {}, "amount": {}},
                "required": ["from_currency", "to_currency", "amount"],
            }
        )
    )
    code, out, _ = _run(
        "preflight",
        "--tool",
        "convert_currency",
        "--args",
        '{"from": "USD", "to_currency": "EUR", "amount": 2}',
        "--schema",
        str(schema),
        "--alias",
        "from=from_currency",
    )
    assert code == 0
    assert out.splitlines()[0] == "verdict=TRANSFORM reason=NONE by=grammar"


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["preflight", "--args", "{}"], 2),  # missing --tool
        (["preflight", "--tool", "t", "--alias", "nope"], 2),
        (["preflight", "--tool", "t", "--policy", "/nonexistent.json"], 1),
        (["preflight", "--tool", "t", "--schema", "/nonexistent.json"], 1),
    ],
)
def test_preflight_exit_codes(args: list[str], code: int) -> None:
    assert _run(*args)[0] == code


def test_finding_small_alias_without_schema_says_a_schema_is_needed() -> None:
    code, _, err = _run("preflight", "--tool", "convert", "--alias", "from=from_currency")
    assert code == 2
    assert "--alias needs --schema" in err


# -- policy ------------------------------------------------------------------------------------
def test_policy_dump_is_the_default_floor_manifest() -> None:
    code, out, _ = _run("policy", "--dump")
    assert code == 0
    doc = json.loads(out)
    assert doc["version"] == "fak-policy/v1"
    assert doc["allow_prefix"] == ["read_", "get_", "search_", "list_", "lookup_", "find_", "calc"]


def test_policy_check_reports_a_summary(tmp_path: Path) -> None:
    code, out, _ = _run("policy", "--check", SUPPORT)
    assert code == 0
    assert out.splitlines()[0] == (
        f"OK  {SUPPORT}  (fak-policy/v1, posture=fail_closed, allow=4, allow_prefix=6, "
        "deny=4, arg_rules=2)"
    )
    empty = tmp_path / "empty.json"
    empty.write_text("{}")
    code, out, _ = _run("policy", "--check", str(empty))
    assert code == 0 and "every call is refused with DEFAULT_DENY" in out


def test_policy_check_names_the_unknown_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"allows": ["read_file"]}')
    code, out, err = _run("policy", "--check", str(bad))
    assert code == 1 and out == ""
    assert 'unknown field "allows"' in err


def test_policy_check_unknown_reason_lists_the_vocabulary() -> None:
    code, _, err = _run("policy", "--check", "-", stdin='{"deny": {"rm": "NUKE"}}')
    assert code == 1
    assert 'rm="NUKE"' in err
    for name in ("DEFAULT_DENY", "POLICY_BLOCK", "SELF_MODIFY", "UNKNOWN_TOOL", "OVERSIZE"):
        assert name in err


@pytest.mark.parametrize("args", [["policy"], ["policy", "--dump", "--check", "x.json"]])
def test_policy_usage_errors_exit_two(args: list[str]) -> None:
    assert _run(*args)[0] == 2


# -- hook --------------------------------------------------------------------------------------
def test_hook_prints_the_verdict() -> None:
    call = json.dumps({"tool": "refund_payment", "args": {}, "meta": {"readOnlyHint": "true"}})
    code, out, _ = _run("hook", "--policy", SUPPORT, stdin=call)
    assert code == 0
    assert json.loads(out) == {"kind": "DENY", "reason": "POLICY_BLOCK", "by": "monitor"}
    code, out, _ = _run("hook", stdin='{"tool": "get_reservation_details", "args": {"id": "A"}}')
    assert json.loads(out) == {"kind": "ALLOW", "reason": "NONE", "by": "monitor"}


@pytest.mark.parametrize("stdin", ["", "garbage", "[1]", '{"args": {}}', '{"tool": 5}'])
def test_hook_fails_closed_on_bad_input(stdin: str) -> None:
    code, out, _ = _run("hook", stdin=stdin)
    assert code == 2  # the blocking code agents honour; exit 1 would let the tool run
    assert json.loads(out) == {"kind": "DENY", "reason": "MALFORMED", "by": "hook"}


def test_hook_non_object_args_are_malformed() -> None:
    code, out, _ = _run("hook", stdin='{"tool": "get_x", "args": [1, 2]}')
    assert code == 0
    assert json.loads(out)["reason"] == "MALFORMED"


# -- agent -------------------------------------------------------------------------------------
def test_agent_offline_table_shows_before_and_after() -> None:
    code, out, _ = _run("agent", "--offline")
    assert code == 0
    rows = {
        line[:39].strip(): line[39:].split()
        for line in out.splitlines()
        if line.startswith(("destructive", "repeat", "malformed", "injected", "account"))
    }
    assert rows["destructive calls executed"] == ["1", "0", "0"]
    assert rows["injected text reaching the model"] == ["1", "0", "1"]
    assert rows["malformed call repaired by the kernel"] == ["0", "1", "1"]
    assert rows["malformed call retried by the model"] == ["1", "0", "0"]
    assert rows["repeat read served from the vDSO"] == ["0", "1", "1"]
    assert rows["account still exists"] == ["no", "yes", "yes"]
    assert out.rstrip().endswith("verdict=DENY reason=POLICY_BLOCK by=monitor")


def test_agent_offline_json_and_usage() -> None:
    code, out, _ = _run("agent", "--offline", "--json")
    assert code == 0
    arms = json.loads(out)["arms"]
    assert [a["destructive_executed"] for a in arms] == [1, 0, 0]
    assert [a["turns"] for a in arms] == [9, 7, 8]
    assert _run("agent")[0] == 2


# -- FAK_AUDIT_JOURNAL reaches the CLI entry point ----------------------------------------------
def test_preflight_journals_every_decision_when_the_journal_is_configured(tmp_path: Path) -> None:
    from fak.journal import read_rows, verify

    journal = tmp_path / "audit.jsonl"
    env = {**os.environ, "FAK_AUDIT_JOURNAL": str(journal)}
    for tool in ("search_kb", "refund_payment"):
        done = subprocess.run(
            [*FAK, "preflight", "--policy", SUPPORT, "--tool", tool, "--args", '{"q": "x"}'],
            capture_output=True,
            text=True,
            check=False,
            env=env,
        )
        assert done.returncode == 0, done.stderr
    report = verify(journal)
    assert report.ok and report.rows == 2
    rows = list(read_rows(journal))
    assert [(r["kind"], r["tool"], r["verdict"]) for r in rows] == [
        ("DECIDE", "search_kb", "ALLOW"),
        ("DENY", "refund_payment", "DENY"),
    ]
    assert '"x"' not in journal.read_text(encoding="utf-8")  # digests, never argument values


def test_preflight_refuses_a_corrupt_journal_with_exit_1(tmp_path: Path) -> None:
    journal = tmp_path / "audit.jsonl"
    journal.write_text("not a journal row\n", encoding="utf-8")
    env = {**os.environ, "FAK_AUDIT_JOURNAL": str(journal)}
    done = subprocess.run(
        [*FAK, "preflight", "--tool", "read_file"],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    assert done.returncode == 1
    assert "[FAK-JOURNAL-CORRUPT]" in done.stderr
    assert "Traceback" not in done.stderr
    assert journal.read_text(encoding="utf-8") == "not a journal row\n"  # nothing lost
