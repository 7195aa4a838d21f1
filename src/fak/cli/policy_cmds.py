"""Verbs ``preflight``, ``policy`` and ``agent`` (tier T5): parse flags, call the library.

Exit codes: ``preflight`` 0 for any verdict, 1 on a bad policy/schema file or journal, 2 on usage;
``policy`` 0 with a summary, 1 on a bad manifest, 2 on usage; ``agent --offline`` 0. Library
imports are deferred into the commands so ``fak --help`` stays quick (``hook`` is its own
module, ``fak.cli.hook_cmd``).
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any, NoReturn

import click

if TYPE_CHECKING:
    from fak.abi import Verdict
    from fak.kernel import Kernel
    from fak.policy import Policy, RungTrace

__all__ = ["register"]


def _fail(message: str, code: int = 1) -> NoReturn:
    click.echo(f"fak: {message}", err=True)
    sys.exit(code)


def _load_policy(path: str | None) -> tuple[Policy, str]:
    from fak.policy import Policy, PolicyError

    if path is None:
        return Policy.default(), "<built-in default floor>"
    try:
        if path == "-":
            return Policy.loads(sys.stdin.buffer.read(), source="<stdin>"), "<stdin>"
        return Policy.load(path), path
    except PolicyError as exc:
        _fail(str(exc))


def _kernel_from_environ(policy: Policy) -> Kernel:
    """A kernel honouring the FAK_* settings (so FAK_AUDIT_JOURNAL journals CLI decisions too)."""
    from fak.config import Settings, process_environ
    from fak.journal import JournalCorruptError, open_error_line
    from fak.kernel import build_kernel

    settings = Settings.from_environ(process_environ())
    try:
        return build_kernel(settings, policy)
    except (OSError, JournalCorruptError) as exc:
        _fail(open_error_line(str(settings.audit_journal), exc))


def _verdict_line(verdict: Verdict) -> str:
    return f"verdict={verdict.kind} reason={verdict.reason.name} by={verdict.by}"


def _trace_rows(trace: list[RungTrace]) -> list[dict[str, Any]]:
    return [
        {"rung": t.rung, "rank": t.rank, "verdict": t.verdict.to_wire(), "counted": t.counted}
        for t in trace
    ]


# -- preflight -------------------------------------------------------------------------------
@click.command()
@click.option("--tool", required=True, help="Tool name of the call to judge.")
@click.option("--args", "args_text", default="{}", show_default=True, help="Arguments as JSON.")
@click.option("--policy", "policy_path", help="Policy manifest (default: the built-in floor).")
@click.option("--schema", "schema_path", help="JSON Schema of the tool's arguments (rung 1).")
@click.option("--alias", "aliases", multiple=True, help="Grammar alias SYNONYM=PARAM (repeat).")
@click.option("--explain", is_flag=True, help="Show every rung's own verdict.")
@click.option("--json", "as_json", is_flag=True, help="Print the decision (and trace) as JSON.")
def preflight(
    tool: str,
    args_text: str,
    policy_path: str | None,
    schema_path: str | None,
    aliases: tuple[str, ...],
    explain: bool,
    as_json: bool,
) -> None:
    """Judge one tool call offline: no dispatch, no server, no model."""
    from fak.abi import ToolCall, VerdictKind
    from fak.policy import Grammar, Schema

    policy, source = _load_policy(policy_path)
    kernel = _kernel_from_environ(policy)  # decide() is the fold alone: no vDSO, no dispatch
    if aliases and schema_path is None:
        _fail(
            "--alias needs --schema: an alias renames a synonym onto a parameter the tool's "
            "JSON Schema declares (e.g. --schema convert.json --alias from=from_currency)",
            2,
        )
    if schema_path is not None or aliases:
        schema_doc = _read_json(schema_path) if schema_path else {}
        alias_map = _parse_aliases(aliases)
        try:
            if schema_path is not None:
                kernel.register_schema(tool, Schema.from_json_schema(schema_doc))
            if schema_doc.get("properties") or alias_map:
                kernel.register_grammar(tool, Grammar.from_json_schema(schema_doc, alias_map))
        except ValueError as exc:
            _fail(f"bad schema or alias: {exc}")
    call = ToolCall(tool, args_text)  # raw text: rung 0 refuses what is not a JSON object
    verdict = kernel.decide(call)  # settled: a rewritten call is judged as dispatched
    _, trace = kernel.explain(call)
    if as_json:
        out: dict[str, Any] = {
            "tool": tool,
            "verdict": verdict.to_wire(),
            "trace": _trace_rows(trace),
            "policy": {"source": source, "hash": policy.version},
        }
        if verdict.kind == VerdictKind.TRANSFORM and verdict.new_args is not None:
            out["dispatched_args"] = dict(verdict.new_args)
        click.echo(json.dumps(out, indent=2, sort_keys=False))
        return
    click.echo(_verdict_line(verdict))
    if verdict.kind == VerdictKind.TRANSFORM and verdict.new_args is not None:
        click.echo(f"dispatched_args={json.dumps(dict(verdict.new_args), sort_keys=True)}")
    if verdict.claim:
        click.echo(f"witness={verdict.claim}")
    if explain:
        _print_explain(kernel, trace, source)


def _print_explain(kernel: Kernel, trace: list[RungTrace], source: str) -> None:
    click.echo("rungs (ascending rank; the walk stops at the first DENY):")
    for t in trace:
        v = t.verdict
        reason = f" {v.reason.name}" if v.reason.name != "NONE" else ""
        claim = f"  ({v.claim})" if v.claim else ""
        skipped = "" if t.counted else "  [after the stop: not counted]"
        click.echo(f"  {t.rung:<10} rank={t.rank:<4} {v.kind}{reason}{claim}{skipped}")
    click.echo(f"policy={source} hash={kernel.policy_version[:16]}")


def _read_json(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as handle:
            value = json.load(handle)
    except (OSError, ValueError) as exc:
        _fail(f"cannot read JSON from {path}: {exc}")
    if not isinstance(value, dict):
        _fail(f"{path}: a JSON Schema must be a JSON object")
    return value


def _parse_aliases(pairs: tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        synonym, sep, canonical = pair.partition("=")
        if not sep or not synonym or not canonical:
            raise click.UsageError(f"--alias {pair!r}: expected SYNONYM=PARAM")
        out[synonym] = canonical
    return out


# -- policy ----------------------------------------------------------------------------------
@click.command()
@click.option("--dump", is_flag=True, help="Print the built-in default floor as a manifest.")
@click.option("--check", "check_path", metavar="FILE", help="Validate a manifest ('-' = stdin).")
def policy(dump: bool, check_path: str | None) -> None:
    """Print the default floor, or validate a manifest and show the floor it admits."""
    if dump == (check_path is not None):
        raise click.UsageError("give exactly one of --dump or --check FILE")
    if dump:
        from fak.policy import Policy

        click.echo(Policy.default().dump(), nl=False)
        return
    assert check_path is not None
    loaded, source = _load_policy(check_path)
    summary = loaded.summary()
    click.echo(
        f"OK  {source}  ({summary['version']}, posture={summary['posture']}, "
        f"allow={summary['allow']}, allow_prefix={len(loaded.allow_prefix)}, "
        f"deny={len(loaded.deny)}, arg_rules={summary['arg_rules']})"
    )
    manifest = loaded.manifest
    click.echo(f"  allow:             {', '.join(manifest.allow) or '(none)'}")
    click.echo(f"  allow_prefix:      {', '.join(manifest.allow_prefix) or '(none)'}")
    denies = ", ".join(f"{t}={r.name}" for t, r in sorted(loaded.deny.items()))
    click.echo(f"  deny:              {denies or '(none)'}")
    click.echo(f"  self_modify_globs: {', '.join(manifest.self_modify_globs) or '(none)'}")
    click.echo(f"  redact_fields:     {', '.join(manifest.redact_fields) or '(none)'}")
    for rule in manifest.arg_rules:
        click.echo(f"  arg_rule:          {rule.model_dump_json(exclude_none=True)}")
    click.echo(f"  hash:              {loaded.version}")
    if not manifest.allow and not manifest.allow_prefix:
        click.echo("  note: nothing is allowed; every call is refused with DEFAULT_DENY")


# -- agent -----------------------------------------------------------------------------------
_ROWS = (
    ("injected text reaching the model", "injected_text_seen"),
    ("destructive calls proposed", "destructive_proposed"),
    ("destructive calls executed", "destructive_executed"),
    ("malformed call retried by the model", "malformed_retries"),
    ("malformed call repaired by the kernel", "repaired_calls"),
    ("repeat read served from the vDSO", "vdso_hits"),
    ("calls refused by the lock", "denied_calls"),
    ("tool results quarantined", "quarantined_results"),
    ("model turns", "turns"),
    ("tool executions", "tool_executions"),
    ("account still exists", "account_survived"),
    ("flight booked", "booked"),
)


@click.command()
@click.option("--offline", is_flag=True, help="Run the scripted task with no model or network.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def agent(offline: bool, as_json: bool) -> None:
    """Run one agent task with tools wired directly and behind the kernel; compare."""
    if not offline:
        raise click.UsageError(
            "only --offline is available here; for a live model put `fak serve` in front of it"
        )
    import dataclasses

    from fak.cli.offline_demo import run_offline_demo

    report = run_offline_demo()
    if as_json:
        arms = [dataclasses.asdict(arm) for arm in report.arms]
        click.echo(json.dumps({"arms": arms, "lock_check": report.lock_check.to_wire()}, indent=2))
        return
    click.echo(
        "fak agent --offline: one scripted booking task, three wirings (no model, no network)"
    )
    click.echo("The task's fetch_policy result carries a planted prompt injection; one call uses")
    click.echo("aliased argument names; one read is repeated. Every cell is counted, not assumed.")
    click.echo()
    width = max(len(label) for label, _ in _ROWS) + 2
    names = [arm.name for arm in report.arms]
    col = max(len(n) for n in names) + 2
    click.echo((" " * width + "".join(n.ljust(col) for n in names)).rstrip())
    for label, attr in _ROWS:
        cells = [_cell(getattr(arm, attr)) for arm in report.arms]
        click.echo((label.ljust(width) + "".join(c.ljust(col) for c in cells)).rstrip())
    click.echo()
    click.echo(
        "lock check (fak preflight --tool delete_account): " + _verdict_line(report.lock_check)
    )


def _cell(value: object) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def register(group: click.Group) -> None:
    """Attach this module's verbs to the `fak` group."""
    for command in (preflight, policy, agent):
        group.add_command(command)
