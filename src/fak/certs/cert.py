"""The ``fak.deletioncert/v1`` certificate: fields, canonical bytes, minting (tier T2).

A certificate binds three things under one ed25519 signature: an eviction from an inference
engine's KV cache (span and evicted count), the exactness claim of a witness run on that very
eviction (the next-token logits after eviction equal a run that never saw the span:
``max_abs_delta == 0``), and the journal row that recorded it (its seq, hashes and the evicted
result's digest, which is the certificate's subject). The signature covers the canonical JSON of
every field in order with ``signature`` empty. The file is that canonical JSON (2-space indent),
so a reader can refuse any non-canonical byte. Self-attested in v1: integrity, not independence.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Final, Literal

import orjson
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from fak.certs.errors import CertError, CertErrorCode
from fak.certs.keys import public_key_hex

__all__ = [
    "DEFAULT_METHOD",
    "DEFAULT_SCOPE",
    "SCHEMA",
    "Anchor",
    "Certificate",
    "Equivalence",
    "EvictionEvidence",
    "ExternalAnchor",
    "Span",
    "decode_certificate",
    "encode_certificate",
    "mint",
    "signed_bytes",
]

SCHEMA: Final = "fak.deletioncert/v1"
DEFAULT_SCOPE: Final = "inference-working-set+agent-memory"
DEFAULT_METHOD: Final = "kv-cache-eviction"
EXACT_CLAIM: Final = "bit-exact"

Hex64 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
Text = Annotated[str, Field(max_length=256)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class Span(_Strict):
    from_: Annotated[int, Field(ge=0, alias="from")]
    len: Annotated[int, Field(ge=0)]

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, populate_by_name=True)


class Equivalence(_Strict):
    claim: Text
    max_abs_delta: float
    run_id: Text


class Anchor(_Strict):
    seq: Annotated[int, Field(ge=1)]
    prev_hash: Annotated[str, Field(pattern=r"^([0-9a-f]{64})?$")]
    hash: Hex64
    result_digest: Text


class ExternalAnchor(_Strict):
    kind: Text = ""
    proof: Annotated[str, Field(max_length=65536)] = ""


class Certificate(_Strict):
    """Every field, in signing order; ``signature`` last."""

    schema_: Annotated[Literal["fak.deletioncert/v1"], Field(alias="schema")]
    subject: Text
    scope: Text
    method: Text
    model_path: Text
    code_commit: Text
    witness_name: Text
    span: Span
    evicted_count: Annotated[int, Field(ge=0)]
    equivalence: Equivalence
    anchor: Anchor
    journal_head: Annotated[str, Field(pattern=r"^([0-9a-f]{64})?$")]
    trust_epoch: Annotated[int, Field(ge=0)]
    issued_at_unix: Annotated[int, Field(ge=0)]
    external_anchor: ExternalAnchor
    public_key: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    signature: Annotated[str, Field(pattern=r"^([0-9a-f]{128})?$")]

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, populate_by_name=True)


@dataclass(frozen=True, slots=True)
class EvictionEvidence:
    """What the engine-side witness observed: the span, the count, the exactness result."""

    span_from: int
    span_len: int
    evicted_count: int
    max_abs_delta: float
    run_id: str
    witness_name: str = "evict-exact-vs-never-saw"
    model_path: str = "gqa-rope"
    code_commit: str = ""


def _body(cert: Certificate) -> dict[str, Any]:
    return cert.model_dump(mode="json", by_alias=True)


def signed_bytes(cert: Certificate) -> bytes:
    """The signature's pre-image: compact canonical JSON of every field, ``signature`` empty."""
    body = _body(cert)
    body["signature"] = ""
    return orjson.dumps(body)


def encode_certificate(cert: Certificate) -> bytes:
    return orjson.dumps(_body(cert), option=orjson.OPT_INDENT_2) + b"\n"


def decode_certificate(data: bytes) -> Certificate:
    """A certificate from its file bytes; ``CertError`` MALFORMED / SCHEMA otherwise."""
    try:
        raw = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        msg = f"not valid JSON (truncated or edited): {exc.msg} at byte {exc.pos}"
        raise CertError(CertErrorCode.MALFORMED, msg) from exc
    if not isinstance(raw, dict):
        raise CertError(CertErrorCode.MALFORMED, "a certificate is a JSON object")
    if raw.get("schema") != SCHEMA:
        msg = f"foreign schema {str(raw.get('schema'))[:40]!r}: expected {SCHEMA!r}"
        raise CertError(CertErrorCode.SCHEMA, msg)
    try:
        cert = Certificate.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err.get("loc", ())) or "certificate"
        msg = f"field {where}: {err.get('msg', 'invalid')}"
        raise CertError(CertErrorCode.MALFORMED, msg) from exc
    if encode_certificate(cert) != bytes(data):
        msg = "the file is not in canonical form (bytes were edited or reformatted)"
        raise CertError(CertErrorCode.MALFORMED, msg)
    return cert


def mint(
    evidence: EvictionEvidence,
    anchor_row: Mapping[str, Any],
    key: Ed25519PrivateKey,
    *,
    journal_head: str = "",
    trust_epoch: int = 0,
    subject: str = "",
    issued_at_unix: int | None = None,
) -> Certificate:
    """Sign a certificate for ``evidence`` anchored to the journal row that recorded it.

    Refuses (``CertError`` NO_EVICTION) an eviction of nothing, and (EQUIVALENCE) a witness that
    did not come out exact: a certificate is never minted for an inexact deletion. ``subject``
    defaults to the row's ``result_digest`` (the evicted result).
    """
    if evidence.evicted_count <= 0 or evidence.span_len <= 0:
        raise CertError(CertErrorCode.NO_EVICTION, "the eviction removed nothing: no certificate")
    if evidence.max_abs_delta != 0:
        msg = f"the witness measured max|delta| = {evidence.max_abs_delta!r}, not 0: no certificate"
        raise CertError(CertErrorCode.EQUIVALENCE, msg)
    digest = str(anchor_row.get("result_digest", ""))
    if not digest:
        raise CertError(CertErrorCode.ANCHOR, "the anchor row has no result_digest")
    unsigned = Certificate(
        schema_=SCHEMA,
        subject=subject or digest,
        scope=DEFAULT_SCOPE,
        method=DEFAULT_METHOD,
        model_path=evidence.model_path,
        code_commit=evidence.code_commit,
        witness_name=evidence.witness_name,
        span=Span(from_=evidence.span_from, len=evidence.span_len),
        evicted_count=evidence.evicted_count,
        equivalence=Equivalence(
            claim=EXACT_CLAIM, max_abs_delta=float(evidence.max_abs_delta), run_id=evidence.run_id
        ),
        anchor=Anchor(
            seq=int(anchor_row["seq"]),
            prev_hash=str(anchor_row["prev_hash"]),
            hash=str(anchor_row["hash"]),
            result_digest=digest,
        ),
        journal_head=journal_head or str(anchor_row["hash"]),
        trust_epoch=trust_epoch,
        issued_at_unix=int(time.time()) if issued_at_unix is None else issued_at_unix,
        external_anchor=ExternalAnchor(),
        public_key=public_key_hex(key),
        signature="",
    )
    signature = key.sign(signed_bytes(unsigned)).hex()
    return unsigned.model_copy(update={"signature": signature})
