"""Stable codes of deletion-certificate failures, one per check (tier T2).

``verify`` reports the first failing check by its code; ``CertError`` carries a code for the
things that are not a verification (a bad key file, a refused mint, an unreadable file).
"""

from __future__ import annotations

import enum

__all__ = ["CertError", "CertErrorCode"]


class CertErrorCode(enum.StrEnum):
    """One code per check, in verification order, then mint/key failures (wire strings)."""

    MALFORMED = "FAK-CERT-MALFORMED"
    SCHEMA = "FAK-CERT-SCHEMA"
    PUBLIC_KEY = "FAK-CERT-PUBLIC-KEY"
    ISSUER = "FAK-CERT-ISSUER"
    SIGNATURE = "FAK-CERT-SIGNATURE"
    EQUIVALENCE = "FAK-CERT-EQUIVALENCE"
    EVICTION = "FAK-CERT-EVICTION"
    JOURNAL_MISSING = "FAK-CERT-JOURNAL-MISSING"
    JOURNAL_CHAIN = "FAK-CERT-JOURNAL-CHAIN"
    ANCHOR = "FAK-CERT-ANCHOR"
    SUBJECT = "FAK-CERT-SUBJECT"
    KEY = "FAK-CERT-KEY"
    NO_EVICTION = "FAK-CERT-NO-EVICTION"


class CertError(ValueError):
    """A certificate could not be minted, read or checked; ``code`` is stable."""

    def __init__(self, code: CertErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return f"[{self.code}] {self.message}"
