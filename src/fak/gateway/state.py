"""What every route shares: the options a gateway runs with and the objects it serves from
(tier T3). Built once by ``fak.gateway.app.build_app``; routes receive it, never globals.

The options' configurable defaults are ``fak.config.Settings``' own (written there once);
``GatewayOptions.from_settings`` carries a process's settings over, the rest are the objects
and secrets the caller hands in.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from fak.config import Settings
from fak.gateway.accesslog import AccessLog
from fak.gateway.boundary import Boundary, KernelPort
from fak.gateway.http import DEFAULT_BODY_CAP
from fak.gateway.metrics import Metrics
from fak.gateway.turns import TurnRunner

__all__ = ["GatewayOptions", "GatewayState", "PolicyReloader"]

PolicyReloader = Callable[[], tuple[Any, Mapping[str, Any]]]
"""Loads the policy again from its source: returns (policy, summary) or raises with a message."""


_DEFAULTS: Final = Settings()


@dataclass(frozen=True, slots=True)
class GatewayOptions:
    body_cap: int = DEFAULT_BODY_CAP
    max_messages: int = _DEFAULTS.max_messages  # messages in one request (more → 413)
    max_tool_calls: int = _DEFAULTS.max_tool_calls  # tool calls in a request or a turn
    read_timeout_s: float = _DEFAULTS.http_read_timeout_s  # receiving the request body (0 = off)
    write_timeout_s: float = _DEFAULTS.http_write_timeout_s  # producing the response (0 = off)
    idle_timeout_s: float = _DEFAULTS.http_idle_timeout_s  # keep-alive idle (server level)
    ping_interval_s: float = 15.0  # Anthropic stream keep-alive while the planner is in flight
    require_key: str | None = None  # the secret itself (the CLI reads it from the named variable)
    # approving/revoking held calls: this key in X-Fak-Witness-Key when set; else the client key
    # (require_key) suffices; with neither, those routes refuse (403 witness_auth_required)
    witness_key: str | None = None
    policy_reloader: PolicyReloader | None = None
    policy_source: str = ""
    events: Callable[[int, int], list[dict[str, Any]]] | None = None  # (since, limit) -> rows
    journal_verify: Callable[[], Any] | None = None  # checks the chain: a journal VerifyReport
    console: bool = True  # serve the operator's console at /console (--no-console: off)
    access_log: Callable[[bytes], Any] | None = None
    ids: Callable[[], str] | None = None
    mcp: bool = True  # serve the MCP Streamable-HTTP endpoint at /mcp (fak.gateway.mcp.server)
    mcp_proxy: Any = None  # a fak.gateway.mcp.McpProxy: /mcp serves it instead of fak's own tools
    # Host names every route answers to: None = loopback names only; ("*",) = any (a public
    # bind behind its own auth); other names are added to the loopback ones (FAK_ALLOWED_HOSTS)
    allowed_hosts: tuple[str, ...] | None = None
    cors_origins: tuple[str, ...] = ()  # FAK_CORS_ORIGINS: origins whose preflights are answered
    clock: Callable[[], float] = field(default=time.time)
    recall_dir: str | None = None  # --recall-dir: persist each session as a recall core image
    # page benign results out by size on the model wires too (FAK_PAGEOUT / --pageout); off:
    # only for a request that says its client can page back in (x-fak-pageout: on)
    pageout: bool = _DEFAULTS.pageout_wire
    # where the change feed (/v1/fak/changes) keeps its events: None = this process; N workers
    # on one Redis share fak.kernel.shared_feed.RedisChangeLog (a fak.recall.ChangeLog)
    change_log: Any = None

    @classmethod
    def from_settings(cls, settings: Settings, **runtime: Any) -> GatewayOptions:
        """The options ``settings`` configure (timeouts, request caps, extra Host names, CORS
        origins); ``runtime`` adds or overrides the rest (keys, callables, the MCP proxy)."""
        configured: dict[str, Any] = {
            "max_messages": settings.max_messages,
            "max_tool_calls": settings.max_tool_calls,
            "read_timeout_s": settings.http_read_timeout_s,
            "write_timeout_s": settings.http_write_timeout_s,
            "idle_timeout_s": settings.http_idle_timeout_s,
            "allowed_hosts": settings.allowed_hosts or None,
            "cors_origins": settings.cors_origins,
            "pageout": settings.pageout_wire,
        }
        return cls(**(configured | runtime))


@dataclass(slots=True)
class GatewayState:
    kernel: KernelPort
    runner: TurnRunner
    boundary: Boundary
    metrics: Metrics
    log: AccessLog
    options: GatewayOptions
    plane: Any = None  # fak.recall.CoherencePlane: change feed, recorder, vDSO attribution
