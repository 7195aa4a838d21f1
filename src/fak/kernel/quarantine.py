"""The quarantine ledger: the kernel's write-time gate over tool results (tier T2).

Every result is folded through the result-admitter chain (most restrictive wins) and comes back
as an ``Admission``: ALLOW (bytes as-is), TRANSFORM (a benign result over 4096 bytes paged out to
the blob store behind a pointer stub, unless its door says the client cannot page it back in:
``ToolResult.meta["pageout"] == "off"``) or QUARANTINE / DENY (bytes paged out and pinned, payload
replaced by a stub naming a quarantine id). Held results are bounded by count and by total bytes
(they are pinned, so the store's own byte bound cannot evict them) with FIFO eviction; an evicted
id keeps its stub and can never be paged in again, and its bytes are released from the store at
once (``BlobStore.release``), so the held bound (``FAK_CTXMMU_MAX_HELD_BYTES``) bounds the
memory held results take whatever the store's own bound. Bytes come
back only through ``page_in``: a held id needs a witness ``clear`` first, and every page-in
re-screens with the current chain. This module never logs, journals or returns held bytes
except from an allowed ``page_in``; the kernel journals from the ``Admission`` (digests only).
The records of held results live in a ``HeldTable`` (``fak.kernel.held``): this process's memory
by default, or Redis shared by every worker (``fak.kernel.shared.RedisHeldTable``); when a shared
table cannot be reached the ledger fails closed (a stub with no id, a refused clear or page-in).
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, NoReturn

import orjson

from fak.abi import (
    BlobStore,
    Reason,
    Ref,
    RefKind,
    ToolResult,
    Verdict,
    VerdictKind,
    fold_rank,
)
from fak.abi.replies import Reply, reply_for_verdict
from fak.kernel.held import (
    DEFAULT_MAX_HELD,
    DEFAULT_MAX_HELD_BYTES,
    LEDGER_DOWN,
    HeldRecord,
    HeldSpan,
    HeldTable,
    MemoryHeldTable,
)
from fak.kernel.verdictmemo import VerdictMemo, chain_is_deterministic
from fak.policy.manifest import ScreenSection
from fak.screen import AdmissionScope, ResultAdmitter, SourceAwareAdmitter, default_admitters
from fak.screen.sources import DEFAULT_SETTINGS, ScreenPolicy, SourceRule, SourceSettings
from fak.screen.spans import Span, cut, offending_spans

__all__ = [
    "DEFAULT_MAX_HELD",
    "DEFAULT_MAX_HELD_BYTES",
    "LEDGER_DOWN",
    "OVERSIZE_BYTES",
    "PAGEOUT_META",
    "PAGEOUT_OFF",
    "POINTER_MAX",
    "Admission",
    "HeldSpan",
    "PageInRefused",
    "QuarantineLedger",
    "UnknownQuarantineId",
    "admission_reply",
    "screen_policy_for",
]

_log = logging.getLogger(__name__)

OVERSIZE_BYTES: Final = 4096
"""A benign result longer than this is paged out behind a pointer stub (TRANSFORM)."""
PAGEOUT_META: Final = "pageout"
"""``ToolResult.meta`` key by which a door says whether its client can page a pointer back in."""
PAGEOUT_OFF: Final = "off"
"""...and the value that says it cannot: a benign result then enters whole, whatever its size
(a pointer such a client cannot follow would cost the user their task)."""
POINTER_MAX: Final = 2048
"""A pointer stub must be shorter than this, or the result is admitted as-is."""

_LEDGER = "ctxmmu"
_FALLBACK_STUB: Final = b'{"_quarantined":true}'
_BENIGN = frozenset({VerdictKind.ALLOW, VerdictKind.DEFER})
_DENY_RANK = fold_rank(VerdictKind.DENY)


@dataclass(frozen=True, slots=True)
class Admission:
    """What the ledger decided about one result.

    ``payload`` is what may enter the model's context: the original bytes (ALLOW), a pointer stub
    (TRANSFORM) or a quarantine stub (QUARANTINE / DENY). ``ref`` names where the original bytes
    live; for a held result it is a bytes-free name (digest and length only). ``digest`` is the
    sha256 hex of the original bytes, for the journal.
    """

    verdict: Verdict
    payload: bytes
    quarantine_id: str = ""
    ref: Ref | None = None
    digest: str = ""
    spans: tuple[HeldSpan, ...] = ()
    """With span quarantine: the spans cut out of ``payload`` (ids, offsets, digests; no bytes)."""


class UnknownQuarantineId(LookupError):
    """``clear`` was given an id the ledger does not hold (never minted, or evicted)."""


class PageInRefused(PermissionError):
    """``page_in`` refused: the bytes stay out of context. ``str(exc)`` says why."""

    NOT_HELD: Final = "no quarantined result"
    NOT_CLEARED: Final = "no witness clear"
    STILL_FAILS: Final = "re-screen failed"
    BYTES_LOST: Final = "bytes unavailable"

    def __init__(self, why: str, ident: str) -> None:
        super().__init__(f"{why}: {ident}")
        self.why = why
        self.ident = ident


class QuarantineLedger:
    """Folds the result chain, pages out, holds quarantined bytes, gates page-in.

    Thread-safe: screening runs outside the lock; ledger state changes under it.
    """

    def __init__(
        self,
        store: BlobStore,
        *,
        max_held: int = DEFAULT_MAX_HELD,
        admitters: Sequence[ResultAdmitter] | None = None,
        max_held_bytes: int = DEFAULT_MAX_HELD_BYTES,
        pageout_bytes: int = OVERSIZE_BYTES,
        memoize: bool = True,
        table: HeldTable | None = None,
    ) -> None:
        # the held records: a given (shared) table keeps its own bounds
        self._table: HeldTable = (
            table
            if table is not None
            else MemoryHeldTable(max_held=max_held, max_held_bytes=max_held_bytes)
        )
        self._store = store
        # a benign result longer than this is paged out behind a pointer (0: never)
        self._pageout_bytes = max(0, pageout_bytes) if isinstance(pageout_bytes, int) else 0
        self._admitters: tuple[ResultAdmitter, ...] = (
            default_admitters() if admitters is None else tuple(admitters)
        )
        self._memoize = memoize  # False: every admission screens its bytes (benchmarks)
        self._memo = VerdictMemo(enabled=self._memo_on(self._admitters))
        self._screen_policy = ScreenPolicy()
        self._lock = threading.Lock()
        self._counts: dict[str, int] = dict.fromkeys(
            (
                "total",
                "admitted",
                "paged",
                "quarantined",
                "denied",
                "evicted",
                "cleared",
                "paged_in",
                "page_in_refused",
                "admitter_faults",
                "inline_fallbacks",
                "span_quarantined",
            ),
            0,
        )

    # -- views ------------------------------------------------------------------------------
    @property
    def max_held(self) -> int:
        return self._table.max_held

    @property
    def max_held_bytes(self) -> int:
        return self._table.max_held_bytes

    @property
    def admitters(self) -> tuple[ResultAdmitter, ...]:
        return self._admitters

    @property
    def counters(self) -> dict[str, int]:
        """total, admitted, paged, quarantined, denied, evicted, cleared, paged_in, ..."""
        with self._lock:
            out = dict(self._counts)
        out.update(self._table.stats())
        return out

    @property
    def pollution_rate(self) -> float:
        """Fraction of admitted results that were held out (quarantined or denied)."""
        with self._lock:
            total = self._counts["total"]
            held = self._counts["quarantined"] + self._counts["denied"]
        return held / total if total else 0.0

    def replace_admitters(self, admitters: Sequence[ResultAdmitter]) -> None:
        """Swap the result chain (e.g. after tightening the markers); later admissions and every
        page-in, including of results held under the old chain, are judged by the new one."""
        chain = tuple(admitters)
        self._memo = VerdictMemo(enabled=self._memo_on(chain))
        self._admitters = chain

    def set_screen_policy(self, policy: ScreenPolicy) -> None:
        """Per-source screen settings (from the manifest's ``screen`` section); later admissions
        and every page-in are judged under them."""
        self._memo = VerdictMemo(enabled=self._memo_on(self._admitters))
        self._screen_policy = policy

    def _memo_on(self, chain: Sequence[ResultAdmitter]) -> bool:
        return self._memoize and chain_is_deterministic(chain)

    @property
    def screen_policy(self) -> ScreenPolicy:
        return self._screen_policy

    @property
    def shared(self) -> bool:
        """True when the held table lives outside this process (``fak.kernel.shared``)."""
        return self._table.shared

    def ping(self) -> bool:
        """True when the held table answers (a local one always does)."""
        return self._table.ping()

    def close(self) -> None:
        """Release a shared table's connection (a no-op for the memory table)."""
        self._table.close()

    def is_held(self, qid: str) -> bool:
        return self._table.get(qid) is not None

    def is_cleared(self, qid: str) -> bool:
        held = self._table.get(qid)
        return held is not None and held.cleared

    # -- the fold ---------------------------------------------------------------------------
    def screen(self, data: bytes, digest: str = "", source: str = "") -> Verdict:
        """Fold the chain over ``data``: the most restrictive verdict, first one on ties.

        An admitter that raises or answers something that is not a Verdict holds the bytes
        (QUARANTINE TRUST_VIOLATION); an empty chain holds them too (DEFAULT_DENY). Given the
        bytes' sha256 ``digest``, a deterministic chain's earlier verdict is reused. ``source``
        (the tool) picks the screen settings; a ``SourceAwareAdmitter`` receives them.
        """
        admitters, memo = self._admitters, self._memo  # one read each: see replace_admitters
        if not admitters:
            return Verdict.quarantine(Reason.DEFAULT_DENY, "empty-chain", claim="no admitters")
        settings = self._screen_policy.for_source(source)
        key = digest if settings == DEFAULT_SETTINGS or not digest else f"{digest}:{settings.key}"
        known = memo.get(key)
        if known is not None:
            return known
        best: Verdict | None = None
        faulted = False
        with AdmissionScope():  # what both admitters compute alike is computed once
            for admitter in admitters:
                verdict = self._run(admitter, data, settings)
                faulted = faulted or verdict.meta.get("detector") == "admitter_fault"
                if best is None or verdict.rank > best.rank:
                    best = verdict
                if best.rank >= _DENY_RANK:
                    break
        assert best is not None
        if not faulted:  # a fault may be transient: judge those bytes afresh next time
            memo.put(key, best)
        return best

    def _run(self, admitter: ResultAdmitter, data: bytes, settings: SourceSettings) -> Verdict:
        name = "admitter"
        try:
            name = str(admitter.name) or name
            if settings != DEFAULT_SETTINGS and isinstance(admitter, SourceAwareAdmitter):
                verdict = admitter.admit_with(data, settings)
            else:
                verdict = admitter.admit(data)
        except Exception as exc:  # an admitter fault holds the bytes (fail closed)
            _log.warning("result admitter %s faulted (%s); holding the result", name, type(exc))
            verdict = None
        if not isinstance(verdict, Verdict):
            with self._lock:
                self._counts["admitter_faults"] += 1
            return Verdict.quarantine(
                Reason.TRUST_VIOLATION,
                name,
                claim=f"admitter {name} faulted",
                meta={"detector": "admitter_fault"},
            )
        return verdict

    # -- admission --------------------------------------------------------------------------
    def admit(self, result: ToolResult) -> Admission:
        """Decide what of ``result`` may enter the model's context."""
        data = bytes(result.payload)
        digest = hashlib.sha256(data).hexdigest()
        verdict = self.screen(data, digest, result.tool)
        viewed = False
        if result.view and verdict.rank < _DENY_RANK:  # what the model reads, decoded
            view = bytes(result.view)
            seen = self.screen(view, hashlib.sha256(view).hexdigest(), result.tool)
            if seen.rank > verdict.rank:
                verdict, viewed = seen, True
        if verdict.kind in _BENIGN or verdict.kind == VerdictKind.TRANSFORM:
            forced = verdict.kind == VerdictKind.TRANSFORM
            by_size = self._pageout_bytes and result.meta.get(PAGEOUT_META) != PAGEOUT_OFF
            if forced or (by_size and len(data) > self._pageout_bytes):
                paged = self._page_out(data, digest)
                if paged is not None:
                    return paged
            with self._lock:
                self._counts["total"] += 1
                self._counts["admitted"] += 1
            return Admission(Verdict.allow(_LEDGER), data, digest=digest)
        if verdict.kind == VerdictKind.QUARANTINE and not viewed:  # spans: offsets in the bytes
            settings = self._screen_policy.for_source(result.tool)
            if settings.quarantine == "span":
                partial = self._hold_spans(data, digest, verdict, result.tool, settings)
                if partial is not None:
                    return partial
        return self._hold(data, digest, verdict, result.tool)

    def _hold_spans(
        self, data: bytes, digest: str, verdict: Verdict, source: str, settings: SourceSettings
    ) -> Admission | None:
        """Cut the offending spans out and admit the rest, if the rest passes the whole chain.

        The original bytes are held (pinned) under the quarantine id exactly as a whole hold;
        each span gets an id ``<qid>.<n>`` and a stub in its place. None: hold the whole result.
        """
        if not self._table.holds_spans:  # a table without span records holds the whole
            return None
        spans = offending_spans(data, settings)
        if not spans:
            return None
        qid = self._table.reserve()

        def stub(index: int, span: Span) -> bytes:
            return _stub(f"{qid}.{index}", span.reason, span.end - span.start)

        kept = cut(data, spans, stub)
        check = self.screen(kept, hashlib.sha256(kept).hexdigest(), source)
        if check.kind not in _BENIGN:
            return self._hold(data, digest, verdict, source, qid=qid)
        held_spans = tuple(
            HeldSpan(
                f"{qid}.{i}",
                span.start,
                span.end,
                span.reason,
                hashlib.sha256(data[span.start : span.end]).hexdigest(),
            )
            for i, span in enumerate(spans, start=1)
        )
        admission = self._hold(data, digest, verdict, source, qid=qid, spans=held_spans)
        meta = {**admission.verdict.meta, "quarantine": "span", "spans": str(len(held_spans))}
        final = Verdict.quarantine(
            admission.verdict.reason, admission.verdict.by, claim=admission.verdict.claim, meta=meta
        )
        with self._lock:
            self._counts["span_quarantined"] += 1
        return Admission(final, kept, qid, admission.ref, digest, held_spans)

    def _page_out(self, data: bytes, digest: str) -> Admission | None:
        stub_fields = {"_paged": True, "ref": digest, "len": len(data), "hint": "oversize"}
        stub = orjson.dumps(stub_fields, option=orjson.OPT_SORT_KEYS)
        if len(stub) >= POINTER_MAX:
            return None
        try:
            ref = self._store.put_hashed(data, digest)  # skips a second sha256 where it can
        except Exception as exc:  # benign bytes: admitting them whole is the safe fallback
            _log.warning("page-out failed (%s); admitting %d bytes whole", type(exc), len(data))
            return None
        with self._lock:
            self._counts["total"] += 1
            self._counts["paged"] += 1
        self._table.note_paged(digest, len(data))
        verdict = Verdict.transform(stub_fields, _LEDGER, meta={"pageout": "oversize"})
        return Admission(verdict, stub, ref=ref, digest=digest)

    def _hold(
        self,
        data: bytes,
        digest: str,
        verdict: Verdict,
        source: str = "",
        *,
        qid: str = "",
        spans: tuple[HeldSpan, ...] = (),
    ) -> Admission:
        ref, pinned = self._store_pinned(data, digest)
        reason = verdict.reason if verdict.reason != Reason.NONE else Reason.TRUST_VIOLATION
        record = HeldRecord(ref, pinned, reason, len(data), source=source, spans=spans)
        try:
            qid, evicted = self._table.add(record, qid)
        except ConnectionError:  # fail closed: held out, and with no id it never comes back
            if pinned:
                self._release(ref.digest)
            qid, evicted = "", []
        with self._lock:
            self._counts["total"] += 1
            self._counts["denied" if verdict.kind == VerdictKind.DENY else "quarantined"] += 1
            self._counts["evicted"] += len(evicted)
        for old in evicted:  # past the held bound: their bytes leave memory now, not at the
            if old.pinned:  # blob store's own (much larger) bound
                self._release(old.digest)
        detector = verdict.meta.get("detector", "")
        label = f"quarantine_id={qid}" if qid else LEDGER_DOWN
        claim = f"{verdict.by} {reason.name} {detector} {label}".replace("  ", " ")
        meta = {**verdict.meta, "quarantine_id": qid}
        if verdict.kind == VerdictKind.DENY:
            final = Verdict.deny(reason, verdict.by, claim=claim, meta=meta)
        else:
            final = Verdict.quarantine(reason, verdict.by, claim=claim, meta=meta)
        name = Ref(digest=digest, length=len(data), kind=RefKind.BLOB)
        return Admission(final, _stub(qid, reason, len(data)), qid, name, digest)

    def _store_pinned(self, data: bytes, digest: str) -> tuple[Ref, bool]:
        """Page the bytes out and pin them; on any failure keep them inline (fail closed)."""
        try:
            ref = self._store.put_pinned(data)
            if not isinstance(ref, Ref):
                raise TypeError("put_pinned did not return a Ref")
            if ref.kind == RefKind.BLOB:
                return ref, True
            return ref, False
        except Exception as exc:
            _log.warning("quarantine page-out failed (%s); holding inline", type(exc))
            with self._lock:
                self._counts["inline_fallbacks"] += 1
            return Ref(digest=digest, length=len(data), kind=RefKind.INLINE, inline=data), False

    def _release(self, digest: str) -> None:
        try:
            self._store.release(digest)
        except Exception as exc:
            _log.warning("release after eviction failed (%s)", type(exc))

    # -- clear / page-in --------------------------------------------------------------------
    def clear(self, qid: str) -> None:
        """Record a witness clearance for a currently held id or span id; unknown ids raise
        ``UnknownQuarantineId``; an unreachable shared table raises ``ConnectionError``."""
        done = self._table.clear(qid)
        if done < 0:
            msg = f"no quarantined result with id {qid!r}"
            raise UnknownQuarantineId(msg)
        if done:
            with self._lock:
                self._counts["cleared"] += 1

    def reseal(self, qid: str) -> bool:
        """Take a clearance back (its witness was revoked); True if the id was cleared. An
        unreachable shared table raises ``ConnectionError``."""
        return self._table.reseal(qid)

    def page_in(self, qid_or_ref: str) -> bytes:
        """The original bytes of a cleared quarantine id or a paged-out digest, re-screened.

        Refuses (``PageInRefused``) an unknown or evicted id, an uncleared id, bytes the store
        lost, and bytes the current chain still holds out.
        """
        parent, span_no = _split_span_id(qid_or_ref)
        try:
            held = self._table.get(parent)
            paged = held is None and self._table.is_paged(qid_or_ref)
        except ConnectionError:
            self._refuse(LEDGER_DOWN, qid_or_ref)
        piece: HeldSpan | None = None
        source: Ref | str
        if held is not None:
            if span_no:
                piece = next((s for s in held.spans if s.id == qid_or_ref), None)
                if piece is None:
                    self._refuse(PageInRefused.NOT_HELD, qid_or_ref)
                if not (held.cleared or qid_or_ref in held.cleared_spans):
                    self._refuse(PageInRefused.NOT_CLEARED, qid_or_ref)
            elif not held.cleared:
                self._refuse(PageInRefused.NOT_CLEARED, qid_or_ref)
            source, tool = held.ref, held.source
        elif paged:
            source, tool = qid_or_ref, ""
        else:
            self._refuse(PageInRefused.NOT_HELD, qid_or_ref)
        try:
            if isinstance(source, Ref) and source.inline is not None:
                data = source.inline
            else:
                data = self._store.get(source)
        except Exception as exc:
            _log.warning("page-in read failed (%s)", type(exc))
            self._refuse(PageInRefused.BYTES_LOST, qid_or_ref)
        if piece is not None:
            data = data[piece.start : piece.end]
        verdict = self.screen(data, source=tool)
        if verdict.kind not in _BENIGN and verdict.kind != VerdictKind.TRANSFORM:
            self._refuse(PageInRefused.STILL_FAILS, qid_or_ref)
        with self._lock:
            self._counts["paged_in"] += 1
        return data

    def _refuse(self, why: str, ident: str) -> NoReturn:
        with self._lock:
            self._counts["page_in_refused"] += 1
        raise PageInRefused(why, ident)


def screen_policy_for(section: ScreenSection | None) -> ScreenPolicy:
    """The per-source screen settings a manifest's ``screen`` section asks for."""
    if section is None:
        return ScreenPolicy()
    on = set(section.detectors)
    default = SourceSettings(
        secrets="secrets" in on,
        injection="injection" in on,
        pollution="pollution" in on,
        injection_threshold=section.injection_threshold,
        quarantine=section.quarantine,
    )
    rules = [
        SourceRule(
            name=rule.tool if rule.tool is not None else (rule.tool_prefix or ""),
            prefix=rule.tool is None,
            detectors=rule.detectors,
            injection_threshold=rule.injection_threshold,
            quarantine=rule.quarantine,
        )
        for rule in section.rules
    ]
    return ScreenPolicy(default, rules)


def admission_reply(admission: Admission) -> Reply:
    """The reply for an admission: S for ALLOW / TRANSFORM, D for a held result.

    A quarantine is ``EN-READ-D-001`` with ``quarantine_id``, ``reason`` and ``len`` in ``data``;
    a denied result carries its reason's D code and the same id. Never the bytes.
    """
    data: dict[str, object] = {}
    if admission.quarantine_id:
        data["quarantine_id"] = admission.quarantine_id
        data["len"] = admission.ref.length if admission.ref is not None else 0
    elif admission.verdict.kind == VerdictKind.TRANSFORM and admission.ref is not None:
        data["ref"] = admission.ref.digest
        data["len"] = admission.ref.length
    return reply_for_verdict(admission.verdict, data)


def _split_span_id(ident: str) -> tuple[str, str]:
    """``q7.2`` -> (``q7``, ``2``); a plain id or a digest -> (ident, "")."""
    head, dot, tail = ident.partition(".")
    if dot and head.startswith("q") and tail.isdigit():
        return head, tail
    return ident, ""


def _stub(qid: str, reason: Reason, length: int) -> bytes:
    fields: Mapping[str, object] = {
        "_quarantined": True,
        "id": qid,
        "reason": reason.name,
        "len": length,
    }
    try:
        return orjson.dumps(fields, option=orjson.OPT_SORT_KEYS)
    except Exception:  # cannot happen for these types; never let the bytes through if it does
        return _FALLBACK_STUB
