"""Content-addressed blob storage (tier T1): sha256 names bytes, small payloads stay inline.

``MemoryStore`` is bounded and evicts unpinned blobs least recently used first (it is also the
in-memory double for tests); ``DirectoryStore`` is durable (atomic temp+rename+fsync) and
re-verifies every read. Both implement ``fak.abi.BlobStore``.
"""

from fak.cas.directory import DirectoryStore
from fak.cas.memory import DEFAULT_MAX_BYTES, MemoryStore
from fak.cas.refs import (
    CasStats,
    CorruptBlobError,
    digest_of,
    inline_bytes,
    is_digest,
    make_ref,
    parse_digest,
)

__all__ = [
    "DEFAULT_MAX_BYTES",
    "CasStats",
    "CorruptBlobError",
    "DirectoryStore",
    "MemoryStore",
    "digest_of",
    "inline_bytes",
    "is_digest",
    "make_ref",
    "parse_digest",
]
