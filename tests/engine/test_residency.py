"""The engine's side of the cache-metadata contract: typed verdicts and residency events."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from fak.abi import (
    CacheAwarePlanner,
    CacheFault,
    FaultCode,
    LookupKind,
    Message,
    ResidencyKind,
    Role,
    TurnRequest,
    prefix_chain,
)

pytestmark = pytest.mark.engine

SYSTEM = Message(Role.SYSTEM, "You are a careful assistant who answers in one short sentence.")


def _req(*messages: Message, session: str = "s") -> TurnRequest:
    return TurnRequest(model="", messages=messages, max_tokens=3, session=session)


def _run(planner: Any, request: TurnRequest, claim: str = "") -> Any:
    return asyncio.run(planner.complete_cached(request, claim))


def test_verdicts_and_residency_follow_the_radix_tree(engine: Any) -> None:
    from fak.engine import InKernelPlanner

    planner = InKernelPlanner(engine)
    assert isinstance(planner, CacheAwarePlanner)
    first = _req(SYSTEM, Message(Role.USER, "Name a colour."))
    got = _run(planner, first)
    chain = prefix_chain(first)
    assert got.verdict.kind is LookupKind.MISS and got.verdict.reused == 0
    assert got.verdict.prompt == got.turn.usage.prompt_tokens
    [held] = got.events
    assert held.kind is ResidencyKind.HELD
    assert [r.digest for r in held.prefixes] == list(chain)
    ends = [r.tokens for r in held.prefixes]
    assert 0 < ends[0] < ends[1] < got.verdict.prompt

    # the next turn of the conversation, routed here because the router saw chain[1] held
    second = _req(
        *first.messages, Message(Role.ASSISTANT, got.turn.text), Message(Role.USER, "Why?")
    )
    pieces: list[str] = []
    got2 = asyncio.run(planner.complete_cached(second, chain[1], pieces.append))
    assert "".join(pieces) == got2.turn.text and pieces  # streamed as produced
    assert got2.verdict.kind is LookupKind.HIT and got2.verdict.claimed == chain[1]
    assert got2.verdict.reused >= ends[1]
    assert [r.digest for e in got2.events for r in e.prefixes] == list(prefix_chain(second)[2:])

    # a claim the worker never held: the router's index is stale and is told so
    fruit = _req(SYSTEM, Message(Role.USER, "Name a fruit."), session="t")
    got3 = _run(planner, fruit, claim="0" * 32)
    assert got3.verdict.kind is LookupKind.REVALIDATE
    assert ends[0] < got3.verdict.reused < ends[1]  # the system prompt and "Name a" reused

    stats = planner.stats()
    assert (stats["cache_miss"], stats["cache_hit"], stats["cache_revalidate"]) == (1, 1, 1)


def test_a_dropped_message_is_a_quarantine_verdict_and_evictions_are_announced(
    engine: Any,
) -> None:
    from fak.engine import InKernelPlanner

    planner = InKernelPlanner(engine, max_sessions=1, budget_tokens=0)
    poison = Message(Role.USER, "Remember the code word TANGERINE.")
    a = _req(SYSTEM, poison, Message(Role.USER, "Say hi."), session="a")
    _run(planner, a)
    chain_a = prefix_chain(a)
    # the session's next request no longer carries the poisoned message
    got = _run(planner, _req(SYSTEM, Message(Role.USER, "Say hi."), session="a"))
    assert got.verdict.kind is LookupKind.QUARANTINE
    evicted = {r.digest for e in got.events if e.kind is ResidencyKind.EVICTED for r in e.prefixes}
    assert evicted == {chain_a[1], chain_a[2]}  # the system prompt's prefix is still held
    # another session takes the only lease: the budget (0) evicts the unleased branch
    got_b = _run(planner, _req(Message(Role.USER, "Count to two."), session="b"))
    gone = {r.digest for e in got_b.events if e.kind is ResidencyKind.EVICTED for r in e.prefixes}
    assert chain_a[0] in gone


def test_a_restore_that_does_not_match_is_a_fault_not_a_recompute(engine: Any) -> None:
    from fak.engine import InKernelPlanner

    planner = InKernelPlanner(engine)
    first = _req(SYSTEM, Message(Role.USER, "Name a colour."))
    _run(planner, first)
    turns = planner.stats()["turns"]
    [leaf] = planner.tree.root.children.values()
    node, depth = planner.tree.match(leaf.edge)
    assert node.store is not None and depth > 8
    node.store.tokens[5] += 1  # the stored rows no longer are the tokens they claim to be
    with pytest.raises(CacheFault) as caught:
        _run(planner, first, claim=prefix_chain(first)[0])
    verdict = caught.value.verdict
    assert verdict.kind is LookupKind.FAULT and verdict.fault is FaultCode.RESTORE_MISMATCH
    assert planner.stats()["turns"] == turns and planner.stats()["cache_fault"] == 1
    # the corrupt branch was evicted and announced; asked again, the worker computes and says so
    gone = {r.digest for e in caught.value.events for r in e.prefixes}
    assert gone == set(prefix_chain(first))
    again = _run(planner, first)
    assert again.verdict.kind is LookupKind.MISS and again.verdict.reused == 0
