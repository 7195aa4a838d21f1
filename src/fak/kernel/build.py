"""``build_kernel``: a Kernel assembled from settings (tier T2).

Opens the decision journal when an audit path is set, a durable directory blob store when a blob
directory is set (else a memory store bounded by the byte limit), and sizes the quarantine
ledger. It reads settings by attribute (any object shaped like ``fak.config.Settings``) so the
kernel does not import the config module, which sits in the same tier.
"""

from __future__ import annotations

from typing import Protocol

from fak.abi import BlobStore, Clock
from fak.cas import DirectoryStore, MemoryStore
from fak.journal import Journal
from fak.kernel.kernel import Kernel
from fak.policy import Policy

__all__ = ["KernelSettings", "build_kernel"]


class KernelSettings(Protocol):
    """The settings the kernel reads (``fak.config.Settings`` satisfies it)."""

    @property
    def audit_journal(self) -> str | None: ...

    @property
    def blob_dir(self) -> str | None: ...

    @property
    def blob_max_bytes(self) -> int: ...

    @property
    def ctxmmu_max_held(self) -> int: ...

    @property
    def held_bytes_bound(self) -> int: ...

    @property
    def pageout_bytes(self) -> int: ...


def build_kernel(
    settings: KernelSettings, policy: Policy | None = None, *, clock: Clock | None = None
) -> Kernel:
    """A Kernel for ``settings``; ``policy=None`` is the built-in default floor."""
    store: BlobStore
    if settings.blob_dir:
        store = DirectoryStore(settings.blob_dir)
    else:
        store = MemoryStore(settings.blob_max_bytes)
    journal = Journal(settings.audit_journal, clock=clock) if settings.audit_journal else None
    return Kernel(
        policy,
        store=store,
        journal=journal,
        clock=clock,
        max_held=settings.ctxmmu_max_held,
        max_held_bytes=settings.held_bytes_bound,
        pageout_bytes=settings.pageout_bytes,
    )
