"""The journal row: fields, validation, canonical bytes and the chain hash (tier T1).

A row is one JSON object on one line, keys in ``FIELDS`` order, empty fields omitted. Its
``hash`` is the sha256 of the row's canonical bytes without ``hash`` (which include ``prev_hash``),
so every byte of every row is covered and a row cannot be moved, dropped or edited without
breaking the chain at that row. Records carry names, verdicts and digests only: a digest field
that is not a sha256 digest is refused, so bytes cannot be smuggled into the journal.
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Mapping
from typing import Any, Final

import orjson

__all__ = [
    "DIGEST_FIELDS",
    "FIELDS",
    "JournalKind",
    "RowError",
    "build_row",
    "check_line",
    "journal_record",
    "row_hash",
    "row_line",
]

FIELDS: Final = (
    "seq",
    "ts_unix_nano",
    "kind",
    "tool",
    "trace_id",
    "verdict",
    "reason",
    "by",
    "taint",
    "policy",
    "args_digest",
    "result_digest",
    "prev_hash",
    "hash",
)
"""Every key a row may carry, in the order it is written."""


class JournalKind(enum.StrEnum):
    """Every row kind a writer may append (closed; the values are the strings on disk)."""

    DECIDE = "DECIDE"  # a call admitted by the fold (ALLOW / TRANSFORM)
    DENY = "DENY"  # a call refused
    HOLD = "HOLD"  # a call held for a witness (REQUIRE_WITNESS)
    VDSO_HIT = "VDSO_HIT"  # a call answered from the vDSO cache
    WITNESS_APPROVE = "WITNESS_APPROVE"
    WITNESS_REVOKE = "WITNESS_REVOKE"
    ADMIT = "ADMIT"  # a result admitted as-is
    PAGE_OUT = "PAGE_OUT"  # a benign result paged out behind a pointer
    PAGE_IN = "PAGE_IN"
    RESULT_DENY = "RESULT_DENY"
    QUARANTINE = "QUARANTINE"  # a result held out
    QUARANTINE_SPAN = "QUARANTINE_SPAN"  # one span held out of a partly admitted result
    MCP_SERVER_REQUEST = "MCP_SERVER_REQUEST"  # a downstream MCP server asked the client
    MCP_TOOL = "MCP_TOOL"  # a downstream MCP tool first seen
    MCP_TOOL_CHANGED = "MCP_TOOL_CHANGED"  # a downstream MCP tool changed its definition
    TOMBSTONE = "TOMBSTONE"  # a recall page retired
    KV_EVICT = "KV_EVICT"  # a span evicted from the engine's KV cache (deletion certificates)
    ROUTE = "ROUTE"  # one routing attempt over many upstreams (group, deployment, outcome)


DIGEST_FIELDS: Final = ("policy", "args_digest", "result_digest")
_TEXT_LIMITS: Final = {
    "tool": 256,
    "trace_id": 128,
    "verdict": 32,
    "reason": 32,
    "by": 64,
    "taint": 16,
}
_INPUT_KEYS: Final = frozenset({"kind", "digest", *_TEXT_LIMITS, *DIGEST_FIELDS})
_RESULT_KINDS: Final = frozenset(
    {
        JournalKind.ADMIT,
        JournalKind.QUARANTINE,
        JournalKind.RESULT_DENY,
        JournalKind.PAGE_OUT,
        JournalKind.PAGE_IN,
    }
)
_KINDS: Final = frozenset(JournalKind)
_REQUIRED: Final = ("seq", "ts_unix_nano", "kind", "prev_hash", "hash")
_HEX: Final = frozenset("0123456789abcdef")


class RowError(ValueError):
    """A record or a stored row that is not acceptable; the message names the field."""


def _is_kind(value: object) -> bool:
    return isinstance(value, str) and value in _KINDS


def _is_hex64(value: str) -> bool:
    return len(value) == 64 and _HEX.issuperset(value)


def _digest(name: str, value: object) -> str:
    if not isinstance(value, str):
        msg = f"{name} must be a sha256 hex digest string"
        raise RowError(msg)
    if value == "" or _is_hex64(value.removeprefix("sha256:")):
        return value
    msg = f"{name} must be a sha256 hex digest (64 lower-case hex), never content"
    raise RowError(msg)


def journal_record(
    kind: JournalKind,
    *,
    tool: str = "",
    trace_id: str = "",
    verdict: str = "",
    reason: str = "",
    by: str = "",
    policy: str = "",
    digest: str = "",
    args_digest: str = "",
    result_digest: str = "",
) -> dict[str, str]:
    """The record every writer hands to a ``JournalSink``: the kind and the fields given
    (empty ones left out, as ``build_row`` would). ``digest`` lands in ``result_digest`` for
    result-side kinds, else in ``args_digest``."""
    fields = {
        "tool": tool,
        "trace_id": trace_id,
        "verdict": verdict,
        "reason": reason,
        "by": by,
        "policy": policy,
        "digest": digest,
        "args_digest": args_digest,
        "result_digest": result_digest,
    }
    return {"kind": str(kind), **{name: value for name, value in fields.items() if value}}


def build_row(
    record: Mapping[str, Any], *, seq: int, ts_unix_nano: int, prev: str
) -> dict[str, Any]:
    """Validate a kernel record and turn it into the next row (with its hash).

    ``record`` keys: ``kind`` (required, a ``JournalKind``), ``tool``, ``trace_id``, ``verdict``,
    ``reason``, ``by``, ``taint`` (bounded strings, truncated), ``policy``, ``args_digest``,
    ``result_digest`` and ``digest`` (sha256 hex; ``digest`` lands in ``result_digest`` for
    result-side kinds such as QUARANTINE, else in ``args_digest``). Unknown keys are refused.
    """
    unknown = set(record) - _INPUT_KEYS
    if unknown:
        msg = f"unknown journal record field(s): {', '.join(sorted(map(str, unknown)))}"
        raise RowError(msg)
    kind = record.get("kind")
    if not _is_kind(kind):
        msg = "kind must be a JournalKind such as DECIDE, DENY, QUARANTINE, VDSO_HIT"
        raise RowError(msg)
    assert isinstance(kind, str)
    fields: dict[str, Any] = {"seq": seq, "ts_unix_nano": ts_unix_nano, "kind": str(kind)}
    for name, limit in _TEXT_LIMITS.items():
        value = record.get(name, "")
        if value is None:
            value = ""
        if not isinstance(value, str):
            msg = f"{name} must be a string"
            raise RowError(msg)
        fields[name] = str(value)[:limit]
    digests = {name: _digest(name, record.get(name, "") or "") for name in DIGEST_FIELDS}
    single = _digest("digest", record.get("digest", "") or "")
    if single:
        slot = "result_digest" if kind in _RESULT_KINDS else "args_digest"
        if digests[slot] and digests[slot] != single:
            msg = f"digest and {slot} disagree"
            raise RowError(msg)
        digests[slot] = single
    fields.update(digests)
    row = {name: fields[name] for name in FIELDS[:-2] if fields.get(name, "") != ""}
    row["prev_hash"] = prev
    row["hash"] = row_hash(row)
    return row


def row_hash(row: Mapping[str, Any]) -> str:
    """sha256 hex over the canonical bytes of ``row`` without its ``hash`` key."""
    body = {k: v for k, v in row.items() if k != "hash"}
    return hashlib.sha256(orjson.dumps(body)).hexdigest()


def row_line(row: Mapping[str, Any]) -> bytes:
    """The row as written: canonical JSON plus a newline."""
    return orjson.dumps(row) + b"\n"


def check_line(line: bytes, *, seq: int | None, prev: str | None) -> dict[str, Any]:
    """Parse one stored line (without its newline) as row ``seq`` following ``prev``.

    ``seq`` / ``prev`` of None skip the position checks (the row is only checked against itself).

    Raises ``RowError`` naming what is wrong: malformed JSON, a non-canonical encoding, an
    unknown or missing field, a sequence gap, a broken link, or a hash that does not match.
    """
    try:
        row = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise RowError("malformed JSON") from exc
    if not isinstance(row, dict):
        raise RowError("not a JSON object")
    for name in row:
        if name not in FIELDS:
            msg = f"unknown field {name[:40]!r}"
            raise RowError(msg)
    for name in _REQUIRED:
        if name not in row:
            msg = f"missing field {name!r}"
            raise RowError(msg)
    if list(row) != [name for name in FIELDS if name in row] or orjson.dumps(row) != line:
        raise RowError("not in canonical form (bytes were edited)")
    if type(row["seq"]) is not int or type(row["ts_unix_nano"]) is not int:
        raise RowError("seq and ts_unix_nano must be integers")
    if seq is not None and row["seq"] != seq:
        msg = f"sequence gap: expected seq {seq}, found {row['seq']!r}"
        raise RowError(msg)
    if prev is not None and row["prev_hash"] != prev:
        raise RowError("broken chain: prev_hash does not match the previous row's hash")
    if row_hash(row) != row["hash"]:
        raise RowError("tampered row: hash does not match its contents")
    return row
