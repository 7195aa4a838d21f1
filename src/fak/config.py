"""Settings, built once from flags, an explicitly passed environ and files (tier T2).

This is the only module that reads process environment variables (apart from
``fak.cli.hookclient``, the hook's launcher, which cannot afford this module's imports), and only
through ``Settings.from_environ(environ)`` where the caller passes the mapping (the CLI passes
``os.environ``; tests pass a dict). Library code receives a ``Settings`` or plain arguments;
``Settings.current()`` is the process's settings, for library defaults (a bare ``Kernel()``
honours ``FAK_CTXMMU_MAX_HELD`` and friends like ``fak serve`` does). Stdlib only, so every
package above the vocabulary may import it.
A bad value for a bounded setting falls back to its default rather than loosening anything.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace

__all__ = ["Settings", "prepare_engine_numerics", "process_environ", "user_cache_dir"]

_GIB = 1024 * 1024 * 1024


def _int(environ: Mapping[str, str], name: str, default: int, *, minimum: int = 0) -> int:
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        return default
    return value if value >= minimum else default


def _float(environ: Mapping[str, str], name: str, default: float) -> float:
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        return default
    return value if value >= 0 else default


def _list(environ: Mapping[str, str], name: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in environ.get(name, "").split(",") if part.strip())


@dataclass(frozen=True, slots=True)
class Settings:
    """Every knob fak reads from its environment, with its default."""

    audit_journal: str | None = None  # FAK_AUDIT_JOURNAL: path of the decision journal (opt-in)
    blob_max_bytes: int = _GIB  # FAK_BLOB_MAX_BYTES: memory CAS bound, 0 = unbounded
    blob_dir: str | None = None  # FAK_BLOB_DIR: durable directory CAS
    ctxmmu_max_held: int = 8192  # FAK_CTXMMU_MAX_HELD: quarantine ledger bound (results)
    ctxmmu_max_held_bytes: int = 256 * 1024 * 1024  # FAK_CTXMMU_MAX_HELD_BYTES: (bytes)
    pageout_bytes: int = 4096  # FAK_PAGEOUT_BYTES: benign results past this are paged out (0 off)
    http_read_timeout_s: float = 30.0  # FAK_HTTP_READ_TIMEOUT_S (0 disables)
    http_write_timeout_s: float = 90.0  # FAK_HTTP_WRITE_TIMEOUT_S (0 disables)
    http_idle_timeout_s: float = 120.0  # FAK_HTTP_IDLE_TIMEOUT_S (0 disables)
    upstream_max_bytes: int = 32 * 1024 * 1024  # FAK_UPSTREAM_MAX_BYTES: decompressed reply cap
    max_messages: int = 4096  # FAK_MAX_MESSAGES: messages in one request (more: 413)
    max_tool_calls: int = 1024  # FAK_MAX_TOOL_CALLS: tool calls in one request or turn
    allowed_hosts: tuple[str, ...] = ()  # FAK_ALLOWED_HOSTS: extra Host names (comma list)
    cors_origins: tuple[str, ...] = ()  # FAK_CORS_ORIGINS: origins allowed cross-site (comma)
    witness_ttl_s: float = 900.0  # FAK_WITNESS_TTL_S: how long a held call can be approved
    witness_key: str | None = None  # FAK_WITNESS_KEY: approves held calls over MCP (fak_witness)
    cert_key: str | None = None  # FAK_CERT_KEY: ed25519 key file of deletion certificates
    # N workers (docs/deploy.md): redis://… holds the CAS, quarantine ledger and vDSO epochs
    cas_url: str | None = None  # FAK_CAS_URL (unset: memory / FAK_BLOB_DIR, this process only)
    journal_url: str | None = None  # FAK_JOURNAL_URL: postgresql://… one chain for the fleet

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> Settings:
        journal = environ.get("FAK_AUDIT_JOURNAL", "").strip() or None
        blob_dir = environ.get("FAK_BLOB_DIR", "").strip() or None
        return cls(
            audit_journal=journal,
            blob_max_bytes=_int(environ, "FAK_BLOB_MAX_BYTES", _GIB),
            blob_dir=blob_dir,
            ctxmmu_max_held=_int(environ, "FAK_CTXMMU_MAX_HELD", 8192, minimum=1),
            pageout_bytes=_int(environ, "FAK_PAGEOUT_BYTES", 4096),
            ctxmmu_max_held_bytes=_int(
                environ, "FAK_CTXMMU_MAX_HELD_BYTES", 256 * 1024 * 1024, minimum=1
            ),
            http_read_timeout_s=_float(environ, "FAK_HTTP_READ_TIMEOUT_S", 30.0),
            http_write_timeout_s=_float(environ, "FAK_HTTP_WRITE_TIMEOUT_S", 90.0),
            http_idle_timeout_s=_float(environ, "FAK_HTTP_IDLE_TIMEOUT_S", 120.0),
            upstream_max_bytes=_int(environ, "FAK_UPSTREAM_MAX_BYTES", 32 * 1024 * 1024, minimum=1),
            max_messages=_int(environ, "FAK_MAX_MESSAGES", 4096, minimum=1),
            max_tool_calls=_int(environ, "FAK_MAX_TOOL_CALLS", 1024, minimum=1),
            allowed_hosts=_list(environ, "FAK_ALLOWED_HOSTS"),
            cors_origins=_list(environ, "FAK_CORS_ORIGINS"),
            witness_ttl_s=_float(environ, "FAK_WITNESS_TTL_S", 900.0) or 900.0,
            witness_key=environ.get("FAK_WITNESS_KEY") or None,
            cert_key=environ.get("FAK_CERT_KEY", "").strip() or None,
            cas_url=environ.get("FAK_CAS_URL", "").strip() or None,
            journal_url=environ.get("FAK_JOURNAL_URL", "").strip() or None,
        )

    @classmethod
    def current(cls) -> Settings:
        """The settings of this process's environment (read on each call: cheap, never stale)."""
        return cls.from_environ(os.environ)

    def hook_blob_dir(self, environ: Mapping[str, str]) -> str:
        """Where ``fak hook`` keeps held result bytes: ``FAK_BLOB_DIR``, else the user cache
        directory of ``environ`` (the hook's caller, which may be another process's)."""
        if self.blob_dir:
            return self.blob_dir
        return os.path.join(user_cache_dir(environ), "fak", "cas")

    def cert_key_path(self, environ: Mapping[str, str]) -> str:
        """The deletion-certificate signing key: ``FAK_CERT_KEY``, else
        ``$XDG_CONFIG_HOME/fak/deletioncert-ed25519.pem`` (``~/.config`` by default)."""
        if self.cert_key:
            return self.cert_key
        home = environ.get("HOME") or os.path.expanduser("~")
        config = environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
        return os.path.join(config, "fak", "deletioncert-ed25519.pem")

    @property
    def held_bytes_bound(self) -> int:
        """Held quarantined bytes stay within both their own bound and the blob store's."""
        bounds = [self.ctxmmu_max_held_bytes]
        if self.blob_max_bytes > 0:
            bounds.append(self.blob_max_bytes)
        return min(bounds)

    def process_local_stores(self) -> list[str]:
        """What keeps decision state in this process (so N workers would each have their own):
        empty when the shared stores are configured."""
        return [] if self.cas_url else ["FAK_CAS_URL (CAS, quarantine ledger, vDSO epochs)"]

    def with_overrides(self, **changes: object) -> Settings:
        """A copy with some fields replaced (flags win over the environment)."""
        return replace(self, **changes)  # type: ignore[arg-type]


def user_cache_dir(environ: Mapping[str, str]) -> str:
    """``XDG_CACHE_HOME``, else ``$HOME/.cache`` of ``environ``, else the process user's."""
    home = environ.get("HOME") or os.path.expanduser("~")
    return environ.get("XDG_CACHE_HOME") or os.path.join(home, ".cache")


def process_environ() -> Mapping[str, str]:
    """The process environment, for the CLI to pass into ``Settings.from_environ``."""
    return os.environ


# MKL reads this once, at the first GEMM. Its strict conditional-numerical-reproducibility mode
# makes GEMM rows independent of the row count (>= 4); the engine requests it and then proves the
# invariance it needs with a start-up probe.
ENGINE_MKL_CBWR = "AUTO,STRICT"
# OpenMP (torch's libgomp) reads this once, when torch is loaded. By default its idle threads
# spin between parallel regions; a decode step is a few hundred small regions back to back, so
# the engine's threads look CPU-bound to the kernel's scheduler, and when another process holds
# a core each region waits for a descheduled thread's next time slice: measured 25x slower
# decode with one core busy. Passive threads sleep at once and are woken promptly.
ENGINE_OMP_WAIT_POLICY = "PASSIVE"


def prepare_engine_numerics() -> str:
    """Set the engine's MKL and OpenMP runtime options before torch is imported.

    Called by ``fak.engine`` before its first torch import: ``MKL_CBWR`` (strict reproducible
    GEMMs) and ``OMP_WAIT_POLICY`` (sleep, do not spin, between parallel regions). A value the
    user already set wins; the engine's start-up self-test then decides whether exact mode is
    available. Returns the ``MKL_CBWR`` value in force.
    """
    os.environ.setdefault("OMP_WAIT_POLICY", ENGINE_OMP_WAIT_POLICY)
    return os.environ.setdefault("MKL_CBWR", ENGINE_MKL_CBWR)
