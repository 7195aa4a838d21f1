"""A certificate minted from a real eviction on the in-kernel SmolLM2 (needs the engine extra)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from fak.certs import CertErrorCode, decode_certificate, encode_certificate, signed_bytes
from fak.certs import verify_certificate_bytes as verify
from fak.journal import Journal

pytestmark = pytest.mark.engine

_MISSING = [m for m in ("torch", "gguf", "tokenizers") if importlib.util.find_spec(m) is None]


@pytest.fixture(scope="module")
def engine() -> Any:
    if _MISSING:
        pytest.skip(f"engine extra not installed (missing {', '.join(_MISSING)})")
    import fak.engine

    try:
        fak.engine.default_gguf_path()
    except FileNotFoundError as exc:
        pytest.skip(str(exc))
    return fak.engine.load_engine(progress=False, threads=2)


def test_a_real_eviction_certificate_verifies_and_every_binding_can_fail(
    engine: Any, tmp_path: Path
) -> None:
    from cryptography.hazmat.primitives import serialization

    from fak.certs import load_or_create_key
    from fak.cli.cert_cmds import evict_and_certify

    journal_path = tmp_path / "journal.jsonl"
    key_path = tmp_path / "key.pem"
    with Journal(journal_path) as journal:
        done = evict_and_certify(engine, journal, str(key_path))
    assert done.max_abs_delta == 0.0  # the evicted cache's next-token logits == never-saw
    assert done.control_delta > 0.0  # and keeping the poison really moves them (non-vacuous)
    cert = done.certificate
    assert cert.evicted_count == cert.span.len > 0 and done.recomputed > 0
    assert cert.anchor.seq == 2 and cert.subject == done.anchor["result_digest"]
    data = encode_certificate(cert)
    assert verify(data, journal_path).valid

    # the journal row changed: the chain breaks at that row
    lines = journal_path.read_bytes().splitlines(keepends=True)
    edited = tmp_path / "edited.jsonl"
    edited.write_bytes(lines[0] + lines[1].replace(b'"by":"engine"', b'"by":"enginf"'))
    assert verify(data, edited).code is CertErrorCode.JOURNAL_CHAIN

    # the subject or max|delta| changed in the file: the signature no longer matches ...
    for old, new in (
        (cert.subject[:8], "00000000"),
        ('"max_abs_delta": 0.0', '"max_abs_delta": 0.5'),
    ):
        assert verify(data.replace(old.encode(), new.encode(), 1), journal_path).code is (
            CertErrorCode.SIGNATURE
        )
    # ... and re-signed by the same key, the binding checks still catch them
    key = load_or_create_key(key_path)
    pub = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    assert pub.hex() == cert.public_key

    def resign(**update: Any) -> bytes:
        changed = cert.model_copy(update={**update, "signature": ""})
        signed = changed.model_copy(update={"signature": key.sign(signed_bytes(changed)).hex()})
        return encode_certificate(signed)

    assert verify(resign(subject="0" * 64), journal_path).code is CertErrorCode.SUBJECT
    inexact = cert.equivalence.model_copy(update={"max_abs_delta": 2.0**-20})
    assert verify(resign(equivalence=inexact), journal_path).code is CertErrorCode.EQUIVALENCE
    assert decode_certificate(data) == cert
