"""A planner's ``stats()`` on /metrics, /debug/vars and /healthz, found by duck typing; and the
``fak serve`` engine fallbacks (an unsupported model, ``--threads``), with no torch."""

from __future__ import annotations

import asyncio
import sys
import types
from collections.abc import Callable
from typing import Any

import pytest
from click.testing import CliRunner

from fak.cli.main import cli
from fak.cli.serve_cmd import ByteSize, build_planner
from fak.testing.planner import MockPlanner

from .conftest import asgi_client

pytestmark = pytest.mark.gateway
CHAT = {"model": "m", "messages": [{"role": "user", "content": "hello"}]}


class StatsPlanner(MockPlanner):
    """The mock planner plus an engine-shaped ``stats()`` whose numbers the test controls."""

    def __init__(self, exact: int = 1) -> None:
        super().__init__(model="tiny")
        self.numbers: dict[str, Any] = {
            "turns": 0,
            "prompt_tokens": 0,
            "prefix_tokens_reused": 0,
            "tokens_prefilled": 0,
            "tokens_decoded": 0,
            "spans_evicted": 0,
            "tokens_evicted": 0,
            "lru_tokens_evicted": 0,
            "radix_nodes": 0,
            "radix_tokens": 0,
            "radix_budget_tokens": 8192,
            "sessions": 0,
            "exact": exact,
            "threads": 2,
        }
        self.broken = False

    @property
    def kind(self) -> str:
        return "inkernel"

    def stats(self) -> dict[str, Any]:
        if self.broken:
            raise RuntimeError("stats exploded")
        return dict(self.numbers)


async def _scrape(app: Any) -> tuple[str, dict[str, Any], dict[str, Any]]:
    async with asgi_client(app) as c:
        metrics = await c.get("/metrics")
        dv = await c.get("/debug/vars")
        hz = await c.get("/healthz")
    assert metrics.status_code == dv.status_code == hz.status_code == 200
    return metrics.text, dv.json(), hz.json()


def _engine_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(("fak_engine_", "# TYPE fak_e"))]


def test_stats_are_exported_as_counters_and_gauges_read_at_scrape_time(
    app_factory: Callable[..., Any],
) -> None:
    planner = StatsPlanner()
    app = app_factory(planner)
    metrics, dv, hz = asyncio.run(_scrape(app))
    assert hz == {"ok": True, "planner": "inkernel", "model": "tiny", "exact": True}
    assert "fak_engine_prefix_tokens_reused_total 0.0" in metrics.splitlines()

    planner.numbers.update(
        turns=2,
        prompt_tokens=300,
        prefix_tokens_reused=140,
        tokens_prefilled=160,
        tokens_decoded=16,
        spans_evicted=1,
        tokens_evicted=37,
        radix_nodes=3,
        radix_tokens=316,
        sessions=1,
        bogus="not a number",  # dropped: only numbers are exported
        BadName=5,  # dropped: not a metric-name fragment
    )
    metrics, dv, hz = asyncio.run(_scrape(app))
    assert _engine_lines(metrics) == [
        "# TYPE fak_engine_exact gauge",
        "fak_engine_exact 1.0",
        "# TYPE fak_engine_lru_tokens_evicted_total counter",
        "fak_engine_lru_tokens_evicted_total 0.0",
        "# TYPE fak_engine_prefix_tokens_reused_total counter",
        "fak_engine_prefix_tokens_reused_total 140.0",
        "# TYPE fak_engine_prompt_tokens_total counter",
        "fak_engine_prompt_tokens_total 300.0",
        "# TYPE fak_engine_radix_budget_tokens gauge",
        "fak_engine_radix_budget_tokens 8192.0",
        "# TYPE fak_engine_radix_nodes gauge",
        "fak_engine_radix_nodes 3.0",
        "# TYPE fak_engine_radix_tokens gauge",
        "fak_engine_radix_tokens 316.0",
        "# TYPE fak_engine_sessions gauge",
        "fak_engine_sessions 1.0",
        "# TYPE fak_engine_spans_evicted_total counter",
        "fak_engine_spans_evicted_total 1.0",
        "# TYPE fak_engine_threads gauge",
        "fak_engine_threads 2.0",
        "# TYPE fak_engine_tokens_decoded_total counter",
        "fak_engine_tokens_decoded_total 16.0",
        "# TYPE fak_engine_tokens_evicted_total counter",
        "fak_engine_tokens_evicted_total 37.0",
        "# TYPE fak_engine_tokens_prefilled_total counter",
        "fak_engine_tokens_prefilled_total 160.0",
        "# TYPE fak_engine_turns_total counter",
        "fak_engine_turns_total 2.0",
    ]
    assert "bogus" not in metrics and "badname" not in metrics.lower()
    expected = {k: v for k, v in planner.numbers.items() if k not in ("bogus", "BadName")}
    assert dv["engine"] == expected
    assert dv["gateway"]["planner"] == "inkernel"


def test_inexact_engine_and_a_failing_stats_never_break_a_scrape(
    app_factory: Callable[..., Any],
) -> None:
    planner = StatsPlanner(exact=0)
    app = app_factory(planner)
    _, _, hz = asyncio.run(_scrape(app))
    assert hz["exact"] is False

    planner.broken = True
    metrics, dv, hz = asyncio.run(_scrape(app))
    assert _engine_lines(metrics) == []  # no made-up numbers
    assert "engine" not in dv and "exact" not in hz
    assert "fak_gateway_up 1.0" in metrics


def test_a_planner_without_stats_exports_no_engine_metrics(
    app_factory: Callable[..., Any],
) -> None:
    app = app_factory(MockPlanner())
    metrics, dv, hz = asyncio.run(_scrape(app))
    assert _engine_lines(metrics) == [] and "engine" not in dv
    assert hz == {"ok": True, "planner": "mock", "model": "mock"}


def _fake_engine(monkeypatch: pytest.MonkeyPatch, load: Callable[..., Any]) -> None:
    module = types.ModuleType("fak.engine")
    module.load_engine_planner = load  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "fak.engine", module)


def _build(gguf: str | None, threads: int | None = None) -> Any:
    return build_planner(
        base_url=None,
        provider="openai",
        model="",
        api_key=None,
        gguf=gguf,
        mock=False,
        upstream_client="auto",
        timeout_s=5.0,
        threads=threads,
    )


def _unsupported(gguf: Any = None, *, threads: int | None = None) -> Any:
    raise ValueError("unsupported GGUF architecture 'gpt2': only 'llama' is supported")


def test_an_unsupported_gguf_exits_2_with_the_reason(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _fake_engine(monkeypatch, _unsupported)
    with pytest.raises(SystemExit) as exited:
        _build("model.gguf")
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "cannot load --gguf model.gguf" in err and "only 'llama' is supported" in err
    assert "Traceback" not in err


def test_an_unsupported_default_model_falls_back_to_the_mock_loudly(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _fake_engine(monkeypatch, _unsupported)
    planner = _build(None)
    assert isinstance(planner, MockPlanner)
    err = capsys.readouterr().err
    assert "only 'llama' is supported" in err and "SCRIPTED MOCK" in err


def test_threads_reach_the_engine_loader(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[Any, Any]] = []
    sentinel = StatsPlanner()

    def load(gguf: Any = None, *, threads: int | None = None) -> Any:
        seen.append((gguf, threads))
        return sentinel

    _fake_engine(monkeypatch, load)
    assert _build("m.gguf", threads=3) is sentinel
    assert _build(None) is sentinel
    assert seen == [("m.gguf", 3), (None, None)]


def test_batch_and_kv_limits_reach_the_engine_loader(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[dict[str, Any]] = []
    sentinel = StatsPlanner()

    def load(gguf: Any = None, *, threads: int | None = None, **options: Any) -> Any:
        seen.append(options)
        return sentinel

    _fake_engine(monkeypatch, load)
    planner = build_planner(
        base_url=None,
        provider="openai",
        model="",
        api_key=None,
        gguf=None,
        mock=False,
        upstream_client="auto",
        timeout_s=5.0,
        engine_options={"max_batch": 2, "max_kv_bytes": 1 << 30},
    )
    assert planner is sentinel
    assert seen == [{"max_batch": 2, "max_kv_bytes": 1 << 30}]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("4GiB", 4 << 30),
        ("512MiB", 512 << 20),
        ("2GB", 2 * 10**9),
        ("1000", 1000),
        ("1.5g", 3 << 29),
    ],
)
def test_kv_byte_sizes_parse(text: str, expected: int) -> None:
    assert ByteSize().convert(text, None, None) == expected


@pytest.mark.parametrize("text", ["", "lots", "-1GiB", "4 parsecs", "0"])
def test_a_bad_kv_size_is_a_usage_error_naming_the_form(text: str) -> None:
    result = CliRunner().invoke(cli, ["serve", "--mock", "--max-kv-bytes", text])
    assert result.exit_code == 2
    assert "is not a size; use e.g. 4GiB" in result.output
    assert "Traceback" not in result.output


def test_an_unknown_engine_mode_is_a_usage_error_naming_the_choices() -> None:
    result = CliRunner().invoke(cli, ["serve", "--mock", "--engine-mode", "turbo"])
    assert result.exit_code == 2
    assert "'turbo' is not one of 'exact', 'fast'" in result.output
    assert "Traceback" not in result.output


def test_healthz_names_the_engine_mode_when_the_planner_reports_one(
    app_factory: Callable[..., Any],
) -> None:
    planner = StatsPlanner()
    planner.numbers["fast_mode"] = 1
    _, _, hz = asyncio.run(_scrape(app_factory(planner)))
    assert hz == {
        "ok": True,
        "planner": "inkernel",
        "model": "tiny",
        "exact": True,
        "engine_mode": "fast",
    }
    planner.numbers["fast_mode"] = 0
    _, _, hz = asyncio.run(_scrape(app_factory(planner)))
    assert hz["engine_mode"] == "exact"
