"""``fak bench decide``: the decide path in-process (vDSO on/off) vs a spawned ``fak hook``."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from fak.bench.decide import SLICE, TRACE, workload_hash
from fak.cli.main import cli


def test_bench_decide_writes_the_report_and_gates_on_the_spawned_baseline(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    r = CliRunner().invoke(
        cli, ["bench", "decide", "--repeat", "20", "--baseline-n", "2", "--out", str(out)]
    )
    assert r.exit_code == 0, r.output
    record = json.loads(out.read_text())
    assert record["calls"] == len(TRACE) == 12 and record["slice"] == SLICE
    assert record["workload_hash"] == workload_hash(SLICE, TRACE)
    assert len(record["workload_hash"]) == 16
    # the default floor: reads allowed, the account deletion denied, writes default-denied
    assert record["vdso_on"]["verdicts"][6] == "DENY"
    assert record["vdso_on"]["verdicts"] == record["vdso_off"]["verdicts"]
    assert record["vdso_on"]["vdso_hit_rate"] > 0.0 == record["vdso_off"]["vdso_hit_rate"]
    assert record["gate_primary"] == "pass"  # in-process beats a process per decision
    assert json.loads((tmp_path / "baseline.json").read_text())["samples"] == 2.0
    assert "gate_primary: pass" in r.output


def test_workload_hash_changes_with_the_trace() -> None:
    assert workload_hash(SLICE, TRACE) != workload_hash(SLICE, TRACE[:-1])
    assert workload_hash(SLICE, TRACE) != workload_hash("other", TRACE)
