"""Ref construction, digest parsing and store statistics shared by the CAS backends (tier T1).

A digest is 64 lower-case hex characters of sha256, no prefix (``sha256:`` is accepted on input).
Anything else is refused before it can reach a dict key or a file path.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from fak.abi import INLINE_MAX, Ref, RefKind

__all__ = [
    "CasStats",
    "CorruptBlobError",
    "digest_of",
    "inline_bytes",
    "is_digest",
    "make_ref",
    "parse_digest",
]

_HEX = frozenset("0123456789abcdef")


class CorruptBlobError(ValueError):
    """Stored bytes no longer hash to their digest. The bytes are never returned."""


@dataclass(frozen=True, slots=True)
class CasStats:
    """Counters and gauges of one store."""

    puts: int = 0
    dedup_hits: int = 0
    resolves: int = 0
    evicted: int = 0
    resident_blobs: int = 0
    resident_bytes: int = 0
    pinned_blobs: int = 0
    max_bytes: int = 0


def digest_of(data: bytes) -> str:
    """sha256 of ``data`` as lower-case hex."""
    return hashlib.sha256(data).hexdigest()


def is_digest(value: object) -> bool:
    return isinstance(value, str) and len(value) == 64 and _HEX.issuperset(value)


def parse_digest(value: str) -> str:
    """``value`` as a bare lower-case digest; ``KeyError`` for anything that is not one."""
    text = value[7:] if isinstance(value, str) and value.startswith("sha256:") else value
    if not is_digest(text):
        msg = f"not a sha256 hex digest: {str(value)[:80]!r}"
        raise KeyError(msg)
    return text


def make_ref(data: bytes) -> Ref:
    """The Ref naming ``data``: inline for ≤ ``INLINE_MAX`` bytes, else a blob name."""
    digest = digest_of(data)
    if len(data) <= INLINE_MAX:
        return Ref(digest=digest, length=len(data), kind=RefKind.INLINE, inline=bytes(data))
    return Ref(digest=digest, length=len(data), kind=RefKind.BLOB)


def inline_bytes(ref: Ref) -> bytes:
    """The bytes an inline Ref carries, after checking they still match its digest."""
    data = ref.inline
    if data is None:
        msg = "not an inline Ref"
        raise KeyError(msg)
    if digest_of(data) != ref.digest or len(data) != ref.length:
        msg = f"inline bytes do not match digest {ref.digest}"
        raise CorruptBlobError(msg)
    return data
