"""The fleet workload over engine worker processes: cache-aware vs round-robin vs one (tier T4).

The agent fleet of ``fleet.py`` as chat turns: C agents share a system prompt of about P words;
each has its own task, and for T turns asks the model (D new tokens at most), then gets a result
of about R words back as the next user message. The agents run concurrently against a
``RoutedEngines`` (``fak.gateway.upstream.enginepool``) in three arms, each with fresh workers:
one worker; N workers routed round-robin; N workers routed by ``PrefixAffinity``. Prefill tokens
are counted from the workers' own cache verdicts (prompt - reused); wall-clock covers the
workload only (model loading excluded), and so do the workers' process CPU seconds (the fairer
figure on a shared machine: another program's load stretches wall-clock, not work). In exact
mode the arms must generate the same text (a reused prefix equals a recomputed one bit for bit),
which the report checks. Printing and files are the caller's job
(``benchmarks/fleet_routing.py``).
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fak.abi import Message, Role, TurnRequest
from fak.engine.loader import load_engine_planner
from fak.gateway.upstream.affinity import PrefixAffinity, RoundRobin
from fak.gateway.upstream.enginepool import CacheRouting, EnginePool, RoutedEngines

__all__ = ["ARMS", "RoutingCell", "render", "routing_report", "run_arm"]

_WORDS = [
    "agent",
    "tool",
    "result",
    "file",
    "search",
    "read",
    "write",
    "test",
    "build",
    "module",
    "function",
    "value",
    "error",
    "check",
    "policy",
    "cache",
    "prefix",
    "token",
    "worker",
    "route",
    "model",
    "turn",
    "session",
    "kernel",
    "screen",
    "journal",
    "verdict",
    "allow",
    "deny",
    "quarantine",
    "record",
    "digest",
    "store",
    "page",
    "fault",
    "evict",
    "span",
    "block",
    "tree",
    "node",
    "leaf",
]


@dataclass(frozen=True, slots=True)
class RoutingCell:
    """Prefix words P, turns T, agents C, new tokens D per turn, result words R per turn."""

    P: int = 400
    T: int = 5
    C: int = 5
    D: int = 12
    R: int = 60
    seed: int = 20261126

    def label(self) -> str:
        return f"P~{self.P}w T={self.T} C={self.C} D={self.D} R~{self.R}w"


def _text(seed: int, n: int) -> str:
    x, out = seed & 0xFFFFFFFF, []
    for _ in range(n):
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
        out.append(_WORDS[(x >> 8) % len(_WORDS)])
    return " ".join(out)


def _system(cell: RoutingCell) -> Message:
    return Message(Role.SYSTEM, "You are one agent of a fleet. Notes: " + _text(cell.seed, cell.P))


async def _agent(
    planner: RoutedEngines,
    cell: RoutingCell,
    agent: int,
    after: asyncio.Event | None = None,
    started: asyncio.Event | None = None,
) -> tuple[list[str], list[int]]:
    """One agent's turns; with ``after``, its first turn waits for that event, and ``started``
    is set once its own first turn is answered (staggered arrivals)."""
    msgs = [_system(cell), Message(Role.USER, f"Task {agent}: " + _text(cell.seed + agent, 20))]
    texts, workers = [], []
    if after is not None:
        await after.wait()
    for turn in range(cell.T):
        request = TurnRequest("", tuple(msgs), max_tokens=cell.D, session=f"agent-{agent}")
        got, worker = await planner.complete_routed(request)
        texts.append(got.turn.text)
        workers.append(worker)
        if started is not None:
            started.set()
        msgs.append(Message(Role.ASSISTANT, got.turn.text))
        result = _text(cell.seed * 31 + agent * 1009 + turn, cell.R)
        msgs.append(Message(Role.USER, f"Result {turn}: {result}"))
    return texts, workers


async def _cpu(planner: RoutedEngines) -> float:
    return sum([await planner.pool.cpu_seconds(w) for w in planner.pool.workers])


async def _fleet(
    planner: RoutedEngines, cell: RoutingCell, stagger: bool
) -> tuple[list[tuple[list[str], list[int]]], float, float]:
    """The agents concurrently (``stagger``: each starts once the one before it got its first
    answer); returns their texts and workers, wall and workers' CPU seconds."""
    cpu0 = await _cpu(planner)
    t0 = time.perf_counter()
    gates = [asyncio.Event() for _ in range(cell.C)] if stagger else [None] * cell.C
    runs = [_agent(planner, cell, a, gates[a - 1] if a else None, gates[a]) for a in range(cell.C)]
    agents = list(await asyncio.gather(*runs))
    wall = time.perf_counter() - t0
    return agents, wall, await _cpu(planner) - cpu0


ARMS: dict[str, tuple[int | None, Callable[[], CacheRouting]]] = {
    # name -> (workers: None means the run's N, strategy)
    "one worker": (1, PrefixAffinity),
    "round-robin": (None, RoundRobin),
    "cache-aware": (None, PrefixAffinity),
}


def run_arm(
    name: str,
    cell: RoutingCell,
    *,
    workers: int,
    threads: int,
    mode: str = "exact",
    stagger: bool = False,
    say: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """One arm with freshly started workers; ``threads`` is the CPU budget shared among them."""
    count, strategy = ARMS[name]
    n = workers if count is None else count
    factory = functools.partial(
        load_engine_planner,
        None,
        progress=False,
        threads=max(1, threads // n),
        mode=mode,
        max_new_tokens=cell.D,
    )
    t0 = time.perf_counter()
    pool = EnginePool(factory, n)
    loaded = time.perf_counter() - t0
    say(f"  {name}: {n} worker(s) loaded in {loaded:.1f} s; running the fleet ...")
    planner = RoutedEngines(pool, strategy())
    try:
        agents, wall, cpu = asyncio.run(_fleet(planner, cell, stagger))
    finally:
        pool.close()
    stats = planner.stats()
    return {
        "arm": name,
        "workers": n,
        "threads_per_worker": max(1, threads // n),
        "strategy": planner.strategy.name,
        "wall_s": wall,
        "cpu_s": cpu,
        "load_s": loaded,
        "prompt_tokens": stats["prompt_tokens"],
        "prefill_tokens": stats["tokens_prefilled"],
        "reused_tokens": stats["prefix_tokens_reused"],
        "verdicts": {k[6:]: v for k, v in stats.items() if k.startswith("cache_") and v},
        "routes": {k[6:]: v for k, v in stats.items() if k.startswith("route_") and v},
        "turns_per_worker": [stats[f"worker_{i + 1}_turns"] for i in range(n)],
        "texts": [texts for texts, _ in agents],
        "workers_by_agent": [w for _, w in agents],
    }


def routing_report(
    cell: RoutingCell,
    *,
    workers: int = 2,
    threads: int = 2,
    mode: str = "exact",
    stagger: bool = False,
    say: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """Every arm on one cell, one after another in one run; JSON-able."""
    arrive = "staggered" if stagger else "together"
    say(
        f"fleet routing {cell.label()}, {workers} workers, {threads} threads, mode={mode}, "
        f"agents start {arrive}"
    )
    arms = [
        run_arm(a, cell, workers=workers, threads=threads, mode=mode, stagger=stagger, say=say)
        for a in ARMS
    ]
    base = arms[0]["texts"]
    return {
        "benchmark": "fleet_routing",
        "when": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "cell": cell.label(),
        "workers": workers,
        "threads": threads,
        "mode": mode,
        "agents_start": arrive,
        "arms": arms,
        "identical_text": all(a["texts"] == base for a in arms),
    }


def render(record: dict[str, Any]) -> str:
    """The record as a plain-text table (ratios against the cache-aware arm)."""
    arms = record["arms"]
    ca = next(a for a in arms if a["arm"] == "cache-aware")
    lines = [
        f"fleet routing {record['cell']}, mode={record['mode']}, {record['threads']} threads, "
        f"agents start {record.get('agents_start', 'together')}",
        f"{'arm':<14}{'workers':>8}{'prompt tok':>12}{'prefill tok':>13}{'prefill/CA':>11}"
        f"{'wall s':>9}{'wall/CA':>9}{'CPU s':>8}{'CPU/CA':>8}  verdicts",
    ]
    for a in arms:
        verdicts = " ".join(f"{k}={v}" for k, v in sorted(a["verdicts"].items()))
        lines.append(
            f"{a['arm']:<14}{a['workers']:>8}{a['prompt_tokens']:>12,}{a['prefill_tokens']:>13,}"
            f"{a['prefill_tokens'] / max(1, ca['prefill_tokens']):>10.2f}x"
            f"{a['wall_s']:>9.1f}{a['wall_s'] / ca['wall_s']:>8.2f}x"
            f"{a['cpu_s']:>8.1f}{a['cpu_s'] / ca['cpu_s']:>7.2f}x  {verdicts}"
        )
    lines.append(f"every arm generated the same text: {record['identical_text']}")
    for a in arms:
        lines.append(f"{a['arm']}: turns per worker {a['turns_per_worker']}, routes {a['routes']}")
    return "\n".join(lines)
