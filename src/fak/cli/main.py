"""Entry point of the ``fak`` command (tier T5).

Verbs live in modules named for what they do; each exposes ``register(group)``. This module only
assembles them, so adding a verb never touches another verb's module.
"""

from __future__ import annotations

import importlib
import logging

import click

__all__ = ["cli", "main"]

_VERB_MODULES = (
    "fak.cli.policy_cmds",  # preflight, policy, agent
    "fak.cli.hook_cmd",  # hook
    "fak.cli.init_cmd",  # init
    "fak.cli.wall_cmds",  # answer-shape, doctor, journal
    "fak.cli.serve_cmd",  # serve
    "fak.cli.mcp_cmd",  # mcp
    "fak.cli.witness_cmd",  # witness list|approve|revoke
    "fak.cli.recall_cmds",  # recall (demo, inspect, tombstone)
    "fak.cli.cert_cmds",  # cert (verify, demo)
    "fak.cli.fleet_cmds",  # quarantine (the shared ledger)
    "fak.cli.bench_cmd",  # bench
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="fak")
@click.option("-v", "--verbose", count=True, help="More log output on stderr.")
def cli(verbose: int) -> None:
    """fak — an agent kernel: a default-deny tool firewall and context kernel for LLM agents."""
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")


for _name in _VERB_MODULES:
    importlib.import_module(_name).register(cli)


def main() -> None:
    cli(prog_name="fak")


if __name__ == "__main__":
    main()
