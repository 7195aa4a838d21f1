"""Per-step thread counts: the governor follows measured step times, and the bits never change."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest

pytestmark = pytest.mark.engine
pytest.importorskip("torch", reason="engine extra not installed: pip install 'fak[engine]'")


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _run(gov: Any, clock: _Clock, rows: int, cost: dict[int, float]) -> int:
    with gov.step(rows) as threads:
        clock.now += cost[threads]
    return int(threads)


def test_governor_moves_to_one_thread_when_that_is_faster_and_back() -> None:
    from fak.engine.threads import ThreadGovernor

    clock = _Clock()
    gov = ThreadGovernor(2, explore_every=4, clock=clock)
    loaded = {2: 0.100, 1: 0.040}  # a core is busy: two threads wait for each other
    used = [_run(gov, clock, 1, loaded) for _ in range(40)]
    assert used[:4] == [2, 2, 2, 1]  # N threads first; one thread at the first exploration
    assert used[-8:].count(1) >= 6  # then mostly one thread, with an occasional retry of two
    assert gov.preferred(1) == 1
    quiet = {2: 0.020, 1: 0.040}  # the other program went away
    used = [_run(gov, clock, 1, quiet) for _ in range(60)]
    assert used[-8:].count(2) >= 6 and gov.preferred(1) == 2


def test_governor_keeps_step_sizes_apart_and_can_be_fixed() -> None:
    from fak.engine.threads import ThreadGovernor

    clock = _Clock()
    gov = ThreadGovernor(2, explore_every=4, clock=clock)
    for _ in range(20):
        _run(gov, clock, 1, {2: 0.1, 1: 0.05})  # decode: one thread wins
        _run(gov, clock, 512, {2: 0.5, 1: 0.9})  # prefill: two threads win
    assert gov.preferred(1) == 1 and gov.preferred(512) == 2
    fixed = ThreadGovernor(2, adaptive=False, clock=clock)
    assert {_run(fixed, clock, 1, {2: 0.1, 1: 0.05}) for _ in range(10)} == {2}
    assert ThreadGovernor(1).choose(1) == 1


def test_governor_explores_less_while_the_other_count_keeps_losing() -> None:
    """Every exploration runs a step at the slower count: while it keeps losing clearly the
    governor tries it more and more rarely, and still notices within the longest wait when
    the machine changes."""
    from fak.engine.threads import ThreadGovernor

    clock = _Clock()
    gov = ThreadGovernor(2, explore_every=4, clock=clock)
    quiet = {2: 0.010, 1: 0.018}  # two threads win clearly
    used = [_run(gov, clock, 1, quiet) for _ in range(400)]
    assert used.count(1) == gov.explorations
    assert 4 <= gov.explorations <= 400 // 32 + 4  # was one step in four at a fixed interval
    loaded = {2: 0.030, 1: 0.018}  # a core got busy: two threads now lose
    used = [_run(gov, clock, 1, loaded) for _ in range(64)]
    assert used[-16:].count(1) >= 14  # the favourite's own average moved: no wait needed
    used = [_run(gov, clock, 1, quiet) for _ in range(64)]  # and back
    assert used[-16:].count(2) >= 14  # found at the next exploration, within 32 steps


def test_governor_keeps_contexts_apart() -> None:
    """A prefill chunk deep in a long context costs several times one near its start: a
    one-thread sample from a short context must not speak for long ones."""
    from fak.engine.threads import ThreadGovernor

    clock = _Clock()
    gov = ThreadGovernor(2, explore_every=4, clock=clock)

    def chunk(keys: int, cost: dict[int, float]) -> int:
        with gov.step(512, keys) as threads:
            clock.now += cost[threads]
        return int(threads)

    for _ in range(12):
        chunk(512, {2: 0.30, 1: 0.25})  # short context: one thread is a little faster
        chunk(6000, {2: 1.5, 1: 2.8})  # long context: two threads win by far
    assert gov.preferred(512, 512) == 1 and gov.preferred(512, 6000) == 2
    assert [chunk(6000, {2: 1.5, 1: 2.8}) for _ in range(3)] == [2, 2, 2]


@pytest.mark.parametrize(
    ("imports", "preset", "sleeping"),
    [
        ("import fak.engine, torch", None, True),  # fak.engine sets PASSIVE before torch loads
        ("import torch, fak.engine", None, False),  # too late: libgomp read it at torch's load
        ("import torch, fak.engine", "passive", True),  # the user's own setting counts
        ("import fak.engine", "active", False),
    ],
)
def test_engine_knows_whether_idle_openmp_threads_sleep(
    imports: str, preset: str | None, sleeping: bool
) -> None:
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if preset is not None:
        env["OMP_WAIT_POLICY"] = preset
    code = f"{imports}; import fak.config as c; print(c.engine_workers_sleep())"
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(sleeping)


def test_probe_proves_thread_invariance(engine_any_mode: Any) -> None:
    report = engine_any_mode.model.numerics
    assert report.thread_invariant and report.thread_failures == ()
    assert engine_any_mode.model.threads.adaptive == (engine_any_mode.threads > 1)


class _RandomThreads:
    """A governor stand-in that picks the thread count of every step at random."""

    def __init__(self, max_threads: int, seed: int) -> None:
        self.max_threads = max_threads
        self.rng = random.Random(seed)
        self.used: set[int] = set()

    def step(self, rows: int, keys: int = 0) -> Any:
        import contextlib

        import torch

        @contextlib.contextmanager
        def run() -> Iterator[int]:
            n = self.rng.choice([1, self.max_threads])
            self.used.add(n)
            torch.set_num_threads(n)
            try:
                yield n
            finally:
                torch.set_num_threads(self.max_threads)

        return run()


@pytest.mark.parametrize("seed", [3, 17])
def test_switching_threads_between_steps_changes_no_bit(engine_any_mode: Any, seed: int) -> None:
    """Prefix reuse with every chunk and decode step at a random thread count equals a one-shot
    prefill at full threads (the same witness as w1/w2, with the thread count fuzzed)."""
    import torch

    engine = engine_any_mode
    if engine.threads < 2:
        pytest.skip("needs at least two threads to switch between")
    rng = random.Random(seed)
    ids = [rng.randrange(17, engine.model.config.vocab_size) for _ in range(700)]
    ref_cache = engine.new_cache()
    ref = engine.prefill(ref_cache, ids, all_logits=True)
    real = engine.model.threads
    engine.model.threads = _RandomThreads(engine.threads, seed)
    try:
        cache = engine.new_cache()
        at, got = 0, []
        while at < len(ids):
            step = 1 if rng.random() < 0.3 else rng.randint(1, 300)
            got.append(engine.prefill(cache, ids[at : at + step], all_logits=True))
            at += step
        used = engine.model.threads.used
    finally:
        engine.model.threads = real
    assert used == {1, engine.threads}
    assert torch.equal(torch.cat(got)[: len(ids)], ref)


def test_splitting_attention_rows_over_threads_changes_no_bit(engine_any_mode: Any) -> None:
    """A long prefill with big attention tiles split by query rows over the threads (each on
    one torch thread) equals the same prefill with every tile on torch's own threads."""
    import torch

    engine = engine_any_mode
    model = engine.model
    if engine.threads < 2:
        pytest.skip("needs at least two threads to split over")
    if getattr(model, "q4", None) is not None:  # fast mode's own kernels attend row by row
        pytest.skip("the q4 kernels do not use the torch attention path")
    rng = random.Random(5)
    ids = [rng.randrange(17, model.config.vocab_size) for _ in range(1100)]
    assert model.split_rows  # the load-time check saw the same bits on the splitter's threads
    model.threads.adaptive, adaptive = False, model.threads.adaptive
    try:
        model.split_rows = False
        whole = engine.prefill(engine.new_cache(), ids, all_logits=True)
        model.split_rows = True
        before = model.row_splitter.splits
        split = engine.prefill(engine.new_cache(), ids, all_logits=True)
        ran = model.row_splitter.splits - before
    finally:
        model.threads.adaptive, model.split_rows = adaptive, True
    # three prefill chunks (512 + 512 + 76 tokens), one hand-off per layer each (all of a
    # chunk's big tiles go over in one)
    assert ran == 3 * model.config.n_layers
    assert torch.equal(split, whole)
