"""The Kernel: one decision path for every tool call and every tool result (tier T2).

``decide`` folds the policy chain to one verdict (the compiled floor when the default chain is in
use). ``syscall`` consults the vDSO first, else decides, then dispatches only an ALLOW/TRANSFORM
to a registered handler and admits the handler's result through the quarantine ledger before
returning it (and, when the call carries a ``Context``, appends what the model was given to it).
A REQUIRE_WITNESS verdict opens a hold in the ``WitnessBook``; once approved, the next identical
call is admitted once. Refusals are values (``CallOutcome`` with ``status="error"``), never
exceptions.
Decisions and admissions are journaled (digests only) when an ``AuditJournal`` is given; a call
that cannot be journaled is refused. The policy state is swapped atomically, never merged.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import orjson

from fak.abi import (
    AuditJournal,
    BlobStore,
    Clock,
    Context,
    Reason,
    ToolCall,
    ToolResult,
    Verdict,
    VerdictKind,
)
from fak.cas import MemoryStore
from fak.journal import JournalKind
from fak.kernel.audit import AuditWriter
from fak.kernel.evidence import EvidenceBook, HoldEvidence, QuarantineNote, gather
from fak.kernel.gate import UNAUDITED, ResultGate, result_of
from fak.kernel.outcome import ERROR, OK, CallOutcome, deny_value, encode, held_as_deny
from fak.kernel.quarantine import (
    DEFAULT_MAX_HELD,
    DEFAULT_MAX_HELD_BYTES,
    OVERSIZE_BYTES,
    Admission,
    QuarantineLedger,
    screen_policy_for,
)
from fak.kernel.vdso import DEFAULT_CAPACITY, SharedEpochs, VdsoCache, VdsoEntry, VdsoKey
from fak.kernel.witness import DEFAULT_TTL_S, Hold, HoldState, WitnessBook, WitnessError
from fak.policy import (
    Chain,
    CompiledFloor,
    Grammar,
    Policy,
    Rung,
    RungTrace,
    Schema,
    answer_note,
    answer_sources,
    args_digest,
    decode_args,
    read_shaped,
    write_shaped,
)
from fak.screen import ResultAdmitter

__all__ = ["Handler", "Kernel", "ToolEntry"]

logger = logging.getLogger(__name__)

Handler = Callable[[dict[str, Any]], Any]
"""A tool: called with the (possibly rewritten) arguments; returns JSON-able, str or bytes."""

_VDSO_ALLOW: Final = Verdict.allow("vdso", meta={"served_by": "vdso"})
_COUNTERS: Final = (
    "submits",
    "decisions",
    "vdso_hits",
    "engine_calls",
    "denies",
    "transforms",
    "admitted",
    "paged",
    "quarantined",
    "result_denies",
    "paged_in",
    "cleared",
    "tool_errors",
    "unknown_tools",
    "journal_faults",
    "world_bumps",
    "witness_holds",
    "witness_admits",
    "witness_revokes",
    "epoch_faults",
)


@dataclass(frozen=True, slots=True)
class ToolEntry:
    """A registered tool. ``cacheable``: vDSO may serve repeats; ``mutates``: bumps the world."""

    name: str
    handler: Handler
    cacheable: bool
    mutates: bool


@dataclass(frozen=True, slots=True)
class _State:
    """Everything the decide path reads, swapped as one reference."""

    policy: Policy
    decider: CompiledFloor | Chain
    grammars: Mapping[str, Grammar]
    schemas: Mapping[str, Schema]
    epoch: int


class _SystemClock:
    def now(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()


def _to_bytes(value: Any) -> bytes:
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    if isinstance(value, str):
        return value.encode("utf-8")
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)


class Kernel:
    """The in-process kernel. ``policy=None`` uses the built-in default floor.

    It takes values only (it reads no settings): ``build_kernel`` builds one from ``Settings``.
    """

    def __init__(
        self,
        policy: Policy | None = None,
        *,
        chain: Sequence[Rung] | Chain | None = None,
        store: BlobStore | None = None,
        journal: AuditJournal | None = None,
        clock: Clock | None = None,
        max_held: int = DEFAULT_MAX_HELD,
        admitters: Sequence[ResultAdmitter] | None = None,
        max_held_bytes: int = DEFAULT_MAX_HELD_BYTES,
        pageout_bytes: int = OVERSIZE_BYTES,
        vdso: bool = True,
        vdso_capacity: int = DEFAULT_CAPACITY,
        witness_ttl_s: float = DEFAULT_TTL_S,
        ledger: QuarantineLedger | None = None,
        epochs: SharedEpochs | None = None,
        witness_book: WitnessBook | None = None,
    ) -> None:
        injected = chain if isinstance(chain, Chain) else Chain(chain or ())
        self._injected: Chain | None = injected if len(injected) else None
        self._journal = journal
        self._audit = AuditWriter(journal, lambda: self._count("journal_faults"))
        self._clock: Clock = clock if clock is not None else _SystemClock()
        self._store: BlobStore = store if store is not None else MemoryStore()
        # a shared ledger (over fak.kernel.shared.RedisHeldTable) comes built by build_kernel
        self._ledger = ledger or QuarantineLedger(
            self._store,
            max_held=max_held,
            admitters=admitters,
            max_held_bytes=max_held_bytes,
            pageout_bytes=pageout_bytes,
        )
        self._vdso = VdsoCache(vdso_capacity) if vdso else None
        self._tools: dict[str, ToolEntry] = {}
        self._lock = threading.Lock()
        self._counts = dict.fromkeys(_COUNTERS, 0)
        self._world = 0
        self._trust_epoch = 0
        # a shared book (over fak.kernel.shared.RedisWitnessStore) keeps its own clock and ttl
        self._witness = witness_book or WitnessBook(self._clock.now, ttl_s=witness_ttl_s)
        self._cleared_under: dict[str, set[str]] = {}  # witness id -> quarantine ids it cleared
        self._evidence = EvidenceBook()  # what each hold of this process was opened on
        self._gate = ResultGate(self._ledger, self._audit, self._count)
        self._state = self._build_state(policy or Policy.default(), {}, {}, 0)
        self._epochs = epochs  # N workers: the world/trust epochs every vDSO key is stamped with
        self._epoch_nonce = ""
        self._epoch_debt = [0, 0]  # world, trust bumps not yet published (store was down)

    # -- policy state -----------------------------------------------------------------------
    def _build_state(
        self,
        policy: Policy,
        grammars: Mapping[str, Grammar],
        schemas: Mapping[str, Schema],
        epoch: int,
    ) -> _State:
        self._ledger.set_screen_policy(screen_policy_for(policy.manifest.screen))
        decider: CompiledFloor | Chain
        if self._injected is not None:
            decider = self._injected
        else:
            decider = CompiledFloor(policy, grammars, schemas)
        return _State(policy, decider, dict(grammars), dict(schemas), epoch)

    def _swap(
        self,
        policy: Policy | None = None,
        grammars: Mapping[str, Grammar] | None = None,
        schemas: Mapping[str, Schema] | None = None,
    ) -> None:
        with self._lock:
            old = self._state
            self._state = self._build_state(
                policy or old.policy,
                old.grammars if grammars is None else grammars,
                old.schemas if schemas is None else schemas,
                old.epoch + 1,
            )
        if self._vdso is not None:
            self._vdso.flush()
        self._publish(trust=1)

    @property
    def policy(self) -> Policy:
        return self._state.policy

    @property
    def policy_version(self) -> str:
        """sha256 hex of the canonical manifest in force (the tool-lock pin)."""
        return self._state.policy.version

    def replace_policy(self, policy: Policy) -> None:
        """Swap the floor atomically (replace, never merge); cached results are dropped."""
        if not isinstance(policy, Policy):
            msg = f"replace_policy needs a fak.policy.Policy, got {type(policy).__name__}"
            raise TypeError(msg)
        self._swap(policy=policy)

    def register_grammar(self, tool: str, grammar: Grammar) -> None:
        self._swap(grammars={**self._state.grammars, tool: grammar})

    def register_schema(self, tool: str, schema: Schema) -> None:
        self._swap(schemas={**self._state.schemas, tool: schema})

    def register_tool(
        self,
        name: str,
        handler: Handler,
        *,
        read_only: bool | None = None,
        idempotent: bool = True,
        schema: Schema | None = None,
        grammar: Grammar | None = None,
    ) -> ToolEntry:
        """Register a handler. ``read_only=None`` infers it from the name (read prefixes).

        The write-shape veto is name-based: a write-shaped name is never cached and always
        bumps the world version, whatever ``read_only`` says.
        """
        if not name or not callable(handler):
            msg = "register_tool needs a non-empty name and a callable handler"
            raise ValueError(msg)
        reads = read_shaped(name) if read_only is None else bool(read_only)
        reads = reads and not write_shaped(name)
        entry = ToolEntry(name, handler, cacheable=reads and idempotent, mutates=not reads)
        with self._lock:
            self._tools[name] = entry
        if schema is not None:
            self.register_schema(name, schema)
        if grammar is not None:
            self.register_grammar(name, grammar)
        return entry

    def tool_entry(self, name: str) -> ToolEntry | None:
        return self._tools.get(name)

    # -- counters ---------------------------------------------------------------------------
    def _count(self, name: str, other: str = "") -> None:
        with self._lock:
            self._counts[name] += 1
            if other:
                self._counts[other] += 1

    @property
    def counters(self) -> dict[str, int]:
        """Monotonic counts (submits, vdso_hits, engine_calls, denies, transforms, ...)."""
        with self._lock:
            out = dict(self._counts)
            out["world_version"] = self._world
            out["policy_epoch"] = self._state.epoch
            out["trust_epoch"] = self._trust_epoch
        return out

    @property
    def gauges(self) -> dict[str, float]:
        """Current levels: held quarantine ids, cached vDSO entries, vDSO hit ratio."""
        with self._lock:
            submits, hits = self._counts["submits"], self._counts["vdso_hits"]
        return {
            "quarantine_held": float(self._ledger.counters.get("held", 0)),
            "vdso_entries": float(len(self._vdso) if self._vdso is not None else 0),
            "vdso_hit_ratio": hits / submits if submits else 0.0,
        }

    @property
    def world_version(self) -> int:
        return self._world

    def bump_world(self) -> None:
        """A write happened: every cached read is stale."""
        with self._lock:
            self._world += 1
            self._counts["world_bumps"] += 1
        if self._vdso is not None:
            self._vdso.flush()
        self._publish(world=1)

    def _publish(self, world: int = 0, trust: int = 0) -> bool:
        """Tell the fleet (shared epochs) about bumps; owed ones are retried first."""
        epochs = self._epochs
        if epochs is None:
            return True
        with self._lock:
            self._epoch_debt[0] += world
            self._epoch_debt[1] += trust
            owed = tuple(self._epoch_debt)
        try:
            for _ in range(min(owed[0], 1)):
                epochs.bump_world()
            for _ in range(min(owed[1], 1)):
                epochs.bump_trust()
        except Exception as exc:
            logger.error("shared epochs unavailable (%s): bump owed", type(exc).__name__)
            self._count("epoch_faults")
            return False
        with self._lock:  # one bump covers any number owed
            self._epoch_debt[0] -= owed[0]
            self._epoch_debt[1] -= owed[1]
        return True

    def _vdso_stamp(self, state: _State) -> tuple[int, int] | None:
        """(world, epoch) for vDSO keys: local, or the fleet's read now; None (no cached
        answer) when the fleet's cannot be read or a bump of ours is still unpublished."""
        epochs = self._epochs
        if epochs is None:
            return (self._world, state.epoch)
        if any(self._epoch_debt) and not self._publish():
            return None
        try:
            stamp = epochs.read()
        except Exception as exc:
            logger.warning("shared epochs unavailable (%s): no vDSO answer", type(exc).__name__)
            self._count("epoch_faults")
            if self._vdso is not None:
                self._vdso.flush()
            return None
        if stamp.nonce != self._epoch_nonce:  # a new data set: its counters restarted
            if self._vdso is not None:
                self._vdso.flush()
            self._epoch_nonce = stamp.nonce
        return (stamp.world, stamp.trust)

    @property
    def epochs(self) -> SharedEpochs | None:
        """The fleet's shared epochs (None: this kernel serves alone)."""
        return self._epochs

    @property
    def ledger(self) -> QuarantineLedger:
        return self._ledger

    @property
    def journal(self) -> AuditJournal | None:
        """The decision journal this kernel appends to (None when journaling is off)."""
        return self._journal

    def batch(self) -> contextlib.AbstractContextManager[Any]:
        """Decisions made by this thread inside the block are journaled with one group commit
        (durable when the block ends) when the journal supports it; a no-op otherwise."""
        journal = self._journal
        return journal.group() if journal is not None else contextlib.nullcontext()

    @property
    def store(self) -> BlobStore:
        return self._store

    # -- journal ----------------------------------------------------------------------------
    def _journal_call(
        self, kind: JournalKind, call: ToolCall, verdict: Verdict, by: str = ""
    ) -> bool:
        return self._audit.call(kind, call, verdict, self._state.policy.version, by)

    # -- decide -----------------------------------------------------------------------------
    def _settle(self, call: ToolCall, verdict: Verdict) -> Verdict:
        """Judge a rewritten call as it will be dispatched (one extra fold, never more).

        On equal rank the fold keeps the first TRANSFORM, so a later rung's rewrite of the
        already-rewritten arguments (the monitor's redaction after a grammar repair) would be
        lost; folding the rewritten call once more applies it, and a refusal of the rewritten
        call is a refusal.
        """
        assert verdict.new_args is not None
        again = self._state.decider.decide(
            ToolCall(
                call.tool,
                verdict.new_args,
                call.caller,
                call.trace_id,
                call.call_id,
                call.meta,
                call.context,
            )
        )
        if again.kind == VerdictKind.TRANSFORM and again.new_args is not None:
            if dict(again.new_args) == dict(verdict.new_args):
                return verdict  # already settled (e.g. a redaction judged again)
            meta = {**verdict.meta, **again.meta, "settled_by": again.by}
            return Verdict.transform(again.new_args, verdict.by, meta=meta)
        if again.kind == VerdictKind.ALLOW:
            return verdict
        return again

    def decide(self, call: ToolCall) -> Verdict:
        """Fold the chain for one call (no vDSO, no dispatch); counted and journaled.

        A TRANSFORM is settled: the rewritten call is folded once more and must pass too.
        """
        presented = call.meta.get("witness", "") if call.meta else ""
        if presented and self._witness.is_revoked(presented):
            claim = "the call presents a revoked witness"
            verdict = Verdict.deny(Reason.TRUST_VIOLATION, "witness", claim=claim)
            self._count("decisions", "denies")
            self._journal_call(JournalKind.DENY, call, verdict)
            return verdict
        verdict = self._state.decider.decide(call)
        if verdict.kind == VerdictKind.TRANSFORM and verdict.new_args is not None:
            verdict = self._settle(call, verdict)
        if verdict.kind == VerdictKind.REQUIRE_WITNESS:
            verdict = self._witnessed(call, verdict)
            if verdict.kind == VerdictKind.REQUIRE_WITNESS:
                self._count("decisions", "witness_holds")
                if not self._journal_call(JournalKind.HOLD, call, verdict, by=_witness_by(verdict)):
                    return self._unaudited()
                return verdict
        kind = verdict.kind
        if kind == VerdictKind.DENY:
            self._count("decisions", "denies")
            if self._journal is not None:
                self._journal_call(JournalKind.DENY, call, verdict)
            return verdict
        self._count("decisions", "transforms" if kind == VerdictKind.TRANSFORM else "")
        if self._journal is not None and not self._journal_call(JournalKind.DECIDE, call, verdict):
            return self._unaudited()
        return verdict

    def _witnessed(self, call: ToolCall, verdict: Verdict) -> Verdict:
        """Spend a live approval for exactly this call (ALLOW), else (re)open its hold."""
        digest = args_digest(call.args)
        used = self._witness.consume(call.tool, digest)
        if used is not None:
            self._count("witness_admits")
            meta = {**verdict.meta, "witness": used.id, "held_by": verdict.by}
            rest = self._fold_unwitnessed(call)
            if rest.kind == VerdictKind.TRANSFORM and rest.new_args is not None:
                # the approval answers the hold, not the fold: the redactions still apply
                new_args = rest.new_args
                again = self._fold_unwitnessed(call, new_args)
                if again.kind == VerdictKind.TRANSFORM and again.new_args is not None:
                    new_args = again.new_args
                elif again.kind not in (VerdictKind.ALLOW, VerdictKind.TRANSFORM):
                    return again
                return Verdict.transform(new_args, f"witness:{used.id}", meta=meta)
            return Verdict.allow(f"witness:{used.id}", meta=meta)
        hold = self._witness.hold(call.tool, digest, verdict.claim, call.caller)
        if hold is None:  # the book is full of live holds: refuse rather than forget one
            claim = (
                "no witness hold could be opened: the book, or this client's share of it, is "
                "full of live holds (approve or let some expire), or its store is unreachable"
            )
            return Verdict.deny(Reason.UNWITNESSED, "witness", claim=claim)
        if hold.state is HoldState.REVOKED:  # an operator said no to exactly this call
            claim = f"an operator denied this call (witness {hold.id}); it stays refused"
            meta = {"witness_id": hold.id, "expires_unix": f"{hold.expires:.0f}"}
            return Verdict.deny(Reason.TRUST_VIOLATION, "witness", claim=claim, meta=meta)
        hidden = self._state.policy.redact_fields
        self._evidence.put(gather(hold.id, call, verdict.claim, verdict.by, hidden))
        meta = {
            **verdict.meta,
            "witness_id": hold.id,
            "expires_unix": f"{hold.expires:.0f}",
        }
        return Verdict.require_witness(verdict.claim, verdict.by, meta=meta)

    def _fold_unwitnessed(self, call: ToolCall, args: Mapping[str, Any] | None = None) -> Verdict:
        """The fold of every rung's answer but the holds (REQUIRE_WITNESS): what an approved
        call must still go through (a redaction is a TRANSFORM). ALLOW when nothing else spoke."""
        if args is not None:
            call = ToolCall(
                call.tool, args, call.caller, call.trace_id, call.call_id, call.meta, call.context
            )
        _, traces = self._state.decider.explain(call)
        best: Verdict | None = None
        for trace in traces:
            answer = trace.verdict
            if answer.kind in (VerdictKind.REQUIRE_WITNESS, VerdictKind.DEFER):
                continue
            if best is None or answer.rank > best.rank:
                best = answer
        return best if best is not None else Verdict.allow("witness")

    # -- witnesses --------------------------------------------------------------------------
    @property
    def witnesses(self) -> WitnessBook:
        return self._witness

    def hold_evidence(self, hold_id: str) -> HoldEvidence | None:
        """What this process saw when it opened ``hold_id`` (None: not opened here)."""
        return self._evidence.get(hold_id)

    def approve_witness(self, hold_id: str, approver: str = "") -> Hold:
        """An operator's yes for one held call (raises ``WitnessError`` with a stable code);
        the journal row names ``approver``."""
        hold = self._witness.approve(hold_id, approver)
        self._journal_event(JournalKind.WITNESS_APPROVE, hold, approver)
        return hold

    def revoke_witness(self, hold_id: str, by: str = "") -> dict[str, Any]:
        """Retire a witness: cached answers admitted under it are evicted, clearances it gave
        are taken back, calls presenting it are refused, and the trust epoch moves on."""
        hold = self._witness.revoke(hold_id)
        evicted = self._vdso.evict_witness(hold_id) if self._vdso is not None else 0
        shared = self._witness.take_cleared(hold_id)  # a shared book: given on any worker
        with self._lock:
            cleared = self._cleared_under.pop(hold_id, set()) | shared
            self._trust_epoch += 1
            self._counts["witness_revokes"] += 1
            epoch = self._trust_epoch
        self._publish(trust=1)  # every worker's cached answers, not only this one's
        resealed = sum(1 for qid in sorted(cleared) if self._ledger.reseal(qid))
        self._journal_event(JournalKind.WITNESS_REVOKE, hold, by)
        return {
            "witness": hold_id,
            "evicted": evicted,
            "resealed": resealed,
            "trust_epoch": epoch,
        }

    @property
    def trust_epoch(self) -> int:
        return self._trust_epoch

    def _journal_event(self, kind: JournalKind, hold: Hold, operator: str = "") -> None:
        policy = self._state.policy.version
        state = str(hold.state)
        if not self._audit.witness(kind, hold.tool, hold.id, state, hold.digest, policy, operator):
            msg = "the witness change could not be journaled; it stands, but is unaudited"
            raise WitnessError("journal_unavailable", msg)

    def context(self, *, user: str = "", system: str = "") -> Context:
        """A fresh provenance context for one run, seeded with the trusted text given."""
        ctx = Context()
        if system:
            ctx.system(system)
        if user:
            ctx.user(user)
        return ctx

    @property
    def annotates_answers(self) -> bool:
        """True when the policy says ``"answer": "annotate"``: a door asks ``answer_note``."""
        rung = self._state.policy.provenance
        return rung is not None and rung.answer

    def answer_note(self, text: str, context: Context | None) -> str:
        """The ``[fak]`` lines a door appends to the model's ``text`` for the user: each name in
        it that only an untrusted tool result of ``context`` gave, and which result; empty when
        there is none or the policy does not annotate answers. Never refuses anything."""
        rung = self._state.policy.provenance
        if rung is None or not rung.answer or not text:
            return ""
        return answer_note(answer_sources(rung, context, text))

    def _unaudited(self) -> Verdict:
        """An admission nobody can audit is refused."""
        self._count("denies")
        return UNAUDITED

    def explain(self, call: ToolCall) -> tuple[Verdict, list[RungTrace]]:
        """The folded verdict and each rung's own answer (diagnostic; not counted)."""
        return self._state.decider.explain(call)

    # -- syscall ----------------------------------------------------------------------------
    def _refuse(self, call: ToolCall, verdict: Verdict, start: float) -> CallOutcome:
        payload = encode(deny_value(verdict, call.tool))
        return CallOutcome(ERROR, verdict, payload, None, "", self._ms(start))

    def _ms(self, start: float) -> float:
        return max(0.0, (self._clock.monotonic() - start) * 1000.0)

    def syscall(self, call: ToolCall) -> CallOutcome:
        """vDSO, else decide; dispatch an admitted call; admit its result. Never raises on deny."""
        start = self._clock.monotonic()
        self._count("submits")
        entry = self._tools.get(call.tool)
        state = self._state
        key: VdsoKey | None = None
        presented = call.meta.get("witness", "") if call.meta else ""
        provenance = state.policy.provenance
        stamp = (
            self._vdso_stamp(state)
            if entry is not None
            and entry.cacheable
            and self._vdso is not None
            and (provenance is None or not provenance.guards(call.tool))  # context-dependent
            and not (presented and self._witness.is_revoked(presented))
            else None
        )
        if stamp is not None and self._vdso is not None:
            key = (call.tool, args_digest(call.args), *stamp)
            hit = self._vdso.get(key)
            if hit is not None:
                self._count("vdso_hits")
                if not self._journal_call(JournalKind.VDSO_HIT, call, _VDSO_ALLOW):
                    return self._refuse(call, self._unaudited(), start)
                _remember(call, hit.payload)
                return CallOutcome(
                    OK, _VDSO_ALLOW, hit.payload, hit.admission, "vdso", self._ms(start)
                )
        verdict = self.decide(call)
        if not verdict.admits:
            return self._refuse(call, held_as_deny(verdict), start)
        if entry is None:
            refusal = Verdict.deny(Reason.UNKNOWN_TOOL, "kernel", claim="no handler registered")
            self._count("denies", "unknown_tools")
            self._journal_call(JournalKind.DENY, call, refusal)
            return self._refuse(call, refusal, start)
        if verdict.kind == VerdictKind.TRANSFORM and verdict.new_args is not None:
            args = dict(verdict.new_args)
        else:
            decoded = decode_args(call.args)
            args = dict(decoded) if decoded is not None else {}
        self._count("engine_calls")
        try:
            raw = entry.handler(args)
        except Exception as exc:  # a tool fault is a value too; never the exception text
            if entry.mutates:
                self.bump_world()
            self._count("tool_errors")
            logger.warning("tool %s raised %s", call.tool, type(exc).__name__)
            error = {"status": ERROR, "error": "TOOL_FAILED", "exception": type(exc).__name__}
            return CallOutcome(ERROR, verdict, encode(error), None, "tool", self._ms(start))
        if entry.mutates:
            self.bump_world()
        result = ToolResult(call.tool, _to_bytes(raw), call.call_id, call.trace_id)
        admission = self.admit_result(result)
        fresh = key is not None and key[2:] == self._vdso_stamp(self._state)
        if (
            fresh
            and key is not None
            and self._vdso is not None
            and verdict.kind == VerdictKind.ALLOW
            and admission.verdict.kind == VerdictKind.ALLOW
        ):
            self._vdso.put(key, VdsoEntry(admission.payload, admission, presented))
        _remember(call, admission.payload)
        return CallOutcome(OK, verdict, admission.payload, admission, "tool", self._ms(start))

    submit = syscall

    # -- results ----------------------------------------------------------------------------
    def admit_result(self, result: ToolResult) -> Admission:
        """Screen a tool result before it may enter a model's context (the wall; see
        ``fak.kernel.gate``)."""
        return self._gate.admit(result)

    def quarantine_notes(self) -> list[QuarantineNote]:
        """The results this process held out most recently, oldest first (no held bytes)."""
        return self._gate.notes()

    def admit_value(
        self, tool: str, value: object, *, call_id: str = "", trace_id: str = ""
    ) -> Admission:
        """The one admission of a result of any shape: text, bytes or a JSON value."""
        return self.admit_result(result_of(tool, value, call_id=call_id, trace_id=trace_id))

    def clear(self, qid: str, witness: str = "") -> None:
        """Record a witness clearance for a held result (unknown ids raise LookupError).
        Under a named ``witness`` (a hold id), revoking that witness takes the clearance back;
        a revoked witness clears nothing."""
        if witness and (self._witness.get(witness) is None or self._witness.is_revoked(witness)):
            msg = f"witness {witness!r} is unknown or revoked; it cannot clear {qid!r}"
            raise WitnessError("witness_revoked", msg)
        self._ledger.clear(qid)
        if witness:
            with self._lock:
                self._cleared_under.setdefault(witness, set()).add(qid)
            self._witness.note_cleared(witness, qid)
        self._count("cleared")

    def page_in(self, qid_or_ref: str, operator: str = "") -> bytes:
        """The original bytes of a cleared or paged-out result, re-screened first. An
        ``operator``'s page-in (the console's) is journaled as PAGE_IN, allowed or refused."""
        return self._gate.page_in(qid_or_ref, operator)


def _witness_by(verdict: Verdict) -> str:
    hold = verdict.meta.get("witness_id", "")
    return f"witness:{hold}" if hold else verdict.by


def _remember(call: ToolCall, payload: bytes) -> None:
    """What the model is handed becomes part of the run's context (untrusted)."""
    if call.context is not None:
        call.context.result(call.tool, call.call_id, payload.decode("utf-8", "replace"))
