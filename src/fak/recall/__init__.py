"""Durable sessions (tier T2): recall core images, tombstones, strict load.

A finished (or running) session is a ``recall.v1`` page table plus a content-addressed store of
every result's bytes. ``Session`` records results through the result gate, persists atomically
to an ``ImageStore`` (``DirectoryImage`` on disk, ``MemoryImage`` for tests), reloads with every
blob verified, and pages results back in only through the gate order (``resolve``).
"""

from fak.recall.errors import RecallError, RecallErrorCode
from fak.recall.feed import ChangeFeed, ChangeKind, ChangeLog, FeedPage, MemoryChangeLog
from fak.recall.image import (
    VERSION,
    ContextChange,
    Manifest,
    Page,
    benign_descriptor,
    decode_manifest,
    encode_manifest,
    sealed_descriptor,
    tombstone_id,
)
from fak.recall.plane import CoherencePlane, VdsoMiss, miss_reason
from fak.recall.session import Promotion, Resolution, ResolveStatus, Session, rescreen
from fak.recall.sessions import SessionDirectory, session_dir_name
from fak.recall.store import MANIFEST_NAME, DirectoryImage, ImageStore, MemoryImage

__all__ = [
    "MANIFEST_NAME",
    "VERSION",
    "ChangeFeed",
    "ChangeKind",
    "ChangeLog",
    "CoherencePlane",
    "ContextChange",
    "DirectoryImage",
    "FeedPage",
    "ImageStore",
    "Manifest",
    "MemoryChangeLog",
    "MemoryImage",
    "Page",
    "Promotion",
    "RecallError",
    "RecallErrorCode",
    "Resolution",
    "ResolveStatus",
    "Session",
    "SessionDirectory",
    "VdsoMiss",
    "benign_descriptor",
    "decode_manifest",
    "encode_manifest",
    "miss_reason",
    "rescreen",
    "sealed_descriptor",
    "session_dir_name",
    "tombstone_id",
]
