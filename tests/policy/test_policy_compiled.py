"""The compiled floor agrees with the uncompiled fold on every call (Hypothesis)."""

from __future__ import annotations

import json
from types import MappingProxyType
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from fak.abi import ToolCall
from fak.policy import CompiledFloor, Grammar, Param, Policy, Schema, default_chain

TOOLS = [
    "get_user",
    "read_file",
    "write_file",
    "Bash",
    "search_kb",
    "refund_payment",
    "calculate",
    "delete_account",
    "convert_currency",
    "Send",
    "update_row",
    "list_things",
]
KEYS = [
    "id",
    "path",
    "file_path",
    "filePath",
    "command",
    "cmd",
    "password",
    "Token",
    "query",
    "from",
    "to",
    "amount",
    "_positional",
]
VALUES = st.one_of(
    st.sampled_from(
        [
            ".git/config",
            "src/ok.py",
            "echo x > .env",
            "cat .git/HEAD",
            "rm -rf /",
            "http://x",
            "EUR",
            "../../etc/passwd",
        ]
    ),
    st.integers(-3, 3),
    st.booleans(),
    st.none(),
    st.lists(st.integers(0, 3), max_size=3),
    st.text(max_size=12),
)

POLICIES = st.fixed_dictionaries(
    {
        "allow": st.lists(st.sampled_from(TOOLS), min_size=1, max_size=6),
        "redact_fields": st.lists(st.sampled_from(["password", "token", "secret"]), max_size=2),
        "self_modify_globs": st.lists(
            st.sampled_from([".git/", ".env", "src/", "*.pem"]), max_size=3
        ),
        "arg_rules": st.lists(
            st.sampled_from(
                [
                    {"tool": "write_file", "arg": "path", "allow_glob": "src/**"},
                    {"tool": "bash", "arg": "command", "deny_regex": "rm\\s+-rf"},
                    {"tool": "search_kb", "arg": "query", "max_bytes": 4},
                ]
            ),
            max_size=2,
        ),
    },
    optional={
        "posture": st.sampled_from(["fail_closed", "admit_and_log"]),
        "allow_prefix": st.lists(
            st.sampled_from(["get_", "read_", "Ba", "list_", "calc"]), max_size=3
        ),
        "deny": st.dictionaries(
            st.sampled_from(TOOLS),
            st.sampled_from(["POLICY_BLOCK", "SECRET_EXFIL", "SELF_MODIFY"]),
            max_size=3,
        ),
    },
)

CONVERT = Grammar(
    (Param("from_currency"), Param("to_currency"), Param("amount")),
    {"from": "from_currency", "to": "to_currency"},
)
SCHEMA = Schema(("id",), {"id": ("string",)})


PAIRS = [
    ("command", "echo x > .env"),
    ("cmd", "rm -rf .git/"),
    ("command", "cat .git/HEAD"),
    ("command", "rm -rf /"),
    ("path", ".git/config"),
    ("path", "src/ok.py"),
    ("file_path", "../../etc/passwd"),
    ("filePath", ".env"),
    ("password", "hunter2"),
    ("Token", "t"),
    ("query", "abcdefgh"),
    ("query", "ab"),
    ("from", "EUR"),
    ("to", "USD"),
    ("amount", 3),
    ("id", "u1"),
    ("id", 5),
    ("_positional", ["EUR", "USD", 3]),
]


def _args() -> st.SearchStrategy[Any]:
    mapping = st.one_of(
        st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=4),
        st.lists(st.sampled_from(PAIRS), max_size=3).map(dict),
    )
    return st.one_of(
        st.none(),
        mapping,
        mapping.map(MappingProxyType),
        mapping.map(json.dumps),
        st.sampled_from(["", "not json", "[1]", "{}", '{"command": "tee .env"}']),
    )


def _tools(policy: Policy) -> st.SearchStrategy[str]:
    ruled = {"write_file", "Bash", "search_kb"}
    favoured = sorted(policy.allow | set(policy.deny) | ruled)
    return st.one_of(
        st.sampled_from(favoured),
        st.sampled_from(TOOLS),
        st.sampled_from(policy.allow_prefix or ("x",)).map(lambda p: p + "thing"),
        st.text(max_size=8),
    )


@settings(max_examples=500, deadline=None)
@given(POLICIES, st.data(), st.booleans())
def test_compiled_and_uncompiled_decisions_agree(
    manifest: dict[str, Any], data: st.DataObject, with_grammar: bool
) -> None:
    policy = Policy.loads(json.dumps(manifest))
    grammars = {"convert_currency": CONVERT} if with_grammar else None
    schemas = {"get_user": SCHEMA} if with_grammar else None
    compiled = CompiledFloor(policy, grammars, schemas)
    plain = default_chain(policy, grammars, schemas)
    calls = data.draw(
        st.lists(st.builds(ToolCall, _tools(policy), _args()), min_size=1, max_size=12)
    )
    for call in calls:
        # twice: the second decision comes from the memoised plan
        assert compiled.decide(call) == plain.decide(call), call
        assert compiled.decide(call) == plain.decide(call), call


def test_fast_path_returns_the_precomputed_verdict_object() -> None:
    compiled = CompiledFloor(Policy.default())
    call = ToolCall("get_user_details", {"user_id": "u1"})
    assert compiled.decide(call) is compiled.decide(call)
    # a sensitive key sends the call down the full fold
    redacted = compiled.decide(ToolCall("get_user_details", {"token": "t"}))
    assert redacted.kind == "TRANSFORM"


GRID_POLICIES = [
    {
        "allow": TOOLS,
        "self_modify_globs": [".git/", ".env"],
        "redact_fields": ["password", "token"],
    },
    {
        "posture": "admit_and_log",
        "allow": ["Bash", "write_file"],
        "deny": {"delete_account": "POLICY_BLOCK"},
        "self_modify_globs": ["*.pem", "src/"],
        "redact_fields": ["secret"],
        "arg_rules": [{"tool": "search_kb", "arg": "query", "max_bytes": 4}],
    },
    {"allow_prefix": ["get_", "write", "Ba"], "self_modify_globs": [".env"]},
    {},
]


def test_compiled_agrees_on_an_exhaustive_grid() -> None:
    pair_sets = [[p] for p in PAIRS] + [
        [a, b] for i, a in enumerate(PAIRS) for b in PAIRS[i + 1 :] if a[0] != b[0]
    ]
    for manifest in GRID_POLICIES:
        policy = Policy.loads(json.dumps(manifest))
        for grammars in (None, {"convert_currency": CONVERT}):
            compiled = CompiledFloor(policy, grammars, None)
            plain = default_chain(policy, grammars, None)
            for tool in TOOLS:
                for pairs in pair_sets:
                    call = ToolCall(tool, dict(pairs))
                    assert compiled.decide(call) == plain.decide(call), (manifest, call)
