"""The wall's verbs (tier T5): ``answer-shape``, ``doctor`` and ``journal verify``.

Thin wrappers: read the input, call ``fak.screen`` / ``fak.kernel.quarantine`` / ``fak.journal``,
print a line (or JSON) and exit with the documented code. ``answer-shape``: 0 in shape,
1 degenerate, 2 usage. ``doctor``: 0 healthy, 1 finding, 2 usage. ``journal verify``: 0 intact,
1 tampered or torn (naming the first bad row), 2 usage. Never prints the input's bytes.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import BinaryIO

import click
import orjson

from fak.abi import ToolResult, VerdictKind
from fak.cas import MemoryStore
from fak.journal import VerifyReport, verify
from fak.kernel.quarantine import QuarantineLedger
from fak.screen.shape import ShapeReport, answer_shape

__all__ = ["register"]

_MAX_INPUT = 64 * 1024 * 1024

_RECOMMEND = {
    "SECRET_EXFIL": (
        "a credential-shaped string is in the text: rotate it, and keep the tool that emitted it "
        "off the allow-list or scrub its output at the source"
    ),
    "TRUST_VIOLATION": (
        "the text carries prompt-injection markers: treat its source as hostile and do not "
        "clear the quarantine without a human review"
    ),
    "OVERSIZE": (
        "the text is a flood of one repeated chunk: cap the tool's output size or fix the loop "
        "that produced it"
    ),
    "DEFAULT_DENY": "the kernel's result chain is empty: configure the result admitters",
    "repeat": (
        "the answer loops (repeat fraction over --max-repeat): add stop sequences, lower the "
        "temperature or cap max tokens"
    ),
    "length": "the answer is longer than --max-chars: tighten max tokens or ask for a summary",
}


def _read(source: BinaryIO) -> bytes:
    data = source.read(_MAX_INPUT + 1)
    if len(data) > _MAX_INPUT:
        msg = f"input is larger than {_MAX_INPUT} bytes"
        raise click.UsageError(msg)
    return bytes(data)


def _shape_or_usage(text: str, max_repeat: float, max_chars: int, ngram: int) -> ShapeReport:
    try:
        return answer_shape(text, max_repeat=max_repeat, max_chars=max_chars, ngram=ngram)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc


def _shape_line(report: ShapeReport) -> str:
    state = "degenerate" if report.degenerate else "in shape"
    floor = " (below the rune floor: repeat never trips)" if report.runes < 24 else ""
    return (
        f"{state}: repeat_fraction={report.repeat_fraction:.3f} runes={report.runes} "
        f"[ngram={report.ngram_repeat:.3f} line_block={report.line_block_repeat:.3f} "
        f"period={report.period_repeat:.3f} compression={report.compression_repeat:.3f}]{floor}"
    )


_SHAPE_OPTIONS = [
    click.option("--max-repeat", type=float, default=0.5, show_default=True, help="Repeat limit."),
    click.option("--max-chars", type=int, default=0, show_default=True, help="Rune limit, 0=off."),
    click.option("--ngram", type=int, default=3, show_default=True, help="Word n-gram size."),
    click.option("--json", "as_json", is_flag=True, help="Print one JSON object."),
    click.argument("source", type=click.File("rb"), default="-", required=False),
]


def _with_shape_options(func: click.decorators.FC) -> click.decorators.FC:
    for option in reversed(_SHAPE_OPTIONS):
        func = option(func)
    return func


@click.command("answer-shape")
@_with_shape_options
def answer_shape_cmd(
    max_repeat: float, max_chars: int, ngram: int, as_json: bool, source: BinaryIO
) -> None:
    """Grade how repetitive and how long a text is (FILE, or stdin for - / no argument).

    Exit 0 in shape, 1 degenerate, 2 usage error.
    """
    text = _read(source).decode("utf-8", errors="replace")
    report = _shape_or_usage(text, max_repeat, max_chars, ngram)
    if as_json:
        click.echo(orjson.dumps(report.to_json(), option=orjson.OPT_SORT_KEYS).decode())
    else:
        click.echo(_shape_line(report))
    sys.exit(1 if report.degenerate else 0)


@dataclass(frozen=True, slots=True)
class _KernelAdmit:
    verdict: str
    reason: str
    by: str
    detector: str


def _kernel_admit(data: bytes) -> _KernelAdmit:
    ledger = QuarantineLedger(MemoryStore(max_bytes=0), max_held=1)
    admission = ledger.admit(ToolResult(tool="doctor", payload=data))
    verdict = admission.verdict
    reason = verdict.reason.name if verdict.reason else ""
    return _KernelAdmit(str(verdict.kind), reason, verdict.by, verdict.meta.get("detector", ""))


@click.command("doctor")
@_with_shape_options
def doctor_cmd(
    max_repeat: float, max_chars: int, ngram: int, as_json: bool, source: BinaryIO
) -> None:
    """The answer-shape witness plus the kernel's own admit verdict, with recommendations.

    Exit 0 healthy, 1 at least one finding, 2 usage error.
    """
    data = _read(source)
    report = _shape_or_usage(data.decode("utf-8", errors="replace"), max_repeat, max_chars, ngram)
    admit = _kernel_admit(data)
    findings: list[dict[str, str]] = []
    if admit.verdict not in (VerdictKind.ALLOW, VerdictKind.TRANSFORM):
        key = admit.reason or "TRUST_VIOLATION"
        findings.append(
            {
                "source": "kernel_admit",
                "finding": key,
                "recommendation": _RECOMMEND.get(key, _RECOMMEND["TRUST_VIOLATION"]),
            }
        )
    for name in report.findings:
        findings.append(
            {"source": "answer_shape", "finding": name, "recommendation": _RECOMMEND[name]}
        )
    if as_json:
        out = {
            "healthy": not findings,
            "answer_shape": report.to_json(),
            "kernel_admit": {
                "verdict": admit.verdict,
                "reason": admit.reason,
                "by": admit.by,
                "detector": admit.detector,
            },
            "findings": findings,
        }
        click.echo(orjson.dumps(out, option=orjson.OPT_SORT_KEYS).decode())
    else:
        click.echo(_shape_line(report))
        reason = f" {admit.reason}" if admit.reason else ""
        detector = f" ({admit.detector})" if admit.detector else ""
        click.echo(f"kernel admit: {admit.verdict}{reason} by {admit.by}{detector}")
        for item in findings:
            click.echo(f"finding [{item['source']}] {item['finding']}: {item['recommendation']}")
        click.echo("healthy" if not findings else f"{len(findings)} finding(s)")
    sys.exit(1 if findings else 0)


@click.group("journal")
def journal_group() -> None:
    """Inspect the decision journal (FAK_AUDIT_JOURNAL)."""


def _verify_target(path: str) -> VerifyReport:
    if path.startswith(("postgresql://", "postgres://")):  # the shared journal (FAK_JOURNAL_URL)
        try:
            from fak.journal.postgres import verify_dsn
        except ImportError as exc:
            raise click.UsageError("a PostgreSQL journal needs the shared extra") from exc
        try:
            return verify_dsn(path)
        except ConnectionError as exc:
            raise click.UsageError(str(exc)) from exc
    if not os.path.isfile(path):
        raise click.UsageError(f"no journal file {path} (a file, or a postgresql:// URL)")
    try:
        return verify(path)
    except OSError as exc:
        raise click.UsageError(f"cannot read {path}: {exc.strerror or exc}") from exc


@journal_group.command("verify")
@click.argument("path", metavar="PATH_OR_URL")
@click.option("--head", "expect_head", default="", help="Fail unless the last row has this hash.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def journal_verify_cmd(path: str, expect_head: str, as_json: bool) -> None:
    """Check every row's chain link and hash, in a journal file or a PostgreSQL journal
    (postgresql://…). Exit 0 intact, 1 tampered or torn, 2 usage."""
    report = _verify_target(path)
    ok = report.ok
    error = report.error
    bad_row = report.bad_row
    if ok and expect_head and report.head_hash != expect_head:
        ok, bad_row = False, report.rows
        error = "the last row's hash is not the expected head (rows were removed or replaced)"
    if as_json:
        out = {
            "ok": ok,
            "rows": report.rows,
            "bad_row": bad_row,
            "error": error,
            "torn": report.torn,
            "head_hash": report.head_hash,
        }
        click.echo(orjson.dumps(out, option=orjson.OPT_SORT_KEYS).decode())
    elif ok:
        click.echo(f"ok: {report.rows} rows verified, head {report.head_hash or '(empty)'}")
    else:
        click.echo(f"FAIL: row {bad_row}: {error}")
        click.echo(f"rows 1..{report.rows} verify" if report.rows else "no row verifies")
        if report.torn:
            click.echo(
                "a torn final line is left by a crash mid-write; reopening the journal cuts it"
            )
    sys.exit(0 if ok else 1)


def register(group: click.Group) -> None:
    """Attach this module's verbs to the `fak` group."""
    group.add_command(answer_shape_cmd)
    group.add_command(doctor_cmd)
    group.add_command(journal_group)
