"""Engine worker processes behind one router: ``EnginePool`` and ``RoutedEngines`` (tier T3).

``EnginePool`` starts N processes (``spawn``: nothing of this process is inherited), each
building its own cache-aware planner from the caller's picklable factory (the CLI passes the
in-kernel engine's loader: the gateway never imports the engine), and talks to each over a
pipe: a turn and the prefix the router claims go down, a ``CachedTurn`` (turn, typed cache
verdict, residency events) — with the text streamed ahead of it when asked — a ``CacheFault`` or
a typed refusal comes back. ``RoutedEngines`` is
the ``Planner`` the gateway sees: it asks a cache-aware strategy (``affinity.py``) which worker
gets each turn, feeds it every verdict and residency event, and counts prefill by verdict. A
failed restore is never recomputed silently: it is counted, journalled in the log, and the turn
is sent again without a claim to the least busy live worker, or refused with 503.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import multiprocessing
import signal
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from multiprocessing.connection import Connection
from typing import Any, Protocol

from fak.abi import (
    CacheAwarePlanner,
    CachedTurn,
    CacheFault,
    CacheVerdict,
    FaultCode,
    LookupKind,
    PlannerEvent,
    PlannerInputError,
    PlannerTurn,
    ResidencyEvent,
    TextDelta,
    ToolSpec,
    TurnDone,
    TurnRequest,
)
from fak.gateway.upstream.affinity import Route
from fak.gateway.upstream.strategies import (
    Candidate,
    Deployment,
    DeploymentStats,
    RouteFeatures,
    UpstreamKind,
)

__all__ = ["CacheRouting", "EnginePool", "RoutedEngines", "WorkerFactory", "WorkerPlanner"]

log = logging.getLogger(__name__)


class WorkerPlanner(CacheAwarePlanner, Protocol):
    """What a worker runs: a cache-aware planner that names its model."""

    @property
    def model(self) -> str: ...


WorkerFactory = Callable[[], WorkerPlanner]
"""Builds one worker's planner, in the worker process; must pickle (a module-level function or a
``functools.partial`` of one)."""


class CacheRouting(Protocol):
    """A strategy that routes by what workers hold (``PrefixAffinity``, ``RoundRobin``)."""

    @property
    def name(self) -> str: ...

    def route(self, features: RouteFeatures, candidates: Sequence[Candidate]) -> Route: ...

    def apply(self, deployment_id: str, events: Iterable[ResidencyEvent]) -> None: ...

    def verdict(self, deployment_id: str, verdict: CacheVerdict) -> None: ...

    def forget(self, deployment_id: str) -> None: ...


# ---- the worker process -----------------------------------------------------------------------
def _worker_main(factory: WorkerFactory, conn: Connection) -> None:
    """A worker: build the planner, say ready, then serve turns from the pipe until it closes.
    Ctrl-C in a terminal reaches the whole process group: the gateway stops its workers."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    planner = factory()
    conn.send(("ready", planner.model))
    loop = asyncio.new_event_loop()
    send_lock = threading.Lock()

    def send(msg: tuple[Any, ...]) -> None:
        with send_lock:
            conn.send(msg)

    async def handle(rid: int, request: TurnRequest, claim: str, stream: bool) -> None:
        def on_text(text: str) -> None:
            send(("delta", rid, text))

        try:
            got = await planner.complete_cached(request, claim, on_text if stream else None)
            send(("done", rid, got))
        except CacheFault as fault:
            send(("fault", rid, fault.verdict, fault.events))
        except PlannerInputError as exc:
            send(("refused", rid, exc.code, exc.message, exc.status, exc.retry_after))
        except Exception as exc:  # a fault in the engine ends this turn, not the worker
            log.exception("engine worker turn failed")
            send(("refused", rid, "engine_error", type(exc).__name__, 500, None))

    def read() -> None:
        while True:
            try:
                msg = conn.recv()
            except (EOFError, OSError):
                msg = None
            if msg is None:
                loop.call_soon_threadsafe(loop.stop)
                return
            if msg[0] == "cpu":  # the worker's own CPU seconds so far (all its threads)
                send(("cpu", msg[1], time.process_time()))
                continue
            asyncio.run_coroutine_threadsafe(handle(*msg[1:]), loop)

    threading.Thread(target=read, name="fak-engine-pipe", daemon=True).start()
    loop.run_forever()


# ---- the router's side -----------------------------------------------------------------------
def _plain(value: Any) -> Any:
    """Mappings as dicts (a ``MappingProxyType`` does not pickle)."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_plain(v) for v in value)
    return value


def _sendable(request: TurnRequest) -> TurnRequest:
    tools = tuple(
        ToolSpec(t.name, t.description, _plain(t.parameters), t.strict) for t in request.tools
    )
    return replace(request, tools=tools)


@dataclass(slots=True)
class _Worker:
    index: int
    process: Any
    conn: Connection
    deployment: Deployment
    in_flight: int = 0
    alive: bool = True
    send_lock: threading.Lock = field(default_factory=threading.Lock)


class EnginePool:
    """N engine processes, each with its own planner and cache; ``run`` sends one turn to one."""

    def __init__(
        self, factory: WorkerFactory, count: int, *, group: str = "engine", ready_s: float = 600.0
    ) -> None:
        if count < 1:
            raise ValueError("an engine pool needs at least one worker")
        ctx = multiprocessing.get_context("spawn")
        self._ids = itertools.count(1)
        self._pending: dict[int, _Pending] = {}
        self._lock = threading.Lock()
        self.workers: list[_Worker] = []
        self.model = ""
        started = []
        for i in range(count):
            parent, child = ctx.Pipe()
            proc = ctx.Process(
                target=_worker_main, args=(factory, child), name=f"fak-engine-{i + 1}", daemon=True
            )
            proc.start()
            child.close()
            started.append((i, proc, parent))
        deadline = time.monotonic() + ready_s
        try:
            for i, proc, conn in started:
                if not conn.poll(max(0.0, deadline - time.monotonic())):
                    raise RuntimeError(f"engine worker {i + 1} was not ready in {ready_s:.0f} s")
                try:
                    _, model = conn.recv()
                except EOFError:
                    proc.join(5)
                    code = proc.exitcode
                    raise RuntimeError(f"engine worker {i + 1} failed at start ({code})") from None
                self.model = self.model or model
                d = Deployment(f"worker-{i + 1}", group, UpstreamKind.ENGINE, model, order=i)
                self.workers.append(_Worker(i, proc, conn, d))
        except BaseException:
            for _, proc, conn in started:
                conn.close()
                proc.terminate()
            raise
        for w in self.workers:
            threading.Thread(
                target=self._read, args=(w,), name=f"fak-pool-{w.index + 1}", daemon=True
            ).start()

    def _read(self, w: _Worker) -> None:
        while True:
            try:
                msg = w.conn.recv()
            except (EOFError, OSError):
                break
            with self._lock:
                entry = self._pending.get(msg[1]) if msg[0] == "delta" else None
                entry = entry or self._pending.pop(msg[1], None)
            if entry is None:
                continue
            with contextlib.suppress(RuntimeError):  # the caller's loop is gone
                if msg[0] == "delta":
                    if entry.on_text is not None:
                        entry.loop.call_soon_threadsafe(entry.on_text, msg[2])
                else:
                    entry.loop.call_soon_threadsafe(_settle, entry.future, msg)
        w.alive = False
        with self._lock:
            lost = [(rid, e) for rid, e in self._pending.items() if e.worker == w.index]
            for rid, _ in lost:
                del self._pending[rid]
        for rid, e in lost:
            verdict = CacheVerdict(LookupKind.FAULT, 0, 0, "", FaultCode.WORKER_LOST)
            with contextlib.suppress(RuntimeError):
                e.loop.call_soon_threadsafe(_settle, e.future, ("fault", rid, verdict, ()))

    def live(self) -> list[_Worker]:
        return [w for w in self.workers if w.alive]

    async def run(
        self,
        w: _Worker,
        request: TurnRequest,
        claim: str,
        on_text: Callable[[str], None] | None = None,
    ) -> CachedTurn:
        """One turn on worker ``w``; ``CacheFault`` or ``PlannerInputError`` when it says so.
        ``on_text`` gets the text as the worker streams it (on this event loop)."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Any] = loop.create_future()
        rid = next(self._ids)
        with self._lock:
            self._pending[rid] = _Pending(loop, fut, w.index, on_text)
        w.in_flight += 1
        try:
            if not w.alive:
                raise CacheFault(CacheVerdict(LookupKind.FAULT, 0, 0, claim, FaultCode.WORKER_LOST))
            with w.send_lock:
                w.conn.send(("turn", rid, _sendable(request), claim, on_text is not None))
            msg = await fut
        except (OSError, EOFError):
            raise CacheFault(
                CacheVerdict(LookupKind.FAULT, 0, 0, claim, FaultCode.WORKER_LOST)
            ) from None
        finally:
            w.in_flight -= 1
            with self._lock:
                self._pending.pop(rid, None)
        match msg[0]:
            case "done":
                got: CachedTurn = msg[2]
                return got
            case "fault":
                raise CacheFault(msg[2], tuple(msg[3]))
            case _:
                _, _, code, message, status, retry_after = msg
                raise PlannerInputError(code, message, status=status, retry_after=retry_after)

    async def cpu_seconds(self, w: _Worker) -> float:
        """The CPU time worker ``w`` has used so far (its process, all threads)."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Any] = loop.create_future()
        rid = next(self._ids)
        with self._lock:
            self._pending[rid] = _Pending(loop, fut, w.index, None)
        with w.send_lock:
            w.conn.send(("cpu", rid))
        msg = await fut
        if msg[0] != "cpu":
            raise RuntimeError(f"engine worker {w.index + 1} is gone")
        return float(msg[2])

    def close(self) -> None:
        for w in self.workers:
            with contextlib.suppress(OSError):
                w.conn.send(None)
        for w in self.workers:
            w.process.join(10)
            if w.process.is_alive():
                w.process.terminate()
                w.process.join(5)
            w.conn.close()


@dataclass(frozen=True, slots=True)
class _Pending:
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[Any]
    worker: int
    on_text: Callable[[str], None] | None


def _settle(fut: asyncio.Future[Any], msg: Any) -> None:
    if not fut.done():
        fut.set_result(msg)


class _Watch:
    """Passes text on and remembers whether any was passed."""

    __slots__ = ("inner", "sent")

    def __init__(self, inner: Callable[[str], None]) -> None:
        self.inner = inner
        self.sent = False

    def __call__(self, text: str) -> None:
        self.sent = True
        self.inner(text)


class RoutedEngines:
    """The ``Planner`` over an ``EnginePool``: each turn to the worker a strategy picks."""

    def __init__(self, pool: EnginePool, strategy: CacheRouting) -> None:
        self.pool = pool
        self.strategy = strategy
        kinds = [str(k) for k in LookupKind]
        self._counters: dict[str, int] = dict.fromkeys(
            (
                "turns",
                "prompt_tokens",
                "prefix_tokens_reused",
                "tokens_prefilled",
                "route_prefix",
                "route_load",
                "route_faults_retried",
                *(f"cache_{k}" for k in kinds),
            ),
            0,
        )
        self._per_worker = [0] * len(pool.workers)

    @property
    def kind(self) -> str:
        return "inkernel"

    @property
    def model(self) -> str:
        return self.pool.model

    def set_error_hook(self, hook: Callable[[str], None]) -> None:
        """The engines have no upstream: nothing to report."""

    def stats(self) -> dict[str, int]:
        out = dict(self._counters)
        out["workers"] = len(self.pool.workers)
        out["workers_live"] = len(self.pool.live())
        for w, n in zip(self.pool.workers, self._per_worker, strict=True):
            out[f"worker_{w.index + 1}_turns"] = n
            out[f"worker_{w.index + 1}_in_flight"] = w.in_flight
        return out

    def _candidates(self, exclude: int | None = None) -> list[Candidate]:
        return [
            Candidate(w.deployment, DeploymentStats(in_flight=w.in_flight))
            for w in self.pool.live()
            if w.index != exclude
        ]

    def _count(self, index: int, verdict: CacheVerdict) -> None:
        c = self._counters
        c["turns"] += 1
        c["prompt_tokens"] += verdict.prompt
        c["prefix_tokens_reused"] += verdict.reused
        c["tokens_prefilled"] += verdict.prompt - verdict.reused
        c[f"cache_{verdict.kind}"] += 1
        self._per_worker[index] += 1

    async def complete_routed(
        self, request: TurnRequest, on_text: Callable[[str], None] | None = None
    ) -> tuple[CachedTurn, int]:
        """One turn, routed; returns what the worker answered and the worker's number (0-based).
        ``on_text`` gets the text as it streams; a fault comes before any text, so the retry
        never repeats what the client already got."""
        candidates = self._candidates()
        if not candidates:
            raise PlannerInputError(
                "engine_unavailable", "no engine worker is running", status=503, retry_after=5
            )
        features = RouteFeatures.of(request)
        route = self.strategy.route(features, candidates)
        self._counters[f"route_{route.reason}"] = self._counters.get(f"route_{route.reason}", 0) + 1
        w = self.pool.workers[route.candidate.deployment.order]
        try:
            watch = None if on_text is None else _Watch(on_text)
            got = await self.pool.run(w, request, route.claim, watch)
        except CacheFault as fault:
            self._fault(w, fault)
            if watch is not None and watch.sent:  # text already left: never send it twice
                raise PlannerInputError(
                    "engine_worker_lost",
                    "the engine worker stopped mid-answer; send the request again",
                    status=503,
                    retry_after=1,
                ) from None
            return await self._retry(request, w.index, on_text)
        self.strategy.apply(w.deployment.id, got.events)
        self.strategy.verdict(w.deployment.id, got.verdict)
        self._count(w.index, got.verdict)
        return got, w.index

    def _fault(self, w: _Worker, fault: CacheFault) -> None:
        self._counters["cache_fault"] += 1
        if fault.verdict.fault is FaultCode.WORKER_LOST:
            self.strategy.forget(w.deployment.id)
        else:
            self.strategy.apply(w.deployment.id, fault.events)
            self.strategy.verdict(w.deployment.id, fault.verdict)
        log.warning(
            "engine worker %d: cache fault %s after %d tokens",
            w.index + 1,
            fault.verdict.fault,
            fault.verdict.reused,
        )

    async def _retry(
        self, request: TurnRequest, failed: int, on_text: Callable[[str], None] | None
    ) -> tuple[CachedTurn, int]:
        """After a fault: once, without a claim, on the least busy live worker (the faulted one
        last: its bad prefix was evicted, so it computes from scratch, and says so)."""
        live = self.pool.live()
        if not live:
            raise PlannerInputError(
                "engine_unavailable", "no engine worker is running", status=503, retry_after=5
            )
        w = min(live, key=lambda x: (x.index == failed, x.in_flight, x.index))
        self._counters["route_faults_retried"] += 1
        try:
            got = await self.pool.run(w, request, "", on_text)
        except CacheFault as fault:
            self._fault(w, fault)
            raise PlannerInputError(
                "cache_restore_fault",
                "the engine could not restore this conversation's cache; try again",
                status=503,
                retry_after=1,
            ) from None
        self.strategy.apply(w.deployment.id, got.events)
        self._count(w.index, got.verdict)
        return got, w.index

    async def complete(self, request: TurnRequest) -> PlannerTurn:
        got, _ = await self.complete_routed(request)
        return got.turn

    async def stream(self, request: TurnRequest) -> AsyncIterator[PlannerEvent]:
        """Text deltas as the worker produces them, then one ``TurnDone``."""
        queue: asyncio.Queue[str] = asyncio.Queue()
        task = asyncio.ensure_future(self.complete_routed(request, queue.put_nowait))
        try:
            while not task.done() or not queue.empty():
                if queue.empty():
                    getter = asyncio.ensure_future(queue.get())
                    await asyncio.wait({task, getter}, return_when=asyncio.FIRST_COMPLETED)
                    if not getter.done():
                        getter.cancel()
                        continue
                    text = getter.result()
                else:
                    text = queue.get_nowait()
                yield TextDelta(text)
            got, _ = task.result()
            yield TurnDone(got.turn)
        finally:
            if not task.done():
                task.cancel()

    async def aclose(self) -> None:
        await asyncio.to_thread(self.pool.close)
