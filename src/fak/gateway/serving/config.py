"""``ServeConfig``: what one ``fak serve`` runs with, as one frozen value (tier T3).

The CLI fills it from its flags and the process's ``fak.config.Settings`` (flags already folded
in); ``fak.gateway.serving.assembly`` builds every worker from it. It holds values only: the
planner, which only the CLI may choose (the gateway never imports the engine), is handed to the
assembly beside it. Defaults live where they are written once: the flags and ``Settings``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from fak.config import Settings

__all__ = ["AccessLogSink", "ServeConfig"]


class AccessLogSink(enum.StrEnum):
    """Where the access log goes; the values are the ``--access-log`` strings."""

    STDOUT = "stdout"
    STDERR = "stderr"
    OFF = "off"


@dataclass(frozen=True, slots=True)
class ServeConfig:
    settings: Settings  # FAK_* with --cas-url / --journal-url folded in
    host: str  # --addr, split
    port: int
    workers: int  # --workers: forked processes on one listening socket
    access_log: AccessLogSink
    policy_path: str | None = None  # --policy (None: the built-in default floor)
    # --root: the project directory path rules resolve against (None: the manifest's root, else
    # the directory fak serve started in); a manifest root that differs is a start-up error
    root: str | None = None
    # the secrets themselves (the CLI reads them from the variables the flags name)
    require_key: str | None = field(default=None, repr=False)  # --require-key-env
    witness_key: str | None = field(default=None, repr=False)  # --witness-key-env
    mcp_proxy_config: str | None = None  # --mcp-proxy: an mcpServers file served at /mcp
    recall_dir: str | None = None  # --recall-dir: persist each session as a recall core image
    examples: bool = False  # --examples: print curl commands once ready
    console: bool = True  # --no-console: do not serve the operator's console at /console
