"""The in-kernel planner: ``fak.abi.Planner`` over the engine (kind ``inkernel``) (tier T3).

One turn: render the conversation (tools in the system message) one message per span, find
the longest cached prefix in the radix tree, prefill only the rest, decode greedily, parse
``<tool_call>`` blocks into ``ProposedCall``s, and store the grown cache back in the tree,
leased to the session. When a later request no longer contains a span the session's previous
context had (a tombstoned page, a re-screened result, an edited message), the cached branch
holding it is evicted as policy before the turn runs, and the turn recomputes only what came
after it: the cache then equals one that never saw the span. The planner proposes; it never
executes tools and only ever sees what the gateway admitted.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any

from fak.abi import (
    FinishReason,
    PlannerEvent,
    PlannerInputError,
    PlannerTurn,
    ProposedCall,
    Role,
    TextDelta,
    TurnDone,
    TurnRequest,
    Usage,
)
from fak.engine.engine import Engine
from fak.engine.radix import RadixNode, RadixTree

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


def _held_back(text: str) -> int:
    """How many trailing chars might start a ``<tool_call>`` tag or an unfinished character."""
    if text.endswith("\ufffd"):
        return 1
    for k in range(min(len(_OPEN) - 1, len(text)), 0, -1):
        if _OPEN.startswith(text[-k:]):
            return k
    return 0


class InKernelPlanner:
    """A Planner whose model runs in this process over kernel-owned, reusable KV caches."""

    def __init__(
        self,
        engine: Engine,
        *,
        budget_tokens: int = 8192,
        max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
        max_sessions: int = 16,
    ) -> None:
        self.engine = engine
        self.max_sessions = max(1, max_sessions)
        self.tree = RadixTree(budget_tokens=budget_tokens)
        self.max_new_tokens = max_new_tokens
        self._sessions: dict[str, _Session] = {}
        self._lock = threading.Lock()
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
            ),
            0,
        )

    @property
    def kind(self) -> str:
        return "inkernel"

    @property
    def model(self) -> str:
        return self.engine.name

    def stats(self) -> dict[str, int]:
        """Counters since start plus the radix tree's size (all ints, for metrics export)."""
        out = dict(self._counters)  # read without the turn lock: ints, updated under it
        out["radix_nodes"] = self.tree.nodes
        out["radix_tokens"] = self.tree.tokens
        out["radix_budget_tokens"] = self.tree.budget_tokens
        out["sessions"] = len(self._sessions)
        out["exact"] = int(self.engine.exact)
        out["threads"] = self.engine.threads
        return out

    async def complete(self, request: TurnRequest) -> PlannerTurn:
        return await asyncio.to_thread(self._run, request, None)

    async def stream(self, request: TurnRequest) -> AsyncIterator[PlannerEvent]:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[PlannerEvent | BaseException] = asyncio.Queue()

        def emit(text: str) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, TextDelta(text))

        def work() -> None:
            try:
                turn = self._run(request, emit)
                loop.call_soon_threadsafe(queue.put_nowait, TurnDone(turn))
            except BaseException as exc:  # handed to the consumer, raised there
                loop.call_soon_threadsafe(queue.put_nowait, exc)

        worker = threading.Thread(target=work, name="fak-engine-turn", daemon=True)
        worker.start()
        while True:
            item = await queue.get()
            if isinstance(item, BaseException):
                raise item
            yield item
            if isinstance(item, TurnDone):
                return

    async def aclose(self) -> None:
        with self._lock:
            self._sessions.clear()
            self.tree = RadixTree(budget_tokens=self.tree.budget_tokens)

    # ---- one turn (worker thread) -------------------------------------------------------------
    def _run(self, request: TurnRequest, emit: Callable[[str], None] | None) -> PlannerTurn:
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
        with self._lock:
            self._evict_removed_spans(request.session, layout)
            node, reused = self.tree.match(ids[:-1])
            cache = self.tree.materialize(node, extra=len(ids) - reused + budget)
            if cache is None:
                cache = engine.new_cache(len(ids) + budget)
            logits = engine.prefill(cache, ids[reused:])
            produced: list[int] = []
            text, finished = self._decode(cache, logits, budget, produced, emit)
            leaf = self.tree.insert(cache)
            self._remember(request.session, layout, tuple(ids), leaf)
            self._counters["turns"] += 1
            self._counters["prompt_tokens"] += len(ids)
            self._counters["prefix_tokens_reused"] += reused
            self._counters["tokens_prefilled"] += len(ids) - reused
            self._counters["tokens_decoded"] += len(produced)
            self._counters["lru_tokens_evicted"] += self.tree.evict_to_budget()
        prose, calls = parse_tool_calls(text)
        if calls:
            reason = FinishReason.TOOL_CALLS
        elif finished:
            reason = FinishReason.STOP
        else:
            reason = FinishReason.LENGTH
        usage = Usage(prompt_tokens=len(ids), completion_tokens=len(produced))
        return PlannerTurn(prose, calls, reason, usage, request.model or self.model)

    def _decode(
        self,
        cache: Any,
        logits: Any,
        budget: int,
        produced: list[int],
        emit: Callable[[str], None] | None,
    ) -> tuple[str, bool]:
        engine = self.engine
        stops = set(engine.stop_ids)
        sent = 0
        text = ""
        in_call = False

        def closed(_: list[int]) -> bool:
            return _CLOSE in text

        tokens: Iterator[int] = engine.generate(
            cache, logits, max_new_tokens=budget, should_stop=closed
        )
        finished = False
        for token in tokens:
            if token in stops:
                finished = True
                break
            produced.append(token)
            text = engine.tokenizer.decode(produced)
            if _CLOSE in text:
                finished = True
            if emit is None or in_call:
                continue
            cut = text.find(_OPEN)
            upto = cut if cut >= 0 else len(text) - _held_back(text)
            in_call = cut >= 0
            if upto > sent:
                emit(text[sent:upto])
                sent = upto
        if emit is not None and not in_call and sent < len(text.rstrip("\ufffd")):
            emit(text[sent:].rstrip("\ufffd"))
        return text, finished

    def _evict_removed_spans(self, session: str, layout: list[_Span]) -> None:
        """Evict, exactly, the cached branch of any span the previous context had and this lacks."""
        state = self._sessions.get(session)
        if state is None:
            return
        i = 0
        while i < min(len(state.spans), len(layout)) and state.spans[i].key == layout[i].key:
            i += 1
        present = {s.key for s in layout}
        removed = [s for s in state.spans[i:] if s.key not in present]
        if not removed:
            return
        first = removed[0]
        dropped = self.tree.evict_after(state.ids[: first.start], state.ids[first.start])
        self._counters["spans_evicted"] += len(removed)
        self._counters["tokens_evicted"] += dropped
        log.info(
            "session context dropped %d span(s); evicted %d cached rows", len(removed), dropped
        )

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
