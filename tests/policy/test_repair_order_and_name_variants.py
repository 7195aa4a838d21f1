"""Policy hardening: grammar repair order, tool-name variants."""

from __future__ import annotations

import json

import pytest

from fak.abi import Reason, ToolCall, VerdictKind
from fak.kernel import Kernel
from fak.policy import Grammar, Policy

COPY_SCHEMA = json.loads(
    '{"type":"object","properties":{"source":{"type":"string"},"dest":{"type":"string"}},'
    '"required":["source","dest"]}'
)


def _kernel(policy: Policy | None = None) -> Kernel:
    return Kernel(policy or Policy.loads(b'{"allow":["copy_file"]}'))


def test_finding_2_grammar_repair_uses_declared_order() -> None:
    kernel = _kernel()
    kernel.register_grammar("copy_file", Grammar.from_json_schema(COPY_SCHEMA))
    verdict = kernel.decide(ToolCall("copy_file", {"_positional": ["/a/src", "/b/dst"]}))
    assert verdict.kind == VerdictKind.TRANSFORM
    assert dict(verdict.new_args or {}) == {"source": "/a/src", "dest": "/b/dst"}


def test_finding_2_grammar_repair_falls_back_to_required_order() -> None:
    grammar = Grammar.from_json_schema({"required": ["source", "dest"]})
    assert [p.name for p in grammar.params] == ["source", "dest"]
    assert grammar.ordered


def test_finding_2_unknown_order_is_not_guessed() -> None:
    from fak.policy import Param

    kernel = _kernel()
    grammar = Grammar((Param("dest"), Param("source")), ordered=False)
    kernel.register_grammar("copy_file", grammar)
    verdict = kernel.decide(ToolCall("copy_file", {"_positional": ["/a/src", "/b/dst"]}))
    assert verdict.kind == VerdictKind.DENY
    assert verdict.reason == Reason.MALFORMED


PREFIX_POLICY = b'{"allow_prefix":["db_"],"deny":{"db_drop_table":"POLICY_BLOCK"}}'


@pytest.mark.parametrize(
    "name",
    [
        "db_Drop_table",
        "DB_DROP_TABLE",
        "db_drop_table ",
        "db_drop_table\u200b",
        "\uff44b_drop_table",
    ],
)
def test_finding_3_name_variants_of_a_denied_tool_are_denied(name: str) -> None:
    verdict = _kernel(Policy.loads(PREFIX_POLICY)).decide(ToolCall(name, {}))
    assert verdict.kind == VerdictKind.DENY, name


@pytest.mark.parametrize("name", ["db_drop_table ", "db_drop_table\u200b", "db drop", "db_x\n", ""])
def test_finding_3_non_identifier_names_are_malformed(name: str) -> None:
    verdict = _kernel(Policy.loads(PREFIX_POLICY)).decide(ToolCall(name, {}))
    assert verdict.kind == VerdictKind.DENY
    assert verdict.reason == Reason.MALFORMED, name


def test_finding_3_plain_names_still_work() -> None:
    kernel = _kernel(Policy.loads(PREFIX_POLICY))
    assert kernel.decide(ToolCall("db_select", {})).kind == VerdictKind.ALLOW
    assert kernel.decide(ToolCall("db_drop_table", {})).kind == VerdictKind.DENY
    for ok in ("db_a.b", "db_ns:tool", "db_x-y"):
        assert kernel.decide(ToolCall(ok, {})).kind == VerdictKind.ALLOW, ok
