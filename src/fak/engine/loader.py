"""Loading entry points for the CLI and scripts, with a progress bar (tier T3).

``load_engine_planner`` is the hook ``fak serve`` calls (lazily) to get the in-kernel planner;
``load_engine`` returns the bare engine. Both find the embedded SmolLM2 when no path is given
and fail with a message naming what to install. The progress bar (rich) goes to stderr and is
the only output here.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path

from fak.engine.engine import Engine, LoadProgress
from fak.engine.planner import DEFAULT_MAX_NEW_TOKENS, InKernelPlanner
from fak.engine.weights import default_gguf_path

__all__ = ["load_engine", "load_engine_planner"]


@contextlib.contextmanager
def _progress_bar(label: str, enabled: bool) -> Iterator[LoadProgress | None]:
    if not enabled:
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(file=sys.stderr)
    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=False) as bar:
        tasks = {
            "read": bar.add_task(f"dequantizing {label}", total=None),
            "pack": bar.add_task("packing layers", total=None),
        }

        def report(stage: str, done: int, total: int) -> None:
            task = tasks.get(stage)
            if task is not None:
                bar.update(task, completed=done, total=total)

        yield report


def load_engine(
    gguf: str | Path | None = None,
    *,
    progress: bool = True,
    threads: int | None = None,
    mode: str = "exact",
) -> Engine:
    """Load a GGUF (default: the embedded SmolLM2) into an ``Engine`` (``mode``: exact | fast)."""
    path = default_gguf_path() if gguf is None else Path(gguf)
    if not path.is_file():
        raise FileNotFoundError(f"GGUF file not found: {path}")
    with _progress_bar(path.name, progress) as report:
        return Engine.load(path, threads=threads, mode=mode, progress=report)


def load_engine_planner(
    gguf: str | Path | None = None,
    *,
    progress: bool = True,
    threads: int | None = None,
    budget_tokens: int = 8192,
    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
    max_batch: int = 8,
    max_kv_bytes: int = 4 << 30,
    mode: str = "exact",
) -> InKernelPlanner:
    """The in-kernel ``Planner`` (kind ``inkernel``) over a freshly loaded engine.

    ``max_batch`` requests are decoded together at most, and their KV reservations (prompt plus
    budget rows each) stay under ``max_kv_bytes``; past either, a request is refused with 429.
    """
    engine = load_engine(gguf, progress=progress, threads=threads, mode=mode)
    return InKernelPlanner(
        engine,
        budget_tokens=budget_tokens,
        max_new_tokens=max_new_tokens,
        max_batch=max_batch,
        max_kv_bytes=max_kv_bytes,
    )
