"""REQUIRE_WITNESS made real: holds, single-use approvals bound to the call, expiry, revocation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fak.abi import Context, Reason, ToolCall, ToolResult, VerdictKind
from fak.journal import Journal, verify
from fak.kernel import HoldState, Kernel, WitnessError
from fak.policy import Policy


class _Clock:
    def __init__(self) -> None:
        self.t = 1_000.0

    def now(self) -> float:
        return self.t

    def monotonic(self) -> float:
        return self.t


def _policy() -> Policy:
    manifest = {
        "allow": ["send_money", "get_balance", "read_file"],
        "sinks": [{"tool": "send_money", "arg": "recipient", "kind": "iban", "unknown": "witness"}],
    }
    return Policy.loads(json.dumps(manifest), source="<test>")


def _kernel(**kw: object) -> tuple[Kernel, _Clock]:
    clock = _Clock()
    return Kernel(_policy(), clock=clock, **kw), clock  # type: ignore[arg-type]


def _pay(kernel: Kernel, iban: str = "FR1420041010050500013M02606", amount: int = 10) -> object:
    ctx = Context().user("pay my new supplier")
    return kernel.decide(ToolCall("send_money", {"recipient": iban, "amount": amount}, context=ctx))


def test_held_call_names_its_hold_and_reuses_it() -> None:
    kernel, _ = _kernel()
    first = _pay(kernel)
    assert first.kind is VerdictKind.REQUIRE_WITNESS
    hold_id = first.meta["witness_id"]
    assert hold_id.startswith("w-")
    again = _pay(kernel)
    assert again.meta["witness_id"] == hold_id  # one hold per (tool, args digest)
    assert kernel.witnesses.get(hold_id).state is HoldState.PENDING


def test_approval_admits_the_identical_call_exactly_once() -> None:
    kernel, _ = _kernel()
    hold_id = _pay(kernel).meta["witness_id"]
    kernel.approve_witness(hold_id, approver="ops")
    admitted = _pay(kernel)
    assert admitted.kind is VerdictKind.ALLOW
    assert admitted.by == f"witness:{hold_id}"
    assert kernel.witnesses.get(hold_id).state is HoldState.USED
    third = _pay(kernel)
    assert third.kind is VerdictKind.REQUIRE_WITNESS
    assert third.meta["witness_id"] != hold_id  # a spent approval opens a fresh hold
    with pytest.raises(WitnessError) as err:
        kernel.approve_witness(hold_id)
    assert err.value.code == "witness_used"


def test_approval_is_bound_to_the_argument_digest() -> None:
    kernel, _ = _kernel()
    hold_id = _pay(kernel, amount=10).meta["witness_id"]
    kernel.approve_witness(hold_id)
    other = _pay(kernel, amount=10_000)
    assert other.kind is VerdictKind.REQUIRE_WITNESS
    assert other.meta["witness_id"] != hold_id
    assert _pay(kernel, amount=10).kind is VerdictKind.ALLOW


def test_approval_expires() -> None:
    kernel, clock = _kernel(witness_ttl_s=60)
    hold_id = _pay(kernel).meta["witness_id"]
    kernel.approve_witness(hold_id)
    clock.t += 61
    assert _pay(kernel).kind is VerdictKind.REQUIRE_WITNESS
    assert kernel.witnesses.get(hold_id).state is HoldState.EXPIRED
    with pytest.raises(WitnessError) as err:
        kernel.approve_witness(hold_id)
    assert err.value.code == "witness_expired"


def test_unknown_and_revoked_ids() -> None:
    kernel, _ = _kernel()
    with pytest.raises(WitnessError) as err:
        kernel.approve_witness("w-nope")
    assert err.value.code == "witness_unknown"
    hold_id = _pay(kernel).meta["witness_id"]
    kernel.approve_witness(hold_id)
    kernel.revoke_witness(hold_id)
    assert _pay(kernel).kind is VerdictKind.DENY  # a revoked approval admits nothing
    with pytest.raises(WitnessError) as err:
        kernel.approve_witness(hold_id)
    assert err.value.code == "witness_revoked"


def test_syscall_refuses_a_held_call_with_what_to_approve() -> None:
    kernel, _ = _kernel()
    ran: list[dict[str, object]] = []
    kernel.register_tool("send_money", lambda a: ran.append(a) or {"ok": True})
    ctx = Context().user("pay")
    outcome = kernel.syscall(
        ToolCall("send_money", {"recipient": "FR1420041010050500013M02606"}, context=ctx)
    )
    assert not outcome.ok and ran == []
    body = outcome.json()
    assert body["reason"] == "UNWITNESSED" and body["disposition"] == "TERMINAL"
    assert body["approve"] == f"fak witness approve {body['witness_id']}"
    kernel.approve_witness(body["witness_id"])
    again = kernel.syscall(
        ToolCall("send_money", {"recipient": "FR1420041010050500013M02606"}, context=ctx)
    )
    assert again.ok and len(ran) == 1


def test_revocation_evicts_vdso_entries_filled_under_it() -> None:
    kernel, _ = _kernel()
    calls: list[int] = []
    kernel.register_tool("get_balance", lambda a: calls.append(1) or {"balance": 5})
    hold_id = _pay(kernel).meta["witness_id"]
    kernel.approve_witness(hold_id)
    under = ToolCall("get_balance", {}, meta={"witness": hold_id})
    plain = ToolCall("get_balance", {"account": "x"})
    assert kernel.syscall(under).served_by == "tool"
    assert kernel.syscall(under).served_by == "vdso"
    assert kernel.syscall(plain).served_by == "tool"
    report = kernel.revoke_witness(hold_id)
    assert report["evicted"] == 1 and report["trust_epoch"] == 1
    assert kernel.counters["trust_epoch"] == 1
    # the witness-bearing call is refused now; the plain entry survived the revocation
    refused = kernel.syscall(under)
    assert not refused.ok and refused.verdict.reason is Reason.TRUST_VIOLATION
    assert kernel.syscall(plain).served_by == "vdso"


def test_revocation_takes_back_clearances_it_gave() -> None:
    kernel, _ = _kernel()
    admission = kernel.admit_result(
        ToolResult("read_file", b'{"aws_access_key_id": "AKIAQ3EGRTWK5NX7LB4M"}', "c1")
    )
    qid = admission.quarantine_id
    assert qid
    hold_id = _pay(kernel).meta["witness_id"]
    kernel.clear(qid, witness=hold_id)
    assert kernel.ledger.is_cleared(qid)
    assert kernel.revoke_witness(hold_id)["resealed"] == 1
    assert not kernel.ledger.is_cleared(qid)
    with pytest.raises(WitnessError):
        kernel.clear(qid, witness=hold_id)


def test_witness_events_are_journaled_and_verify(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    journal = Journal(path)
    kernel, _ = _kernel(journal=journal)
    hold_id = _pay(kernel).meta["witness_id"]
    kernel.approve_witness(hold_id)
    assert _pay(kernel).kind is VerdictKind.ALLOW
    kernel.revoke_witness(hold_id)
    journal.close()
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["kind"] for r in rows] == ["HOLD", "WITNESS_APPROVE", "DECIDE", "WITNESS_REVOKE"]
    assert all(r["by"] == f"witness:{hold_id}" for r in rows)
    assert verify(path).ok


def test_N3_an_approved_call_keeps_the_folds_redactions() -> None:
    manifest = {
        "allow": ["send_money"],
        "redact_fields": ["password"],
        "sinks": [{"tool": "send_money", "arg": "recipient", "kind": "iban", "unknown": "witness"}],
    }
    kernel = Kernel(Policy.loads(json.dumps(manifest), source="<test>"), clock=_Clock())
    ctx = Context().user("pay my new supplier")
    args = {"recipient": "FR1420041010050500013M02606", "amount": 10, "password": "hunter2"}
    call = ToolCall("send_money", args, context=ctx)
    held = kernel.decide(call)
    assert held.kind is VerdictKind.REQUIRE_WITNESS
    kernel.approve_witness(held.meta["witness_id"], approver="ops")
    approved = kernel.decide(call)
    assert approved.kind is VerdictKind.TRANSFORM  # the witness changes only its own rung
    assert approved.by == f"witness:{held.meta['witness_id']}"
    assert approved.new_args is not None
    assert dict(approved.new_args) == {**args, "password": "[REDACTED]"}
    dispatched: list[object] = []
    kernel.register_tool("send_money", lambda a: dispatched.append(dict(a)) or "sent")
    again = kernel.decide(call)
    assert again.kind is VerdictKind.REQUIRE_WITNESS  # single use
    kernel.approve_witness(again.meta["witness_id"])
    kernel.syscall(call)
    assert dispatched == [{**args, "password": "[REDACTED]"}]


def test_D2_one_client_cannot_fill_the_book_for_all_and_a_full_book_costs_o1(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from fak.kernel.witness import MemoryWitnessStore

    clock = _Clock()
    store = MemoryWitnessStore(clock.now, capacity=4096)
    for i in range(1024):  # one client's quarter of the book
        assert store.hold("send_money", f"d{i}", "x", owner="mallory") is not None
    assert store.hold("send_money", "one-more", "x", owner="mallory") is None
    assert store.hold("send_money", "alice-1", "x", owner="alice") is not None  # others still can
    for owner in ("b", "c", "d"):
        for i in range(1024):
            store.hold("t", f"{owner}{i}", "x", owner=owner)
    looked = 0
    real = MemoryWitnessStore._current

    def counted(self: MemoryWitnessStore, hold: Any, now: float) -> Any:
        nonlocal looked
        looked += 1
        return real(self, hold, now)

    monkeypatch.setattr(MemoryWitnessStore, "_current", counted)
    for i in range(1000):  # the book is full of live holds: each refusal must be cheap
        assert store.hold("t", f"e{i}", "x", owner=f"new{i}") is None
    assert looked <= 3 * 1000  # not a scan of 4,096 holds per attempt
    clock.t += 10_000  # everything expires
    assert store.hold("t", "fresh", "x", owner="alice") is not None
    assert len(store._owners) <= 4096  # refused owners left nothing behind


def test_a_denied_hold_refuses_the_same_call_until_its_expiry() -> None:
    kernel, clock = _kernel()
    hold_id = _pay(kernel).meta["witness_id"]
    kernel.revoke_witness(hold_id, by="witness-key:alice")  # the operator's "no"
    refused = _pay(kernel)
    assert (refused.kind, refused.reason, refused.by) == (
        VerdictKind.DENY,
        Reason.TRUST_VIOLATION,
        "witness",
    )
    assert refused.claim == f"an operator denied this call (witness {hold_id}); it stays refused"
    other = _pay(kernel, amount=11)  # another call is judged on its own
    assert other.kind is VerdictKind.REQUIRE_WITNESS and other.meta["witness_id"] != hold_id
    clock.t += 901  # past the hold's expiry: the call may be asked for again
    fresh = _pay(kernel)
    assert fresh.kind is VerdictKind.REQUIRE_WITNESS and fresh.meta["witness_id"] != hold_id


def test_a_hold_keeps_its_evidence_and_approvals_name_the_operator(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.jsonl")
    kernel = Kernel(_policy(), journal=journal)
    ctx = Context().user("pay my new supplier").result("read_file", "c7", "IBAN FR14 2004")
    call = ToolCall("send_money", {"recipient": "FR1420041010050500013M02606"}, context=ctx)
    hold_id = kernel.decide(call).meta["witness_id"]
    evidence = kernel.hold_evidence(hold_id)
    assert evidence is not None
    assert (evidence.user, [(r.tool, r.call_id, r.text) for r in evidence.results]) == (
        ("pay my new supplier",),
        [("read_file", "c7", "IBAN FR14 2004")],
    )
    assert kernel.hold_evidence("w-unknown") is None
    kernel.approve_witness(hold_id, approver="witness-key:alice")
    kernel.revoke_witness(hold_id, by="witness-key:bob")
    journal.close()
    rows = [json.loads(x) for x in (tmp_path / "j.jsonl").read_text().splitlines()]
    assert [(r["kind"], r.get("trace_id")) for r in rows if r["kind"].startswith("WITNESS")] == [
        ("WITNESS_APPROVE", "op:witness-key:alice"),
        ("WITNESS_REVOKE", "op:witness-key:bob"),
    ]
    assert verify(tmp_path / "j.jsonl").ok
