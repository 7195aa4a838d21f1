"""The in-kernel planner: ``fak.abi.Planner`` over the engine (kind ``inkernel``) (tier T3).

One turn: render the conversation (tools in the system message) one message per span, find
the longest cached prefix in the radix tree, prefill only the rest, decode greedily, parse
``<tool_call>`` blocks into ``ProposedCall``s, and store the grown cache back in the tree,
leased to the session. When a later request no longer contains a span the session's previous
context had (a tombstoned page, a re-screened result, an edited message), the cached branch
holding it is evicted as policy before the turn runs, and the turn recomputes only what came
after it: the cache then equals one that never saw the span. The planner proposes; it never
executes tools and only ever sees what the gateway admitted.

For a router over several engine workers it is also a ``fak.abi.CacheAwarePlanner``
(``complete_cached``): each turn returns its typed cache verdict, and the prefixes it comes to
hold or loses (``fak.abi.prefix_chain`` digests) are reported as residency events. The restored
prefix is checked against the request's tokens there; a mismatch is a FAULT, never a recompute.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import re
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from fak.abi import (
    CachedTurn,
    CacheFault,
    CacheVerdict,
    FaultCode,
    FinishReason,
    LookupKind,
    PlannerEvent,
    PlannerInputError,
    PlannerTurn,
    ProposedCall,
    Residency,
    ResidencyEvent,
    ResidencyKind,
    Role,
    TextDelta,
    TurnDone,
    TurnRequest,
    Usage,
    prefix_chain,
)
from fak.engine.engine import Engine
from fak.engine.radix import RadixNode, RadixTree
from fak.engine.scheduler import Job, Scheduler

__all__ = ["InKernelPlanner", "parse_tool_calls"]

log = logging.getLogger(__name__)

_OPEN, _CLOSE = "<tool_call>", "</tool_call>"
_CALL_BLOCK = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.S)
DEFAULT_MAX_NEW_TOKENS = 256


def parse_tool_calls(text: str) -> tuple[str, tuple[ProposedCall, ...]]:
    """Split model output into prose and proposed calls; malformed blocks stay prose."""
    calls: list[ProposedCall] = []
    for block in _CALL_BLOCK.findall(text):
        try:
            parsed = json.loads(block.strip())
        except ValueError:
            continue
        items = parsed if isinstance(parsed, list) else [parsed]
        for item in items:
            if not isinstance(item, dict) or not isinstance(item.get("name"), str):
                continue
            args = item.get("arguments", {})
            arguments = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
            digest = hashlib.sha256(f"{len(calls)}:{item['name']}:{arguments}".encode()).hexdigest()
            calls.append(ProposedCall(f"call_{digest[:16]}", item["name"], arguments))
    if not calls:
        return text.strip(), ()
    return text.split(_OPEN, 1)[0].strip(), tuple(calls)


def _chat_messages(request: TurnRequest) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    for m in request.messages:
        content = m.content
        if m.role is Role.ASSISTANT and m.tool_calls:
            calls = [
                {"name": c.name, "arguments": _json_or_text(c.arguments)} for c in m.tool_calls
            ]
            block = _OPEN + json.dumps(calls, ensure_ascii=False) + _CLOSE
            content = (content + "\n" + block).strip()
        out.append({"role": str(m.role), "content": content})
    return out


def _json_or_text(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _tools(request: TurnRequest) -> list[dict[str, Any]]:
    return [
        {"name": t.name, "description": t.description, "parameters": dict(t.parameters)}
        for t in request.tools
    ]


@dataclass(slots=True)
class _Span:
    key: str
    start: int
    length: int


@dataclass(slots=True)
class _Session:
    spans: list[_Span]
    ids: tuple[int, ...]
    node: RadixNode | None


def _call_soon(loop: asyncio.AbstractEventLoop, fn: Callable[..., None], *args: Any) -> None:
    """Run ``fn`` on the request's event loop; a loop already gone has nobody to tell."""
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(fn, *args)


def _held_back(text: str) -> int:
    """How many trailing chars might start a ``<tool_call>`` tag or an unfinished character."""
    if text.endswith("\ufffd"):
        return 1
    for k in range(min(len(_OPEN) - 1, len(text)), 0, -1):
        if _OPEN.startswith(text[-k:]):
            return k
    return 0


@dataclass(slots=True)
class _Turn:
    """A request's planner-side state while the scheduler generates it."""

    request: TurnRequest
    layout: list[_Span]
    ids: list[int]
    emit: Callable[[str], None] | None
    deliver: Callable[[PlannerTurn | BaseException], None]
    reused: int = 0
    text: str = ""
    sent: int = 0
    in_call: bool = False
    claim: str = ""  # the prefix digest a router expects this worker to hold ("" for none)
    tracked: bool = False  # served for a router: verdict and residency are kept
    quarantined: bool = False  # spans the session dropped were evicted before the lookup
    split: bool = False  # the lookup cut a cached run part-way
    claim_held: bool = True
    verdict: CacheVerdict | None = None


class InKernelPlanner:
    """A Planner whose model runs in this process over kernel-owned, reusable KV caches.

    Concurrent turns are served together by a continuous-batching ``Scheduler``: at most
    ``max_batch`` at once, their KV memory bounded by ``max_kv_bytes``; a turn that does not
    fit is refused with ``PlannerInputError(status=429, retry_after=...)``.
    """

    def __init__(
        self,
        engine: Engine,
        *,
        budget_tokens: int = 8192,
        max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
        max_sessions: int = 16,
        max_batch: int = 8,
        max_kv_bytes: int = 4 << 30,
    ) -> None:
        self.engine = engine
        self.max_sessions = max(1, max_sessions)
        self.tree = RadixTree(budget_tokens=budget_tokens)
        self.max_new_tokens = max_new_tokens
        self._sessions: dict[str, _Session] = {}
        self._lock = threading.Lock()  # the tree and sessions (the scheduler's thread writes)
        self._row_bytes = engine.new_cache(1).row_bytes()
        self.scheduler = Scheduler(
            engine.model,
            stop_ids=engine.stop_ids,
            max_batch=max_batch,
            max_kv_bytes=max_kv_bytes,
        )
        self._tracking = False  # set by the first complete_cached: a router reads residency
        self._held: dict[str, tuple[tuple[int, ...], int]] = {}  # digest -> (ids, tokens)
        self._events: list[ResidencyEvent] = []
        self._removed_seen = 0
        self._counters = dict.fromkeys(
            (
                "turns",
                "prompt_tokens",
                "prefix_tokens_reused",
                "tokens_prefilled",
                "tokens_decoded",
                "spans_evicted",
                "tokens_evicted",
                "lru_tokens_evicted",
                *(f"cache_{kind}" for kind in LookupKind),
            ),
            0,
        )

    @property
    def kind(self) -> str:
        return "inkernel"

    @property
    def model(self) -> str:
        return self.engine.name

    def set_error_hook(self, hook: Callable[[str], None]) -> None:
        """The engine has no upstream: nothing to report."""

    def stats(self) -> dict[str, int]:
        """Counters since start plus the radix tree's size (all ints, for metrics export)."""
        out = dict(self._counters)  # read without the turn lock: ints, updated under it
        out["radix_nodes"] = self.tree.nodes
        out["radix_tokens"] = self.tree.tokens
        out["radix_budget_tokens"] = self.tree.budget_tokens
        out["sessions"] = len(self._sessions)
        out["exact"] = int(self.engine.exact)
        out["fast_mode"] = int(self.engine.mode == "fast")
        out["threads"] = self.engine.threads
        sched = self.scheduler
        out.update(sched.counters)
        out["active_requests"] = sched.active
        out["max_batch"] = sched.max_batch
        out["kv_bytes_reserved"] = sched.reserved_bytes
        out["kv_bytes_limit"] = sched.max_kv_bytes
        return out

    async def complete(self, request: TurnRequest) -> PlannerTurn:
        turn, _ = await self._complete(request, None)
        return turn

    async def complete_cached(
        self,
        request: TurnRequest,
        claim: str = "",
        on_text: Callable[[str], None] | None = None,
    ) -> CachedTurn:
        """A turn for a router: the turn, its cache verdict and the residency events since the
        last report. A restore that fails raises ``CacheFault`` (the turn did not run, no text
        was emitted). ``on_text`` gets the streamable text as it is produced (never tool-call
        JSON), on the engine's thread."""
        self._tracking = True
        try:
            turn, state = await self._complete(request, claim, on_text)
        except CacheFault as fault:
            raise CacheFault(fault.verdict, self.residency()) from None
        assert state.verdict is not None
        return CachedTurn(turn, state.verdict, self.residency())

    def residency(self) -> tuple[ResidencyEvent, ...]:
        """The residency events not reported yet (held, evicted), oldest first."""
        with self._lock:
            events, self._events = tuple(self._events), []
        return events

    async def _complete(
        self,
        request: TurnRequest,
        claim: str | None,
        emit: Callable[[str], None] | None = None,
    ) -> tuple[PlannerTurn, _Turn]:
        loop = asyncio.get_running_loop()
        result: asyncio.Future[PlannerTurn] = loop.create_future()

        def deliver(outcome: PlannerTurn | BaseException) -> None:
            def settle() -> None:
                if result.done():
                    return
                if isinstance(outcome, BaseException):
                    result.set_exception(outcome)
                else:
                    result.set_result(outcome)

            _call_soon(loop, settle)

        job, state = self._submit(request, emit, deliver, claim)
        try:
            return await result, state
        finally:
            if not job.done:  # the caller went away (client disconnect, deadline)
                self.scheduler.cancel(job)

    async def stream(self, request: TurnRequest) -> AsyncIterator[PlannerEvent]:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[PlannerEvent | BaseException] = asyncio.Queue()

        def emit(text: str) -> None:
            _call_soon(loop, queue.put_nowait, TextDelta(text))

        def deliver(outcome: PlannerTurn | BaseException) -> None:
            item = outcome if isinstance(outcome, BaseException) else TurnDone(outcome)
            _call_soon(loop, queue.put_nowait, item)

        job, _ = self._submit(request, emit, deliver)  # refused here, before any event
        try:
            while True:
                item = await queue.get()
                if isinstance(item, BaseException):
                    raise item
                yield item
                if isinstance(item, TurnDone):
                    return
        finally:
            if not job.done:  # the consumer stopped early: the client went away
                self.scheduler.cancel(job)

    async def aclose(self) -> None:
        await asyncio.to_thread(self.scheduler.close)
        with self._lock:
            self._sessions.clear()
            self.tree = RadixTree(budget_tokens=self.tree.budget_tokens)
            gone = tuple(Residency(d, end) for d, (_, end) in self._held.items())
            self._held.clear()
            self._removed_seen = 0
            if gone and self._tracking:
                self._events.append(ResidencyEvent(ResidencyKind.EVICTED, gone))

    # ---- admission (caller's thread) ----------------------------------------------------------
    def _submit(
        self,
        request: TurnRequest,
        emit: Callable[[str], None] | None,
        deliver: Callable[[PlannerTurn | BaseException], None],
        claim: str | None = None,
    ) -> tuple[Job, _Turn]:
        engine = self.engine
        spans, gen_prompt = engine.chat.render(_chat_messages(request), tools=_tools(request))
        ids: list[int] = []
        layout: list[_Span] = []
        for span in spans:
            key = hashlib.sha256(f"{span.role}\0{span.text}".encode()).hexdigest()
            layout.append(_Span(key, len(ids), len(span.ids)))
            ids.extend(span.ids)
        ids.extend(gen_prompt)
        limit = engine.model.config.context_length
        if len(ids) >= limit:
            raise PlannerInputError(
                "context_length_exceeded",
                f"the prompt is {len(ids)} tokens; this model's context holds {limit}: "
                "shorten the conversation",
            )
        budget = (
            request.max_tokens
            if request.max_tokens and request.max_tokens > 0
            else self.max_new_tokens
        )
        budget = min(budget, limit - len(ids))
        turn = _Turn(request, layout, ids, emit, deliver)
        if claim is not None:
            turn.tracked, turn.claim = True, claim
        job = Job(
            ids=ids,
            budget=budget,
            reserve_bytes=self._row_bytes * (len(ids) + budget),
            prepare=lambda: self._prepare(turn, budget),
            on_token=lambda token: self._on_token(turn, job.tokens),
            on_finish=lambda cache, tokens, finished: self._finish(turn, cache, tokens, finished),
            on_error=deliver,
        )
        self.scheduler.submit(job)
        return job, turn

    # ---- the scheduler's hooks (its worker thread) --------------------------------------------
    def _prepare(self, turn: _Turn, budget: int) -> tuple[Any, int]:
        """Evict what the session dropped, then the longest cached prefix as a fresh cache."""
        ids = turn.ids
        with self._lock:
            turn.quarantined = self._evict_removed_spans(turn.request.session, turn.layout)
            if turn.claim:
                held = self._held.get(turn.claim)
                turn.claim_held = held is not None and (
                    self.tree.cached_depth(held[0][: held[1]]) >= held[1]
                )
            splits = self.tree.splits
            node, reused = self.tree.match(ids[:-1])
            turn.split = self.tree.splits > splits
            turn.reused = reused
            try:
                cache = self.tree.materialize(node, extra=len(ids) - reused + budget)
            except Exception as exc:
                if not turn.tracked:
                    raise
                log.warning("prefix restore raised %s", type(exc).__name__)
                raise self._fault(turn, FaultCode.RESTORE_ERROR) from exc
        if cache is None:
            cache = self.engine.new_cache(len(ids) + budget)
        elif turn.tracked and cache.token_ids()[:reused] != ids[:reused]:
            cache.release()
            with self._lock:  # the branch is not what it claims: it goes, and is announced
                top = node
                while top.parent is not None and top.parent is not self.tree.root:
                    top = top.parent
                if top is not self.tree.root and top.parent is not None:
                    self.tree.evict_subtree(top)
                self._note_evictions()
            raise self._fault(turn, FaultCode.RESTORE_MISMATCH)
        return cache, reused

    def _fault(self, turn: _Turn, code: FaultCode) -> CacheFault:
        verdict = CacheVerdict(LookupKind.FAULT, turn.reused, len(turn.ids), turn.claim, code)
        self._counters["cache_fault"] += 1
        turn.verdict = verdict
        return CacheFault(verdict)

    def _verdict(self, turn: _Turn) -> CacheVerdict:
        if turn.quarantined:
            kind = LookupKind.QUARANTINE
        elif turn.claim and not turn.claim_held:
            kind = LookupKind.REVALIDATE
        elif turn.reused == 0:
            kind = LookupKind.MISS
        elif turn.split:
            kind = LookupKind.TRANSFORM
        else:
            kind = LookupKind.HIT
        return CacheVerdict(kind, turn.reused, len(turn.ids), turn.claim)

    def _announce(self, turn: _Turn, ids: tuple[int, ...]) -> None:
        """Residency after a stored turn: prefixes newly held, and any no longer held."""
        messages = turn.request.messages
        offset = len(turn.layout) - len(messages)  # spans the renderer put before message 0
        fresh: list[Residency] = []
        for i, digest in enumerate(prefix_chain(turn.request)):
            if digest in self._held or i + offset < 0:
                continue
            span = turn.layout[i + offset]
            end = span.start + span.length
            self._held[digest] = (ids, end)
            fresh.append(Residency(digest, end))
        if fresh:
            self._events.append(ResidencyEvent(ResidencyKind.HELD, tuple(fresh)))
        self._note_evictions()

    def _note_evictions(self) -> None:
        """EVICTED events for announced prefixes the tree no longer holds (under the lock)."""
        if self.tree.removed != self._removed_seen:
            self._removed_seen = self.tree.removed
            gone = [
                Residency(d, end)
                for d, (held, end) in self._held.items()
                if self.tree.cached_depth(held[:end]) < end
            ]
            for r in gone:
                del self._held[r.digest]
            if gone:
                self._events.append(ResidencyEvent(ResidencyKind.EVICTED, tuple(gone)))

    def _on_token(self, turn: _Turn, produced: list[int]) -> bool:
        """Stream the new text (never tool-call JSON); True once a tool call block closed."""
        text = turn.text = self.engine.tokenizer.decode(produced)
        if turn.emit is not None and not turn.in_call:
            cut = text.find(_OPEN)
            upto = cut if cut >= 0 else len(text) - _held_back(text)
            turn.in_call = cut >= 0
            if upto > turn.sent:
                turn.emit(text[turn.sent : upto])
                turn.sent = upto
        return _CLOSE in text

    def _finish(self, turn: _Turn, cache: Any, produced: list[int], finished: bool) -> None:
        text = turn.text
        if turn.emit is not None and not turn.in_call and turn.sent < len(text.rstrip("\ufffd")):
            turn.emit(text[turn.sent :].rstrip("\ufffd"))
        ids = turn.ids
        with self._lock:
            leaf = self.tree.insert(cache)
            self._remember(turn.request.session, turn.layout, tuple(ids), leaf)
            self._counters["turns"] += 1
            self._counters["prompt_tokens"] += len(ids)
            self._counters["prefix_tokens_reused"] += turn.reused
            self._counters["tokens_prefilled"] += len(ids) - turn.reused
            self._counters["tokens_decoded"] += len(produced)
            self._counters["lru_tokens_evicted"] += self.tree.evict_to_budget()
            if turn.tracked:
                turn.verdict = self._verdict(turn)
                self._counters[f"cache_{turn.verdict.kind}"] += 1
            if self._tracking:
                self._announce(turn, tuple(ids))
        prose, calls = parse_tool_calls(text)
        if calls:
            reason = FinishReason.TOOL_CALLS
        elif finished:
            reason = FinishReason.STOP
        else:
            reason = FinishReason.LENGTH
        usage = Usage(prompt_tokens=len(ids), completion_tokens=len(produced))
        turn.deliver(PlannerTurn(prose, calls, reason, usage, turn.request.model or self.model))

    def _evict_removed_spans(self, session: str, layout: list[_Span]) -> bool:
        """Evict, exactly, the cached branch of any span the previous context had and this lacks
        (True when spans were removed)."""
        state = self._sessions.get(session)
        if state is None:
            return False
        i = 0
        while i < min(len(state.spans), len(layout)) and state.spans[i].key == layout[i].key:
            i += 1
        present = {s.key for s in layout}
        removed = [s for s in state.spans[i:] if s.key not in present]
        if not removed:
            return False
        first = removed[0]
        dropped = self.tree.evict_after(state.ids[: first.start], state.ids[first.start])
        self._counters["spans_evicted"] += len(removed)
        self._counters["tokens_evicted"] += dropped
        log.info(
            "session context dropped %d span(s); evicted %d cached rows", len(removed), dropped
        )
        return True

    def _remember(
        self, session: str, layout: list[_Span], ids: tuple[int, ...], leaf: RadixNode
    ) -> None:
        old = self._sessions.get(session)
        if old is not None and old.node is not None:
            self.tree.release(old.node)
        self.tree.lease(leaf)
        self._sessions.pop(session, None)
        self._sessions[session] = _Session(layout, ids, leaf)  # most recent last
        while len(self._sessions) > self.max_sessions:  # forget the oldest: its lease goes too
            oldest = next(iter(self._sessions))
            dropped = self._sessions.pop(oldest)
            if dropped.node is not None:
                self.tree.release(dropped.node)
