"""Cache, radix tree and numerics mechanics (no exactness claims here: see test_witnesses)."""

from __future__ import annotations

import random
from typing import Any

import pytest

pytestmark = pytest.mark.engine


def _filled(engine: Any, n: int, seed: int = 0) -> Any:
    rng = random.Random(seed)
    cache = engine.new_cache()
    engine.prefill(cache, [rng.randrange(17, 49152) for _ in range(n)])
    return cache


def test_probe_proves_exact_mode(engine: Any) -> None:
    report = engine.model.numerics
    assert report is not None and report.ok and report.failures == ()
    assert engine.exact and report.min_rows in (1, 2)


def test_evict_rerotates_survivors_from_pre_rope_keys(engine: Any) -> None:
    import torch

    from fak.engine.rotary import rotate

    cache = _filled(engine, 40)
    raw_tail = cache.k_raw[:, :, 25:40].clone()
    tokens = cache.token_ids()
    assert cache.evict(10, 15) == 15
    assert cache.length == 25
    assert cache.token_ids() == tokens[:10] + tokens[25:]
    assert cache.positions[:25].tolist() == list(range(25))
    new_pos = torch.arange(10, 25)
    direct = rotate(raw_tail.transpose(1, 2), cache.rope.cos[new_pos], cache.rope.sin[new_pos])
    assert torch.equal(cache.k[:, :, 10:25], direct.transpose(1, 2))
    assert torch.equal(cache.k_raw[:, :, 10:25], raw_tail)


def test_evict_out_of_range_is_a_no_op(engine: Any) -> None:
    cache = _filled(engine, 8)
    assert cache.evict(8, 3) == 0 and cache.evict(-1, 2) == 0 and cache.evict(2, 0) == 0
    assert cache.evict(6, 100) == 2 and cache.length == 6


def test_clone_is_deep_and_slice_keeps_positions(engine: Any) -> None:
    import torch

    cache = _filled(engine, 20)
    twin = cache.clone()
    engine.prefill(twin, [5, 6, 7])
    assert cache.length == 20 and twin.length == 23
    assert torch.equal(cache.k[:, :, :20], twin.k[:, :, :20])
    part = cache.slice(5, 12)
    assert (part.start, part.length, part.end) == (5, 7, 12)
    assert part.positions[:7].tolist() == list(range(5, 12))
    joined = type(cache).concat([cache.slice(0, 5), part, cache.slice(12, 20)])
    assert torch.equal(joined.v[:, :, :20], cache.v[:, :, :20])
    with pytest.raises(ValueError, match="contiguous"):
        type(cache).concat([cache.slice(0, 5), cache.slice(6, 9)])
    with pytest.raises(IndexError):
        cache.slice(3, 30)


def test_radix_lru_respects_leases_and_budget(engine: Any) -> None:
    from fak.engine import RadixTree

    tree = RadixTree(budget_tokens=1000)
    rng = random.Random(1)
    base = [rng.randrange(17, 49152) for _ in range(6)]
    leaves = []
    for i in range(3):
        cache = engine.new_cache()
        engine.prefill(cache, [*base, 100 + i, 200 + i, 300 + i])
        leaves.append(tree.insert(cache))
    assert tree.tokens == 6 + 3 * 3 and tree.nodes == 4
    tree.lease(leaves[0])
    tree.match([*base, 101, 201, 301])  # touch leaf 1: leaf 2 is now the least recently used
    assert tree.evict_to_budget(12) == 3 and leaves[2].parent is None and leaves[1].parent
    assert tree.evict_to_budget(9) == 3  # then leaf 1; the leased leaf 0 stays
    assert tree.tokens == 9 and leaves[0].parent is not None
    assert tree.evict_to_budget(0) == 0  # everything left is leased or an ancestor of a lease
    tree.release(leaves[0])
    assert tree.evict_to_budget(0) == 9 and tree.tokens == 0 and tree.nodes == 0


def test_radix_policy_eviction_ignores_leases(engine: Any) -> None:
    from fak.engine import RadixTree

    tree = RadixTree()
    cache = _filled(engine, 12, seed=4)
    ids = cache.token_ids()
    leaf = tree.insert(cache)
    tree.lease(leaf)
    other = engine.new_cache()
    engine.prefill(other, [*ids[:5], 7, 8])
    tree.insert(other)
    assert tree.nodes == 3  # split at 5: shared upper node + two leaves
    assert tree.evict_after(ids[:5], ids[5]) == 7  # the poisoned branch, leased or not
    node, matched = tree.match(ids)
    assert matched == 5 and tree.tokens == 7
    with pytest.raises(ValueError):
        tree.evict_subtree(tree.root)
    assert tree.evict_subtree(node) == 7 and tree.tokens == 0


def test_probe_refuses_a_batch_dependent_kernel(engine: Any) -> None:
    import torch

    from fak.engine.numerics import probe

    class BatchDependent:  # a stand-in linear whose rows change with the batch size
        in_features, onednn = 8, True

        def __call__(self, x: torch.Tensor) -> torch.Tensor:
            return x * (1.0 + 1e-3 * x.shape[0])

    report = probe([BatchDependent()])  # type: ignore[list-item]
    assert not report.ok and "linear rows" in report.failures
