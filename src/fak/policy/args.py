"""Decoding and digesting a call's arguments (tier T1).

A ``ToolCall`` carries its arguments either decoded (a mapping) or as the raw JSON text the wire
carried. ``decode_args`` turns them into a mapping once per decision, or None when the text is not
a JSON object (the preflight ladder's rung-0 refuses that). ``args_digest`` is the sha256 of the
canonical (sorted-key, compact) JSON, used for the vDSO key and the journal; never the bytes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

import orjson

__all__ = ["EMPTY_ARGS", "RawArgs", "args_digest", "canonical_args", "decode_args"]

EMPTY_ARGS: Final[Mapping[str, Any]] = MappingProxyType({})

RawArgs = Mapping[str, Any] | str | bytes | None


def decode_args(raw: RawArgs) -> Mapping[str, Any] | None:
    """The arguments as a mapping; ``{}`` for none; None when the text is not a JSON object."""
    if raw is None:
        return EMPTY_ARGS
    if isinstance(raw, Mapping):
        return raw
    text = raw.strip()
    if not text:
        return EMPTY_ARGS
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _fallback(value: object) -> object:
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return repr(value)


def canonical_args(raw: RawArgs) -> bytes:
    """Canonical JSON bytes of the arguments; raw text that is not an object is kept verbatim."""
    decoded = decode_args(raw)
    if decoded is None:
        assert raw is not None and not isinstance(raw, Mapping)
        return raw.encode("utf-8") if isinstance(raw, str) else bytes(raw)
    return orjson.dumps(
        decoded, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS, default=_fallback
    )


def args_digest(raw: RawArgs) -> str:
    """sha256 hex of ``canonical_args``."""
    return hashlib.sha256(canonical_args(raw)).hexdigest()
