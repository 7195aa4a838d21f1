"""The thread count of each forward step, chosen from measured step times (tier T3).

On a machine the engine shares, N threads can be slower than one: every parallel region waits
for its slowest thread, and a thread that shares its core with another program waits for its
time slice. ``ThreadGovernor`` keeps a moving average of step time per (step size, thread
count), runs each step with the faster count, and now and then retries the other one, so the
engine follows the machine as its load comes and goes. It may only do this because every
kernel the forward pass uses gives the same bits on one thread as on N (``numerics.probe``
checks it at load; without that proof the governor holds N threads). No torch maths here: it
sets torch's thread count and times the step.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

import torch

__all__ = ["RowSplitter", "ThreadGovernor"]

T = TypeVar("T")

# Weight of the newest sample in a step-time average.
_ALPHA = 0.3
# An exploration that finds the other count this much slower than the favourite doubles the
# wait before the next one in that bucket, up to _MAX_BACKOFF times ``explore_every`` steps; one
# that finds it close or faster brings the wait back to ``explore_every``. Each exploration
# runs a step at the slower count: at one step in 16 and a count 1.6x slower that is ~4 % of
# decode time spent exploring, at one in 128 under 0.5 %.
_CLEAR_LOSS = 1.25
_MAX_BACKOFF = 8


def _bucket(rows: int, keys: int = 0) -> tuple[int, int]:
    """Steps of a similar size share statistics: one bucket per row count up to 8 (decode
    steps of 1..8 sessions), then one per power of two; and per power of two of the context
    the rows attend (``keys``, in 512-key blocks). Attention's share of a step grows with the
    context (at 6,000 tokens it is most of a prefill chunk), so a chunk late in a long prefill
    costs several times one at its start: compared in one bucket, a one-thread sample taken
    on a short context looked faster than the two-thread average and held whole prefills at
    one thread (one round of a quiet benchmark at ~191 tok/s instead of 312: inferred from
    its two rounds' median 251 and best 312)."""
    by_rows = rows if rows <= 8 else 8 + (rows // 8).bit_length()
    return by_rows, (max(0, keys) // 512).bit_length()


class ThreadGovernor:
    """Runs each step with ``max_threads`` or 1 thread, whichever has been faster lately.

    ``explore_every``: every this many steps of a size, the other count is tried once; its
    sample replaces that count's average (an old average is stale: the machine's load may have
    changed). While the other count keeps losing clearly, explorations grow rarer (doubling up
    to ``_MAX_BACKOFF`` times the interval); a close or winning sample resets the interval.
    ``adaptive=False`` always uses ``max_threads``.
    """

    def __init__(
        self,
        max_threads: int,
        *,
        adaptive: bool = True,
        explore_every: int = 16,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.max_threads = max(1, int(max_threads))
        self.adaptive = adaptive and self.max_threads > 1
        self.explore_every = max(2, explore_every)
        self._clock = clock
        self._avg: dict[tuple[tuple[int, int], int], float] = {}
        self._since: dict[tuple[int, int], int] = {}  # steps since the bucket's last exploration
        self._wait: dict[tuple[int, int], int] = {}  # steps between its explorations
        self.steps_by_threads: dict[int, int] = {}
        self.explorations = 0

    def choose(self, rows: int, keys: int = 0) -> int:
        """The thread count for the next step of ``rows`` rows attending ``keys`` keys."""
        if not self.adaptive:
            return self.max_threads
        bucket = _bucket(rows, keys)
        many = self._avg.get((bucket, self.max_threads))
        if many is None:
            return self.max_threads
        due = self._since.get(bucket, 0) >= self._wait.get(bucket, self.explore_every) - 1
        one = self._avg.get((bucket, 1))
        if one is None:  # one thread is tried at the first exploration step, not the second
            # step: a one-shot prefill's few steps of a size all run at the full count
            return 1 if due else self.max_threads
        best, other = (1, self.max_threads) if one < many else (self.max_threads, 1)
        return other if due else best

    def record(self, rows: int, threads: int, seconds: float, keys: int = 0) -> None:
        bucket = _bucket(rows, keys)
        mine = self._avg.get((bucket, threads))
        theirs = self._avg.get((bucket, self.max_threads if threads == 1 else 1))
        if theirs is not None and (mine is None or mine > theirs):  # ran the count not favoured
            self._avg[(bucket, threads)] = seconds
            wait = self._wait.get(bucket, self.explore_every)
            slower = seconds > theirs * _CLEAR_LOSS
            limit = self.explore_every * _MAX_BACKOFF
            self._wait[bucket] = min(2 * wait, limit) if slower else self.explore_every
            self._since[bucket] = 0
            self.explorations += 1
        else:
            self._avg[(bucket, threads)] = (
                seconds if mine is None else mine + _ALPHA * (seconds - mine)
            )
            self._since[bucket] = self._since.get(bucket, 0) + 1
        self.steps_by_threads[threads] = self.steps_by_threads.get(threads, 0) + 1

    @contextlib.contextmanager
    def step(self, rows: int, keys: int = 0) -> Iterator[int]:
        """Run one forward step of ``rows`` rows (attending up to ``keys`` keys) at the chosen
        thread count, and time it."""
        threads = self.choose(rows, keys)
        if torch.get_num_threads() != threads:
            torch.set_num_threads(threads)
        start = self._clock()
        yield threads
        self.record(rows, threads, self._clock() - start, keys)

    def preferred(self, rows: int, keys: int = 0) -> int:
        """The count the averages favour for steps of ``rows`` rows attending ``keys`` keys
        (``max_threads`` if unsure)."""
        bucket = _bucket(rows, keys)
        many = self._avg.get((bucket, self.max_threads))
        one = self._avg.get((bucket, 1))
        if not self.adaptive or many is None or one is None:
            return self.max_threads
        return 1 if one < many else self.max_threads


class RowSplitter:
    """Runs the parts of one attention tile on N Python threads, one torch thread each.

    torch's own parallelism opens a parallel region per op (a dozen per key block of a tile),
    and MKL's batched GEMM hands whole kv heads to threads (3 heads on 2 threads split 2:1).
    Splitting a tile's query rows instead gives every thread the same work and one join per
    tile. A row's arithmetic does not change: the kernels are row-invariant and give the same
    bits on one thread as on all (``numerics.probe``), which must hold before this is used.
    """

    def __init__(self, threads: int) -> None:
        self.threads = max(1, int(threads))
        self.splits = 0  # calls that ran on more than one thread
        self._pool = (
            concurrent.futures.ThreadPoolExecutor(self.threads - 1, thread_name_prefix="fak-rows")
            if self.threads > 1
            else None
        )

    def map(self, fn: Callable[[int], T], parts: int) -> list[T]:
        """[fn(0), ..., fn(parts - 1)]; part 0 on the calling thread, the rest on the pool."""
        if self._pool is None or parts == 1:
            with _calling_thread_alone():
                return [fn(i) for i in range(parts)]
        self.splits += 1
        futures = [self._pool.submit(_in_inference_mode, fn, i) for i in range(1, parts)]
        # The calling thread goes back to its own thread count only after every part is done:
        # torch's set_num_threads also sets MKL's process-wide count, which a part still
        # running on the pool would otherwise see change under it (a precaution: no
        # difference was measured on a 6,000-token prefill).
        with _calling_thread_alone():
            first = fn(0)
            rest = [f.result() for f in futures]
        return [first, *rest]


def _in_inference_mode(fn: Callable[[int], T], i: int) -> T:
    # torch sets a new thread's count from its process-wide value at the thread's first
    # parallel op, which may come after an initializer ran: check it on every task (measured:
    # a one-time initializer left each pool thread opening 2-thread regions of its own).
    if torch.get_num_threads() != 1:
        torch.set_num_threads(1)
    with torch.inference_mode():
        return fn(i)


@contextlib.contextmanager
def _calling_thread_alone() -> Iterator[None]:
    n = torch.get_num_threads()
    if n != 1:
        torch.set_num_threads(1)
    try:
        yield
    finally:
        if n != 1:
            torch.set_num_threads(n)
