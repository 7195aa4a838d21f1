"""The fleet's operator verbs (tier T5): ``quarantine clear`` and ``quarantine status``.

With N workers the quarantine ledger lives in Redis (``FAK_CAS_URL``), so an operator clears a
held result there, once, for every worker: the witness is whoever may reach the store, never the
model or a client of the gateway. ``clear``: 0 cleared (or already), 1 no such held id (never
minted, or evicted), 2 usage or the store cannot be reached. ``status`` prints one line per id.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from fak.config import Settings, process_environ

__all__ = ["register"]


def _ledger(cas_url: str | None) -> Any:
    url = cas_url or Settings.from_environ(process_environ()).cas_url
    if not url:
        raise click.UsageError(
            "set FAK_CAS_URL (or --cas-url) to the gateway's Redis: without it each `fak serve` "
            "holds its quarantine in its own process"
        )
    try:
        from fak.cas.redis import RedisStore, connect
        from fak.kernel import QuarantineLedger
        from fak.kernel.shared import RedisHeldTable
    except ImportError as exc:
        raise click.UsageError("the shared ledger needs the shared extra (fak[shared])") from exc
    try:
        client = connect(url)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    return QuarantineLedger(RedisStore(client), admitters=(), table=RedisHeldTable(client))


_URL = click.option("--cas-url", default=None, metavar="URL", help="redis://… (FAK_CAS_URL).")


@click.group("quarantine")
def quarantine_group() -> None:
    """The fleet's shared quarantine ledger (FAK_CAS_URL)."""


@quarantine_group.command("clear")
@click.argument("qid")
@_URL
def clear_cmd(qid: str, cas_url: str | None) -> None:
    """Record a witness clearance for held result QID (every worker sees it at once).

    A page-in still re-screens the bytes with the current result chain."""
    from fak.kernel import UnknownQuarantineId

    ledger = _ledger(cas_url)
    try:
        ledger.clear(qid)
    except UnknownQuarantineId:
        click.echo(f"no held result {qid} (never held, or evicted by the ledger's bound)")
        sys.exit(1)
    except ConnectionError as exc:
        raise click.UsageError(f"the shared ledger cannot be reached ({exc})") from exc
    finally:
        ledger.close()
    click.echo(f"cleared {qid}")


@quarantine_group.command("status")
@click.argument("qids", nargs=-1, required=True)
@_URL
def status_cmd(qids: tuple[str, ...], cas_url: str | None) -> None:
    """Whether each id is held, and cleared."""
    ledger = _ledger(cas_url)
    try:
        for qid in qids:
            if not ledger.is_held(qid):
                click.echo(f"{qid}: not held")
            else:
                click.echo(f"{qid}: held, {'cleared' if ledger.is_cleared(qid) else 'not cleared'}")
    except Exception as exc:  # redis errors: the store is down
        raise click.UsageError(
            f"the shared ledger cannot be reached ({type(exc).__name__})"
        ) from exc


def register(group: click.Group) -> None:
    """Attach this module's verbs to the `fak` group."""
    group.add_command(quarantine_group)
