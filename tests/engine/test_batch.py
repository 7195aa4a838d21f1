"""Witness 6: batched decoding is exact. A session's logits at every step are ``torch.equal`` to
the same session decoded alone, whatever shares its batch and whenever others join or leave.

Sessions are forks of one prefix cache (whole key blocks shared, the divergence block copied);
the solo reference is a plain cache prefilled from scratch, so the witness also covers the
fork's shared blocks. Compositions and join/leave schedules are drawn by Hypothesis (few
examples: every one runs the real 135M model).
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.engine


@pytest.fixture
def engine(engine_any_mode: Any) -> Any:
    """Every test here runs in both engine modes."""
    return engine_any_mode


def _ids(engine: Any, rng: random.Random, n: int) -> list[int]:
    return [rng.randrange(17, engine.model.config.vocab_size) for _ in range(n)]


def _delta(a: Any, b: Any) -> float:
    return float((a - b).abs().max().item())


def _run_schedule(
    engine: Any,
    prefix: list[int],
    privates: list[list[int]],
    joins: list[int],
    steps: list[int],
) -> int:
    """Run sessions that join at ``joins[i]`` and decode ``steps[i]`` tokens, batched; compare
    every logit vector with a solo run of the same session. Returns the comparisons made."""
    import torch

    base = engine.new_cache()
    engine.prefill(base, prefix)
    n = len(privates)
    forks: list[Any] = [None] * n
    logits: list[Any] = [None] * n
    seen: list[list[Any]] = [[] for _ in range(n)]  # every logit vector a session produced
    fed: list[list[int]] = [[] for _ in range(n)]  # the tokens fed back to it
    for step in range(max(j + s for j, s in zip(joins, steps, strict=True)) + 1):
        joining = [i for i in range(n) if joins[i] == step]
        decoding = [i for i in range(n) if joins[i] < step <= joins[i] + steps[i]]
        items = []
        for i in joining:  # a joining session prefills its private tokens in the same pass
            forks[i] = engine.fork(base)
            items.append((forks[i], torch.tensor(privates[i])))
        for i in decoding:
            token = int(torch.argmax(logits[i]))
            fed[i].append(token)
            items.append((forks[i], torch.tensor([token])))
        if not items:
            continue
        with torch.inference_mode():
            outs = engine.model.forward_batch(items)
        for i, out in zip(joining + decoding, outs, strict=True):
            logits[i] = out
            seen[i].append(out)
        for i in decoding:
            if joins[i] + steps[i] == step:  # leaves: its fork goes, the others go on
                forks[i].release()
    compared = 0
    for i in range(n):
        solo = engine.new_cache()
        ref = engine.prefill(solo, prefix + privates[i])
        refs = [ref] + [engine.decode(solo, t) for t in fed[i]]
        assert len(refs) == len(seen[i])
        for k, (got, want) in enumerate(zip(seen[i], refs, strict=True)):
            assert torch.equal(got, want), (i, k, _delta(got, want))
            compared += 1
    for fork in forks:
        fork.release()  # releasing twice is harmless; every fork's lease on the parent is gone
    assert base.forks == 0
    return compared


@settings(
    max_examples=3,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    data=st.data(),
    prefix_len=st.integers(1, 640),
    n=st.integers(1, 4),
)
def test_w6_batched_decode_equals_solo_for_any_composition(
    engine: Any, data: Any, prefix_len: int, n: int
) -> None:
    rng = random.Random(prefix_len * 31 + n)
    prefix = _ids(engine, rng, prefix_len)
    privates = [_ids(engine, rng, data.draw(st.integers(1, 40))) for _ in range(n)]
    joins = [data.draw(st.integers(0, 3)) for _ in range(n)]
    steps = [data.draw(st.integers(0, 3)) for _ in range(n)]
    assert _run_schedule(engine, prefix, privates, joins, steps) == n + sum(steps)


def test_w6_five_sessions_over_a_two_block_prefix(engine: Any) -> None:
    """The fleet shape: five sessions of different lengths forked from a prefix that spans two
    whole shared key blocks, staggered joins and leaves."""
    rng = random.Random(6)
    prefix = _ids(engine, rng, 1030)
    privates = [_ids(engine, rng, k) for k in (1, 9, 64, 130, 17)]
    assert _run_schedule(engine, prefix, privates, [0, 0, 1, 2, 2], [4, 2, 3, 1, 3]) == 18


def test_fork_shares_whole_blocks_and_copies_only_the_divergence_block(engine: Any) -> None:
    import torch

    from fak.engine.kvcache import ATT_BLOCK

    rng = random.Random(7)
    prefix = _ids(engine, rng, ATT_BLOCK * 2 + 37)
    base = engine.new_cache()
    engine.prefill(base, prefix)
    fork = engine.fork(base)
    assert fork.length == len(prefix) and fork.shared == 2 * ATT_BLOCK and base.forks == 1
    assert fork.nbytes() == fork.row_bytes() * 37  # only the divergence block's rows are owned
    k, _ = fork.key_block(0, 0, ATT_BLOCK)
    assert k.data_ptr() == base.k[0, :, 0:ATT_BLOCK].data_ptr()  # read in place, not copied
    assert fork.token_ids() == prefix
    twin = fork.clone()
    assert twin.shared == fork.shared and base.forks == 2
    with pytest.raises(RuntimeError, match="shared by forks"):
        base.truncate(10)  # a shared parent cannot change under its forks
    tail = _ids(engine, rng, 5)
    got = engine.prefill(fork, tail)
    assert torch.equal(got, engine.prefill(twin, tail))
    fork.unshare()
    assert fork.shared == 0 and fork.base is None and base.forks == 1
    twin.release()
    assert base.forks == 0
    base.truncate(10)  # no forks left: the parent is free again


def test_a_fork_of_a_fork_reads_each_block_from_the_cache_holding_it(engine: Any) -> None:
    """A session's next turn forks the previous turn's fork: block 0 is read from the shared
    root, block 1 from the first fork's own rows, and the logits equal a fresh prefill."""
    import torch

    from fak.engine.kvcache import ATT_BLOCK

    rng = random.Random(9)
    prefix, turn1, turn2 = _ids(engine, rng, 600), _ids(engine, rng, 600), _ids(engine, rng, 9)
    root = engine.new_cache()
    engine.prefill(root, prefix)
    first = engine.fork(root, extra=len(turn1))
    engine.prefill(first, turn1)
    assert first.shared == ATT_BLOCK
    second = first.fork(extra=len(turn2))
    assert second.shared == 2 * ATT_BLOCK and second.base is first and first.forks == 1
    assert second.nbytes() == second.row_bytes() * (len(prefix) + len(turn1) - 2 * ATT_BLOCK)
    k0, _ = second.key_block(3, 0, ATT_BLOCK)
    _, v1 = second.key_block(3, ATT_BLOCK, 2 * ATT_BLOCK)
    assert k0.data_ptr() == root.k[3, :, :ATT_BLOCK].data_ptr()
    assert v1.data_ptr() == first.v[3, :, :ATT_BLOCK].data_ptr()  # first's own rows from 512
    assert second.token_ids() == prefix + turn1
    got = engine.prefill(second, turn2)
    fresh = engine.prefill(engine.new_cache(), prefix + turn1 + turn2)
    assert torch.equal(got, fresh), _delta(got, fresh)
    for change in (lambda: first.truncate(700), first.unshare):
        with pytest.raises(RuntimeError, match="shared by forks"):
            change()  # the middle of the chain cannot change under the fork reading it
    second.release()
    assert first.forks == 0 and root.forks == 1
    first.unshare()
    assert root.forks == 0 and first.token_ids() == prefix + turn1


def test_eviction_inside_a_forks_private_rows_equals_never_saw(engine: Any) -> None:
    """Quarantine mid-run: a fork evicts one of its own results exactly, its shared blocks stay
    shared, and the result equals a context that never held the span."""
    import torch

    from fak.engine.kvcache import ATT_BLOCK

    rng = random.Random(8)
    prefix = _ids(engine, rng, ATT_BLOCK + 20)
    a, p, b = _ids(engine, rng, 11), _ids(engine, rng, 23), _ids(engine, rng, 7)
    base = engine.new_cache()
    engine.prefill(base, prefix)
    fork = engine.fork(base)
    engine.prefill(fork, a + p + b)
    result = engine.evict_exact(fork, len(prefix) + len(a), len(p))
    assert result.removed == len(p) and result.recomputed == len(b)
    assert fork.shared == ATT_BLOCK and base.forks == 1
    never = engine.prefill(engine.new_cache(), prefix + a + b)
    assert torch.equal(result.logits, never), _delta(result.logits, never)


def test_prefill_batch_equals_solo_prefill(engine: Any) -> None:
    import torch

    rng = random.Random(9)
    prompts = [_ids(engine, rng, k) for k in (3, 600, 45)]
    caches = [engine.new_cache() for _ in prompts]
    got = engine.prefill_batch(caches, prompts)
    for cache, ids, logits in zip(caches, prompts, got, strict=True):
        assert cache.token_ids() == ids
        assert torch.equal(logits, engine.prefill(engine.new_cache(), ids))
