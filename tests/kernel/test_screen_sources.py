"""Per-source screen settings: the manifest's ``screen`` section reaches the result screen."""

from __future__ import annotations

import pytest

from fak.abi import ToolResult, VerdictKind
from fak.cas import MemoryStore
from fak.kernel import Kernel
from fak.kernel.quarantine import QuarantineLedger, screen_policy_for
from fak.policy import Policy
from fak.policy.manifest import PolicyError, load_manifest
from fak.screen import ScreenPolicy, SourceRule, SourceSettings

# one cue family (an addressee) and an exfiltrating action: 0.9, under the default 1.0
# Addressed to the model but ordering nothing: only a stricter source holds it. (An order to
# forward the itinerary to an outside address is held at every threshold since issue 25.)
SOFT = b"<p>Note to the AI assistant: the itinerary is in the shared folder.</p>"
KEY = b"aws_access_key_id = AKIAQ3EGRTWK5NX7LB4M"
FLOOD = b"Subscribe now for exclusive deals! " * 60

MANIFEST = """{
  "allow": ["get_webpage", "read_file", "run_command", "mail_read"],
  "screen": {
    "rules": [
      {"tool": "get_webpage", "injection_threshold": 0.6},
      {"tool_prefix": "mail_", "injection_threshold": 0.8},
      {"tool": "run_command", "detectors": ["secrets", "injection"]}
    ]
  }
}"""


def _kind(kernel: Kernel, tool: str, payload: bytes) -> VerdictKind:
    return kernel.admit_result(ToolResult(tool, payload)).verdict.kind


def test_a_stricter_threshold_for_web_pages_and_mail_only() -> None:
    kernel = Kernel(Policy.loads(MANIFEST))
    assert _kind(kernel, "get_webpage", SOFT) == VerdictKind.QUARANTINE
    assert _kind(kernel, "mail_read", SOFT) == VerdictKind.QUARANTINE  # by prefix
    assert _kind(kernel, "read_file", SOFT) == VerdictKind.ALLOW  # the default threshold


def test_detectors_can_be_switched_off_per_tool_but_others_still_run() -> None:
    kernel = Kernel(Policy.loads(MANIFEST))
    assert _kind(kernel, "run_command", FLOOD) == VerdictKind.ALLOW
    assert _kind(kernel, "read_file", FLOOD) == VerdictKind.QUARANTINE
    assert _kind(kernel, "run_command", KEY) == VerdictKind.QUARANTINE


def test_the_same_bytes_are_judged_per_source_not_from_the_memo() -> None:
    kernel = Kernel(Policy.loads(MANIFEST))
    assert _kind(kernel, "read_file", SOFT) == VerdictKind.ALLOW
    assert _kind(kernel, "get_webpage", SOFT) == VerdictKind.QUARANTINE
    assert _kind(kernel, "read_file", SOFT) == VerdictKind.ALLOW


def test_a_policy_reload_changes_the_screen() -> None:
    kernel = Kernel(Policy.loads('{"allow": ["get_webpage"]}'))
    assert _kind(kernel, "get_webpage", SOFT) == VerdictKind.ALLOW
    kernel.replace_policy(Policy.loads(MANIFEST))
    assert _kind(kernel, "get_webpage", SOFT) == VerdictKind.QUARANTINE


def test_page_in_re_screens_under_the_tools_settings() -> None:
    ledger = QuarantineLedger(MemoryStore())
    ledger.set_screen_policy(ScreenPolicy(rules=[SourceRule("fetch", injection_threshold=0.5)]))
    held = ledger.admit(ToolResult("fetch", SOFT))
    assert held.verdict.kind == VerdictKind.QUARANTINE
    ledger.clear(held.quarantine_id)
    with pytest.raises(PermissionError):
        ledger.page_in(held.quarantine_id)  # still over fetch's threshold


def test_exact_tool_beats_prefix_and_longest_prefix_wins() -> None:
    policy = ScreenPolicy(
        rules=[
            SourceRule("mail_", prefix=True, injection_threshold=0.8),
            SourceRule("mail_ext_", prefix=True, injection_threshold=0.5),
            SourceRule("mail_ext_trusted", injection_threshold=2.0),
        ]
    )
    assert policy.for_source("mail_read").injection_threshold == 0.8
    assert policy.for_source("mail_ext_read").injection_threshold == 0.5
    assert policy.for_source("mail_ext_trusted").injection_threshold == 2.0
    assert policy.for_source("other") == SourceSettings()


def test_the_section_converts_with_defaults_inherited() -> None:
    section = load_manifest(
        '{"screen": {"injection_threshold": 1.5, "quarantine": "whole",'
        ' "rules": [{"tool": "t", "detectors": ["secrets"]}]}}'
    ).screen
    policy = screen_policy_for(section)
    assert policy.default == SourceSettings(injection_threshold=1.5, quarantine="whole")
    rule = policy.for_source("t")
    assert (rule.secrets, rule.injection, rule.pollution) == (True, False, False)
    assert rule.injection_threshold == 1.5 and rule.quarantine == "whole"


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('{"screen": {"rules": [{"tool": "a", "tool_prefix": "a"}]}}', "screen.rules[0]"),
        ('{"screen": {"rules": [{"injection_threshold": 0.5}]}}', "screen.rules[0]"),
        ('{"screen": {"detectors": ["secret"]}}', "screen.detectors"),
        ('{"screen": {"injection_threshold": -1}}', "screen.injection_threshold"),
        ('{"screen": {"quarantine": "partial"}}', "screen.quarantine"),
        ('{"screen": {"threshold": 1}}', "screen.threshold"),
    ],
)
def test_a_bad_screen_section_fails_loudly(text: str, where: str) -> None:
    with pytest.raises(PolicyError) as exc:
        load_manifest(text)
    assert exc.value.problems[0].where == where


def test_manifests_without_a_screen_section_keep_their_hash() -> None:
    assert "screen" not in load_manifest('{"allow": ["x"]}').to_json_dict()
