"""Kernel hardening: settings reach the kernel built from them (``build_kernel``; a bare
``Kernel()`` takes values only); held bytes are bounded."""

from __future__ import annotations

import pytest

from fak.abi import ToolResult, VerdictKind
from fak.cas import MemoryStore
from fak.config import Settings
from fak.kernel import Kernel, build_kernel
from fak.kernel.quarantine import PageInRefused, QuarantineLedger

SECRET_LINE = b'{"aws_access_key_id": "AKIAQ3EGRTWK5NX7LB4M"}\n'


def _secret_blob(size: int, salt: int) -> bytes:
    filler = f"row {salt}: quarterly figures by region\n".encode()
    return SECRET_LINE + filler * (size // len(filler))


def test_finding_small_built_kernel_reads_ctxmmu_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAK_CTXMMU_MAX_HELD", "3")
    monkeypatch.setenv("FAK_CTXMMU_MAX_HELD_BYTES", "12345678")
    kernel = build_kernel(Settings.current())
    assert kernel.ledger.max_held == 3
    assert kernel.ledger.max_held_bytes == 12345678
    assert Kernel(max_held=7).ledger.max_held == 7  # an explicit argument still wins


def test_a_bare_kernel_takes_values_with_the_settings_defaults(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FAK_CTXMMU_MAX_HELD", "3")
    monkeypatch.setenv("FAK_WITNESS_TTL_S", "5")
    bare, built = Kernel(), build_kernel(Settings())
    assert (bare.ledger.max_held, bare.ledger.max_held_bytes, bare.witnesses.ttl_s) == (
        built.ledger.max_held,
        built.ledger.max_held_bytes,
        built.witnesses.ttl_s,
    )
    assert (bare.ledger.max_held, bare.witnesses.ttl_s) == (8192, 900.0)  # FAK_* not read


def test_finding_5_held_bytes_are_bounded() -> None:
    store = MemoryStore(64 * 1024 * 1024)
    ledger = QuarantineLedger(store, max_held=8192, max_held_bytes=1_000_000)
    qids = []
    for i in range(10):
        adm = ledger.admit(ToolResult(tool="fetch", payload=_secret_blob(300_000, i)))
        assert adm.verdict.kind == VerdictKind.QUARANTINE
        qids.append(adm.quarantine_id)
    counters = ledger.counters
    assert counters["held_bytes"] <= 1_000_000
    assert counters["held"] == 3  # 3 x ~300 KB fit, the 7 oldest were evicted
    assert counters["evicted"] == 7
    # an evicted id keeps its stub and stays out: it can never be paged in
    with pytest.raises(PageInRefused):
        ledger.page_in(qids[0])
    # evicted blobs are unpinned, so the store's own bound can reclaim them
    assert store.stats.pinned_blobs == 3


def test_finding_5_a_result_larger_than_the_bound_is_still_held_out() -> None:
    ledger = QuarantineLedger(MemoryStore(), max_held_bytes=1000)
    payload = _secret_blob(5000, 0)
    adm = ledger.admit(ToolResult(tool="fetch", payload=payload))
    assert adm.verdict.kind == VerdictKind.QUARANTINE
    assert payload not in adm.payload and b"AKIA" not in adm.payload
    assert ledger.counters["held"] == 0  # evicted at once: nothing to page in, stub stays
    with pytest.raises(PageInRefused):
        ledger.page_in(adm.quarantine_id)
