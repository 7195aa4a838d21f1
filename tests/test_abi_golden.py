"""Golden freeze of the ABI: reason names, numbers and dispositions; verdict kinds and ranks."""

from __future__ import annotations

import pytest

from fak.abi import Disposition, Reason, Verdict, VerdictKind, disposition, fold_rank, reason_name

GOLDEN_REASONS = [
    ("NONE", 0, "TERMINAL"),
    ("DEFAULT_DENY", 1, "TERMINAL"),
    ("POLICY_BLOCK", 2, "TERMINAL"),
    ("SELF_MODIFY", 3, "ESCALATE"),
    ("LEASE_HELD", 4, "WAIT"),
    ("TRUST_VIOLATION", 5, "ESCALATE"),
    ("MALFORMED", 6, "RETRYABLE"),
    ("MISROUTE", 7, "RETRYABLE"),
    ("RATE_LIMITED", 8, "WAIT"),
    ("SECRET_EXFIL", 9, "TERMINAL"),
    ("UNWITNESSED", 10, "TERMINAL"),
    ("OVERSIZE", 11, "TERMINAL"),
    ("UNKNOWN_TOOL", 12, "TERMINAL"),
]


def test_reason_vocabulary_is_frozen() -> None:
    got = [(r.name, r.value, str(disposition(r))) for r in Reason]
    assert got == GOLDEN_REASONS


@pytest.mark.parametrize("code", [13, 99, 1024, 65535])
def test_unknown_reason_renders_and_never_raises(code: int) -> None:
    assert reason_name(code) == f"REASON_{code}"
    assert disposition(code) is Disposition.TERMINAL


def test_verdict_kinds_and_ranks_are_frozen() -> None:
    got = [(k.value, fold_rank(k)) for k in VerdictKind]
    assert got == [
        ("ALLOW", 0),
        ("DEFER", 1),
        ("TRANSFORM", 2),
        ("QUARANTINE", 3),
        ("REQUIRE_WITNESS", 4),
        ("DENY", 100),
    ]
    assert fold_rank("SOMETHING_NEW") == 100
    assert fold_rank(7) == 100


def test_a_deny_cannot_be_built_without_a_reason() -> None:
    with pytest.raises(ValueError, match="needs a reason"):
        Verdict(VerdictKind.DENY, "monitor")
    with pytest.raises(ValueError, match="needs a reason"):
        Verdict.deny(Reason.NONE, "monitor")


def test_only_transform_carries_new_arguments() -> None:
    with pytest.raises(ValueError, match="only a TRANSFORM"):
        Verdict(VerdictKind.ALLOW, "monitor", new_args={"a": 1})
    with pytest.raises(ValueError, match="only a TRANSFORM"):
        Verdict(VerdictKind.TRANSFORM, "monitor")
    t = Verdict.transform({"a": 1}, "grammar")
    assert dict(t.new_args or {}) == {"a": 1}


def test_allow_carries_no_reason() -> None:
    with pytest.raises(ValueError, match="carries no reason"):
        Verdict(VerdictKind.ALLOW, "monitor", reason=Reason.POLICY_BLOCK)


def test_metadata_is_bounded() -> None:
    v = Verdict.allow("monitor", meta={f"k{i:02}": "x" * 1000 for i in range(40)})
    assert len(v.meta) == 16
    assert all(len(value) == 256 for value in v.meta.values())


def test_wire_shape() -> None:
    v = Verdict.deny(Reason.SELF_MODIFY, "monitor", claim="glob .git/")
    assert v.to_wire() == {
        "kind": "DENY",
        "by": "monitor",
        "reason": "SELF_MODIFY",
        "disposition": "ESCALATE",
        "detail": {"claim": "glob .git/"},
    }
    assert Verdict.allow("vdso").to_wire() == {"kind": "ALLOW", "by": "vdso"}
