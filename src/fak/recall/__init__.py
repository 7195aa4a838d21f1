"""Durable sessions (tier T2): recall core images, tombstones, strict load.

A finished (or running) session is a ``recall.v1`` page table plus a content-addressed store of
every result's bytes. ``Session`` records results through the result gate, persists atomically
to an ``ImageStore`` (``DirectoryImage`` on disk, ``MemoryImage`` for tests), reloads with every
blob verified, and pages results back in only through the gate order (``resolve``).
"""

from fak.recall.errors import RecallError, RecallErrorCode
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
from fak.recall.session import Resolution, ResolveStatus, Session, rescreen
from fak.recall.store import MANIFEST_NAME, DirectoryImage, ImageStore, MemoryImage

__all__ = [
    "MANIFEST_NAME",
    "VERSION",
    "ContextChange",
    "DirectoryImage",
    "ImageStore",
    "Manifest",
    "MemoryImage",
    "Page",
    "RecallError",
    "RecallErrorCode",
    "Resolution",
    "ResolveStatus",
    "Session",
    "benign_descriptor",
    "decode_manifest",
    "encode_manifest",
    "rescreen",
    "sealed_descriptor",
    "tombstone_id",
]
