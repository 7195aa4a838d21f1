"""The agent-fleet workload: one shared prefix, C agents, T turns: three ways to serve it (tier T4).

C agents share a P-token prefix; each turn decodes D tokens greedily (every one fed back), then
each agent ingests R private result tokens (between turns, T-1 times). Token ids are generated
(an LCG: content is irrelevant to cost). Arms:

- A naive: every (agent, turn) prefills its whole context so far into a fresh cache;
- B tuned: one warm cache per agent (prefill P once, then R per turn), agents decoded one
  after another, nothing shared;
- C fak: P prefilled once, forked into C sessions (whole key blocks shared), decodes batched
  across agents, results prefilled per agent in one batched pass.

Exact prefill counts follow closed forms (``token_counts``); every arm's generated tokens are
returned so callers can check that B and C (and A) decode the same tokens. A is run live only
at small scale; at full scale its prefill time is extrapolated from a measured prefill-cost
curve anchored to B's live prefix prefill (``anchored_a``). This module measures; printing and
files are the caller's job (``benchmarks/fleet.py``, ``fak bench fleet``).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

from fak.abi import ToolResult, VerdictKind
from fak.engine.engine import Engine
from fak.engine.kvcache import KVCache

__all__ = [
    "ArmRun",
    "FleetCell",
    "anchored_a",
    "prefill_curve",
    "run_a",
    "run_b",
    "run_c",
    "token_counts",
]

# Anything with the kernel's result-gate shape: ToolResult -> an object with verdict.kind.
ResultGate = Callable[[ToolResult], object]


@dataclass(frozen=True, slots=True)
class FleetCell:
    """Workload shape: prefix P, turns T, agents C, decode D per turn, result R per turn."""

    P: int
    T: int
    C: int
    D: int
    R: int
    seed: int = 20260625

    def label(self) -> str:
        return f"P={self.P} T={self.T} C={self.C} D={self.D} R={self.R}"


def token_counts(cell: FleetCell) -> dict[str, int]:
    """Exact prefill tokens per arm (closed forms) and the context length at the last turn."""
    p, t, c, d, r = cell.P, cell.T, cell.C, cell.D, cell.R
    return {
        "A": c * sum(p + k * (d + r) for k in range(t)),
        "B": c * (p + (t - 1) * r),
        "C": p + c * (t - 1) * r,
        "decoded": c * t * d,
        "max_context": p + (t - 1) * (d + r) + d,
    }


def _lcg(seed: int, n: int, vocab: int) -> list[int]:
    """``n`` ids in [17, vocab) (past the control tokens) from a 64-bit LCG."""
    out, x = [], seed & 0xFFFFFFFFFFFFFFFF
    for _ in range(n):
        x = (x * 6364136223846793005 + 1442695040888963407) & 0xFFFFFFFFFFFFFFFF
        out.append(17 + (x >> 33) % (vocab - 17))
    return out


def prefix_ids(cell: FleetCell, vocab: int) -> list[int]:
    return _lcg(cell.seed, cell.P, vocab)


def result_ids(cell: FleetCell, agent: int, turn: int, vocab: int) -> list[int]:
    return _lcg(cell.seed * 1_000_003 + agent * 10_007 + turn + 1, cell.R, vocab)


@dataclass(slots=True)
class ArmRun:
    """One arm's measured run: tokens generated per agent, prefill counted, seconds by part."""

    arm: str
    tokens: list[list[int]]
    prefill_tokens: int = 0
    seconds: dict[str, float] = field(default_factory=dict)
    cpu_seconds: dict[str, float] = field(default_factory=dict)  # process CPU time, all threads
    notes: dict[str, object] = field(default_factory=dict)

    @property
    def total_s(self) -> float:
        return sum(self.seconds.values())

    @property
    def total_cpu_s(self) -> float:
        return sum(self.cpu_seconds.values())


def _argmax(logits: torch.Tensor) -> int:
    return int(torch.argmax(logits).item())


class _Clock:
    """Wall-clock and process CPU time per part; CPU time is the fairer figure on a shared
    machine (another process's load stretches wall-clock, not the work done)."""

    def __init__(self, run: ArmRun) -> None:
        self.run = run
        self.cpu = time.process_time()

    def start(self) -> float:
        self.cpu = time.process_time()
        return time.perf_counter()

    def add(self, part: str, since: float) -> float:
        now, cpu = time.perf_counter(), time.process_time()
        self.run.seconds[part] = self.run.seconds.get(part, 0.0) + now - since
        self.run.cpu_seconds[part] = self.run.cpu_seconds.get(part, 0.0) + cpu - self.cpu
        self.cpu = cpu
        return now


def _admit(
    engine: Engine,
    cache: KVCache,
    ids: list[int],
    payload: bytes,
    gate: ResultGate | None,
    logits: torch.Tensor,
) -> tuple[torch.Tensor, bool]:
    """Prefill a result, then ask the gate; anything but ALLOW is evicted at once (exact: a
    tail span nothing attended to). Returns the logits to go on from and whether it stayed."""
    before = cache.length
    after = engine.prefill(cache, ids)
    if gate is None:
        return after, True
    verdict = getattr(
        getattr(gate(ToolResult("web_fetch", payload, "r")), "verdict", None), "kind", None
    )
    if verdict is VerdictKind.ALLOW:
        return after, True
    cache.truncate(before)
    return logits, False


@dataclass(frozen=True, slots=True)
class Quarantine:
    """At ``turn``'s result, agent ``agent`` gets ``ids`` (bytes ``payload``) through ``gate``."""

    agent: int
    turn: int
    ids: list[int]
    payload: bytes
    gate: ResultGate


def run_b(
    engine: Engine,
    cell: FleetCell,
    *,
    skip: tuple[int, int] | None = None,
    quarantine: Quarantine | None = None,
) -> ArmRun:
    """Arm B: per agent a warm cache; serial. ``skip`` = (agent, turn) whose result never
    arrives (the never-saw reference of the quarantine cell)."""
    vocab = engine.model.config.vocab_size
    run = ArmRun("B", [[] for _ in range(cell.C)])
    clock = _Clock(run)
    prefix = prefix_ids(cell, vocab)
    for agent in range(cell.C):
        t0 = clock.start()
        cache = engine.new_cache(token_counts(cell)["max_context"])
        logits = engine.prefill(cache, prefix)
        run.prefill_tokens += cell.P
        t0 = clock.add("prefix", t0)
        for turn in range(cell.T):
            for _ in range(cell.D):
                token = _argmax(logits)
                run.tokens[agent].append(token)
                logits = engine.decode(cache, token)
            t0 = clock.add("decode", t0)
            if turn == cell.T - 1 or skip == (agent, turn):
                continue
            q = quarantine
            if q is not None and (q.agent, q.turn) == (agent, turn):
                logits, _ = _admit(engine, cache, q.ids, q.payload, q.gate, logits)
                run.prefill_tokens += len(q.ids)
            else:
                logits = engine.prefill(cache, result_ids(cell, agent, turn, vocab))
                run.prefill_tokens += cell.R
            t0 = clock.add("incremental", t0)
    return run


def run_c(engine: Engine, cell: FleetCell, *, quarantine: Quarantine | None = None) -> ArmRun:
    """Arm C: prefix once, forked into C sessions, batched decode and batched result prefill."""
    vocab = engine.model.config.vocab_size
    run = ArmRun("C", [[] for _ in range(cell.C)])
    clock = _Clock(run)
    t0 = clock.start()
    base = engine.new_cache(cell.P)
    first = engine.prefill(base, prefix_ids(cell, vocab))
    run.prefill_tokens += cell.P
    t0 = clock.add("prefix", t0)
    extra = token_counts(cell)["max_context"] - cell.P
    sessions = [engine.fork(base, extra=extra) for _ in range(cell.C)]
    logits = [first] * cell.C
    t0 = clock.add("clone", t0)
    run.notes["shared_rows"] = sessions[0].shared
    run.notes["private_bytes_after_clone"] = sum(s.nbytes() for s in sessions)
    run.notes["prefix_bytes"] = base.nbytes()
    evicted = 0
    for turn in range(cell.T):
        for _ in range(cell.D):
            tokens = [_argmax(x) for x in logits]
            for agent, token in enumerate(tokens):
                run.tokens[agent].append(token)
            logits = engine.decode_batch(sessions, tokens)
        t0 = clock.add("decode", t0)
        if turn == cell.T - 1:
            continue
        results = [result_ids(cell, agent, turn, vocab) for agent in range(cell.C)]
        q = quarantine
        if q is not None and q.turn == turn:
            results[q.agent] = q.ids
        fresh = engine.prefill_batch(sessions, results)
        run.prefill_tokens += sum(len(r) for r in results)
        if q is not None and q.turn == turn:  # the gate screens it: a tail eviction, exact
            verdict = getattr(
                getattr(q.gate(ToolResult("web_fetch", q.payload, "r")), "verdict", None),
                "kind",
                None,
            )
            if verdict is not VerdictKind.ALLOW:
                sessions[q.agent].truncate(sessions[q.agent].length - len(q.ids))
                fresh[q.agent] = logits[q.agent]
                evicted += len(q.ids)
        logits = fresh
        t0 = clock.add("incremental", t0)
    run.notes["rows_evicted"] = evicted
    run.notes["shared_rows_at_end"] = [s.shared for s in sessions]
    for s in sessions:
        s.release()
    return run


def run_a(engine: Engine, cell: FleetCell) -> ArmRun:
    """Arm A, live: every (agent, turn) re-prefills its whole context from a fresh cache."""
    vocab = engine.model.config.vocab_size
    run = ArmRun("A", [[] for _ in range(cell.C)])
    clock = _Clock(run)
    prefix = prefix_ids(cell, vocab)
    for agent in range(cell.C):
        context = list(prefix)
        for turn in range(cell.T):
            t0 = clock.start()
            cache = engine.new_cache(len(context) + cell.D)
            logits = engine.prefill(cache, context)
            run.prefill_tokens += len(context)
            t0 = clock.add("prefill", t0)
            for _ in range(cell.D):
                token = _argmax(logits)
                run.tokens[agent].append(token)
                context.append(token)
                logits = engine.decode(cache, token)
            clock.add("decode", t0)
            if turn < cell.T - 1:
                context.extend(result_ids(cell, agent, turn, vocab))
    return run


def prefill_curve(engine: Engine, length: int, seed: int = 7) -> list[tuple[int, float, float]]:
    """Cumulative prefill cost at every chunk boundary of one prefill of ``length`` tokens:
    [(tokens, wall seconds, CPU seconds)] from (0, 0, 0). Chunks are the engine's own."""
    from fak.engine.model import PREFILL_CHUNK

    ids = _lcg(seed, length, engine.model.config.vocab_size)
    cache = engine.new_cache(length)
    points = [(0, 0.0, 0.0)]
    wall = cpu = 0.0
    for a in range(0, length, PREFILL_CHUNK):
        t0, c0 = time.perf_counter(), time.process_time()
        engine.prefill(cache, ids[a : a + PREFILL_CHUNK])
        wall += time.perf_counter() - t0
        cpu += time.process_time() - c0
        points.append((min(length, a + PREFILL_CHUNK), wall, cpu))
    return points


def _interp(points: Sequence[tuple[int, float, float]], n: int, col: int) -> float:
    for p0, p1 in itertools.pairwise(points):
        if p0[0] <= n <= p1[0]:
            return p0[col] + (p1[col] - p0[col]) * (n - p0[0]) / max(1, p1[0] - p0[0])
    p0, p1 = points[-2], points[-1]  # past the end: extend the last segment
    return p1[col] + (p1[col] - p0[col]) * (n - p1[0]) / max(1, p1[0] - p0[0])


def anchored_a(
    cell: FleetCell, curve: Sequence[tuple[int, float, float]], b: ArmRun, *, cpu: bool = False
) -> dict[str, float]:
    """Arm A's seconds at full scale without running it: the prefill-cost curve summed over the
    exact per-turn contexts of every agent, scaled so the curve at P equals B's measured
    per-agent prefix prefill; A's decode is B's live decode (same tokens, same cache length).
    ``cpu`` uses process CPU time throughout instead of wall-clock."""
    col = 2 if cpu else 1
    seconds = b.cpu_seconds if cpu else b.seconds
    anchor = (seconds["prefix"] / cell.C) / _interp(curve, cell.P, col)
    per_agent = sum(_interp(curve, cell.P + k * (cell.D + cell.R), col) for k in range(cell.T))
    prefill = anchor * cell.C * per_agent
    return {"prefill": prefill, "decode": seconds["decode"], "anchor": anchor}
