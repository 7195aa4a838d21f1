"""The fak-policy/v1 manifest: strict load, exact errors, canonical dump round trip."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fak.abi import Reason, ToolCall, VerdictKind
from fak.policy import (
    CompiledFloor,
    Manifest,
    Policy,
    PolicyError,
    PolicyErrorCode,
    Posture,
    default_manifest,
    dump_manifest,
    load_manifest,
    load_manifest_file,
    manifest_hash,
    refusal_vocabulary,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
VOCAB = (
    "DEFAULT_DENY, POLICY_BLOCK, SELF_MODIFY, LEASE_HELD, TRUST_VIOLATION, MALFORMED, MISROUTE, "
    "RATE_LIMITED, SECRET_EXFIL, UNWITNESSED, OVERSIZE, UNKNOWN_TOOL"
)


def _error(text: str) -> PolicyError:
    with pytest.raises(PolicyError) as info:
        load_manifest(text)
    return info.value


def test_empty_manifest_is_valid_and_denies_everything() -> None:
    manifest = load_manifest("{}")
    assert manifest == Manifest()
    floor = CompiledFloor(Policy(manifest))
    for tool in ("read_file", "get_user", "calculate", "anything"):
        verdict = floor.decide(ToolCall(tool, {}))
        assert (verdict.kind, verdict.reason) == (VerdictKind.DENY, Reason.DEFAULT_DENY)


def test_unknown_field_names_the_field() -> None:
    err = _error('{"allows": ["read_file"]}')
    assert err.code == PolicyErrorCode.UNKNOWN_FIELD
    assert 'unknown field "allows"' in str(err)
    assert "allow, allow_prefix" in str(err)


def test_unknown_field_inside_an_arg_rule() -> None:
    err = _error('{"arg_rules": [{"tool": "t", "arg": "a", "max_bytes": 3, "advisory": true}]}')
    assert err.code == PolicyErrorCode.UNKNOWN_FIELD
    assert 'arg_rules[0].advisory: unknown field "advisory"' in str(err)


def test_unknown_deny_reason_lists_offenders_and_vocabulary() -> None:
    err = _error('{"deny": {"b_tool": "NOPE", "a_tool": "ALSO_BAD", "ok": "POLICY_BLOCK"}}')
    assert err.code == PolicyErrorCode.UNKNOWN_REASON
    text = str(err)
    assert 'a_tool="ALSO_BAD", b_tool="NOPE"' in text
    assert f"valid reasons: {VOCAB}" in text


def test_none_is_not_a_deny_reason() -> None:
    assert _error('{"deny": {"t": "NONE"}}').code == PolicyErrorCode.UNKNOWN_REASON


def test_vocabulary_is_the_twelve_refusals() -> None:
    assert ", ".join(refusal_vocabulary()) == VOCAB


@pytest.mark.parametrize(
    ("text", "code", "fragment"),
    [
        ('{"posture": "open"}', PolicyErrorCode.BAD_POSTURE, "fail_closed, admit_and_log"),
        ('{"version": "fak-policy/v2"}', PolicyErrorCode.BAD_VERSION, "unsupported major"),
        ('{"version": "v1"}', PolicyErrorCode.BAD_VERSION, "version must be"),
        ("{", PolicyErrorCode.BAD_JSON, "not valid JSON"),
        ("[1, 2]", PolicyErrorCode.BAD_JSON, "must be a JSON object"),
        ('{"allow": "read_file"}', PolicyErrorCode.BAD_VALUE, "allow"),
        ('{"allow_prefix": [""]}', PolicyErrorCode.BAD_VALUE, "match everything"),
        (
            '{"arg_rules": [{"tool": "t", "arg": "a", "deny_regex": "("}]}',
            PolicyErrorCode.BAD_REGEX,
            "bad RE2 regex",
        ),
        (
            '{"arg_rules": [{"tool": "t", "arg": "a", "deny_regex": "(?=x)"}]}',
            PolicyErrorCode.BAD_REGEX,
            "bad RE2 regex",
        ),
        (
            '{"arg_rules": [{"tool": "t", "arg": "a"}]}',
            PolicyErrorCode.BAD_RULE,
            "allow_emails, deny_regex, max_bytes (got none)",
        ),
        (
            '{"arg_rules": [{"tool": "t", "arg": "a", "max_bytes": 5, "allow_glob": "x/**"}]}',
            PolicyErrorCode.BAD_RULE,
            "(got allow_glob and max_bytes)",
        ),
        (
            '{"arg_rules": [{"tool": "t", "arg": "a", "max_bytes": 0}]}',
            PolicyErrorCode.BAD_RULE,
            "positive",
        ),
        (
            '{"arg_rules": [{"tool": "t", "arg": "a", "max_bytes": 4, "reason": "NOPE"}]}',
            PolicyErrorCode.UNKNOWN_REASON,
            "valid reasons",
        ),
        (
            '{"arg_rules": [{"tool": "", "arg": "a", "max_bytes": 4}]}',
            PolicyErrorCode.BAD_RULE,
            "non-empty",
        ),
        (
            '{"arg_rules": [{"tool": "t", "arg": "a", "max_bytes": "4"}]}',
            PolicyErrorCode.BAD_RULE,
            "integer",
        ),
    ],
)
def test_each_defect_is_a_load_error_naming_what_to_fix(
    text: str, code: PolicyErrorCode, fragment: str
) -> None:
    err = _error(text)
    assert err.code == code
    assert fragment in str(err)


def test_all_problems_are_reported_at_once() -> None:
    err = _error('{"allows": [], "posture": "x", "deny": {"t": "NOPE"}}')
    codes = {p.code for p in err.problems}
    assert codes == {
        PolicyErrorCode.UNKNOWN_FIELD,
        PolicyErrorCode.BAD_POSTURE,
        PolicyErrorCode.UNKNOWN_REASON,
    }


def test_unreadable_file_is_a_policy_error(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="cannot read"):
        load_manifest_file(tmp_path / "missing.json")


def test_minor_version_is_accepted_and_kept() -> None:
    manifest = load_manifest('{"version": "fak-policy/v1.3"}')
    assert json.loads(dump_manifest(manifest))["version"] == "fak-policy/v1.3"


def test_default_floor_shape() -> None:
    manifest = default_manifest()
    assert manifest.posture == Posture.FAIL_CLOSED
    assert manifest.allow_prefix == (
        "read_",
        "get_",
        "search_",
        "list_",
        "lookup_",
        "find_",
        "calc",
    )
    assert manifest.deny["delete_account"] == "POLICY_BLOCK"
    assert "password" in manifest.redact_fields


@pytest.mark.parametrize(
    "manifest",
    [default_manifest(), *(load_manifest_file(p) for p in sorted(EXAMPLES.glob("*.json")))],
    ids=["default", *(p.name for p in sorted(EXAMPLES.glob("*.json")))],
)
def test_dump_then_check_round_trips_exactly(manifest: Manifest) -> None:
    text = dump_manifest(manifest)
    again = load_manifest(text)
    assert again == manifest
    assert dump_manifest(again) == text
    assert manifest_hash(again) == manifest_hash(manifest)


def test_hash_ignores_deny_key_order_but_not_content() -> None:
    a = load_manifest('{"deny": {"x": "POLICY_BLOCK", "y": "SECRET_EXFIL"}}')
    b = load_manifest('{"deny": {"y": "SECRET_EXFIL", "x": "POLICY_BLOCK"}}')
    c = load_manifest('{"deny": {"y": "SECRET_EXFIL", "x": "SELF_MODIFY"}}')
    assert manifest_hash(a) == manifest_hash(b) != manifest_hash(c)
    assert len(manifest_hash(a)) == 64


def test_loaded_manifest_replaces_the_floor() -> None:
    # the default floor allows get_*; a manifest that does not list it must not inherit it
    policy = Policy.loads('{"allow": ["search_kb"]}')
    floor = CompiledFloor(policy)
    assert floor.decide(ToolCall("search_kb", {})).kind == VerdictKind.ALLOW
    denied = floor.decide(ToolCall("get_user_details", {}))
    assert (denied.kind, denied.reason) == (VerdictKind.DENY, Reason.DEFAULT_DENY)


def test_customer_support_example_verdicts() -> None:
    floor = CompiledFloor(Policy.load(EXAMPLES / "customer-support-readonly-policy.json"))
    refund = floor.decide(ToolCall("refund_payment", {}))
    assert (refund.kind, refund.reason, refund.by) == (
        VerdictKind.DENY,
        Reason.POLICY_BLOCK,
        "monitor",
    )
    assert floor.decide(ToolCall("search_kb", {"query": "reset password"})).kind == "ALLOW"
