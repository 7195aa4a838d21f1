"""Settings, built once from flags, an explicitly passed environ and files (tier T1).

This is the only module that reads process environment variables (apart from
``fak.hooks.client``, the hook's launcher, which cannot afford this module's imports), and only
through ``Settings.from_environ(environ)`` where the caller passes the mapping (the CLI passes
``os.environ``; tests pass a dict). Library code receives a ``Settings`` or plain arguments;
``Settings.current()`` is the process's settings (``build_kernel`` turns them into a Kernel's
values; a bare ``Kernel()`` reads none). Stdlib only, so every
package above the vocabulary may import it.
Each setting is one field naming its variable, its default and its reader, written once; a bad
value for a bounded setting falls back to that default rather than loosening anything.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import TypeVar

__all__ = [
    "Settings",
    "engine_workers_sleep",
    "prepare_engine_numerics",
    "process_environ",
    "user_cache_dir",
]

_GIB = 1024 * 1024 * 1024

_T = TypeVar("_T")

Read = Callable[[str, _T], _T]
"""How one variable's raw text (``""`` when unset) becomes a value, given the default."""


def _text(raw: str, default: str | None) -> str | None:
    return raw.strip() or default


def _secret(raw: str, default: str | None) -> str | None:
    return raw or default  # a key is taken as written, spaces and all


def _count(minimum: int) -> Read[int]:
    def read(raw: str, default: int) -> int:
        raw = raw.strip()
        if not raw:
            return default
        try:
            value = int(raw)
        except ValueError:
            return default
        return value if value >= minimum else default

    return read


def _seconds(*, zero: bool) -> Read[float]:
    """Non-negative seconds; with ``zero=False`` a zero also means the default."""

    def read(raw: str, default: float) -> float:
        raw = raw.strip()
        if not raw:
            return default
        try:
            value = float(raw)
        except ValueError:
            return default
        if not value >= 0:
            return default
        return value if value or zero else default

    return read


def _switch(raw: str, default: bool) -> bool:
    """``1``/``on``/``true``/``yes`` or ``0``/``off``/``false``/``no``; anything else: default."""
    word = raw.strip().lower()
    if word in ("1", "on", "true", "yes"):
        return True
    if word in ("0", "off", "false", "no"):
        return False
    return default


def _names(raw: str, default: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(part.strip() for part in raw.split(",") if part.strip()) or default


def _env(variable: str, default: _T, read: Read[_T]) -> _T:
    """A field read from ``variable`` by ``read``; the default is written here and only here."""
    return field(default=default, metadata={"env": variable, "read": read})


@dataclass(frozen=True, slots=True)
class Settings:
    """Every knob fak reads from its environment: its variable, its default, how it is read."""

    # path of the decision journal (opt-in)
    audit_journal: str | None = _env("FAK_AUDIT_JOURNAL", None, _text)
    blob_max_bytes: int = _env("FAK_BLOB_MAX_BYTES", _GIB, _count(0))  # memory CAS, 0 = unbounded
    blob_dir: str | None = _env("FAK_BLOB_DIR", None, _text)  # durable directory CAS
    # quarantine ledger bounds: held results, held bytes
    ctxmmu_max_held: int = _env("FAK_CTXMMU_MAX_HELD", 8192, _count(1))
    ctxmmu_max_held_bytes: int = _env("FAK_CTXMMU_MAX_HELD_BYTES", 256 * 1024 * 1024, _count(1))
    # benign results past this are paged out (0 off)
    pageout_bytes: int = _env("FAK_PAGEOUT_BYTES", 4096, _count(0))
    # page out by size on the model wires too (every client there can page in: fak serve
    # --pageout); off: only clients that say so (x-fak-pageout: on, fak-native routes, MCP)
    pageout_wire: bool = _env("FAK_PAGEOUT", False, _switch)
    # receiving the request body / producing the response / keep-alive idle (0 disables each)
    http_read_timeout_s: float = _env("FAK_HTTP_READ_TIMEOUT_S", 30.0, _seconds(zero=True))
    http_write_timeout_s: float = _env("FAK_HTTP_WRITE_TIMEOUT_S", 90.0, _seconds(zero=True))
    http_idle_timeout_s: float = _env("FAK_HTTP_IDLE_TIMEOUT_S", 120.0, _seconds(zero=True))
    # the upstream's decompressed reply cap
    upstream_max_bytes: int = _env("FAK_UPSTREAM_MAX_BYTES", 32 * 1024 * 1024, _count(1))
    max_messages: int = _env("FAK_MAX_MESSAGES", 4096, _count(1))  # in one request (more: 413)
    max_tool_calls: int = _env("FAK_MAX_TOOL_CALLS", 1024, _count(1))  # in one request or turn
    allowed_hosts: tuple[str, ...] = _env("FAK_ALLOWED_HOSTS", (), _names)  # extra Host names
    cors_origins: tuple[str, ...] = _env("FAK_CORS_ORIGINS", (), _names)  # allowed cross-site
    # how long a held call can be approved (0 means the default)
    witness_ttl_s: float = _env("FAK_WITNESS_TTL_S", 900.0, _seconds(zero=False))
    hookd_idle_s: float = _env("FAK_HOOKD_IDLE_S", 600.0, _seconds(zero=False))  # hook decider
    q4_kernel: bool = _env("FAK_Q4_KERNEL", True, _switch)  # off: fast mode on torch's int4
    witness_key: str | None = _env("FAK_WITNESS_KEY", None, _secret)  # approves held calls (MCP)
    cert_key: str | None = _env("FAK_CERT_KEY", None, _text)  # ed25519 key of deletion certs
    # N workers (docs/deploy.md): redis://… holds the CAS, quarantine ledger and vDSO epochs
    # (unset: memory / FAK_BLOB_DIR, this process only); postgresql://… one journal chain
    cas_url: str | None = _env("FAK_CAS_URL", None, _text)
    journal_url: str | None = _env("FAK_JOURNAL_URL", None, _text)

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> Settings:
        """Each field from its ``FAK_*`` variable in ``environ``; unset or bad: its default."""
        values = {
            f.name: f.metadata["read"](environ.get(f.metadata["env"], ""), f.default)
            for f in fields(cls)
        }
        return cls(**values)

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
    global _WORKERS_SLEEP
    if _WORKERS_SLEEP is None:
        # libgomp read the variable when torch was loaded: a value set now counts only if
        # torch is not loaded yet (a value the user set before starting the process counts)
        preset = os.environ.get("OMP_WAIT_POLICY")
        late = "torch" in sys.modules and preset is None
        policy = preset if preset is not None else ENGINE_OMP_WAIT_POLICY
        _WORKERS_SLEEP = not late and policy.strip().upper() == "PASSIVE"
    os.environ.setdefault("OMP_WAIT_POLICY", ENGINE_OMP_WAIT_POLICY)
    return os.environ.setdefault("MKL_CBWR", ENGINE_MKL_CBWR)


_WORKERS_SLEEP: bool | None = None


def engine_workers_sleep() -> bool:
    """Whether torch's idle OpenMP threads sleep (``OMP_WAIT_POLICY=PASSIVE`` in force).

    False when ``torch`` was imported before ``fak.engine`` with the variable unset: its
    threads then spin between parallel regions, and work the engine runs on threads of its
    own (attention rows split over a pool) competes with a spinning thread for the core
    (measured: a 6,000-token prefill at 220 tok/s with the split, 314 without it).
    """
    return bool(_WORKERS_SLEEP)
