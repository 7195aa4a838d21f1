"""Result admitters: the seam between the screens and the kernel's quarantine ledger (tier T1).

A ``ResultAdmitter`` looks at a tool result's bytes and answers a Verdict: ALLOW (no objection)
or QUARANTINE / DENY with a closed reason. The ledger folds the chain most-restrictive-wins.
Two admitters ship: the first-match screen and the de-obfuscating view; they share detectors but
not inputs, so each is an independent gate. Within one admission (``fak.screen.scope``) they
share work, never answers: a union RE2 pass over ASCII bytes, the intent model's window logits.
Admitters are pure; they never log the bytes.
"""

from __future__ import annotations

import functools
from typing import ClassVar, Final, Protocol, runtime_checkable

from fak.abi import Verdict
from fak.screen.deobfuscate import raw_starts, screen_deobfuscated
from fak.screen.detect import Finding, screen_bytes
from fak.screen.sources import SourceSettings

__all__ = [
    "DeobfuscatingScreen",
    "FirstMatchScreen",
    "ResultAdmitter",
    "SourceAwareAdmitter",
    "default_admitters",
    "finding_verdict",
]


@runtime_checkable
class ResultAdmitter(Protocol):
    """Above: the quarantine ledger (kernel). Below: pure detectors over bytes.

    ``admit`` returns ALLOW (or DEFER) to let the bytes through, QUARANTINE or DENY (with a reason)
    to hold them out. It must not keep or log the bytes. Raising is treated as a hold (fail closed).
    """

    @property
    def name(self) -> str: ...

    def admit(self, data: bytes) -> Verdict: ...


@runtime_checkable
class SourceAwareAdmitter(ResultAdmitter, Protocol):
    """An admitter that honours per-source screen settings (the manifest's ``screen`` rules):
    the ledger calls ``admit_with`` when a tool's settings differ from the defaults, and plain
    ``admit`` otherwise (an admitter without settings is always judged by ``admit``)."""

    def admit_with(self, data: bytes, settings: SourceSettings) -> Verdict: ...


@functools.lru_cache(maxsize=64)
def _allowed(by: str) -> Verdict:
    return Verdict.allow(by)  # frozen, with empty meta: one value per admitter serves every call


def finding_verdict(finding: Finding | None, by: str) -> Verdict:
    """ALLOW for no finding, else QUARANTINE with the finding's reason and detector in meta."""
    if finding is None:
        return _allowed(by)
    meta = {"detector": str(finding.detector)}
    if finding.detail:
        meta["detail"] = finding.detail
    if finding.span is not None:
        meta["span"] = f"{finding.span[0]}-{finding.span[1]}"
    return Verdict.quarantine(
        finding.reason,
        by,
        claim=f"{by} {finding.reason.name} {finding.detector}",
        meta=meta,
    )


class FirstMatchScreen:
    """The kernel's write-time gate over the raw bytes: secret, injection, pollution."""

    __slots__ = ()
    deterministic: ClassVar[bool] = True  # a pure function of the bytes (kernel may memoize)

    @property
    def name(self) -> str:
        return "ctxmmu"

    def admit(self, data: bytes) -> Verdict:
        return finding_verdict(screen_bytes(data, starts=raw_starts(data)), self.name)

    def admit_with(self, data: bytes, settings: SourceSettings) -> Verdict:
        """``admit`` under one source's settings (the ledger passes them per tool)."""
        return finding_verdict(screen_bytes(data, settings, starts=raw_starts(data)), self.name)


class DeobfuscatingScreen:
    """Defense in depth: the same detectors over normalized and decoded views of the bytes.

    ``include_raw=True`` (the default) also screens the raw bytes, so the screen stands alone;
    the default chain passes False because ``FirstMatchScreen`` already screens them.
    """

    __slots__ = ("_include_raw",)
    deterministic: ClassVar[bool] = True  # a pure function of the bytes (kernel may memoize)

    def __init__(self, *, include_raw: bool = True) -> None:
        self._include_raw = include_raw

    @property
    def name(self) -> str:
        return "normgate"

    def admit(self, data: bytes) -> Verdict:
        found = screen_deobfuscated(data, include_raw=self._include_raw)
        return finding_verdict(found, self.name)

    def admit_with(self, data: bytes, settings: SourceSettings) -> Verdict:
        """``admit`` under one source's settings (the ledger passes them per tool)."""
        found = screen_deobfuscated(data, include_raw=self._include_raw, settings=settings)
        return finding_verdict(found, self.name)


_SOURCE_AWARE: Final[tuple[type[SourceAwareAdmitter], ...]] = (
    FirstMatchScreen,
    DeobfuscatingScreen,
)  # the shipped admitters honour per-source settings (a renamed member fails the type check)


def default_admitters() -> tuple[ResultAdmitter, ...]:
    """The shipped result chain: the first-match screen, then the de-obfuscating views.

    The second admitter skips re-screening the raw bytes, which the first one just screened.
    """
    return (FirstMatchScreen(), DeobfuscatingScreen(include_raw=False))
