"""Prometheus metrics and the /debug/vars snapshot of one gateway (tier T3).

Each app owns its own ``CollectorRegistry`` (so tests and several apps in one process never
share counts). Labels are closed vocabularies only (route, method, status, operation, verdict,
reason, disposition, upstream error kind): never a tool argument, a result or a key. Kernel
counters are read at scrape time from ``kernel.counters``; a planner that has a ``stats()``
method (the in-kernel engine) is read the same way, found structurally: this module never
imports ``fak.engine``.
"""

from __future__ import annotations

import logging
import os
import platform
import re
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

import fak

__all__ = ["CONTENT_TYPE", "ENGINE_COUNTERS", "Metrics", "PlannerStats"]

_log = logging.getLogger(__name__)

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)

PlannerStats = Callable[[], Mapping[str, Any] | None]
"""A planner's ``stats()``: name -> number, read at scrape time (None: the planner keeps none)."""

ENGINE_COUNTERS = frozenset(
    {
        "turns",
        "prompt_tokens",
        "prefix_tokens_reused",
        "tokens_prefilled",
        "tokens_decoded",
        "spans_evicted",
        "tokens_evicted",
        "lru_tokens_evicted",
        "steps",
        "batched_rows",
        "cancelled",
        "refused_busy",
    }
)
"""Planner stats that only grow (exported as ``fak_engine_<name>_total``); the rest are gauges."""

_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")


def _read_planner_stats(stats: PlannerStats | None) -> dict[str, int | float] | None:
    """One snapshot of ``stats()``: well-formed names with numeric values only.

    ``None`` when there is no ``stats()``, it has none, or it failed (logged by type only): a
    planner fault never breaks a scrape or a health check, and no value is made up.
    """
    if stats is None:
        return None
    try:
        got = stats()
        if got is None:  # a planner that keeps no stats
            return None
        raw = dict(got)
    except Exception as exc:  # the planner's fault; the scrape goes on without it
        _log.warning("planner stats() failed: %s", type(exc).__name__)
        return None
    out: dict[str, int | float] = {}
    for name, value in sorted(raw.items()):
        if not isinstance(name, str) or not _NAME.fullmatch(name) or name.endswith("_total"):
            continue
        if isinstance(value, bool):
            out[name] = int(value)
        elif isinstance(value, int | float):
            out[name] = value
    return out


class _KernelCollector:
    def __init__(
        self,
        counters: Callable[[], Mapping[str, int]],
        pollution_rate: Callable[[], float | None],
    ) -> None:
        self._counters = counters
        self._rate = pollution_rate

    def collect(self) -> Iterator[Metric]:
        counts = dict(self._counters())
        for name, value in sorted(counts.items()):
            yield CounterMetricFamily(f"fak_kernel_{name}", f"kernel counter {name}", value=value)
        submits = counts.get("submits", 0)
        ratio = counts.get("vdso_hits", 0) / submits if submits else 0.0
        yield GaugeMetricFamily(
            "fak_gateway_vdso_hit_ratio", "vDSO hits / submits (fast-path share)", value=ratio
        )
        rate = self._rate()
        if rate is not None:
            yield GaugeMetricFamily(
                "fak_gateway_context_pollution_rate",
                "quarantined / screened tool results",
                value=rate,
            )


VdsoCounts = Callable[[], tuple[int, Mapping[str, int]]]
"""(lookups, misses by reason): the coherence plane's vDSO attribution, read at scrape time."""


class _VdsoCollector:
    def __init__(self, counts: VdsoCounts) -> None:
        self._counts = counts

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        lookups, misses = self._counts()
        yield CounterMetricFamily(
            "fak_vdso_lookups", "syscalls that consulted the vDSO fast path", value=lookups
        )
        family = CounterMetricFamily(
            "fak_vdso_misses", "syscalls the vDSO did not serve, by reason", labels=["reason"]
        )
        for reason, value in sorted(misses.items()):
            family.add_metric([reason], value)
        yield family


class _PlannerCollector:
    def __init__(self, stats: PlannerStats) -> None:
        self._stats = stats

    def describe(self) -> list[Metric]:
        return []  # names depend on the planner; never call it at registration

    def collect(self) -> Iterator[Metric]:
        for name, value in (_read_planner_stats(self._stats) or {}).items():
            if name in ENGINE_COUNTERS:
                yield CounterMetricFamily(
                    f"fak_engine_{name}", f"in-kernel engine counter {name}", value=value
                )
            else:
                yield GaugeMetricFamily(
                    f"fak_engine_{name}", f"in-kernel engine gauge {name}", value=value
                )


class Metrics:
    """Everything /metrics exposes, plus the JSON view served at /debug/vars."""

    def __init__(
        self,
        *,
        counters: Callable[[], Mapping[str, int]],
        pollution_rate: Callable[[], float | None] = lambda: None,
        planner: str = "",
        model: str = "",
        planner_stats: PlannerStats | None = None,
        clock: Callable[[], float] = time.time,
        vdso: VdsoCounts | None = None,
    ) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        reg = self.registry
        self._counters = counters
        self._planner_stats = planner_stats
        self._planner, self._model, self._clock = planner, model, clock
        self.started = clock()
        if vdso is not None:
            reg.register(_VdsoCollector(vdso))
        Gauge("fak_gateway_up", "1 while the gateway serves", registry=reg).set(1)
        Gauge(
            "fak_gateway_build_info",
            "version, planner and model of this gateway",
            ["version", "planner", "model"],
            registry=reg,
        ).labels(fak.__version__, planner, model).set(1)
        self.http_requests = Counter(
            "fak_gateway_http_requests",
            "HTTP requests by route, method and status",
            ["route", "method", "status"],
            registry=reg,
        )
        self.http_duration = Histogram(
            "fak_gateway_http_request_duration_seconds",
            "HTTP request duration",
            ["route"],
            buckets=_BUCKETS,
            registry=reg,
        )
        self.operations = Counter(
            "fak_gateway_operations",
            "kernel operations by verdict",
            ["operation", "verdict", "reason", "disposition"],
            registry=reg,
        )
        self.operation_duration = Histogram(
            "fak_gateway_operation_duration_seconds",
            "kernel operation duration",
            ["operation"],
            buckets=_BUCKETS,
            registry=reg,
        )
        self.inflight = Gauge("fak_gateway_inflight_requests", "requests in flight", registry=reg)
        self.pollutions_blocked = Counter(
            "fak_gateway_context_pollutions_blocked",
            "inbound tool results held out of the planner's context",
            registry=reg,
        )
        self.upstream_errors = Counter(
            "fak_gateway_upstream_errors", "upstream failures by kind", ["kind"], registry=reg
        )
        self.turns = Counter(
            "fak_gateway_turns", "adjudicated turns by wire", ["wire", "stream"], registry=reg
        )
        reg.register(_KernelCollector(counters, pollution_rate))
        if planner_stats is not None:
            reg.register(_PlannerCollector(planner_stats))
        self._upstream_kinds: dict[str, int] = {}
        self._op_children: dict[tuple[str, str, str, str], Any] = {}
        self._op_hist: dict[str, Any] = {}

    # -- hot-path helpers (cache label children) -----------------------------------------
    def operation(
        self, op: str, verdict: str, reason: str, disposition: str, seconds: float
    ) -> None:
        key = (op, verdict, reason, disposition)
        child = self._op_children.get(key)
        if child is None:
            child = self._op_children[key] = self.operations.labels(*key)
        child.inc()
        hist = self._op_hist.get(op)
        if hist is None:
            hist = self._op_hist[op] = self.operation_duration.labels(op)
        hist.observe(seconds)

    def upstream_error(self, kind: str) -> None:
        self.upstream_errors.labels(kind).inc()
        self._upstream_kinds[kind] = self._upstream_kinds.get(kind, 0) + 1

    def planner_stats(self) -> dict[str, int | float] | None:
        """The planner's stats now (``None`` without a ``stats()`` or when it failed)."""
        return _read_planner_stats(self._planner_stats)

    def exposition(self) -> bytes:
        return bytes(generate_latest(self.registry))

    # -- /debug/vars -------------------------------------------------------------------
    def _series(self, name: str) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for family in self.registry.collect():
            if family.name != name:
                continue
            for sample in family.samples:
                if sample.name.endswith("_total"):
                    out.append({**sample.labels, "count": int(sample.value)})
        return out

    def snapshot(self, *, auth_required: bool) -> dict[str, Any]:
        counts = dict(self._counters())
        submits = counts.get("submits", 0)
        now = self._clock()
        out: dict[str, Any] = {
            "gateway": {
                "up": True,
                "version": fak.__version__,
                "planner": self._planner,
                "model": self._model,
                "auth_required": auth_required,
                "start_time_unix": int(self.started),
                "uptime_seconds": round(now - self.started, 3),
                "inflight_requests": int(self.inflight._value.get()),
            },
            "runtime": {
                "python_version": platform.python_version(),
                "implementation": sys.implementation.name,
                "platform": sys.platform,
                "pid": os.getpid(),
                "cpu_count": os.cpu_count(),
            },
            "kernel": {
                **counts,
                "vdso_hit_ratio": counts.get("vdso_hits", 0) / submits if submits else 0.0,
            },
            "upstream": {"errors_by_kind": dict(self._upstream_kinds)},
            "metrics": {
                "http": self._series("fak_gateway_http_requests"),
                "operations": self._series("fak_gateway_operations"),
                "context_pollutions_blocked": int(self.pollutions_blocked._value.get()),
            },
        }
        engine = self.planner_stats()
        if engine is not None:
            out["engine"] = engine
        return out
