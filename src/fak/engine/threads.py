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

import contextlib
import time
from collections.abc import Callable, Iterator

import torch

__all__ = ["ThreadGovernor"]

# Weight of the newest sample in a step-time average.
_ALPHA = 0.3


def _bucket(rows: int) -> int:
    """Steps of a similar size share statistics: one bucket per row count up to 8 (decode
    steps of 1..8 sessions), then one per power of two."""
    return rows if rows <= 8 else 8 + (rows // 8).bit_length()


class ThreadGovernor:
    """Runs each step with ``max_threads`` or 1 thread, whichever has been faster lately.

    ``explore_every``: every this many steps of a size, the other count is tried once (its
    average is refreshed; the machine's load may have changed). ``adaptive=False`` always uses
    ``max_threads``.
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
        self._avg: dict[tuple[int, int], float] = {}
        self._steps: dict[int, int] = {}
        self.steps_by_threads: dict[int, int] = {}

    def choose(self, rows: int) -> int:
        """The thread count for the next step of ``rows`` rows."""
        if not self.adaptive:
            return self.max_threads
        bucket = _bucket(rows)
        many = self._avg.get((bucket, self.max_threads))
        one = self._avg.get((bucket, 1))
        n = self._steps.get(bucket, 0)
        explore = n % self.explore_every == self.explore_every - 1
        if many is None:
            return self.max_threads
        if one is None:  # one thread is tried at the first exploration step, not the second
            # step: a one-shot prefill's few steps of a size all run at the full count
            return 1 if explore else self.max_threads
        best, other = (1, self.max_threads) if one < many else (self.max_threads, 1)
        return other if explore else best

    def record(self, rows: int, threads: int, seconds: float) -> None:
        bucket = _bucket(rows)
        key = (bucket, threads)
        old = self._avg.get(key)
        self._avg[key] = seconds if old is None else old + _ALPHA * (seconds - old)
        self._steps[bucket] = self._steps.get(bucket, 0) + 1
        self.steps_by_threads[threads] = self.steps_by_threads.get(threads, 0) + 1

    @contextlib.contextmanager
    def step(self, rows: int) -> Iterator[int]:
        """Run one forward step of ``rows`` rows at the chosen thread count, and time it."""
        threads = self.choose(rows)
        if torch.get_num_threads() != threads:
            torch.set_num_threads(threads)
        start = self._clock()
        yield threads
        self.record(rows, threads, self._clock() - start)

    def preferred(self, rows: int) -> int:
        """The count the averages favour for steps of ``rows`` rows (``max_threads`` if unsure)."""
        bucket = _bucket(rows)
        many = self._avg.get((bucket, self.max_threads))
        one = self._avg.get((bucket, 1))
        if not self.adaptive or many is None or one is None:
            return self.max_threads
        return 1 if one < many else self.max_threads
