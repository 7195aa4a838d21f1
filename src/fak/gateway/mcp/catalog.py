"""The proxy's tool catalogue: namespacing, description screening, rug-pull holds (tier T3).

``Catalog.update(server, tools)`` takes a downstream server's current tool list and decides, per
tool, what the client may see: the tool is exposed as ``<server><sep><tool>``; a tool whose
description, title or input schema the result screen would not admit is POISONED (hidden, its
calls refused); a tool whose definition digest differs from the one first seen this session (or
from the digest pinned in ``tool_digests``) is HELD under ``on_schema_change: hold`` and
admitted with a journal row under ``admit_and_log``. Whether the floor could ever admit the
name is checked at list time (the policy may be reloaded). Every first sighting and every
change is one journal row (names and digests only, never descriptions).
"""

from __future__ import annotations

import enum
import hashlib
import logging
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import mcp.types as types
import orjson

from fak.abi import VerdictKind
from fak.gateway.mcp.config import OnChange
from fak.journal import JournalKind, journal_record
from fak.kernel import Kernel
from fak.kernel.views import decoded_view

__all__ = ["Catalog", "Entry", "ToolState", "tool_digest"]

_log = logging.getLogger(__name__)


class ToolState(enum.StrEnum):
    LISTED = "listed"  # the client may see and call it (the floor still decides each call)
    POISONED = "poisoned"  # its definition failed the screen: hidden, calls refused
    HELD = "held"  # its definition changed and no pin admits the change: hidden, calls refused


@dataclass(frozen=True, slots=True)
class Entry:
    """One downstream tool as the proxy exposes it."""

    exposed: str
    server: str
    tool: types.Tool
    digest: str
    state: ToolState
    why: str = ""  # reason name for a refused state


def tool_digest(tool: types.Tool) -> str:
    """``sha256:`` of the tool definition's canonical JSON (name, title, description, schemas,
    annotations): what a ``tool_digests`` pin names."""
    doc = tool.model_dump(
        by_alias=True,
        exclude_none=True,
        include={"name", "title", "description", "input_schema", "output_schema", "annotations"},
    )
    blob = orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)
    return "sha256:" + hashlib.sha256(blob).hexdigest()


def _screen_texts(tool: types.Tool) -> tuple[bytes, bytes]:
    """Every string the model will read in the tool's definition: as JSON, and decoded (keys
    and leaves one per line, so an escaped line break splits nothing)."""
    parts: list[Any] = [tool.name, tool.title or "", tool.description or "", tool.input_schema]
    if tool.annotations is not None and tool.annotations.title:
        parts.append(tool.annotations.title)
    return orjson.dumps(parts), decoded_view(parts).encode("utf-8", "replace")


class Catalog:
    """Exposed name -> Entry for every downstream tool; thread- and task-safe swaps."""

    def __init__(
        self,
        kernel: Kernel,
        *,
        separator: str,
        on_change: OnChange,
        pins: Mapping[str, Mapping[str, str]] | None = None,
    ) -> None:
        self._kernel = kernel
        self._sep = separator
        self._on_change = on_change
        self._pins = {server: dict(p) for server, p in (pins or {}).items()}
        self._baseline: dict[str, str] = {}  # exposed -> digest admitted this session
        self._entries: dict[str, Entry] = {}
        self._lock = threading.Lock()
        self.rug_pulls = 0
        self.poisoned = 0

    def exposed_name(self, server: str, tool: str) -> str:
        return f"{server}{self._sep}{tool}"

    def get(self, exposed: str) -> Entry | None:
        return self._entries.get(exposed)

    def entries(self) -> tuple[Entry, ...]:
        return tuple(self._entries.values())

    def could_admit(self, exposed: str) -> bool:
        """The floor admits this name for some arguments (allowed by name, not denied)."""
        policy = self._kernel.policy
        return policy.names_allowed(exposed) and policy.deny_reason(exposed) is None

    def visible(self) -> list[types.Tool]:
        """The tools/list answer: listed entries the floor could admit, under exposed names.

        ``outputSchema`` is not forwarded: a refusal or a quarantine stub is a text envelope,
        which a client validating structured output against the server's schema would reject.
        """
        out: list[types.Tool] = []
        for entry in self._entries.values():
            if entry.state is ToolState.LISTED and self.could_admit(entry.exposed):
                out.append(
                    entry.tool.model_copy(update={"name": entry.exposed, "output_schema": None})
                )
        return out

    def _journal(self, record: dict[str, str]) -> None:
        journal = self._kernel.journal
        if journal is None:
            return
        try:
            journal.append(record)
        except Exception as exc:
            _log.error(
                "journal append failed (%s) tool=%s",
                type(exc).__name__,
                str(record.get("tool"))[:200],
            )

    def _judge(self, server: str, tool: types.Tool, digest: str, exposed: str) -> Entry:
        as_json, decoded = _screen_texts(tool)
        verdict = self._kernel.ledger.screen(as_json)
        if verdict.kind == VerdictKind.ALLOW:
            verdict = self._kernel.ledger.screen(decoded)
        if verdict.kind != VerdictKind.ALLOW:
            self.poisoned += 1
            return Entry(exposed, server, tool, digest, ToolState.POISONED, verdict.reason.name)
        pin = self._pins.get(server, {}).get(tool.name)
        baseline = self._baseline.get(exposed)
        if pin is not None:
            if digest == pin:
                self._baseline[exposed] = digest
                return Entry(exposed, server, tool, digest, ToolState.LISTED)
            return Entry(exposed, server, tool, digest, ToolState.HELD, "DIGEST_UNPINNED")
        if baseline is None or baseline == digest:
            self._baseline[exposed] = digest
            return Entry(exposed, server, tool, digest, ToolState.LISTED)
        if self._on_change is OnChange.ADMIT_AND_LOG:
            self._baseline[exposed] = digest
            return Entry(exposed, server, tool, digest, ToolState.LISTED)
        return Entry(exposed, server, tool, digest, ToolState.HELD, "DEFINITION_CHANGED")

    def update(self, server: str, tools: Iterable[types.Tool]) -> bool:
        """Replace ``server``'s tools; journal what is new or changed. True if the visible
        menu may have changed."""
        fresh: dict[str, Entry] = {}
        for tool in tools:
            exposed = self.exposed_name(server, tool.name)
            digest = tool_digest(tool)
            old = self._entries.get(exposed)
            if old is not None and old.digest == digest:
                fresh[exposed] = old
                continue
            seen_before = exposed in self._baseline
            entry = self._judge(server, tool, digest, exposed)
            fresh[exposed] = entry
            replaced = seen_before and old is not None
            row = journal_record(
                JournalKind.MCP_TOOL_CHANGED if seen_before else JournalKind.MCP_TOOL,
                tool=exposed,
                verdict=str(entry.state).upper(),
                reason=entry.why,
                by="mcp-proxy",
                policy=self._kernel.policy_version,
                args_digest=digest.removeprefix("sha256:"),
                # the definition it replaced
                result_digest=old.digest.removeprefix("sha256:") if replaced and old else "",
            )
            if replaced:
                self.rug_pulls += 1
                _log.warning("mcp proxy: %s changed its definition -> %s", exposed, entry.state)
            elif entry.state is ToolState.POISONED:
                _log.warning("mcp proxy: %s hidden: its definition failed the screen", exposed)
            self._journal(row)
        with self._lock:
            before = {k: v for k, v in self._entries.items() if v.server == server}
            merged = {k: v for k, v in self._entries.items() if v.server != server}
            merged.update(fresh)
            self._entries = merged
        return before != fresh
