"""Placeholder verb module (tier T4); its verbs are added by the issue that owns them."""

from __future__ import annotations

import click

__all__ = ["register"]


def register(group: click.Group) -> None:
    """Attach this module's verbs to the `fak` group."""
