"""The screen-verdict memo: a re-sent result is judged once, and only by a pure chain."""

from __future__ import annotations

from fak.abi import Reason, ToolResult, Verdict, VerdictKind
from fak.cas import MemoryStore
from fak.kernel.quarantine import QuarantineLedger
from fak.kernel.verdictmemo import VerdictMemo, chain_is_deterministic
from fak.screen import default_admitters

SECRET = b'{"aws_access_key_id": "AKIAQ3EGRTWK5NX7LB4M"}'
BENIGN = b"the quarterly report lists revenue by region. " * 200


class Counting:
    """A deterministic admitter that counts how often it really runs."""

    deterministic = True

    def __init__(self, kind: VerdictKind = VerdictKind.ALLOW) -> None:
        self.calls = 0
        self.kind = kind

    @property
    def name(self) -> str:
        return "counting"

    def admit(self, data: bytes) -> Verdict:
        self.calls += 1
        if self.kind == VerdictKind.ALLOW:
            return Verdict.allow(self.name)
        return Verdict.quarantine(Reason.TRUST_VIOLATION, self.name, claim="held")


class Stateful(Counting):
    deterministic = False


class FlakyOnce(Counting):
    def admit(self, data: bytes) -> Verdict:
        self.calls += 1
        if self.calls == 1:
            raise RuntimeError("transient")
        return Verdict.allow(self.name)


def _admit(ledger: QuarantineLedger, payload: bytes) -> VerdictKind:
    return ledger.admit(
        ToolResult(tool="t", payload=payload, call_id="c", trace_id="t")
    ).verdict.kind


def test_shipped_chain_is_deterministic() -> None:
    assert chain_is_deterministic(default_admitters())
    assert not chain_is_deterministic(())
    assert not chain_is_deterministic((Counting(), Stateful()))


def test_resent_bytes_are_screened_once() -> None:
    admitter = Counting()
    ledger = QuarantineLedger(MemoryStore(), admitters=[admitter])
    for _ in range(5):
        assert _admit(ledger, BENIGN) == VerdictKind.TRANSFORM  # oversize benign: paged out
    assert admitter.calls == 1
    _admit(ledger, BENIGN + b"!")  # other bytes: judged afresh
    assert admitter.calls == 2


def test_memoized_quarantine_still_holds_every_copy() -> None:
    ledger = QuarantineLedger(MemoryStore())
    first = ledger.admit(ToolResult(tool="t", payload=SECRET, call_id="a", trace_id="t"))
    again = ledger.admit(ToolResult(tool="t", payload=SECRET, call_id="b", trace_id="t"))
    assert first.verdict.kind == again.verdict.kind == VerdictKind.QUARANTINE
    assert first.quarantine_id != again.quarantine_id  # each copy gets its own held id
    assert SECRET not in again.payload


def test_a_stateful_admitter_disables_the_memo() -> None:
    admitter = Stateful()
    ledger = QuarantineLedger(MemoryStore(), admitters=[admitter])
    for _ in range(3):
        _admit(ledger, BENIGN)
    assert admitter.calls == 3


def test_replacing_the_chain_forgets_old_verdicts() -> None:
    ledger = QuarantineLedger(MemoryStore(), admitters=[Counting()])
    assert _admit(ledger, BENIGN) == VerdictKind.TRANSFORM
    ledger.replace_admitters(default_admitters())
    assert _admit(ledger, BENIGN + SECRET) == VerdictKind.QUARANTINE
    strict = Counting(VerdictKind.QUARANTINE)
    ledger.replace_admitters([strict])
    assert _admit(ledger, BENIGN) == VerdictKind.QUARANTINE  # not the old ALLOW
    assert strict.calls == 1


def test_a_faulted_screen_is_not_remembered() -> None:
    flaky = FlakyOnce()
    ledger = QuarantineLedger(MemoryStore(), admitters=[flaky])
    assert _admit(ledger, BENIGN) == VerdictKind.QUARANTINE  # the fault holds the bytes
    assert _admit(ledger, BENIGN) == VerdictKind.TRANSFORM  # judged again, not the fault
    assert flaky.calls == 2


def test_memo_is_bounded() -> None:
    memo = VerdictMemo(enabled=True, limit=3)
    for i in range(10):
        memo.put(f"d{i}", Verdict.allow("x"))
    assert len(memo) == 3
    assert memo.get("d0") is None
    assert memo.get("d9") is not None
    assert VerdictMemo(enabled=False).get("d9") is None
