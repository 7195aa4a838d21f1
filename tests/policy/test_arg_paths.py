"""Arg rules over list elements and nested fields, glob sets, and e-mail addresses."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fak.abi import ToolCall, VerdictKind
from fak.kernel import Kernel
from fak.policy import Policy, PolicyError
from fak.policy.argrules import email_address, parse_arg_path, values_at


def _kernel(*rules: dict[str, Any]) -> Kernel:
    manifest = {"allow": ["send_email", "create_event", "write"], "arg_rules": list(rules)}
    return Kernel(Policy.loads(json.dumps(manifest)))


def _kind(kernel: Kernel, tool: str, args: dict[str, Any]) -> VerdictKind:
    return kernel.decide(ToolCall(tool, args)).kind


EMAILS = {"tool": "send_email", "arg": "recipients[]", "allow_emails": ["*@corp.example"]}


@pytest.mark.parametrize(
    ("recipients", "kind"),
    [
        (["alice@corp.example"], VerdictKind.ALLOW),
        (["alice@corp.example", "Bob <BOB@Corp.Example>"], VerdictKind.ALLOW),
        ([], VerdictKind.ALLOW),  # nothing to send to, nothing to refuse
        (["alice@corp.example", "mallory@evil.example"], VerdictKind.DENY),  # one bad element
        (["mallory@corp.example.evil.example"], VerdictKind.DENY),
        (["alice@corp.example, mallory@evil.example"], VerdictKind.DENY),  # two in one string
        (["mallory@evil.example <alice@corp.example>"], VerdictKind.DENY),
        ([{"address": "alice@corp.example"}], VerdictKind.DENY),  # not a scalar: fails closed
        ("alice@corp.example", VerdictKind.ALLOW),  # a bare string is read as one element
    ],
)
def test_every_element_of_a_list_is_checked(recipients: Any, kind: VerdictKind) -> None:
    kernel = _kernel(EMAILS)
    assert _kind(kernel, "send_email", {"recipients": recipients, "body": "hi"}) == kind


def test_an_absent_list_has_nothing_to_check_but_an_absent_scalar_fails_closed() -> None:
    kernel = _kernel(
        EMAILS, {"tool": "send_email", "arg": "subject", "allow_glob": ["re-*", "fwd-*"]}
    )
    assert _kind(kernel, "send_email", {"subject": "re-x"}) == VerdictKind.ALLOW
    assert _kind(kernel, "send_email", {"recipients": ["a@corp.example"]}) == VerdictKind.DENY


def test_nested_paths_and_deny_regex_on_any_element() -> None:
    kernel = _kernel(
        {
            "tool": "create_event",
            "arg": "event.participants[]",
            "deny_regex": "@evil\\.example$",
        }
    )
    ok = {"event": {"participants": ["a@corp.example", "b@corp.example"]}}
    bad = {"event": {"participants": ["a@corp.example", "m@evil.example"]}}
    assert _kind(kernel, "create_event", ok) == VerdictKind.ALLOW
    assert _kind(kernel, "create_event", bad) == VerdictKind.DENY
    assert _kind(kernel, "create_event", {"event": {}}) == VerdictKind.ALLOW  # negative rule
    verdict = kernel.decide(ToolCall("create_event", bad))
    assert verdict.claim.startswith("create_event.event.participants[] deny_regex")
    assert "m@evil.example" not in verdict.claim  # witnesses name rules, never values


def test_a_set_of_globs_admits_a_value_any_of_them_admits() -> None:
    kernel = _kernel({"tool": "write", "arg": "path", "allow_glob": ["src/**", "docs/**"]})
    assert _kind(kernel, "write", {"path": "docs/a.md"}) == VerdictKind.ALLOW
    assert _kind(kernel, "write", {"path": "src/x/y.py"}) == VerdictKind.ALLOW
    assert _kind(kernel, "write", {"path": "etc/passwd"}) == VerdictKind.DENY
    assert _kind(kernel, "write", {"path": "docs/../../x"}) == VerdictKind.DENY


@pytest.mark.parametrize(
    ("value", "parsed"),
    [
        ("alice@corp.example", ("alice", "corp.example")),
        ("Alice <Alice@CORP.example.>", None),  # a trailing dot is not an address
        ("Alice <Alice@CORP.example>", ("alice", "corp.example")),
        ("a@b@corp.example", None),
        ("alice@corp.example, b@x.example", None),
        ("alice @corp.example", None),
        ("alice@", None),
        ("@corp.example", None),
        ("alice@corp.example:25", None),
        ("alice@[127.0.0.1]", None),
    ],
)
def test_email_address_parsing(value: str, parsed: tuple[str, str] | None) -> None:
    assert email_address(value) == parsed


def test_values_at_walks_lists_and_reports_missing_fields() -> None:
    path = parse_arg_path("a[].b")
    assert values_at({"a": [{"b": 1}, {"b": 2}]}, path) == [1, 2]
    assert values_at({"a": []}, path) == []
    assert values_at({"a": [{"c": 1}]}, path) is None
    assert values_at({}, parse_arg_path("x")) is None


@pytest.mark.parametrize(
    "rule",
    [
        {"tool": "t", "arg": "a..b", "max_bytes": 3},
        {"tool": "t", "arg": "a[]x", "max_bytes": 3},
        {"tool": "t", "arg": "a b", "max_bytes": 3},
        {"tool": "t", "arg": "a", "allow_glob": []},
        {"tool": "t", "arg": "a", "allow_emails": ["*"]},
        {"tool": "t", "arg": "a", "allow_emails": ["Alice@corp.example"]},
        {"tool": "t", "arg": "a", "allow_emails": ["a@*"]},
    ],
)
def test_bad_paths_and_patterns_are_policy_errors(rule: dict[str, Any]) -> None:
    with pytest.raises(PolicyError):
        Policy.loads(json.dumps({"allow": ["t"], "arg_rules": [rule]}))
