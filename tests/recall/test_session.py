"""Recording, persisting, reloading and the resolve gates of a recall session."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from fak.abi import Reason, Verdict
from fak.journal import MemoryJournal
from fak.recall import (
    DirectoryImage,
    MemoryImage,
    RecallError,
    RecallErrorCode,
    ResolveStatus,
    Session,
)

SRC = str(Path(__file__).resolve().parents[2] / "src")

_RELOAD = """
import json, sys
from fak.recall import DirectoryImage, Session
s = Session.load(DirectoryImage(sys.argv[1]))
out = {"pid": __import__("os").getpid(), "pages": []}
for p in s.pages:
    r = s.resolve(p.step)
    out["pages"].append({"step": p.step, "descriptor": p.descriptor, "status": str(r.status),
                         "sealed": p.quarantined, "bytes": len(r.data or b"")})
if len(sys.argv) > 2:
    s.clear(sys.argv[2])
    out["after_clear"] = str(s.resolve(1).status)
print(json.dumps(out))
"""


def _reload_elsewhere(root: Path, *extra: str) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": SRC}
    proc = subprocess.run(
        [sys.executable, "-c", _RELOAD, str(root), *extra],
        capture_output=True,
        check=True,
        env=env,
        timeout=60,
    )
    result: dict[str, object] = json.loads(proc.stdout)
    return result


def test_quarantine_survives_a_reload_in_a_separate_process(
    airline_dir: Path, airline: SimpleNamespace
) -> None:
    out = _reload_elsewhere(airline_dir)
    assert out["pid"] != os.getpid()
    pages = out["pages"]
    assert [(p["step"], p["status"], p["sealed"]) for p in pages] == [  # type: ignore[attr-defined]
        (0, "ok", False),
        (1, "sealed_not_cleared", True),
        (2, "ok", False),
        (3, "sealed_not_cleared", True),
    ]
    assert pages[0]["bytes"] == len(airline.ACCOUNT)  # type: ignore[index]
    assert (
        pages[1]["descriptor"]
        == f"read_refund_policy: [sealed: TRUST_VIOLATION, {len(airline.POISON)} bytes]"
    )  # type: ignore[index]
    assert pages[3]["descriptor"].startswith("read_file: [sealed: SECRET_EXFIL, ")  # type: ignore[index]


def test_a_clearance_in_another_process_does_not_launder_poison(airline_dir: Path) -> None:
    out = _reload_elsewhere(airline_dir, "q1")
    assert out["after_clear"] == "sealed_by_rescreen"
    again = Session.load(DirectoryImage(airline_dir))
    assert again.is_cleared("q1")  # the clearance persisted ...
    assert (
        again.resolve(1).status is ResolveStatus.RESCREEN_SEALED
    )  # ... and still launders nothing


def test_sealed_pages_keep_no_bytes_in_the_manifest(airline_dir: Path) -> None:
    manifest = (airline_dir / "manifest.json").read_bytes()
    assert b"ignore previous" not in manifest and b"evil.example" not in manifest
    assert b"sk-proj-Q7vN3xK9" not in manifest and b"AKIAQ3EGRTWK5NX7LB4M" not in manifest
    assert b"refund_fee" in manifest  # a benign page's descriptor carries its first line


def test_a_benign_page_held_by_an_earlier_verdict_releases_after_a_clearance(
    airline: SimpleNamespace,
) -> None:
    session = Session.create(MemoryImage(), "s")
    held = Verdict.quarantine(Reason.TRUST_VIOLATION, "kernel", claim="operator hold")
    page = session.record("search_flights", airline.FLIGHTS, verdict=held)
    assert page.quarantined and page.qid == "q1"
    assert session.resolve(0).status is ResolveStatus.NOT_CLEARED
    session.clear("q1", witness="ops-alice")
    found = session.resolve(0)
    assert found.status is ResolveStatus.OK and found.data == airline.FLIGHTS


def test_the_current_chain_reseals_pages_recorded_under_a_weaker_one(
    airline: SimpleNamespace,
) -> None:
    class Lenient:
        name = "lenient"

        def admit(self, data: bytes) -> Verdict:
            return Verdict.allow(self.name)

    image = MemoryImage()
    weak = Session.create(image, "s", admitters=[Lenient()])
    page = weak.record("read_refund_policy", airline.POISON)
    assert not page.quarantined
    weak.persist()
    assert weak.resolve(0).ok
    strict = Session.load(image)  # the default (current) chain
    assert strict.resolve(0).status is ResolveStatus.RESCREEN_SEALED
    assert strict.recall("refund policy", 3) == []


def test_a_faulting_admitter_seals_and_an_empty_chain_seals() -> None:
    class Broken:
        name = "broken"

        def admit(self, data: bytes) -> Verdict:
            raise RuntimeError("detector crashed")

    assert Session.create(MemoryImage(), "s", admitters=[Broken()]).record("t", b"hi").quarantined
    assert Session.create(MemoryImage(), "s", admitters=[]).record("t", b"hi").quarantined


def test_recall_ranks_benign_untombstoned_unexpired_pages(
    airline_dir: Path, airline: SimpleNamespace
) -> None:
    session = Session.load(DirectoryImage(airline_dir))
    got = session.recall("what refund fee did the user's account show?", 3)
    assert [r.step for r in got] == [0, 2]
    assert got[0].data == airline.ACCOUNT
    session.tombstone(0, "user asked to forget the account details")
    assert [r.step for r in session.recall("refund fee account", 3)] == [2]
    assert session.recall("refund fee", 0) == []


def test_expired_pages_neither_resolve_nor_rank(airline: SimpleNamespace) -> None:
    now = [1000.0]
    session = Session.create(MemoryImage(), "s", clock=lambda: now[0])
    session.record("search_flights", airline.FLIGHTS, valid_to=2000)
    assert session.resolve(0).ok
    now[0] = 2001.0
    assert session.resolve(0).status is ResolveStatus.EXPIRED
    assert session.recall("flights", 3) == []


def test_resolve_out_of_range_is_a_value() -> None:
    session = Session.create(MemoryImage(), "s")
    assert session.resolve(0).status is ResolveStatus.OUT_OF_RANGE
    assert session.resolve(-1).status is ResolveStatus.OUT_OF_RANGE


def test_tombstone_is_idempotent_durable_journaled_and_keeps_the_bytes(
    airline_dir: Path, airline: SimpleNamespace
) -> None:
    journal = MemoryJournal()
    session = Session.load(DirectoryImage(airline_dir), journal=journal)
    digest = session.pages[2].digest
    first, applied = session.tombstone(2, "stale fares", digest=digest, requested_by="ops")
    again, applied_again = session.tombstone(2, "a different reason")
    assert applied and not applied_again and again == first
    assert first.id.startswith("ctx-") and first.action == "tombstone_page"
    assert len(journal.rows) == 1
    row = journal.rows[0]
    assert (row["kind"], row["result_digest"], row["trace_id"]) == (
        "TOMBSTONE",
        digest,
        "airline-mia",
    )
    reloaded = Session.load(DirectoryImage(airline_dir))
    assert reloaded.resolve(2).status is ResolveStatus.TOMBSTONED
    assert reloaded.context_changes == (first,)
    assert reloaded.pages[2] == session.pages[2]  # the page row is untouched
    assert DirectoryImage(airline_dir).get_blob(digest) == airline.FLIGHTS  # the bytes stay


def test_tombstone_bad_requests_change_nothing(airline_dir: Path) -> None:
    before = (airline_dir / "manifest.json").read_bytes()
    session = Session.load(DirectoryImage(airline_dir))
    cases = [
        ((9, "why"), {}, RecallErrorCode.STEP_UNKNOWN),
        ((0, ""), {}, RecallErrorCode.BAD_REQUEST),
        ((0, "why"), {"digest": "0" * 64}, RecallErrorCode.DIGEST_GUARD),
        ((0, "why"), {"action": "delete_page"}, RecallErrorCode.BAD_REQUEST),
    ]
    for args, kwargs, code in cases:
        with pytest.raises(RecallError) as err:
            session.tombstone(*args, **kwargs)  # type: ignore[arg-type]
        assert err.value.code is code
    assert (airline_dir / "manifest.json").read_bytes() == before
    assert session.context_changes == ()


def test_revocation_voids_clearances_and_seals_pages_admitted_under_the_witness(
    airline: SimpleNamespace,
) -> None:
    image = MemoryImage()
    session = Session.create(image, "s")
    held = Verdict.quarantine(Reason.TRUST_VIOLATION, "kernel", claim="hold")
    session.record("search_flights", airline.FLIGHTS, verdict=held)
    session.record("get_user_details", airline.ACCOUNT, witness="w-ops")
    session.clear("q1", witness="w-ops")
    assert session.resolve(0).ok and session.resolve(1).ok
    assert session.revoke_witness("w-ops") == 2
    assert session.trust_epoch == 1
    assert session.resolve(0).status is ResolveStatus.NOT_CLEARED  # clearance evicted
    assert session.resolve(1).status is ResolveStatus.WITNESS_REVOKED
    reloaded = Session.load(image)
    assert reloaded.resolve(1).status is ResolveStatus.WITNESS_REVOKED
    assert not reloaded.is_cleared("q1")
    session.clear("q1", witness="w-ops")  # a clearance by a revoked witness seals at once
    assert session.resolve(0).status is ResolveStatus.WITNESS_REVOKED


def test_memory_and_directory_images_hold_the_same_manifest(
    tmp_path: Path, airline: SimpleNamespace
) -> None:
    mem, disk = MemoryImage(), DirectoryImage(tmp_path / "d")
    for image in (mem, disk):
        session = Session.create(image, "airline-mia")
        airline.record(session)
        session.persist()
    assert mem.read_manifest() == disk.read_manifest()
    assert disk.blobs_written == 4


def test_the_promotion_gate_warns_by_default_and_enforces_when_asked(
    airline: SimpleNamespace,
) -> None:
    warn = Session.create(MemoryImage(), "s")
    airline.record(warn)
    assert len(warn.pages) == 4 and warn.promotion_refusals == 1  # search_flights: "session"
    image = MemoryImage()
    strict = Session.create(image, "s", promotion="enforce")
    airline.record(strict)
    assert [(p.role, p.quarantined) for p in strict.pages] == [
        ("get_user_details", False),  # durable
        ("read_refund_policy", True),  # sealed pages are always kept
        ("read_file", True),
    ]
    assert strict.promotion_refusals == 1
    assert hashlib.sha256(airline.FLIGHTS).hexdigest() not in image.blobs  # never written
    with pytest.raises(ValueError):
        Session.create(MemoryImage(), "s", promotion="maybe")
