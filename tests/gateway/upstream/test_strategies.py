"""Each routing strategy's choice, exactly, over crafted candidates and live stats."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from fak.abi import Message, Role, TurnRequest
from fak.gateway.upstream.strategies import (
    Candidate,
    Deployment,
    DeploymentStats,
    RouteFeatures,
    UpstreamKind,
    make_strategy,
    prompt_bytes,
)

pytestmark = pytest.mark.gateway


def _dep(i: int, **kw: object) -> Deployment:
    return Deployment(id=f"d{i}", group="g", kind=UpstreamKind.OPENAI, model="m", order=i, **kw)  # type: ignore[arg-type]


def _features(prompt: str = "hi") -> RouteFeatures:
    return RouteFeatures.of(TurnRequest("g", (Message(Role.USER, prompt),)))


def _pick(name: str, cands: list[Candidate], prompt: str = "hi") -> str:
    return make_strategy(name).choose(_features(prompt), cands).deployment.id


def test_least_busy_takes_the_fewest_in_flight_ties_to_the_first() -> None:
    cands = [
        Candidate(_dep(0), DeploymentStats(in_flight=3)),
        Candidate(_dep(1), DeploymentStats(in_flight=1)),
        Candidate(_dep(2), DeploymentStats(in_flight=1)),
    ]
    assert _pick("least-busy", cands) == "d1"


def test_latency_based_measures_the_unmeasured_first_then_takes_the_fastest() -> None:
    cands = [
        Candidate(_dep(0), DeploymentStats(latency_ewma_s=0.2)),
        Candidate(_dep(1), DeploymentStats(latency_ewma_s=0.05)),
    ]
    assert _pick("latency-based-routing", cands) == "d1"
    cands.append(Candidate(_dep(2), DeploymentStats()))
    assert _pick("latency-based-routing", cands) == "d2"


def test_usage_based_takes_the_lowest_share_of_its_limits() -> None:
    cands = [
        Candidate(_dep(0, rpm=10), DeploymentStats(requests_last_minute=5)),  # 0.5
        Candidate(_dep(1, rpm=100), DeploymentStats(requests_last_minute=20)),  # 0.2
        Candidate(_dep(2, tpm=1000), DeploymentStats(tokens_last_minute=900)),  # 0.9
    ]
    assert _pick("usage-based-routing", cands) == "d1"


def test_cost_based_takes_the_cheapest_per_token() -> None:
    cands = [
        Candidate(
            _dep(0, input_cost_per_token=3e-6, output_cost_per_token=15e-6), DeploymentStats()
        ),
        Candidate(
            _dep(1, input_cost_per_token=1e-7, output_cost_per_token=4e-7), DeploymentStats()
        ),
    ]
    assert _pick("cost-based-routing", cands) == "d1"


def test_size_based_takes_the_smallest_tier_that_holds_the_prompt() -> None:
    cands = [
        Candidate(_dep(0, max_input_tokens=128_000), DeploymentStats()),
        Candidate(_dep(1, max_input_tokens=100), DeploymentStats()),
        Candidate(_dep(2, max_input_tokens=1_000), DeploymentStats()),
    ]
    assert _pick("size-based", cands, "x" * 40) == "d1"  # ~10 tokens
    assert _pick("size-based", cands, "x" * 2_000) == "d2"  # ~500 tokens
    assert _pick("size-based", cands, "x" * 40_000) == "d0"  # ~10k tokens
    assert _pick("size-based", cands, "x" * 4_000_000) == "d0"  # none holds it: the largest


def test_hybrid_weighs_cost_latency_and_load_among_those_that_fit() -> None:
    cheap_slow = _dep(0, input_cost_per_token=1e-7, max_input_tokens=100_000)
    dear_fast = _dep(1, input_cost_per_token=1e-5, max_input_tokens=100_000)
    tiny = _dep(2, input_cost_per_token=0.0, max_input_tokens=10)
    cands = [
        Candidate(cheap_slow, DeploymentStats(latency_ewma_s=0.5)),
        Candidate(dear_fast, DeploymentStats(latency_ewma_s=0.1)),
        Candidate(tiny, DeploymentStats(latency_ewma_s=0.01)),
    ]
    # d2 is free and fastest but cannot hold ~250 tokens; d0: 0.4*0.01 + 0.4*1.0 = 0.404;
    # d1: 0.4*1.0 + 0.4*0.2 = 0.48
    assert _pick("hybrid", cands, "x" * 1_000) == "d0"
    cands[0] = Candidate(cheap_slow, DeploymentStats(latency_ewma_s=0.5, in_flight=10))
    assert _pick("hybrid", cands, "x" * 1_000) == "d1"  # load tips it: 0.604 > 0.48


def test_simple_shuffle_is_weighted_and_seeded() -> None:
    cands = [
        Candidate(_dep(0, weight=1.0), DeploymentStats()),
        Candidate(_dep(1, weight=3.0), DeploymentStats()),
    ]
    strategy = make_strategy("simple-shuffle", random.Random(7))
    picks = Counter(strategy.choose(_features(), cands).deployment.id for _ in range(4000))
    assert 2800 < picks["d1"] < 3200 and picks["d0"] + picks["d1"] == 4000


def test_an_unknown_strategy_names_the_ones_there_are() -> None:
    with pytest.raises(KeyError, match="use one of simple-shuffle, least-busy"):
        make_strategy("round-robin")


def test_the_prompt_bytes_are_the_same_for_the_same_turn_and_grow_by_prefix() -> None:
    a = TurnRequest("g", (Message(Role.SYSTEM, "sys"), Message(Role.USER, "hé")))
    b = TurnRequest("other", (*a.messages, Message(Role.ASSISTANT, "ok")))
    assert prompt_bytes(a) == "system\x1f\x1fsys\x1euser\x1f\x1fhé".encode()
    assert prompt_bytes(b).startswith(prompt_bytes(a))
