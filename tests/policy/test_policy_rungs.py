"""Grammar repair and the preflight ladder, alone and inside the default chain."""

from __future__ import annotations

from typing import Any

import pytest

from fak.abi import Reason, ToolCall, Verdict, VerdictKind
from fak.policy import (
    Grammar,
    GrammarRung,
    Param,
    Policy,
    PreflightRung,
    Schema,
    decode_args,
    default_chain,
)

CONVERT = Grammar(
    (Param("from_currency"), Param("to_currency"), Param("amount", "number")),
    {"from": "from_currency", "source": "from_currency", "to": "to_currency"},
)


def _grammar(tool: str, args: Any) -> Verdict:
    call = ToolCall(tool, args)
    return GrammarRung({"convert_currency": CONVERT}).decide(call, decode_args(call.args))


def test_no_grammar_defers() -> None:
    assert _grammar("other", {"x": 1}).kind == VerdictKind.DEFER


def test_well_formed_call_defers() -> None:
    args = {"from_currency": "EUR", "to_currency": "USD", "amount": 3}
    assert _grammar("convert_currency", args).kind == VerdictKind.DEFER


def test_alias_rename_is_a_transform() -> None:
    v = _grammar("convert_currency", {"from": "EUR", "to": "USD", "amount": 3})
    assert v.kind == VerdictKind.TRANSFORM
    assert dict(v.new_args) == {"from_currency": "EUR", "to_currency": "USD", "amount": 3}
    assert v.meta["repair"] == "alias"
    assert v.reason == Reason.NONE


def test_alias_never_overwrites_a_present_canonical_name() -> None:
    v = _grammar("convert_currency", {"from": "X", "from_currency": "EUR", "amount": 3})
    assert (v.kind, v.reason) == (VerdictKind.DENY, Reason.MISROUTE)


def test_positional_zip_when_arity_matches() -> None:
    v = _grammar("convert_currency", {"_positional": ["EUR", "USD", 5]})
    assert dict(v.new_args) == {"from_currency": "EUR", "to_currency": "USD", "amount": 5}
    assert v.meta["repair"] == "positional"


def test_unrepairable_is_misroute_naming_missing_params() -> None:
    v = _grammar("convert_currency", {"_positional": ["EUR", "USD"]})
    assert (v.kind, v.reason) == (VerdictKind.DENY, Reason.MISROUTE)
    assert v.claim == "grammar convert_currency: missing from_currency, to_currency, amount"


def test_grammar_from_json_schema_and_validation() -> None:
    g = Grammar.from_json_schema(
        {"properties": {"b": {"type": "string"}, "a": {}}, "required": ["b"]}, {"bee": "b"}
    )
    assert g.params == (Param("b", "string", True), Param("a", "", False))  # declared order
    assert g.required == ("b",)
    with pytest.raises(ValueError, match="unknown parameters"):
        Grammar((Param("a"),), {"x": "zzz"})
    with pytest.raises(ValueError, match="unique"):
        Grammar((Param("a"), Param("a")))


SCHEMA = Schema.from_json_schema(
    {
        "type": "object",
        "properties": {
            "user_id": {"type": "string"},
            "limit": {"type": "integer"},
            "tags": {"type": ["array", "null"]},
        },
        "required": ["user_id"],
    }
)


@pytest.mark.parametrize(
    ("args", "claim"),
    [
        ("not json", "rung-0: arguments are not a JSON object"),
        ("[1]", "rung-0: arguments are not a JSON object"),
        (b"\xff", "rung-0: arguments are not a JSON object"),
        ({}, "rung-1: missing required field user_id"),
        ({"user_id": 7}, "rung-1: field user_id is not string"),
        ({"user_id": "u", "limit": True}, "rung-1: field limit is not integer"),
        ({"user_id": "u", "tags": "x"}, "rung-1: field tags is not array|null"),
    ],
)
def test_preflight_ladder_refuses_malformed(args: object, claim: str) -> None:
    call = ToolCall("get_user_details", args)
    v = PreflightRung({"get_user_details": SCHEMA}).decide(call, decode_args(call.args))
    assert (v.kind, v.reason, v.claim) == (VerdictKind.DENY, Reason.MALFORMED, claim)


@pytest.mark.parametrize(
    "args",
    [
        {"user_id": "u"},
        '{"user_id": "u", "limit": 3}',
        {"user_id": "u", "limit": 3.0, "tags": None},
        {"user_id": "u", "extra": object()},
    ],
)
def test_preflight_ladder_passes_well_formed(args: Any) -> None:
    call = ToolCall("get_user_details", args)
    v = PreflightRung({"get_user_details": SCHEMA}).decide(call, decode_args(call.args))
    assert v.kind == VerdictKind.DEFER


def test_no_schema_defers_but_rung_zero_still_applies() -> None:
    rung = PreflightRung()
    assert rung.decide(ToolCall("t", {}), {}).kind == VerdictKind.DEFER
    assert rung.decide(ToolCall("t", "x"), None).reason == Reason.MALFORMED


def test_schema_rejects_unknown_types() -> None:
    with pytest.raises(ValueError, match="unknown JSON type"):
        Schema.from_json_schema({"properties": {"a": {"type": "strng"}}})


def test_chain_repairs_then_checks_the_repaired_args() -> None:
    policy = Policy.loads('{"allow": ["convert_currency"]}')
    schema = Schema(("from_currency", "to_currency", "amount"), {"amount": ("number",)})
    chain = default_chain(policy, {"convert_currency": CONVERT}, {"convert_currency": schema})
    repaired = chain.decide(ToolCall("convert_currency", '{"from":"EUR","to":"USD","amount":2}'))
    assert (repaired.kind, repaired.by) == (VerdictKind.TRANSFORM, "grammar")
    # the ladder judged the repaired args: a bad type after repair is still MALFORMED
    bad = chain.decide(ToolCall("convert_currency", {"from": "EUR", "to": "USD", "amount": "2"}))
    assert (bad.kind, bad.reason, bad.by) == (VerdictKind.DENY, Reason.MALFORMED, "preflight")
    misrouted = chain.decide(ToolCall("convert_currency", {"amount": 2}))
    assert (misrouted.reason, misrouted.by) == (Reason.MISROUTE, "grammar")


def test_closed_schema_refuses_unknown_fields() -> None:
    closed = Schema.from_json_schema(
        {"properties": {"a": {"type": "string"}, "b": {}}, "additionalProperties": False}
    )
    rung = PreflightRung({"t": closed})
    assert rung.decide(ToolCall("t", {"a": "x", "b": 1}), {"a": "x", "b": 1}).kind == "DEFER"
    v = rung.decide(ToolCall("t", {"c": 1}), {"c": 1})
    assert (v.reason, v.claim) == (Reason.MALFORMED, "rung-1: unknown field c")
