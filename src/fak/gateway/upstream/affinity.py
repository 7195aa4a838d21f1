"""Cache-aware routing over engine workers: the ``prefix-affinity`` strategy (tier T3).

A ``RoutingStrategy`` (``fak.gateway.upstream.strategies``) that sends a turn to the worker whose
KV cache holds the longest prefix of it. What each worker holds is learnt from the residency
events it reports (``fak.abi.ResidencyEvent``, prefixes named by ``fak.abi.prefix_chain``), and
corrected by each turn's verdict: a REVALIDATE or FAULT drops the claimed prefix from the index.
When the best prefix is shorter than ``min_prefix_tokens``, or its worker is busier than the
least busy by more than ``max_imbalance`` requests, the turn goes to the least busy worker
instead, and among equally busy ones to the one holding the fewest prefixes (SGLang's
cache-aware policy). It does no I/O and never tokenizes; it only chooses.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from fak.abi import (
    CacheVerdict,
    LookupKind,
    ResidencyEvent,
    ResidencyKind,
    prefix_chain,
)
from fak.gateway.upstream.strategies import Candidate, Deployment, RouteFeatures

__all__ = ["PrefixAffinity", "RoundRobin", "Route"]


@dataclass(frozen=True, slots=True)
class Route:
    """A choice: the candidate, the prefix digest it is expected to hold ("" for none) and the
    tokens that prefix covers; ``reason`` is ``prefix`` or ``load``."""

    candidate: Candidate
    claim: str
    tokens: int
    reason: str


class PrefixAffinity:
    """Longest held prefix first, least busy when the prefix is short or the worker is loaded."""

    name = "prefix-affinity"

    def __init__(self, *, min_prefix_tokens: int = 64, max_imbalance: int = 2) -> None:
        if min_prefix_tokens < 0 or max_imbalance < 0:
            raise ValueError("min_prefix_tokens and max_imbalance are counts: 0 or more")
        self.min_prefix_tokens = min_prefix_tokens
        self.max_imbalance = max_imbalance
        self._held: dict[str, dict[str, int]] = {}  # deployment id -> digest -> tokens

    # ---- what the workers say -----------------------------------------------------------------
    def apply(self, deployment_id: str, events: Iterable[ResidencyEvent]) -> None:
        """Fold a worker's residency events into the index, in order."""
        held = self._held.setdefault(deployment_id, {})
        for event in events:
            match event.kind:
                case ResidencyKind.HELD:
                    for r in event.prefixes:
                        held[r.digest] = r.tokens
                case ResidencyKind.EVICTED:
                    for r in event.prefixes:
                        held.pop(r.digest, None)

    def verdict(self, deployment_id: str, verdict: CacheVerdict) -> None:
        """A stale claim (REVALIDATE) or a failed restore (FAULT) leaves the index."""
        if verdict.claimed and verdict.kind in (LookupKind.REVALIDATE, LookupKind.FAULT):
            self._held.get(deployment_id, {}).pop(verdict.claimed, None)

    def forget(self, deployment_id: str) -> None:
        """A worker that died holds nothing."""
        self._held.pop(deployment_id, None)

    def held_tokens(self, deployment_id: str) -> int:
        """The deepest prefix a worker is known to hold (a gauge for metrics)."""
        return max(self._held.get(deployment_id, {}).values(), default=0)

    # ---- choosing ----------------------------------------------------------------------------
    def _longest(self, chain: Sequence[str], deployment: Deployment) -> tuple[str, int]:
        held = self._held.get(deployment.id)
        if held:
            for digest in reversed(chain):
                tokens = held.get(digest)
                if tokens is not None:
                    return digest, tokens
        return "", 0

    def route(self, features: RouteFeatures, candidates: Sequence[Candidate]) -> Route:
        """The worker for this turn and the prefix it should hold (``candidates`` non-empty)."""
        chain = prefix_chain(features.turn)
        best: tuple[int, int, int] | None = None  # (-tokens, in_flight, order)
        claim, tokens, chosen = "", 0, candidates[0]
        for c in candidates:
            digest, n = self._longest(chain, c.deployment)
            key = (-n, c.stats.in_flight, c.deployment.order)
            if best is None or key < best:
                best, claim, tokens, chosen = key, digest, n, c
        idle = min(  # least busy; among equals the one holding least, so caches spread
            candidates,
            key=lambda c: (
                c.stats.in_flight,
                len(self._held.get(c.deployment.id, ())),
                c.deployment.order,
            ),
        )
        loaded = chosen.stats.in_flight - idle.stats.in_flight > self.max_imbalance
        if tokens >= max(1, self.min_prefix_tokens) and not loaded:
            return Route(chosen, claim, tokens, "prefix")
        digest, n = self._longest(chain, idle.deployment)
        return Route(idle, digest, n, "load")

    def choose(self, features: RouteFeatures, candidates: Sequence[Candidate]) -> Candidate:
        return self.route(features, candidates).candidate

    def observe(
        self, features: RouteFeatures, deployment: Deployment, ok: bool, latency_s: float
    ) -> None:
        """Nothing: residency and verdicts arrive through ``apply`` and ``verdict``."""


class RoundRobin:
    """Each turn to the next worker in order, whatever it holds (the benchmark's baseline)."""

    name = "round-robin"

    def __init__(self) -> None:
        self._next = 0

    def route(self, features: RouteFeatures, candidates: Sequence[Candidate]) -> Route:
        ordered = sorted(candidates, key=lambda c: c.deployment.order)
        pick = ordered[self._next % len(ordered)]
        self._next += 1
        return Route(pick, "", 0, "order")

    def choose(self, features: RouteFeatures, candidates: Sequence[Candidate]) -> Candidate:
        return self.route(features, candidates).candidate

    def observe(
        self, features: RouteFeatures, deployment: Deployment, ok: bool, latency_s: float
    ) -> None:
        """Nothing to learn."""

    def apply(self, deployment_id: str, events: Iterable[ResidencyEvent]) -> None:
        """Nothing to learn."""

    def verdict(self, deployment_id: str, verdict: CacheVerdict) -> None:
        """Nothing to learn."""

    def forget(self, deployment_id: str) -> None:
        """Nothing to forget."""
