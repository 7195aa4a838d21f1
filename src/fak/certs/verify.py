"""Re-checking a deletion certificate against the journal it claims (tier T2).

Checks run in a fixed order and the first failure is the verdict, by code: the public key is a
32-byte ed25519 key (and the expected issuer, when one is pinned), the signature verifies, the
equivalence claim is bit-exact with ``max_abs_delta == 0``, the eviction removed something, the
journal exists and its whole chain verifies, the anchor row is in it with the same seq and
hashes and its head is in it too, and the subject is that row's result digest. Never raises for
a bad certificate: the answer is a ``CertVerdict`` value.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from fak.certs.cert import EXACT_CLAIM, Certificate, decode_certificate, signed_bytes
from fak.certs.errors import CertError, CertErrorCode
from fak.journal import RowError, read_rows
from fak.journal import verify as verify_journal

__all__ = ["CertVerdict", "verify_certificate", "verify_certificate_bytes"]


@dataclass(frozen=True, slots=True)
class CertVerdict:
    """``valid``, or the first failed check's ``code`` and a ``reason`` saying what differed."""

    valid: bool
    code: CertErrorCode | None = None
    reason: str = ""
    signature_ok: bool = False
    equivalence_ok: bool = False
    anchor_ok: bool = False
    subject_bound: bool = False
    self_attested: bool = True

    def to_json(self) -> dict[str, object]:
        return {
            "valid": self.valid,
            "failed": str(self.code) if self.code else "",
            "reason": self.reason,
            "signature_ok": self.signature_ok,
            "equivalence_ok": self.equivalence_ok,
            "anchor_ok": self.anchor_ok,
            "subject_bound": self.subject_bound,
            "self_attested": self.self_attested,
        }


def verify_certificate_bytes(
    data: bytes, journal: str | os.PathLike[str] | None, *, issuer: str = ""
) -> CertVerdict:
    """Parse then verify; a malformed or foreign certificate is a failed verdict, not an error."""
    try:
        cert = decode_certificate(data)
    except CertError as err:
        return CertVerdict(False, err.code, err.message)
    return verify_certificate(cert, journal, issuer=issuer)


def verify_certificate(
    cert: Certificate, journal: str | os.PathLike[str] | None, *, issuer: str = ""
) -> CertVerdict:
    """Every check, in order; ``issuer`` pins the expected public key (hex)."""
    attested = not cert.external_anchor.kind
    state = {"self_attested": attested}

    def fail(code: CertErrorCode, reason: str, **done: bool) -> CertVerdict:
        return CertVerdict(False, code, reason, **{**state, **done})

    try:
        public = Ed25519PublicKey.from_public_bytes(bytes.fromhex(cert.public_key))
    except ValueError:
        return fail(CertErrorCode.PUBLIC_KEY, "public_key is not a 32-byte ed25519 key")
    if issuer and issuer.lower() != cert.public_key:
        return fail(CertErrorCode.ISSUER, "signed by a different key than the pinned issuer")
    try:
        public.verify(bytes.fromhex(cert.signature), signed_bytes(cert))
    except (InvalidSignature, ValueError):
        return fail(CertErrorCode.SIGNATURE, "the signature does not match the certificate")
    eq = cert.equivalence
    if eq.claim != EXACT_CLAIM or eq.max_abs_delta != 0:
        why = f"equivalence not bit-exact (claim {eq.claim!r}, max_abs_delta {eq.max_abs_delta!r})"
        return fail(CertErrorCode.EQUIVALENCE, why, signature_ok=True)
    ok = {"signature_ok": True, "equivalence_ok": True}
    if cert.evicted_count <= 0 or cert.span.len <= 0:
        return fail(CertErrorCode.EVICTION, "the certificate records no eviction", **ok)
    if journal is None or not os.path.isfile(journal):
        return fail(CertErrorCode.JOURNAL_MISSING, "no journal to check the anchor against", **ok)
    try:
        report = verify_journal(journal)
    except OSError as exc:
        why = f"cannot read the journal: {exc.strerror or type(exc).__name__}"
        return fail(CertErrorCode.JOURNAL_MISSING, why, **ok)
    if not report.ok:
        why = f"journal chain broken at row {report.bad_row}: {report.error}"
        return fail(CertErrorCode.JOURNAL_CHAIN, why, **ok)
    anchor = cert.anchor
    row = None
    head_seen = False
    try:
        for candidate in read_rows(journal):
            if candidate["seq"] == anchor.seq:
                row = candidate
            if candidate["hash"] == cert.journal_head and candidate["seq"] >= anchor.seq:
                head_seen = True
    except (RowError, OSError) as exc:
        return fail(CertErrorCode.JOURNAL_CHAIN, f"journal unreadable: {exc}", **ok)
    if row is None:
        why = f"the journal has no row {anchor.seq} (another journal, or rows were cut)"
        return fail(CertErrorCode.ANCHOR, why, **ok)
    if row["hash"] != anchor.hash or row["prev_hash"] != anchor.prev_hash:
        why = f"journal row {anchor.seq} is not the anchored row (hash differs)"
        return fail(CertErrorCode.ANCHOR, why, **ok)
    if row.get("result_digest", "") != anchor.result_digest:
        why = f"journal row {anchor.seq} records a different result digest"
        return fail(CertErrorCode.ANCHOR, why, **ok)
    if not head_seen:
        why = "the journal does not reach the certificate's journal_head (rows were cut)"
        return fail(CertErrorCode.ANCHOR, why, **ok)
    ok["anchor_ok"] = True
    if not cert.subject or cert.subject != anchor.result_digest:
        why = "the subject is not the anchored result's digest (relabelled)"
        return fail(CertErrorCode.SUBJECT, why, **ok)
    return CertVerdict(True, None, "", True, True, True, True, attested)
