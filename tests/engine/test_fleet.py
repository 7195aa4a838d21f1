"""The fleet workload at toy scale: exact prefill counts, the three arms decode the same tokens,
and a quarantined result evicted mid-run leaves every agent exactly where never-saw would."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.engine


def test_headline_token_counts_match_the_closed_forms() -> None:
    from fak.bench.fleet import FleetCell, token_counts

    counts = token_counts(FleetCell(P=2048, T=50, C=5, D=32, R=64))
    assert (counts["A"], counts["B"], counts["C"]) == (1_100_000, 25_920, 17_728)
    assert counts["max_context"] == 2048 + 49 * 96 + 32


def test_arms_decode_identical_tokens_and_count_prefill_exactly(engine: Any) -> None:
    from fak.bench.fleet import FleetCell, run_a, run_b, run_c, token_counts

    cell = FleetCell(P=520, T=2, C=2, D=3, R=5)  # the prefix spans one whole shared block
    a, b, c = run_a(engine, cell), run_b(engine, cell), run_c(engine, cell)
    counts = token_counts(cell)
    assert (a.prefill_tokens, b.prefill_tokens, c.prefill_tokens) == (
        counts["A"],
        counts["B"],
        counts["C"],
    )
    assert a.tokens == b.tokens == c.tokens
    assert all(len(t) == cell.T * cell.D for t in c.tokens)
    assert c.notes["shared_rows"] == 512  # forks share the whole block, not a copy


def test_quarantine_mid_run_equals_never_saw(engine: Any) -> None:
    from fak.bench.fleet import FleetCell, Quarantine, run_b, run_c
    from fak.bench.fleet_report import POISON
    from fak.kernel import Kernel

    cell = FleetCell(P=40, T=4, C=3, D=3, R=6)
    ids = engine.tokenizer.encode(POISON)[: cell.R]
    kernel = Kernel()
    q = Quarantine(agent=2, turn=1, ids=ids, payload=POISON.encode(), gate=kernel.admit_result)
    clean = run_c(engine, cell)
    quarantined = run_c(engine, cell, quarantine=q)
    never = run_b(engine, cell, skip=(2, 1))
    assert kernel.counters["quarantined"] == 1
    assert quarantined.notes["rows_evicted"] == len(ids)
    assert quarantined.tokens == never.tokens  # every agent, every token: as if never seen
    assert quarantined.tokens[:2] == clean.tokens[:2]  # the other agents are untouched
    assert quarantined.tokens[2] != clean.tokens[2]  # non-vacuous: the result mattered


def test_fak_bench_fleet_prints_the_table_and_writes_json(tmp_path: Path, engine: Any) -> None:
    from click.testing import CliRunner

    from fak.cli.main import cli

    out = tmp_path / "fleet.json"
    args = ["bench", "fleet", "--prefix", "24", "--turns", "2", "--agents", "2", "--decode", "2"]
    args += ["--result", "3", "--no-validate", "--no-quarantine", "--out", str(out)]
    r = CliRunner().invoke(cli, args)
    assert r.exit_code == 0, r.output
    assert "B and C generated identical tokens: True" in r.output
    record = json.loads(out.read_text())
    assert record["main"]["tokens"] == {"A": 2 * (24 + 29), "B": 2 * 27, "C": 24 + 2 * 3}
