"""Cache-aware routing: the prefix-affinity strategy's choices, and the engine pool behind it.

The pool test runs two real worker processes (spawned, talking over pipes) whose planner is a
small stand-in cache (``PrefixMemory``: it holds every prefix it served, by ``prefix_chain``),
so the router, the pipe protocol, the verdicts and the fault path are exercised without torch.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from fak.abi import (
    CachedTurn,
    CacheFault,
    CacheVerdict,
    FaultCode,
    LookupKind,
    Message,
    PlannerTurn,
    Residency,
    ResidencyEvent,
    ResidencyKind,
    Role,
    TurnDone,
    TurnRequest,
    Usage,
    prefix_chain,
)
from fak.gateway.upstream.affinity import PrefixAffinity, RoundRobin
from fak.gateway.upstream.enginepool import EnginePool, RoutedEngines
from fak.gateway.upstream.strategies import (
    Candidate,
    Deployment,
    DeploymentStats,
    RouteFeatures,
    UpstreamKind,
)

pytestmark = pytest.mark.gateway

SYSTEM = Message(Role.SYSTEM, "shared instructions")


def _turn(*texts: str, session: str = "") -> TurnRequest:
    msgs = (SYSTEM, *(Message(Role.USER, t) for t in texts))
    return TurnRequest("m", msgs, session=session)


def _cands(*in_flight: int) -> list[Candidate]:
    return [
        Candidate(
            Deployment(f"w{i}", "g", UpstreamKind.ENGINE, "m", order=i),
            DeploymentStats(in_flight=n),
        )
        for i, n in enumerate(in_flight)
    ]


def _held(request: TurnRequest, per_message: int = 100) -> ResidencyEvent:
    chain = prefix_chain(request)
    return ResidencyEvent(
        ResidencyKind.HELD,
        tuple(Residency(d, per_message * (i + 1)) for i, d in enumerate(chain)),
    )


def test_prefix_chain_names_prefixes_and_depends_on_every_earlier_message() -> None:
    a, b = _turn("x", "y"), _turn("x", "z")
    assert len(prefix_chain(a)) == 3 and prefix_chain(a)[:2] == prefix_chain(b)[:2]
    assert prefix_chain(a)[2] != prefix_chain(b)[2]
    other = TurnRequest("m", (Message(Role.SYSTEM, "other"), *a.messages[1:]))
    assert not set(prefix_chain(other)) & set(prefix_chain(a))  # a chain, not per-message hashes
    assert prefix_chain(a) == prefix_chain(_turn("x", "y", session="another session"))


def test_the_longest_held_prefix_wins_and_its_digest_is_the_claim() -> None:
    s = PrefixAffinity(min_prefix_tokens=64)
    s.apply("w0", [_held(_turn("a"))])  # w0 holds system (100) and system+a (200)
    s.apply("w1", [_held(_turn("a", "b"))])  # w1 holds up to system+a+b (300)
    route = s.route(RouteFeatures.of(_turn("a", "b", "c")), _cands(0, 0))
    assert (route.candidate.deployment.id, route.tokens, route.reason) == ("w1", 300, "prefix")
    assert route.claim == prefix_chain(_turn("a", "b"))[2]
    # a turn only the system prompt matches: both hold 100; the tie goes to the less busy one
    route = s.route(RouteFeatures.of(_turn("q")), _cands(1, 0))
    assert (route.candidate.deployment.id, route.tokens) == ("w1", 100)


def test_a_short_prefix_or_a_busy_worker_falls_back_to_the_least_busy() -> None:
    s = PrefixAffinity(min_prefix_tokens=150, max_imbalance=2)
    s.apply("w0", [_held(_turn("a"))])
    short = s.route(RouteFeatures.of(_turn("zzz")), _cands(1, 0))  # 100 < 150 tokens
    assert (short.candidate.deployment.id, short.reason) == ("w1", "load")
    assert short.claim == ""  # w1 holds nothing of it
    busy = s.route(RouteFeatures.of(_turn("a", "b")), _cands(3, 0))  # 3 - 0 > 2
    assert (busy.candidate.deployment.id, busy.reason) == ("w1", "load")
    near = s.route(RouteFeatures.of(_turn("a", "b")), _cands(2, 0))
    assert (near.candidate.deployment.id, near.reason, near.tokens) == ("w0", "prefix", 200)
    # a new conversation with both idle goes to the worker holding less: caches spread
    fresh = s.route(RouteFeatures.of(TurnRequest("m", (Message(Role.USER, "new"),))), _cands(0, 0))
    assert (fresh.candidate.deployment.id, fresh.reason) == ("w1", "load")


def test_evictions_and_stale_claims_leave_the_index() -> None:
    s = PrefixAffinity(min_prefix_tokens=1)
    req = _turn("a")
    s.apply("w0", [_held(req)])
    chain = prefix_chain(req)
    s.apply("w0", [ResidencyEvent(ResidencyKind.EVICTED, (Residency(chain[1], 200),))])
    assert s.route(RouteFeatures.of(req), _cands(0, 0)).tokens == 100
    s.verdict("w0", CacheVerdict(LookupKind.REVALIDATE, 0, 300, claimed=chain[0]))
    route = s.route(RouteFeatures.of(req), _cands(5, 0))
    assert (route.candidate.deployment.id, route.reason, s.held_tokens("w0")) == ("w1", "load", 0)


def test_verdicts_are_closed_and_a_fault_names_its_code() -> None:
    assert [str(k) for k in LookupKind] == [
        "hit",
        "miss",
        "revalidate",
        "transform",
        "quarantine",
        "fault",
    ]
    with pytest.raises(ValueError, match="FAULT verdict"):
        CacheVerdict(LookupKind.FAULT, 0, 10)
    with pytest.raises(ValueError, match="FAULT verdict"):
        CacheVerdict(LookupKind.HIT, 5, 10, fault=FaultCode.RESTORE_ERROR)
    with pytest.raises(ValueError, match="outside a prompt"):
        CacheVerdict(LookupKind.HIT, 11, 10)


def test_round_robin_cycles_in_order() -> None:
    s = RoundRobin()
    picks = [
        s.route(RouteFeatures.of(_turn("a")), _cands(0, 9)).candidate.deployment.id
        for _ in range(4)
    ]
    assert picks == ["w0", "w1", "w0", "w1"]


class PrefixMemory:
    """A stand-in worker cache: 10 tokens per message; holds every prefix it served."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.held: dict[str, int] = {}
        self.faulted = False

    @property
    def model(self) -> str:
        return self.name

    async def complete_cached(
        self,
        request: TurnRequest,
        claim: str = "",
        on_text: Callable[[str], None] | None = None,
    ) -> CachedTurn:
        chain = prefix_chain(request)
        prompt = 10 * len(chain)
        if request.session.startswith("hang:"):  # the first worker to claim the file stalls
            with contextlib.suppress(FileExistsError):
                os.close(os.open(request.session[5:], os.O_CREAT | os.O_EXCL))
                await asyncio.sleep(120)
        reused = max((self.held[d] for d in chain[:-1] if d in self.held), default=0)
        if request.session == "corrupt" and reused and not self.faulted:
            self.faulted = True
            gone = tuple(Residency(d, t) for d, t in self.held.items())
            self.held.clear()
            verdict = CacheVerdict(
                LookupKind.FAULT, reused, prompt, claim, FaultCode.RESTORE_MISMATCH
            )
            raise CacheFault(verdict, (ResidencyEvent(ResidencyKind.EVICTED, gone),))
        fresh = tuple(Residency(d, 10 * (i + 1)) for i, d in enumerate(chain) if d not in self.held)
        self.held.update((r.digest, r.tokens) for r in fresh)
        if claim and claim not in self.held:
            kind = LookupKind.REVALIDATE
        else:
            kind = LookupKind.HIT if reused else LookupKind.MISS
        turn = PlannerTurn(f"{self.name}:{len(chain)}", usage=Usage(prompt, 1))
        if on_text is not None:
            for piece in (self.name, ":", str(len(chain))):
                on_text(piece)
        return CachedTurn(
            turn,
            CacheVerdict(kind, reused, prompt, claim),
            (ResidencyEvent(ResidencyKind.HELD, fresh),),
        )

    def residency(self) -> tuple[ResidencyEvent, ...]:
        return ()


async def _conversation(planner: RoutedEngines, session: str, turns: int) -> list[int]:
    texts: list[str] = []
    workers = []
    for k in range(turns):
        texts.append(f"{session} turn {k}")
        _, worker = await planner.complete_routed(_turn(*texts, session=session))
        workers.append(worker)
    return workers


def test_two_worker_processes_affinity_keeps_a_conversation_where_its_cache_is() -> None:
    pool = EnginePool(functools.partial(PrefixMemory, "fake"), 2)
    try:
        routed = RoutedEngines(pool, PrefixAffinity(min_prefix_tokens=15))
        assert routed.model == "fake" and routed.kind == "inkernel"
        workers = asyncio.run(_conversation(routed, "a", 4))
        assert workers == [0, 0, 0, 0]
        stats = routed.stats()
        assert (stats["cache_miss"], stats["cache_hit"], stats["route_prefix"]) == (1, 3, 3)
        # prompts 20+30+40+50, reused 0+20+30+40
        assert (stats["prompt_tokens"], stats["tokens_prefilled"]) == (140, 50)

        async def streamed() -> list[object]:
            request = _turn("a turn 0", "a turn 1", "a turn 2", "a turn 3", "more")
            return [event async for event in routed.stream(request)]

        events = asyncio.run(streamed())
        assert [e.text for e in events[:-1]] == ["fake", ":", "6"]  # type: ignore[attr-defined]
        assert isinstance(events[-1], TurnDone) and events[-1].turn.text == "fake:6"
        assert routed.stats()["worker_1_turns"] == 5
        assert asyncio.run(pool.cpu_seconds(pool.workers[0])) > 0  # the worker's own CPU time

        rr = RoutedEngines(pool, RoundRobin())
        assert asyncio.run(_conversation(rr, "b", 4)) == [0, 1, 0, 1]
        s = rr.stats()
        # worker 0 holds the system prompt (10) from "a"; each hop lands where the last turn
        # is not: b0 reuses 10 on w0, b1 nothing on w1, b2 20 on w0, b3 30 on w1
        assert (s["prompt_tokens"], s["tokens_prefilled"]) == (140, 140 - 10 - 0 - 20 - 30)
    finally:
        pool.close()


def _live(routed: RoutedEngines) -> list[Candidate]:
    return [Candidate(w.deployment, DeploymentStats()) for w in routed.pool.live()]


def test_a_restore_fault_is_counted_and_the_turn_goes_again_without_a_claim() -> None:
    pool = EnginePool(functools.partial(PrefixMemory, "fake"), 2)
    try:
        routed = RoutedEngines(pool, PrefixAffinity(min_prefix_tokens=15))
        asyncio.run(_conversation(routed, "corrupt", 1))  # held on worker 0
        got, worker = asyncio.run(
            routed.complete_routed(_turn("corrupt turn 0", "next", session="corrupt"))
        )
        assert worker == 1 and got.verdict.kind is LookupKind.MISS  # computed, and said so
        assert got.verdict.claimed == ""
        stats = routed.stats()
        assert (stats["cache_fault"], stats["route_faults_retried"]) == (1, 1)
        again = routed.strategy.route(RouteFeatures.of(_turn("corrupt turn 0")), _live(routed))
        assert again.candidate.deployment.id == "worker-2"  # worker 1 announced its eviction
    finally:
        pool.close()


def test_a_worker_that_dies_mid_turn_is_a_worker_lost_fault_and_the_turn_goes_elsewhere(
    tmp_path: Path,
) -> None:
    pool = EnginePool(functools.partial(PrefixMemory, "fake"), 2)
    try:
        routed = RoutedEngines(pool, PrefixAffinity(min_prefix_tokens=15))
        marker = tmp_path / "stall"

        async def run() -> tuple[CachedTurn, int]:
            turn = asyncio.ensure_future(
                routed.complete_routed(_turn("x", session=f"hang:{marker}"))
            )
            for _ in range(200):  # until the worker holds the turn
                if marker.exists():
                    break
                await asyncio.sleep(0.05)
            pool.workers[0].process.kill()
            return await turn

        t0 = time.monotonic()
        got, worker = asyncio.run(run())
        assert worker == 1 and time.monotonic() - t0 < 60
        assert got.verdict.kind is LookupKind.MISS and got.turn.text == "fake:2"
        stats = routed.stats()
        assert (stats["cache_fault"], stats["route_faults_retried"], stats["workers_live"]) == (
            1,
            1,
            1,
        )
    finally:
        pool.close()
