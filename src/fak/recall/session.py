"""A recall session: record results through the gate, persist, reload, resolve, recall (tier T2).

``Session`` is both the live recorder and the reloaded core image. ``record`` screens a result
with the admitter chain (most restrictive wins; a faulting admitter or an empty chain seals) and
writes its bytes to the image's CAS; a held result becomes a sealed page. ``resolve(step)``
answers a ``Resolution`` value (never raises for a refusal) after the gates, in order: range,
validity, revoked witness, tombstone, bytes present, clearance (sealed pages), re-screen by the
*current* chain (every page, so a session recorded under a weaker gate is re-caught), bytes.
Tombstones are negative-only, idempotent, persisted and journaled; they never touch CAS bytes.
"""

from __future__ import annotations

import enum
import hashlib
import logging
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from fak.abi import JournalSink, Reason, Verdict, VerdictKind, fold_rank
from fak.abi.protocols import AuditJournal
from fak.journal import JournalKind, journal_record, journal_rows
from fak.recall.errors import RecallError, RecallErrorCode
from fak.recall.image import (
    TAINT_QUARANTINED,
    TAINT_TAINTED,
    VERSION,
    ContextChange,
    Durability,
    Manifest,
    Page,
    benign_descriptor,
    decode_manifest,
    encode_manifest,
    sealed_descriptor,
    tombstone_id,
)
from fak.recall.store import ImageStore
from fak.screen import ResultAdmitter, default_admitters

__all__ = ["Promotion", "Resolution", "ResolveStatus", "Session", "rescreen"]

_log = logging.getLogger(__name__)
_PASS = frozenset({VerdictKind.ALLOW, VerdictKind.DEFER, VerdictKind.TRANSFORM})
_DENY_RANK = fold_rank(VerdictKind.DENY)
_TOKEN = re.compile(r"[a-z0-9]+")
_ACTIONS = frozenset({"tombstone_page", "tombstone", ""})

Promotion = Literal["warn", "enforce"]
"""The promotion gate: ``warn`` keeps every page (counting would-refuse), ``enforce`` keeps only
results classed durable (and every sealed one)."""


class ResolveStatus(enum.StrEnum):
    """Why a page did or did not come back (wire strings)."""

    OK = "ok"
    OUT_OF_RANGE = "out_of_range"
    EXPIRED = "expired"
    WITNESS_REVOKED = "witness_revoked"
    TOMBSTONED = "tombstoned"
    BYTES_MISSING = "bytes_missing"
    NOT_CLEARED = "sealed_not_cleared"
    RESCREEN_SEALED = "sealed_by_rescreen"


@dataclass(frozen=True, slots=True)
class Resolution:
    """The answer of ``resolve``: ``data`` only when ``status`` is OK."""

    step: int
    status: ResolveStatus
    descriptor: str = ""
    reason: str = ""
    data: bytes | None = field(default=None, repr=False)

    @property
    def ok(self) -> bool:
        return self.status is ResolveStatus.OK


def rescreen(admitters: Sequence[ResultAdmitter], data: bytes) -> Verdict:
    """Fold ``admitters`` over ``data``, most restrictive first-on-ties; faults and an empty
    chain hold the bytes (fail closed)."""
    if not admitters:
        return Verdict.quarantine(Reason.DEFAULT_DENY, "recall", claim="no admitters")
    best: Verdict | None = None
    for admitter in admitters:
        try:
            verdict = admitter.admit(data)
        except Exception as exc:
            _log.warning("result admitter faulted during recall screening (%s)", type(exc))
            verdict = None
        if not isinstance(verdict, Verdict):
            verdict = Verdict.quarantine(Reason.TRUST_VIOLATION, "recall", claim="admitter fault")
        if best is None or verdict.rank > best.rank:
            best = verdict
        if best.rank >= _DENY_RANK:
            break
    assert best is not None
    return best


def _held_reason(verdict: Verdict) -> str:
    reason = verdict.reason if verdict.reason != Reason.NONE else Reason.TRUST_VIOLATION
    return reason.name


def _tokens(text: str) -> set[str]:
    return set(_TOKEN.findall(text.lower()))


class Session:
    """One session's page table over an image store. Thread-safe (one lock per session)."""

    def __init__(
        self,
        image: ImageStore,
        manifest: Manifest,
        *,
        admitters: Sequence[ResultAdmitter] | None = None,
        journal: JournalSink | None = None,
        clock: Callable[[], float] = time.time,
        promotion: Promotion = "warn",
    ) -> None:
        if promotion not in ("warn", "enforce"):
            raise ValueError(f"promotion must be 'warn' or 'enforce', not {promotion!r}")
        self._promotion = promotion
        self.promotion_refusals = 0  # benign non-durable results refused (enforce) or counted
        self.restored_tombstones = 0  # journaled tombstones an older image had lost (load)
        self._image = image
        self._admitters = default_admitters() if admitters is None else tuple(admitters)
        self._journal = journal
        self._clock = clock
        self._lock = threading.RLock()
        self._session_id = manifest.session_id
        self._pages: list[Page] = list(manifest.pages)
        self._cleared: dict[str, bool] = dict(manifest.cleared)
        self._clearance_witness: dict[str, str] = dict(manifest.clearance_witness)
        self._revoked: list[str] = list(manifest.revoked_witnesses)
        self._changes: list[ContextChange] = list(manifest.context_changes)
        self._trust_epoch = manifest.trust_epoch
        self._qids = sum(1 for p in self._pages if p.quarantined)

    # -- construction -------------------------------------------------------------------------
    @classmethod
    def create(cls, image: ImageStore, session_id: str, **kwargs: object) -> Session:
        """A new, empty session recording into ``image`` (nothing is written until persist)."""
        if not isinstance(session_id, str) or not 1 <= len(session_id) <= 256:
            msg = "a session id must be 1-256 characters"
            raise RecallError(RecallErrorCode.BAD_REQUEST, msg)
        manifest = Manifest(version=VERSION, session_id=session_id, world_ver=0)
        return cls(image, manifest, **kwargs)  # type: ignore[arg-type]

    @classmethod
    def load(cls, image: ImageStore, **kwargs: object) -> Session:
        """The image's session, after checking the manifest and every blob; else RecallError.

        With a journal, a tombstone the journal records for this session but the manifest lacks
        (an older ``manifest.json`` put back: a replay) is applied again, and the image is
        persisted with it: a tombstone outlives any copy of the image that predates it."""
        manifest = decode_manifest(image.read_manifest())
        image.verify_blobs({p.digest: p.len for p in manifest.pages})
        session = cls(image, manifest, **kwargs)  # type: ignore[arg-type]
        if session._restore_tombstones():
            session.persist()
        return session

    def _restore_tombstones(self) -> int:
        """Apply again every journaled tombstone of this session the image lacks; how many."""
        journal = self._journal
        if not isinstance(journal, AuditJournal):
            return 0
        have = {c.digest for c in self._changes}
        wanted: list[str] = []
        key = self._session_id[:128]
        for row in journal_rows(journal):
            if row.get("kind") == JournalKind.TOMBSTONE and row.get("trace_id") == key:
                digest = str(row.get("result_digest", "")).removeprefix("sha256:")
                if digest and digest not in have:
                    have.add(digest)
                    wanted.append(digest)
        restored = 0
        for digest in wanted:
            for page in self._pages:
                if page.digest != digest or self._tombstoned(page.step):
                    continue
                self._changes.append(
                    ContextChange(
                        id=tombstone_id(self._session_id, page.step, digest),
                        action="tombstone_page",
                        step=page.step,
                        digest=digest,
                        reason="restored from the decision journal: this image had lost it",
                        requested_by="journal",
                        trust_epoch=self._trust_epoch,
                    )
                )
                self.restored_tombstones += 1
                restored += 1
        return restored

    # -- views --------------------------------------------------------------------------------
    @property
    def session_id(self) -> str:
        return self._session_id

    @property
    def image(self) -> ImageStore:
        return self._image

    @property
    def admitters(self) -> tuple[ResultAdmitter, ...]:
        return self._admitters

    @property
    def pages(self) -> tuple[Page, ...]:
        with self._lock:
            return tuple(self._pages)

    @property
    def context_changes(self) -> tuple[ContextChange, ...]:
        with self._lock:
            return tuple(self._changes)

    @property
    def trust_epoch(self) -> int:
        return self._trust_epoch

    def is_cleared(self, qid: str) -> bool:
        with self._lock:
            return self._cleared.get(qid, False)

    def manifest(self) -> Manifest:
        with self._lock:
            return Manifest(
                version=VERSION,
                session_id=self._session_id,
                world_ver=len(self._pages),
                trust_epoch=self._trust_epoch,
                pages=list(self._pages),
                cleared=dict(self._cleared),
                clearance_witness=dict(self._clearance_witness),
                revoked_witnesses=list(self._revoked),
                context_changes=list(self._changes),
            )

    # -- recording ----------------------------------------------------------------------------
    def record(
        self,
        role: str,
        payload: bytes,
        *,
        verdict: Verdict | None = None,
        durability: Durability = "session",
        witness: str = "",
        valid_to: int | None = None,
        utility: float = 0.0,
    ) -> Page | None:
        """Screen ``payload`` and append it as the next page (sealed if any gate holds it).

        ``verdict`` is a decision already made (e.g. the kernel's admission); the page is sealed
        if it or the chain holds the bytes. The bytes go to the image's CAS now (durable for a
        directory image); the page table changes on disk only at ``persist``. The promotion
        gate: a benign result not classed ``durable`` is counted in ``promotion_refusals`` and,
        under ``promotion="enforce"``, not recorded at all (None). Sealed results always are:
        the seal is what must outlive the process.
        """
        if not isinstance(role, str) or not 1 <= len(role) <= 256:
            raise RecallError(RecallErrorCode.BAD_REQUEST, "a page needs a role of 1-256 chars")
        data = bytes(payload)
        digest = hashlib.sha256(data).hexdigest()
        held = rescreen(self._admitters, data)
        if verdict is not None and verdict.rank > held.rank:
            held = verdict
        if held.kind in _PASS and durability != "durable":
            with self._lock:
                self.promotion_refusals += 1
            if self._promotion == "enforce":
                return None
        self._image.put_blob(digest, data)
        with self._lock:
            sealed = held.kind not in _PASS
            reason = _held_reason(held) if sealed else ""
            if sealed:
                self._qids += 1
            page = Page(
                step=len(self._pages),
                role=role,
                descriptor=(
                    sealed_descriptor(role, reason, len(data))
                    if sealed
                    else benign_descriptor(role, data)
                ),
                digest=digest,
                len=len(data),
                taint=TAINT_QUARANTINED if sealed else TAINT_TAINTED,
                quarantined=sealed,
                qid=f"q{self._qids}" if sealed else "",
                reason=reason,
                durability=durability,
                valid_to=valid_to,
                witness=witness[:256],
                trust_epoch=self._trust_epoch,
                utility=utility,
            )
            self._pages.append(page)
            return page

    def persist(self) -> None:
        """Commit the page table (atomic: the old image stays until the new one is whole)."""
        with self._lock:
            self._image.commit_manifest(encode_manifest(self.manifest()))

    # -- page-in ------------------------------------------------------------------------------
    def _page(self, step: int) -> Page:
        if isinstance(step, bool) or not isinstance(step, int) or not 0 <= step < len(self._pages):
            msg = f"step {step!r} does not exist (the session has {len(self._pages)} pages)"
            raise RecallError(RecallErrorCode.STEP_UNKNOWN, msg)
        return self._pages[step]

    def _tombstoned(self, step: int) -> bool:
        return any(c.step == step for c in self._changes)

    def resolve(self, step: int) -> Resolution:
        """Page ``step`` back in if every gate passes; a refusal is a value naming the gate."""
        with self._lock:
            if isinstance(step, bool) or not isinstance(step, int):
                return Resolution(-1, ResolveStatus.OUT_OF_RANGE)
            if not 0 <= step < len(self._pages):
                return Resolution(step, ResolveStatus.OUT_OF_RANGE)
            page = self._pages[step]
            refused = self._gate(page)
            cleared = self._cleared.get(page.qid, False)
        if refused is not None:
            return Resolution(step, refused, page.descriptor, page.reason)
        try:
            data = self._image.get_blob(page.digest)
        except RecallError:
            return Resolution(step, ResolveStatus.BYTES_MISSING, page.descriptor, page.reason)
        if page.quarantined and not cleared:
            return Resolution(step, ResolveStatus.NOT_CLEARED, page.descriptor, page.reason)
        verdict = rescreen(self._admitters, data)
        if verdict.kind not in _PASS:
            reason = _held_reason(verdict)
            return Resolution(step, ResolveStatus.RESCREEN_SEALED, page.descriptor, reason)
        return Resolution(step, ResolveStatus.OK, page.descriptor, page.reason, data)

    def _gate(self, page: Page) -> ResolveStatus | None:
        """The metadata gates (no bytes read): validity, revoked witness, tombstone."""
        if page.valid_to is not None and self._clock() > page.valid_to:
            return ResolveStatus.EXPIRED
        revoked = set(self._revoked)
        by = self._clearance_witness.get(page.qid, "") if page.qid else ""
        if (page.witness and page.witness in revoked) or (by and by in revoked):
            return ResolveStatus.WITNESS_REVOKED
        if self._tombstoned(page.step):
            return ResolveStatus.TOMBSTONED
        return None

    def recall(self, query: str, k: int = 3) -> list[Resolution]:
        """Up to ``k`` resolved pages ranked by query-token overlap with their descriptor plus
        utility; sealed, tombstoned, expired and unresolvable pages never rank."""
        wanted = {t for t in _tokens(query) if len(t) > 2}
        with self._lock:
            candidates: list[tuple[float, int]] = []
            for page in self._pages:
                if page.quarantined or self._gate(page) is not None:
                    continue
                score = len(wanted & _tokens(page.descriptor))
                if score:
                    candidates.append((score + page.utility, page.step))
        candidates.sort(key=lambda item: -item[0])  # stable: earlier steps win ties
        out: list[Resolution] = []
        for _, step in candidates:
            if len(out) >= max(0, k):
                break
            found = self.resolve(step)
            if found.ok:
                out.append(found)
        return out

    # -- clearance, revocation, tombstones ----------------------------------------------------
    def clear(self, qid: str, *, witness: str = "") -> None:
        """Record a witness clearance of a sealed page (necessary, never sufficient) and persist."""
        with self._lock:
            if not any(p.qid == qid for p in self._pages if p.quarantined):
                msg = f"no sealed page with qid {qid[:40]!r}"
                raise RecallError(RecallErrorCode.BAD_REQUEST, msg)
            self._cleared[qid] = True
            if witness:
                self._clearance_witness[qid] = witness[:256]
            else:
                self._clearance_witness.pop(qid, None)
            self.persist()

    def revoke_witness(self, witness: str) -> int:
        """Retire ``witness``: drop every clearance made under it and seal every page admitted
        under it; bumps the trust epoch, persists. Returns how many pages it sealed."""
        if not witness:
            raise RecallError(RecallErrorCode.BAD_REQUEST, "revocation needs a witness name")
        with self._lock:
            voided = [q for q, w in self._clearance_witness.items() if w == witness]
            for qid in voided:
                self._cleared.pop(qid, None)
                self._clearance_witness.pop(qid, None)
            admitted = sum(1 for p in self._pages if p.witness == witness)
            if witness not in self._revoked:
                self._revoked.append(witness[:256])
                self._trust_epoch += 1
            self.persist()
            return len(voided) + admitted

    def tombstone(
        self,
        step: int,
        reason: str,
        *,
        digest: str = "",
        requested_by: str = "agent",
        witness: str = "",
        action: str = "tombstone_page",
    ) -> tuple[ContextChange, bool]:
        """Suppress ``step`` from page-in, recall and ranking (the CAS bytes and the page row stay).

        Idempotent: the same step again returns the existing change and False. ``digest``, when
        given, must be the page's digest (a guard against tombstoning the wrong page). Persisted,
        then journaled (kind TOMBSTONE, digest only).
        """
        if action not in _ACTIONS:
            msg = f"unknown action {action[:40]!r}: the only context change is tombstone_page"
            raise RecallError(RecallErrorCode.BAD_REQUEST, msg)
        if not isinstance(reason, str) or not reason.strip() or len(reason) > 256:
            msg = "a tombstone needs a reason (1-256 characters)"
            raise RecallError(RecallErrorCode.BAD_REQUEST, msg)
        with self._lock:
            page = self._page(step)
            if digest and digest.removeprefix("sha256:") != page.digest:
                msg = f"digest guard does not match page {step}: refusing to tombstone it"
                raise RecallError(RecallErrorCode.DIGEST_GUARD, msg)
            for existing in self._changes:
                if existing.step == step:
                    return existing, False
            change = ContextChange(
                id=tombstone_id(self._session_id, step, page.digest),
                action="tombstone_page",
                step=step,
                digest=page.digest,
                reason=reason.strip(),
                requested_by=(requested_by or "agent")[:256],
                witness=witness[:256],
                trust_epoch=self._trust_epoch,
            )
            self._changes.append(change)
            try:
                self.persist()
            except BaseException:
                self._changes.pop()
                raise
            role = page.role
        if self._journal is not None:
            self._journal.append(
                journal_record(
                    JournalKind.TOMBSTONE,
                    tool=role,
                    trace_id=self._session_id[:128],
                    by=change.requested_by[:64],
                    result_digest=change.digest,
                )
            )
        return change, True
