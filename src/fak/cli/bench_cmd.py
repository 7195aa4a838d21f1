"""Verb ``bench`` (tier T5): fak's measurements as one verb.

``fak bench decide`` times the decide path in-process (vDSO on and off) against a spawned
``fak hook`` and writes ``report.json`` (``fak.bench.decide``). ``fak bench fleet`` runs
the agent-fleet benchmark on the in-kernel engine (arms A/B/C side by
side, identity checks, the quarantine cell), prints the table and writes the JSON record.
The engine is imported lazily; without the ``engine`` extra or its model the verb exits 2
saying what to install. Exit 1 when an identity check fails (the arms did not decode the same
tokens): the numbers would not be comparable.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

__all__ = ["register"]


def register(group: click.Group) -> None:
    @group.group("bench")
    def bench() -> None:
        """Benchmarks that print a table and write a JSON record."""

    @bench.command("decide")
    @click.option("--repeat", type=click.IntRange(min=1), default=2000, show_default=True)
    @click.option("--baseline-n", type=click.IntRange(min=1), default=30, show_default=True)
    @click.option("--no-baseline", is_flag=True, help="Skip the spawned-hook baseline.")
    @click.option(
        "--out",
        type=click.Path(dir_okay=False, path_type=Path),
        default=Path("report.json"),
        show_default=True,
    )
    def decide(repeat: int, baseline_n: int, no_baseline: bool, out: Path) -> None:
        """In-process decide (vDSO on/off) vs a spawned `fak hook` per decision."""
        from fak.bench.decide import decide_report

        record = decide_report(repeat=repeat, spawns=baseline_n, baseline=not no_baseline)
        for arm in ("vdso_on", "vdso_off", "spawned_hook"):
            if arm in record:
                r = record[arm]
                click.echo(f"{arm:<14} p50 {r['p50_ns']:>12,.0f} ns  p99 {r['p99_ns']:>12,.0f} ns")
        click.echo(f"vDSO hit rate (on): {record['vdso_on']['vdso_hit_rate']:.2f}")
        out.parent.mkdir(parents=True, exist_ok=True)
        if "gate_primary" in record:
            click.echo(
                f"gate_primary: {record['gate_primary']} (spawned/in-process p50 "
                f"{record['spawned_over_inprocess_p50']:,.0f}x)"
            )
            (out.parent / "baseline.json").write_text(
                json.dumps(record["spawned_hook"], indent=2) + "\n", encoding="utf-8"
            )
        out.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        click.echo(f"wrote {out}")
        if record.get("gate_primary") == "fail":
            sys.exit(1)

    @bench.command("fleet")
    @click.option("--prefix", "p", type=click.IntRange(min=1), default=2048, show_default=True)
    @click.option("--turns", "t", type=click.IntRange(min=1), default=50, show_default=True)
    @click.option("--agents", "c", type=click.IntRange(min=1), default=5, show_default=True)
    @click.option("--decode", "d", type=click.IntRange(min=1), default=32, show_default=True)
    @click.option("--result", "r", type=click.IntRange(min=1), default=64, show_default=True)
    @click.option("--threads", type=click.IntRange(min=1), default=2, show_default=True)
    @click.option(
        "--engine-mode",
        type=click.Choice(["exact", "fast"]),
        default="exact",
        show_default=True,
        help="The engine's numerics (float32 or 4-bit weights).",
    )
    @click.option("--no-validate", is_flag=True, help="Skip the small live arm-A cell.")
    @click.option("--no-quarantine", is_flag=True, help="Skip the quarantine-mid-run cell.")
    @click.option(
        "--small-checks",
        is_flag=True,
        help="Run the validation and quarantine cells at toy scale (a busy machine).",
    )
    @click.option(
        "--out",
        type=click.Path(dir_okay=False, path_type=Path),
        default=Path("fleet.json"),
        show_default=True,
    )
    def fleet(
        p: int,
        t: int,
        c: int,
        d: int,
        r: int,
        threads: int,
        engine_mode: str,
        no_validate: bool,
        no_quarantine: bool,
        small_checks: bool,
        out: Path,
    ) -> None:
        """C agents share a P-token prefix for T turns (D decoded, R ingested per turn):
        naive re-prefill (A), warm per-agent caches (B) and fak (C), side by side."""
        try:
            from fak.bench.fleet import FleetCell
            from fak.bench.fleet_report import (
                QUARANTINE_CELL,
                SMALL_QUARANTINE,
                SMALL_VALIDATE,
                VALIDATE_CELL,
                fleet_report,
            )
            from fak.bench.fleet_report import render as render_report
            from fak.engine import load_engine
        except ImportError as exc:
            click.secho(f"fak bench fleet: {exc}", fg="red", err=True)
            sys.exit(2)
        try:
            engine = load_engine(progress=False, threads=threads, mode=engine_mode)
        except (OSError, ValueError) as exc:
            click.secho(f"fak bench fleet: cannot load the engine: {exc}", fg="red", err=True)
            sys.exit(2)
        record = fleet_report(
            engine,
            FleetCell(P=p, T=t, C=c, D=d, R=r),
            validate=None if no_validate else (SMALL_VALIDATE if small_checks else VALIDATE_CELL),
            quarantine=None
            if no_quarantine
            else (SMALL_QUARANTINE if small_checks else QUARANTINE_CELL),
            say=lambda line: click.echo(line, err=True),
        )
        click.echo(render_report(record))
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        click.echo(f"wrote {out}")
        checks = [record["main"]["identical_B_C"]]
        if "validate" in record:
            checks.append(record["validate"]["identical_A_B"])
        if "quarantine" in record:
            q = record["quarantine"]
            checks += [q["identical_to_never_saw"], q["other_agents_unchanged"]]
        if not all(checks):
            click.secho("an identity check failed: the arms are not comparable", fg="red", err=True)
            sys.exit(1)
