"""Routing strategies over one group of upstream deployments (tier T3): the seam and the built-ins.

Above: the router (``fak.gateway.upstream.router``), which asks a ``RoutingStrategy`` to pick one
deployment of the group the client's ``model`` names, tries it, and on a retryable failure asks
again with the failed one removed. Below: nothing: a strategy is a pure choice over the
request's features (``RouteFeatures``) and each candidate's live stats (``Candidate``), plus an
``observe`` hook after each attempt (a no-op for the stateless ones; a cache-aware strategy
learns which worker holds which prefix there). A strategy never does I/O, never sleeps and never
sees a deployment in cooldown (the router filters those out first).

Built-ins: LiteLLM's ``simple-shuffle`` (weighted random), ``least-busy``,
``latency-based-routing``, ``usage-based-routing`` and ``cost-based-routing``, and the spec's
tier-router ``size-based`` and ``hybrid`` (its cost and latency tiers are LiteLLM's two).
Randomness is injected (``rng``) so tests are exact.
"""

from __future__ import annotations

import enum
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from fak.abi import TurnRequest

__all__ = [
    "STRATEGIES",
    "Candidate",
    "CostBased",
    "Deployment",
    "DeploymentStats",
    "Group",
    "Hybrid",
    "LatencyBased",
    "LeastBusy",
    "RouteFeatures",
    "RoutingStrategy",
    "SimpleShuffle",
    "SizeBased",
    "UpstreamKind",
    "UsageBased",
    "make_strategy",
    "prompt_bytes",
]


class UpstreamKind(enum.StrEnum):
    """What a deployment is; the values are the LiteLLM ``model`` prefixes fak reads."""

    OPENAI = "openai"  # OpenAI Chat Completions, or any OpenAI-compatible server (api_base)
    HOSTED_VLLM = "hosted_vllm"  # a vLLM server (OpenAI-compatible Chat Completions)
    ANTHROPIC = "anthropic"  # Anthropic Messages
    ENGINE = "fak"  # ``fak/engine``: the in-kernel engine, one more upstream


@dataclass(frozen=True, slots=True)
class Deployment:
    """One entry of ``model_list``: a place one group's requests can go.

    ``id`` is unique across the file (``model_info.id`` when given, else ``<group>/<n>``);
    ``model`` is the upstream's own model name (the prefix removed). Limits of 0 mean none.
    Costs are per token (LiteLLM's ``input_cost_per_token`` / ``output_cost_per_token``);
    ``max_input_tokens`` is the size strategy's capacity (0: unbounded).
    """

    id: str
    group: str
    kind: UpstreamKind
    model: str
    api_base: str = ""
    api_key: str | None = field(default=None, repr=False)
    rpm: int = 0
    tpm: int = 0
    timeout_s: float = 0.0
    weight: float = 1.0
    input_cost_per_token: float = 0.0
    output_cost_per_token: float = 0.0
    max_input_tokens: int = 0
    order: int = 0  # position in model_list (ties break by it)


@dataclass(frozen=True, slots=True)
class Group:
    """The deployments one client-visible ``model`` name routes over, and where it falls back."""

    name: str
    deployments: tuple[Deployment, ...]
    fallbacks: tuple[str, ...] = ()  # other group names, tried in order once this one is spent


@dataclass(frozen=True, slots=True)
class DeploymentStats:
    """A deployment's live state at the moment of a choice (a snapshot, never mutated)."""

    in_flight: int = 0
    latency_ewma_s: float | None = None  # None until the first success
    cooldown_until: float = 0.0  # monotonic seconds; past it the deployment is eligible again
    consecutive_failures: int = 0
    requests_last_minute: int = 0
    tokens_last_minute: int = 0


@dataclass(frozen=True, slots=True)
class Candidate:
    deployment: Deployment
    stats: DeploymentStats


def prompt_bytes(turn: TurnRequest) -> bytes:
    """The canonical turn's prompt as bytes, the same for every wire: one line per message,
    ``role\\x1fname\\x1fcontent`` joined by ``\\x1e``. Its prefixes are what a cache-aware
    strategy compares; its length is what the size strategy weighs."""
    return "\x1e".join(f"{m.role.value}\x1f{m.name}\x1f{m.content}" for m in turn.messages).encode(
        "utf-8", "surrogatepass"
    )


@dataclass(frozen=True, slots=True)
class RouteFeatures:
    """What a strategy may know about the request: the group asked for, the canonical turn
    (already screened), its prompt size and a token estimate (bytes / 4), and whether it
    streams. ``prefix()`` builds the prompt bytes (call it once; it is O(prompt))."""

    model: str
    turn: TurnRequest
    prompt_size: int
    stream: bool = False

    @property
    def est_tokens(self) -> int:
        return max(1, self.prompt_size // 4)

    def prefix(self) -> bytes:
        return prompt_bytes(self.turn)

    @staticmethod
    def of(turn: TurnRequest, model: str = "") -> RouteFeatures:
        size = sum(len(m.content) for m in turn.messages)
        return RouteFeatures(model or turn.model, turn, size, turn.stream)


class RoutingStrategy(Protocol):
    """Above: the router. Below: nothing (pure choice). ``choose`` gets at least one candidate,
    none in cooldown, and returns one of them; ``observe`` is told how each attempt ended."""

    @property
    def name(self) -> str: ...

    def choose(self, features: RouteFeatures, candidates: Sequence[Candidate]) -> Candidate: ...

    def observe(
        self, features: RouteFeatures, deployment: Deployment, ok: bool, latency_s: float
    ) -> None: ...


def _first_best(candidates: Sequence[Candidate], key: Callable[[Candidate], float]) -> Candidate:
    """The candidate with the lowest ``key``; ties go to the earliest in ``model_list``."""
    return min(candidates, key=lambda c: (key(c), c.deployment.order))


class _Stateless:
    name = ""

    def observe(
        self, features: RouteFeatures, deployment: Deployment, ok: bool, latency_s: float
    ) -> None:
        return None


class SimpleShuffle(_Stateless):
    """LiteLLM's default: a random deployment, weighted by ``weight`` (rpm/tpm when set)."""

    name = "simple-shuffle"

    def __init__(self, rng: random.Random | None = None) -> None:
        self._rng = rng or random.Random()

    def choose(self, features: RouteFeatures, candidates: Sequence[Candidate]) -> Candidate:
        weights = [max(c.deployment.weight, 0.0) for c in candidates]
        if sum(weights) <= 0:
            weights = [1.0] * len(candidates)
        return self._rng.choices(list(candidates), weights=weights, k=1)[0]


class LeastBusy(_Stateless):
    """The deployment with the fewest requests in flight."""

    name = "least-busy"

    def choose(self, features: RouteFeatures, candidates: Sequence[Candidate]) -> Candidate:
        return _first_best(candidates, lambda c: c.stats.in_flight)


class LatencyBased(_Stateless):
    """The lowest latency EWMA; a deployment never measured goes first (so it gets measured)."""

    name = "latency-based-routing"

    def choose(self, features: RouteFeatures, candidates: Sequence[Candidate]) -> Candidate:
        return _first_best(
            candidates,
            lambda c: -1.0 if c.stats.latency_ewma_s is None else c.stats.latency_ewma_s,
        )


class UsageBased(_Stateless):
    """The lowest share of its rpm/tpm used in the last minute (raw counts when unlimited)."""

    name = "usage-based-routing"

    def choose(self, features: RouteFeatures, candidates: Sequence[Candidate]) -> Candidate:
        def share(c: Candidate) -> float:
            d, s = c.deployment, c.stats
            parts = [
                s.requests_last_minute / d.rpm if d.rpm else 0.0,
                s.tokens_last_minute / d.tpm if d.tpm else 0.0,
            ]
            if not d.rpm and not d.tpm:
                return float(s.requests_last_minute)
            return max(parts)

        return _first_best(candidates, share)


def _unit_cost(d: Deployment) -> float:
    return d.input_cost_per_token + d.output_cost_per_token


class CostBased(_Stateless):
    """The cheapest deployment per token (input + output price)."""

    name = "cost-based-routing"

    def choose(self, features: RouteFeatures, candidates: Sequence[Candidate]) -> Candidate:
        return _first_best(candidates, lambda c: _unit_cost(c.deployment))


def _fits(features: RouteFeatures, candidates: Sequence[Candidate]) -> Sequence[Candidate]:
    """The candidates whose ``max_input_tokens`` holds the prompt (all of them when none do:
    the largest is then the best bet, and the upstream's own 400 says the rest)."""
    need = features.est_tokens
    fit = [
        c
        for c in candidates
        if not c.deployment.max_input_tokens or c.deployment.max_input_tokens >= need
    ]
    if fit:
        return fit
    return [max(candidates, key=lambda c: c.deployment.max_input_tokens)]


class SizeBased(_Stateless):
    """The spec's size tier: the smallest deployment (by ``max_input_tokens``) that holds the
    prompt, so short turns go to the small model and long ones to the large."""

    name = "size-based"

    def choose(self, features: RouteFeatures, candidates: Sequence[Candidate]) -> Candidate:
        return _first_best(
            _fits(features, candidates),
            lambda c: float(c.deployment.max_input_tokens or 1 << 62),
        )


class Hybrid(_Stateless):
    """The spec's hybrid tier: among the deployments that hold the prompt, the lowest score of
    normalised cost, latency and load, weighted ``cost``/``latency``/``load`` (0.4/0.4/0.2)."""

    name = "hybrid"

    def __init__(self, cost: float = 0.4, latency: float = 0.4, load: float = 0.2) -> None:
        self._w = (cost, latency, load)

    def choose(self, features: RouteFeatures, candidates: Sequence[Candidate]) -> Candidate:
        fit = _fits(features, candidates)
        costs = [_unit_cost(c.deployment) for c in fit]
        lats = [c.stats.latency_ewma_s or 0.0 for c in fit]
        loads = [float(c.stats.in_flight) for c in fit]

        def norm(values: list[float], i: int) -> float:
            top = max(values)
            return values[i] / top if top > 0 else 0.0

        wc, wl, wb = self._w
        scores = {
            id(c): wc * norm(costs, i) + wl * norm(lats, i) + wb * norm(loads, i)
            for i, c in enumerate(fit)
        }
        return _first_best(fit, lambda c: scores[id(c)])


STRATEGIES: Mapping[str, Callable[[random.Random | None], RoutingStrategy]] = {
    "simple-shuffle": lambda rng: SimpleShuffle(rng),
    "least-busy": lambda rng: LeastBusy(),
    "latency-based-routing": lambda rng: LatencyBased(),
    "usage-based-routing": lambda rng: UsageBased(),
    "usage-based-routing-v2": lambda rng: UsageBased(),
    "cost-based-routing": lambda rng: CostBased(),
    "size-based": lambda rng: SizeBased(),
    "hybrid": lambda rng: Hybrid(),
}
"""``router_settings.routing_strategy`` names → factories (LiteLLM's names, then the spec's)."""


def make_strategy(name: str, rng: random.Random | None = None) -> RoutingStrategy:
    """The strategy named ``name``; ``KeyError`` names the ones there are."""
    try:
        return STRATEGIES[name](rng)
    except KeyError:
        msg = f"unknown routing_strategy {name!r}; use one of {', '.join(STRATEGIES)}"
        raise KeyError(msg) from None
