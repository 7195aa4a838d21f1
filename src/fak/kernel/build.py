"""``build_kernel``: a Kernel assembled from settings (tier T2).

Opens the decision journal when an audit path is set, a durable directory blob store when a blob
directory is set (else a memory store bounded by the byte limit), and sizes the quarantine
ledger. With ``cas_url`` (Redis) the CAS, the quarantine ledger and the vDSO epochs are shared
by every worker; with ``journal_url`` (PostgreSQL) the journal is one chain for the fleet (both
need the ``shared`` extra, imported only then). This is the one place the kernel reads
settings: ``Kernel`` itself takes values. Settings are read through ``KernelSettings`` (any
object shaped like ``fak.config.Settings``), so the kernel does not import the config module.
"""

from __future__ import annotations

from typing import Any, Protocol

from fak.abi import AuditJournal, BlobStore, Clock
from fak.cas import DirectoryStore, MemoryStore
from fak.journal import Journal
from fak.kernel.kernel import Kernel
from fak.kernel.quarantine import QuarantineLedger
from fak.kernel.witness import WitnessBook
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

    @property
    def witness_ttl_s(self) -> float: ...

    @property
    def cas_url(self) -> str | None: ...

    @property
    def journal_url(self) -> str | None: ...


def build_kernel(
    settings: KernelSettings, policy: Policy | None = None, *, clock: Clock | None = None
) -> Kernel:
    """A Kernel for ``settings``; ``policy=None`` is the built-in default floor.

    Raises ``ValueError`` for conflicting or malformed store settings and ``ConnectionError``
    when a configured shared store cannot be reached at start.
    """
    cas_url, journal_url = settings.cas_url, settings.journal_url
    if journal_url and settings.audit_journal:
        msg = "set FAK_JOURNAL_URL (PostgreSQL) or FAK_AUDIT_JOURNAL (a file), not both"
        raise ValueError(msg)
    shared: dict[str, Any] = {}
    store: BlobStore
    if cas_url:
        from fak.cas.redis import CasUnavailable, RedisStore, connect, redact_url
        from fak.kernel.shared import RedisEpochs, RedisHeldTable, RedisWitnessStore

        client = connect(cas_url)
        store = RedisStore(client, max_bytes=settings.blob_max_bytes)
        if not store.ping():
            msg = f"cannot reach the shared store FAK_CAS_URL={redact_url(cas_url)}"
            raise CasUnavailable(msg)
        table = RedisHeldTable(
            client, max_held=settings.ctxmmu_max_held, max_held_bytes=settings.held_bytes_bound
        )
        shared["ledger"] = QuarantineLedger(
            store, pageout_bytes=settings.pageout_bytes, table=table
        )
        shared["epochs"] = RedisEpochs(client)
        witnesses = RedisWitnessStore(client, ttl_s=settings.witness_ttl_s)
        shared["witness_book"] = WitnessBook(store=witnesses)
    elif settings.blob_dir:
        store = DirectoryStore(settings.blob_dir)
    else:
        store = MemoryStore(settings.blob_max_bytes)
    journal: AuditJournal | None = None
    if journal_url:
        from fak.journal.postgres import PostgresJournal

        journal = PostgresJournal(journal_url, clock=clock)
    elif settings.audit_journal:
        journal = Journal(settings.audit_journal, clock=clock)
    return Kernel(
        policy,
        store=store,
        journal=journal,
        clock=clock,
        max_held=settings.ctxmmu_max_held,
        max_held_bytes=settings.held_bytes_bound,
        pageout_bytes=settings.pageout_bytes,
        witness_ttl_s=settings.witness_ttl_s,
        **shared,
    )
