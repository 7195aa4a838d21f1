"""Deletion certificates (tier T2): ed25519-signed receipts of exact KV-cache evictions.

``mint`` signs a ``fak.deletioncert/v1`` certificate binding an eviction, the witness's
exactness result (max|delta| == 0) and the journal row that recorded it; ``verify_certificate``
re-checks signature, exactness, the journal chain and the binding, naming the first failure.
The signing key is one ed25519 key in a 0600 file (``load_or_create_key``).
"""

from fak.certs.cert import (
    DEFAULT_METHOD,
    DEFAULT_SCOPE,
    SCHEMA,
    Anchor,
    Certificate,
    Equivalence,
    EvictionEvidence,
    ExternalAnchor,
    Span,
    decode_certificate,
    encode_certificate,
    mint,
    signed_bytes,
)
from fak.certs.errors import CertError, CertErrorCode
from fak.certs.keys import load_or_create_key, public_key_hex
from fak.certs.verify import CertVerdict, verify_certificate, verify_certificate_bytes

__all__ = [
    "DEFAULT_METHOD",
    "DEFAULT_SCOPE",
    "SCHEMA",
    "Anchor",
    "CertError",
    "CertErrorCode",
    "CertVerdict",
    "Certificate",
    "Equivalence",
    "EvictionEvidence",
    "ExternalAnchor",
    "Span",
    "decode_certificate",
    "encode_certificate",
    "load_or_create_key",
    "mint",
    "public_key_hex",
    "signed_bytes",
    "verify_certificate",
    "verify_certificate_bytes",
]
