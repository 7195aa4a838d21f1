"""The reply system: codes, layer rules, the one registry, the one builder, envelope, wrapper."""

from __future__ import annotations

import ast
import asyncio
import itertools
from pathlib import Path

import pytest

from fak.abi import Reason, Verdict, VerdictKind
from fak.abi.replies import (
    ALLOWED_TYPES,
    REASON_REPLY_CODES,
    REGISTRY,
    Layer,
    Reply,
    ReplyBuilder,
    ReplyBuilderFrozen,
    ReplyCodeError,
    ReplyRegistry,
    ReplyType,
    envelope,
    parse_code,
    reply_for_reason,
    reply_for_verdict,
    safe_call,
    safe_tool,
)

SRC = Path(__file__).resolve().parents[2] / "src" / "fak"


# -- codes ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "code",
    ["WA-RES-I-001", "EN-WRITE-D-002", "MCP-SYS-E-001", "CT-GATE-S-001", "EN-CFG-E-999"],
)
def test_well_formed_codes_parse(code: str) -> None:
    layer, area, rtype, number = parse_code(code)
    assert f"{layer}-{area}-{rtype}-{number:03d}" == code


@pytest.mark.parametrize(
    ("code", "complaint"),
    [
        ("EN-GATE-D-1", "LAYER-AREA-TYPE-NNN"),
        ("en-gate-d-001", "LAYER-AREA-TYPE-NNN"),
        ("XX-GATE-D-001", "unknown layer 'XX'"),
        ("EN-FILE-D-001", "unknown area 'FILE'"),
        ("EN-GATE-W-001", "unknown type 'W'"),
        ("EN-GATE-D-000", "001-999"),
        ("EN-GATE-I-001", "layer EN may only answer D/E/S"),
        ("WA-RES-D-001", "layer WA may only answer E/I/S"),
        ("CT-GATE-D-001", "layer CT may only answer E/I/S"),
        ("MCP-SYS-D-001", "layer MCP may only answer E/I/S"),
    ],
)
def test_bad_codes_are_rejected_with_what_to_fix(code: str, complaint: str) -> None:
    with pytest.raises(ReplyCodeError, match=complaint.replace("(", r"\(").replace(")", r"\)")):
        parse_code(code)


def test_layer_rules_denied_only_from_enforcement() -> None:
    assert {layer for layer, types in ALLOWED_TYPES.items() if ReplyType.D in types} == {Layer.EN}
    assert ReplyType.I not in ALLOWED_TYPES[Layer.EN]
    assert set(ALLOWED_TYPES) == set(Layer)


def test_every_registered_code_obeys_the_layer_rules() -> None:
    assert len(REGISTRY) > 0
    keys = set()
    for spec in REGISTRY:
        layer, area, rtype, _ = parse_code(spec.code)
        assert (spec.layer, spec.area, spec.reply_type) == (layer, area, rtype)
        assert rtype in ALLOWED_TYPES[layer]
        assert spec.key not in keys
        keys.add(spec.key)


# -- the reason -> reply map ---------------------------------------------------------------------
def test_reason_map_is_total_and_obeys_layers() -> None:
    refusals = [r for r in Reason if r != Reason.NONE]
    assert set(REASON_REPLY_CODES) == set(refusals)
    for reason in refusals:
        reply = reply_for_reason(reason)
        assert reply.code == REASON_REPLY_CODES[reason]
        assert reply.code in REGISTRY
        # a policy-shaped refusal is D (EN); a call the agent can fix is I (never EN)
        layer, _, rtype, _ = parse_code(reply.code)
        assert reply.reply_type == rtype
        if rtype == ReplyType.D:
            assert layer == Layer.EN
        else:
            assert rtype == ReplyType.I and layer != Layer.EN
        assert reply.data["reason"] == reason.name


def test_reason_map_types_are_exact() -> None:
    got = {r.name: reply_for_reason(r).reply_type.value for r in Reason if r != Reason.NONE}
    assert got == {
        "DEFAULT_DENY": "D",
        "POLICY_BLOCK": "D",
        "SELF_MODIFY": "D",
        "LEASE_HELD": "D",
        "TRUST_VIOLATION": "D",
        "MALFORMED": "I",
        "MISROUTE": "I",
        "RATE_LIMITED": "D",
        "SECRET_EXFIL": "D",
        "UNWITNESSED": "D",
        "OVERSIZE": "D",
        "UNKNOWN_TOOL": "I",
    }


def test_codes_are_distinct_per_reason() -> None:
    assert len(set(REASON_REPLY_CODES.values())) == len(REASON_REPLY_CODES)


def test_unknown_reason_code_is_a_generic_denial_not_a_crash() -> None:
    reply = reply_for_reason(1024)
    assert (reply.reply_type, reply.code) == (ReplyType.D, "EN-GATE-D-099")
    assert reply.data["reason"] == "REASON_1024"


def test_none_is_not_a_refusal() -> None:
    with pytest.raises(ValueError, match="not a refusal"):
        reply_for_reason(Reason.NONE)


def test_verdicts_map_to_replies() -> None:
    assert reply_for_verdict(Verdict.allow("monitor")).code == "EN-GATE-S-001"
    assert reply_for_verdict(Verdict.transform({"a": 1}, "grammar")).code == "EN-GATE-S-002"
    deny = reply_for_verdict(Verdict.deny(Reason.SELF_MODIFY, "monitor", claim=".git/"))
    assert (deny.reply_type, deny.code) == (ReplyType.D, "EN-WRITE-D-001")
    assert deny.data["verdict"]["detail"] == {"claim": ".git/"}
    quarantined = reply_for_verdict(
        Verdict.quarantine(Reason.SECRET_EXFIL, "ctxmmu"), {"quarantine_id": "q1"}
    )
    assert (quarantined.reply_type, quarantined.code) == (ReplyType.D, "EN-READ-D-001")
    assert quarantined.data["quarantine_id"] == "q1"
    assert quarantined.data["reason"] == "SECRET_EXFIL"
    witness = reply_for_verdict(Verdict.require_witness("confirm", "monitor"))
    assert witness.code == "EN-GATE-D-006"
    assert reply_for_verdict(Verdict.defer("grammar")).code == "EN-GATE-D-001"
    malformed = reply_for_verdict(Verdict.deny(Reason.MALFORMED, "preflight"))
    assert malformed.reply_type == ReplyType.I


def test_every_verdict_kind_has_a_reply() -> None:
    samples = {
        VerdictKind.ALLOW: Verdict.allow("x"),
        VerdictKind.DEFER: Verdict.defer("x"),
        VerdictKind.TRANSFORM: Verdict.transform({}, "x"),
        VerdictKind.QUARANTINE: Verdict.quarantine(Reason.OVERSIZE, "x"),
        VerdictKind.REQUIRE_WITNESS: Verdict.require_witness("c", "x"),
        VerdictKind.DENY: Verdict.deny(Reason.POLICY_BLOCK, "x"),
    }
    assert set(samples) == set(VerdictKind)
    for verdict in samples.values():
        assert reply_for_verdict(verdict).code in REGISTRY


# -- the one registry, the one builder -----------------------------------------------------------
def test_a_second_registry_is_a_forbidden_state() -> None:
    with pytest.raises(RuntimeError, match="exactly one reply registry"):
        ReplyRegistry((("MCP-SYS-S-001", "X", "x"),))


def test_replies_cannot_be_built_around_the_builder() -> None:
    with pytest.raises(TypeError, match="only by ReplyBuilder"):
        Reply(ReplyType.S, "MCP-EXEC-S-001")


def test_builder_has_exactly_the_canonical_api() -> None:
    public = {name for name in dir(ReplyBuilder) if not name.startswith("_")}
    assert public == {"success", "invalid", "denied", "error", "frozen"}
    for forbidden in ("info", "warn", "warning", "fail"):
        assert not hasattr(ReplyBuilder, forbidden)


def _class_defs(needle: str) -> list[tuple[str, str]]:
    found = []
    for path in SRC.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found.extend(
            (path.name, node.name)
            for node in ast.walk(tree)
            if isinstance(node, ast.ClassDef) and needle in node.name.lower()
        )
    return sorted(found)


def test_exactly_one_builder_and_one_registry_class_in_the_package() -> None:
    builders = [(f, c) for f, c in _class_defs("replybuilder") if not c.endswith("Frozen")]
    assert builders == [("replies.py", "ReplyBuilder")]
    assert _class_defs("replyregistry") == [("replies.py", "ReplyRegistry")]


def test_builder_success_is_not_terminal() -> None:
    rb = ReplyBuilder()
    first = rb.success({"n": 1})
    second = rb.success({"n": 2})
    assert first.reply_type == second.reply_type == ReplyType.S
    assert not rb.frozen
    assert dict(second.data) == {"n": 2}


@pytest.mark.parametrize("terminal", ["invalid", "denied", "error"])
def test_terminal_reply_freezes_the_builder(terminal: str) -> None:
    codes = {"invalid": "WA-PARSE-I-001", "denied": "EN-GATE-D-002", "error": "MCP-SYS-E-001"}
    rb = ReplyBuilder()
    reply = getattr(rb, terminal)(codes[terminal])
    assert reply.terminal and rb.frozen
    for call in (
        lambda: rb.success(),
        lambda: rb.invalid("WA-PARSE-I-001"),
        lambda: rb.denied("EN-GATE-D-001"),
        lambda: rb.error("MCP-SYS-E-001"),
    ):
        with pytest.raises(ReplyBuilderFrozen):
            call()


def test_builder_refuses_a_code_of_the_wrong_type_or_unregistered() -> None:
    with pytest.raises(ReplyCodeError, match="is a D code"):
        ReplyBuilder().invalid("EN-GATE-D-001")
    with pytest.raises(ReplyCodeError, match="not registered"):
        ReplyBuilder().denied("EN-GATE-D-777")
    with pytest.raises(ReplyCodeError, match="not a success"):
        ReplyBuilder(success_code="MCP-SYS-E-001")


def test_reply_data_is_read_only() -> None:
    reply = ReplyBuilder().success({"a": 1})
    with pytest.raises(TypeError):
        reply.data["a"] = 2  # type: ignore[index]


# -- envelope and safety wrapper -----------------------------------------------------------------
def test_envelope_wire_shape_for_success_and_denial() -> None:
    ok = envelope(ReplyBuilder().success({"x": 1}), trace_id="req-1", duration_ms=12.0)
    assert ok.to_wire() == {
        "status": "success",
        "reply_type": "S",
        "code": "MCP-EXEC-S-001",
        "data": {"x": 1},
        "meta": {"trace_id": "req-1", "duration_ms": 12.0},
        "error": None,
    }
    denied = envelope(reply_for_reason(Reason.POLICY_BLOCK), trace_id="t", duration_ms=0.5)
    wire = denied.to_wire()
    assert wire["status"] == "denied" and wire["reply_type"] == "D"
    assert wire["error"] == {
        "code": "EN-GATE-D-002",
        "message": REGISTRY.spec("EN-GATE-D-002").message,
    }


def _ticks() -> object:
    counter = itertools.count()
    return lambda: next(counter) * 0.001


def test_safe_tool_adds_trace_and_duration() -> None:
    @safe_tool
    def tool(n: int) -> Reply:
        return ReplyBuilder().success({"n": n})

    env = tool(3)
    assert env.reply.data["n"] == 3
    assert len(env.trace_id) == 32 and env.duration_ms >= 0


def test_safe_call_with_injected_ids_and_clock() -> None:
    env = safe_call(
        lambda: ReplyBuilder().success(),
        trace_ids=lambda: "tid",
        clock=_ticks(),  # type: ignore[arg-type]
    )
    assert env.trace_id == "tid"
    assert env.duration_ms == pytest.approx(1.0)


@pytest.mark.parametrize("exc", [ValueError("bad input sk-secret"), KeyError("k"), RuntimeError()])
def test_any_exception_becomes_error_never_invalid(exc: Exception) -> None:
    def crashing() -> Reply:
        raise exc

    env = safe_call(crashing, trace_ids=lambda: "t-1")
    assert env.reply.reply_type == ReplyType.E
    assert env.reply.code == "MCP-SYS-E-001"
    assert dict(env.reply.data) == {"trace_id": "t-1", "exception": type(exc).__name__}
    assert "sk-secret" not in str(env.to_wire())


def test_crash_log_names_no_payload(caplog: pytest.LogCaptureFixture) -> None:
    def crashing() -> Reply:
        raise ValueError("password=hunter2")

    safe_call(crashing, trace_ids=lambda: "t-9")
    assert "t-9" in caplog.text and "hunter2" not in caplog.text


def test_non_reply_return_is_an_error_in_strict_mode() -> None:
    env = safe_call(lambda: {"legacy": True})
    assert (env.reply.reply_type, env.reply.code) == (ReplyType.E, "MCP-SYS-E-002")


def test_safe_tool_wraps_async_tools() -> None:
    @safe_tool
    async def ok() -> Reply:
        return ReplyBuilder().success({"async": True})

    @safe_tool
    async def boom() -> Reply:
        raise OSError("disk")

    assert asyncio.run(ok()).reply.data["async"] is True
    assert asyncio.run(boom()).reply.reply_type == ReplyType.E


def test_safe_tool_does_not_swallow_cancellation() -> None:
    @safe_tool
    async def cancelled() -> Reply:
        raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(cancelled())
