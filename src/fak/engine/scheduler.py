"""Continuous batching over the engine: one worker thread, many requests per step (tier T3).

Requests join the running batch at the next step: a newcomer's prompt is prefilled in
``PREFILL_CHUNK``-token chunks inside the same batched passes that decode everyone else, then it
decodes one token per step with the others. A request that finishes, is cancelled, or whose
client went away leaves between two steps; no other session's logits change (witness 6: every
kernel is batch-invariant). KV memory is reserved per request at admission (prompt + budget
rows) and bounded; a request that does not fit now is refused with a retry hint, never queued
without bound. This module knows nothing of chats or tool calls: a ``Job`` carries token ids
and the hooks the planner runs on the worker thread.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

from fak.abi import PlannerInputError
from fak.engine.kvcache import KVCache
from fak.engine.model import PREFILL_CHUNK, Transformer

__all__ = ["Job", "Scheduler"]

log = logging.getLogger(__name__)


@dataclass(eq=False, slots=True)
class Job:
    """One request's generation. Hooks run on the worker thread, in this order:

    ``prepare()`` -> (cache holding a reused prefix of ``ids``, rows reused); ``on_token(t)`` per
    produced token (stop ids excluded), returning True to stop after it; then exactly one of
    ``on_finish(cache, tokens, finished)`` or ``on_error(exc)`` (cancellation included).
    """

    ids: Sequence[int]
    budget: int
    reserve_bytes: int
    prepare: Callable[[], tuple[KVCache, int]]
    on_token: Callable[[int], bool]
    on_finish: Callable[[KVCache, list[int], bool], None]
    on_error: Callable[[BaseException], None]
    cancelled: bool = False
    done: bool = False
    cache: KVCache | None = None
    at: int = 0  # next prompt index to prefill
    tokens: list[int] = field(default_factory=list)
    next_token: int = -1


class RequestCancelled(Exception):
    """The request was cancelled (client gone, or the planner closed) before it finished."""


class Scheduler:
    """Continuous batching of ``Job``s over one model (see the module docstring)."""

    def __init__(
        self,
        model: Transformer,
        *,
        stop_ids: Sequence[int],
        max_batch: int = 8,
        max_kv_bytes: int = 4 << 30,
    ) -> None:
        self.model = model
        self.stop_ids = frozenset(stop_ids)
        self.max_batch = max(1, max_batch)
        self.max_kv_bytes = max_kv_bytes
        self.reserved_bytes = 0
        self._pending: list[Job] = []
        self._active: list[Job] = []
        self._cond = threading.Condition(threading.RLock())
        self._closed = False
        self._thread: threading.Thread | None = None
        self._step_s = 0.05  # moving estimate of one batched step, for Retry-After
        self.counters = dict.fromkeys(
            ("steps", "batched_rows", "max_batch_seen", "cancelled", "refused_busy"), 0
        )

    @property
    def active(self) -> int:
        with self._cond:
            return len(self._active) + len(self._pending)

    # ---- the request side (any thread) --------------------------------------------------------
    def submit(self, job: Job) -> None:
        """Admit ``job`` (it joins at the next step) or refuse it: 429 when full for now."""
        if job.reserve_bytes > self.max_kv_bytes:
            raise PlannerInputError(
                "kv_budget_exceeded",
                f"this request needs {job.reserve_bytes} bytes of KV cache (prompt plus "
                f"max_tokens); the engine holds at most {self.max_kv_bytes}: shorten the "
                "conversation or lower max_tokens",
            )
        with self._cond:
            if self._closed:
                raise RuntimeError("the engine scheduler is closing")
            busy = len(self._active) + len(self._pending)
            if (
                busy >= self.max_batch
                or self.reserved_bytes + job.reserve_bytes > self.max_kv_bytes
            ):
                self.counters["refused_busy"] += 1
                raise PlannerInputError(
                    "engine_busy",
                    f"the in-kernel engine is serving {busy} request(s) and has no room for "
                    "this one now; retry after the Retry-After delay",
                    status=429,
                    retry_after=self._retry_after(),
                )
            self.reserved_bytes += job.reserve_bytes
            self._pending.append(job)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._loop, name="fak-engine-scheduler", daemon=True
                )
                self._thread.start()
            self._cond.notify()

    def cancel(self, job: Job) -> None:
        """Ask ``job`` to leave at the next step (its slot and KV memory are freed then)."""
        with self._cond:
            job.cancelled = True
            self._cond.notify()

    def close(self) -> None:
        """Stop the worker; unfinished jobs end with ``RequestCancelled``. A later ``submit``
        starts a fresh worker."""
        with self._cond:
            self._closed = True
            self._cond.notify()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=60)
        with self._cond:
            if thread is None or not thread.is_alive():
                self._closed = False
                self._thread = None

    def _retry_after(self) -> int:
        """Seconds until the soonest running request should be done (at least 1)."""
        left = [max(1, j.budget - len(j.tokens)) for j in self._active] or [1]
        return max(1, math.ceil(min(left) * self._step_s))

    # ---- the worker ---------------------------------------------------------------------------
    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._active and not self._closed:
                    self._cond.wait()
                if self._closed:
                    leaving = self._pending + self._active
                    self._pending, self._active = [], []
                    for job in leaving:
                        self._leave(job, RequestCancelled("the engine is shutting down"))
                    return
                joining, self._pending = self._pending, []
            for job in joining:
                if job.cancelled:
                    self._leave(job, RequestCancelled("cancelled before it started"))
                    continue
                try:
                    job.cache, job.at = job.prepare()
                except Exception as exc:  # handed to the request, raised there
                    self._leave(job, exc)
                    continue
                with self._cond:
                    self._active.append(job)
            self._step()

    def _step(self) -> None:
        with self._cond:
            for job in [j for j in self._active if j.cancelled]:
                self._active.remove(job)
                self.counters["cancelled"] += 1
                self._leave(job, RequestCancelled("cancelled"))
            batch = list(self._active)
        if not batch:
            return
        items: list[tuple[KVCache, torch.Tensor]] = []
        for job in batch:
            assert job.cache is not None
            if job.at < len(job.ids):  # still prefilling: its next chunk rides along
                chunk = job.ids[job.at : job.at + PREFILL_CHUNK]
            else:
                chunk = [job.next_token]
            items.append((job.cache, torch.tensor(list(chunk), dtype=torch.int64)))
        t0 = time.perf_counter()
        try:
            with torch.inference_mode():
                outs = self.model.forward_batch(items)
        except Exception as exc:  # a fault in the pass ends every request in it, not the worker
            log.exception("batched engine step failed; %d request(s) ended", len(batch))
            with self._cond:
                for job in batch:
                    self._active.remove(job)
                    self._leave(job, exc)
            return
        self._step_s = 0.8 * self._step_s + 0.2 * (time.perf_counter() - t0)
        self.counters["steps"] += 1
        self.counters["batched_rows"] += len(batch)
        self.counters["max_batch_seen"] = max(self.counters["max_batch_seen"], len(batch))
        for job, (_, fed), logits in zip(batch, items, outs, strict=True):
            if job.at < len(job.ids):
                job.at += int(fed.shape[0])
                if job.at < len(job.ids):
                    continue
            self._advance(job, logits)

    def _advance(self, job: Job, logits: torch.Tensor) -> None:
        """Pick the next token (greedy) and decide whether ``job`` goes on."""
        token = int(torch.argmax(logits).item())
        finished = token in self.stop_ids
        stop = finished
        if not finished:
            job.tokens.append(token)
            try:
                finished = stop = job.on_token(token)
            except Exception as exc:
                self._finish_with(job, exc)
                return
            stop = stop or len(job.tokens) >= job.budget
        if not stop:
            job.next_token = token
            return
        with self._cond:
            self._active.remove(job)
            self.reserved_bytes -= job.reserve_bytes
            job.done = True
        assert job.cache is not None
        try:
            job.on_finish(job.cache, job.tokens, finished)
        except Exception as exc:
            job.on_error(exc)

    def _finish_with(self, job: Job, exc: BaseException) -> None:
        with self._cond:
            self._active.remove(job)
            self._leave(job, exc)

    def _leave(self, job: Job, exc: BaseException) -> None:
        """End ``job`` without a result (caller holds no cache reference afterwards)."""
        with self._cond:
            if job.done:
                return
            job.done = True
            self.reserved_bytes -= job.reserve_bytes
        if job.cache is not None:
            job.cache.release()
            job.cache = None
        try:
            job.on_error(exc)
        except Exception:  # pragma: no cover - a hook must not take the worker down
            log.exception("engine request error hook failed")
