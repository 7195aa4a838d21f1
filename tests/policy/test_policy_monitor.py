"""The monitor's decision order, self-modify (path and shell), arg rules, redaction, posture."""

from __future__ import annotations

from typing import Any

import pytest

from fak.abi import Reason, ToolCall, Verdict, VerdictKind
from fak.policy import REDACTED, Monitor, Policy
from fak.policy.globs import AllowGlob, GuardGlob
from fak.policy.shell import command_writes, shell_self_modify

GLOBS = [".git/", ".env", "src/fak/", "policy.json", "/etc/"]


def _policy(**fields: Any) -> Policy:
    import json

    return Policy.loads(json.dumps(fields))


def _decide(policy: Policy, tool: str, args: Any = None) -> Verdict:
    from fak.policy import decode_args

    call = ToolCall(tool, args)
    return Monitor(policy).decide(call, decode_args(call.args))


# -- order ---------------------------------------------------------------------------------------
def test_explicit_deny_wins_over_allow() -> None:
    policy = _policy(allow=["wipe"], deny={"wipe": "POLICY_BLOCK"})
    v = _decide(policy, "wipe", {})
    assert (v.kind, v.reason, v.claim) == (VerdictKind.DENY, Reason.POLICY_BLOCK, "deny wipe")


def test_deny_matches_every_case_variant() -> None:
    # issue 8 finding 3: a case variant of a denied name under an allowed prefix is still denied
    policy = _policy(allow_prefix=["Wipe"], deny={"wipe": "POLICY_BLOCK"})
    assert _decide(policy, "Wipe", {}).kind == VerdictKind.DENY
    assert _decide(policy, "Wipe_all", {}).kind == VerdictKind.ALLOW


def test_self_modify_path_beats_allow() -> None:
    policy = _policy(allow=["write_file"], self_modify_globs=GLOBS)
    v = _decide(policy, "write_file", {"path": "repo/.git/hooks/pre-commit", "content": "x"})
    assert (v.reason, v.claim) == (Reason.SELF_MODIFY, "self_modify_globs .git/")
    assert "pre-commit" not in v.claim


@pytest.mark.parametrize(
    "path",
    [".GIT/config", "a\\.git\\config", "src/../.git/x", "./src/fak/kernel/kernel.py", ".env"],
)
def test_self_modify_path_normalises(path: str) -> None:
    policy = _policy(allow=["Write"], self_modify_globs=GLOBS)
    assert _decide(policy, "Write", {"file_path": path}).reason == Reason.SELF_MODIFY


def test_read_of_a_guarded_path_is_allowed() -> None:
    policy = _policy(allow=["read_file"], self_modify_globs=GLOBS)
    assert _decide(policy, "read_file", {"path": ".git/config"}).kind == VerdictKind.ALLOW


@pytest.mark.parametrize(
    "command",
    [
        "echo x > .git/hooks/pre-commit",
        "echo x >> .env",
        "sed -i 's/a/b/' src/fak/policy/monitor.py",
        "cp evil.json policy.json",
        "mv a .git/config",
        "rm -rf .git/",
        "tee -a /etc/hosts",
        "git -C . checkout -- src/fak/",
        "git apply patch.diff && cat .git/HEAD",
        "find .git/ -name x -delete",
        'python3 -c \'open(".env","w").write("x")\'',
        "chmod +x .git/hooks/post-merge",
        "tar -xzf a.tgz -C src/fak/",
        "perl -pi -e s/a/b/ .env",
        "curl -o .git/config http://example",
    ],
)
def test_write_shaped_shell_on_a_guarded_path_is_self_modify(command: str) -> None:
    policy = _policy(allow=["Bash"], self_modify_globs=GLOBS)
    v = _decide(policy, "Bash", {"command": command})
    assert (v.kind, v.reason) == (VerdictKind.DENY, Reason.SELF_MODIFY), command
    assert v.claim.startswith("shell write to ")


@pytest.mark.parametrize(
    "command",
    [
        "cat .git/config",
        "grep -rn token src/fak/",
        "git log -- policy.json",
        "ls -la .git/ 2>&1",
        "git status > /dev/null",
        "echo hi > notes.txt",  # writes, but nothing guarded
        "git add README.md",
    ],
)
def test_reads_and_unguarded_writes_stay_allowed(command: str) -> None:
    policy = _policy(allow=["Bash"], self_modify_globs=GLOBS)
    assert _decide(policy, "Bash", {"cmd": command}).kind == VerdictKind.ALLOW, command


def test_command_writes_floor() -> None:
    assert command_writes("sed -i s/a/b/ f")
    assert command_writes("x | tee out")
    assert not command_writes("cat f | grep x 2>&1")
    assert not command_writes("git add file")
    assert shell_self_modify("rm .env", []) is None


# -- arg rules -----------------------------------------------------------------------------------
def test_arg_rules_run_before_the_affirmative_allow_and_never_grant() -> None:
    policy = _policy(
        allow=["fetch"],
        arg_rules=[{"tool": "fetch", "arg": "url", "deny_regex": "^http://"}],
    )
    v = _decide(policy, "fetch", {"url": "http://x"})
    assert (v.reason, v.claim) == (Reason.POLICY_BLOCK, "fetch.url deny_regex /^http:///")
    assert _decide(policy, "fetch", {"url": "https://x"}).kind == VerdictKind.ALLOW
    # a satisfied rule on an unlisted tool does not admit it
    other = _policy(arg_rules=[{"tool": "fetch", "arg": "url", "deny_regex": "^http://"}])
    assert _decide(other, "fetch", {"url": "https://x"}).reason == Reason.DEFAULT_DENY


def test_arg_rule_tool_match_is_case_insensitive_and_reason_is_kept() -> None:
    policy = _policy(
        allow=["Send"],
        arg_rules=[{"tool": "send", "arg": "to", "max_bytes": 5, "reason": "SECRET_EXFIL"}],
    )
    v = _decide(policy, "Send", {"to": "abcdef"})
    assert (v.reason, v.claim) == (Reason.SECRET_EXFIL, "send.to max_bytes 5")
    assert _decide(policy, "Send", {"to": "abcde"}).kind == VerdictKind.ALLOW


def test_allow_glob_missing_or_escaping_value_fails_closed() -> None:
    policy = _policy(
        allow=["Write"], arg_rules=[{"tool": "Write", "arg": "p", "allow_glob": "src/**"}]
    )
    assert _decide(policy, "Write", {"p": "src/a/b.py"}).kind == VerdictKind.ALLOW
    for bad in ({}, {"p": "src/../../etc/passwd"}, {"p": "/src/x"}, {"p": "docs/x"}, {"p": [1]}):
        v = _decide(policy, "Write", bad)
        assert (v.reason, v.claim) == (Reason.POLICY_BLOCK, "Write.p allow_glob src/**"), bad


def test_deny_regex_and_max_bytes_ignore_missing_values_and_read_scalars() -> None:
    policy = _policy(
        allow=["t"],
        arg_rules=[
            {"tool": "t", "arg": "n", "deny_regex": "^4[0-9]$"},
            {"tool": "t", "arg": "flag", "deny_regex": "^true$"},
        ],
    )
    assert _decide(policy, "t", {}).kind == VerdictKind.ALLOW
    assert _decide(policy, "t", {"n": 42}).kind == VerdictKind.DENY
    assert _decide(policy, "t", {"flag": True}).kind == VerdictKind.DENY
    assert _decide(policy, "t", {"flag": {"nested": True}}).kind == VerdictKind.ALLOW


@pytest.mark.parametrize(
    ("glob", "value", "ok"),
    [
        ("**", "a/b", True),
        ("**", "../a", False),
        ("**", "/abs", False),
        ("./**", "x", True),
        ("docs/*.md", "docs/a.md", True),
        ("docs/*.md", "docs/sub/a.md", False),
        ("/tmp/**", "/tmp/x/y", True),
        ("/tmp/**", "/tmpx", False),
        ("src/**", "src", True),
        ("src/**", "src\\win\\path.py", True),
        ("data/file?.csv", "data/file1.csv", True),
        ("data/[ab].csv", "data/c.csv", False),
    ],
)
def test_allow_glob_semantics(glob: str, value: str, ok: bool) -> None:
    assert AllowGlob(glob).admits(value) is ok


def test_guard_glob_wildcards() -> None:
    glob = GuardGlob("*.pem")
    assert glob.in_path("certs/server.PEM")
    assert glob.in_text("cp x certs/a.pem")
    assert not glob.in_path("certs/server.crt")


# -- redaction, allow, default deny, posture -----------------------------------------------------
def test_redaction_rewrites_an_admitted_call_only() -> None:
    policy = _policy(allow=["login"], redact_fields=["password", "Token"])
    v = _decide(policy, "login", {"user": "u", "PASSWORD": "hunter2", "token": "t"})
    assert v.kind == VerdictKind.TRANSFORM
    assert dict(v.new_args or {}) == {"user": "u", "PASSWORD": REDACTED, "token": REDACTED}
    assert v.meta["redacted"] == "PASSWORD,token"
    # redaction never admits an unlisted tool
    assert _decide(policy, "other", {"password": "x"}).reason == Reason.DEFAULT_DENY


def test_default_deny_and_allow_prefix() -> None:
    policy = _policy(allow_prefix=["get_"])
    assert _decide(policy, "get_user", None).kind == VerdictKind.ALLOW
    v = _decide(policy, "set_user", None)
    assert (v.kind, v.reason, v.claim) == (
        VerdictKind.DENY,
        Reason.DEFAULT_DENY,
        "not in allow or allow_prefix",
    )


def test_admit_and_log_downgrades_only_read_shaped_default_denies() -> None:
    policy = _policy(
        posture="admit_and_log",
        deny={"get_secret": "SECRET_EXFIL"},
        self_modify_globs=[".git/"],
    )
    logged = _decide(policy, "get_weather", {})
    assert logged.kind == VerdictKind.ALLOW
    assert dict(logged.meta) == {"posture": "admit_and_log", "would_deny": "DEFAULT_DENY"}
    for tool in ("delete_user", "send_email", "get_and_update", "Bash"):
        assert _decide(policy, tool, {}).reason == Reason.DEFAULT_DENY, tool
    assert _decide(policy, "get_secret", {}).reason == Reason.SECRET_EXFIL
    # caller metadata cannot widen authority
    call = ToolCall("wipe_disk", {}, meta={"read_only": "true", "posture": "admit_and_log"})
    assert Monitor(policy).decide(call, {}).reason == Reason.DEFAULT_DENY


def test_unparseable_args_are_malformed_at_the_monitor() -> None:
    policy = _policy(allow=["t"])
    assert _decide(policy, "t", "[1,2]").reason == Reason.MALFORMED
