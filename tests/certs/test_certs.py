"""Minting and verifying deletion certificates against a real hash-chained journal file."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fak.certs import (
    CertError,
    CertErrorCode,
    Certificate,
    EvictionEvidence,
    decode_certificate,
    encode_certificate,
    load_or_create_key,
    mint,
    signed_bytes,
    verify_certificate,
    verify_certificate_bytes,
)
from fak.cli.main import cli
from fak.config import Settings
from fak.journal import Journal

DIGEST = "ab" * 32
EVIDENCE = EvictionEvidence(
    span_from=21, span_len=31, evicted_count=31, max_abs_delta=0.0, run_id="r"
)


def _journal(path: Path, digest: str = DIGEST) -> dict[str, object]:
    with Journal(path) as journal:
        journal.append({"kind": "QUARANTINE", "tool": "read_refund_policy", "digest": digest})
        journal.append({"kind": "KV_EVICT", "tool": "read_refund_policy", "result_digest": digest})
        return dict(journal.tail(1)[0])


@pytest.fixture
def minted(tmp_path: Path) -> tuple[Path, Path, Ed25519PrivateKey]:
    key = load_or_create_key(tmp_path / "keys" / "cert.pem")
    journal = tmp_path / "journal.jsonl"
    anchor = _journal(journal)
    cert = mint(EVIDENCE, anchor, key, issued_at_unix=1_700_000_000)
    path = tmp_path / "cert.json"
    path.write_bytes(encode_certificate(cert))
    return path, journal, key


def _resign(cert: Certificate, key: Ed25519PrivateKey, **update: object) -> Certificate:
    changed = cert.model_copy(update={**update, "signature": ""})
    return changed.model_copy(update={"signature": key.sign(signed_bytes(changed)).hex()})


def test_a_minted_certificate_verifies(minted: tuple[Path, Path, Ed25519PrivateKey]) -> None:
    path, journal, _ = minted
    verdict = verify_certificate_bytes(path.read_bytes(), journal)
    assert verdict.valid and verdict.code is None and verdict.self_attested
    cert = decode_certificate(path.read_bytes())
    assert cert.subject == DIGEST and cert.anchor.seq == 2 and cert.span.from_ == 21
    assert orjson.loads(path.read_bytes())["span"] == {"from": 21, "len": 31}
    assert orjson.loads(path.read_bytes())["schema"] == "fak.deletioncert/v1"


def test_each_binding_names_the_check_that_failed(
    minted: tuple[Path, Path, Ed25519PrivateKey], tmp_path: Path
) -> None:
    path, journal, key = minted
    cert = decode_certificate(path.read_bytes())
    cases = {
        CertErrorCode.SIGNATURE: cert.model_copy(update={"subject": "cd" * 32}),
        CertErrorCode.SUBJECT: _resign(cert, key, subject="cd" * 32),
        CertErrorCode.EQUIVALENCE: _resign(
            cert, key, equivalence=cert.equivalence.model_copy(update={"max_abs_delta": 1e-7})
        ),
        CertErrorCode.ANCHOR: _resign(
            cert, key, anchor=cert.anchor.model_copy(update={"result_digest": "cd" * 32})
        ),
        CertErrorCode.EVICTION: _resign(cert, key, evicted_count=0),
    }
    for code, bad in cases.items():
        verdict = verify_certificate(bad, journal)
        assert (verdict.valid, verdict.code) == (False, code), verdict
    other = Ed25519PrivateKey.generate()
    verdict = verify_certificate(_resign(cert, other, public_key=_hex(other)), journal)
    assert verdict.valid  # self-attested: any key verifies its own signature ...
    pinned = verify_certificate(
        _resign(cert, other, public_key=_hex(other)), journal, issuer=_hex(key)
    )
    assert pinned.code is CertErrorCode.ISSUER  # ... unless the issuer is pinned
    assert verify_certificate(cert, tmp_path / "nope.jsonl").code is CertErrorCode.JOURNAL_MISSING


def _hex(key: Ed25519PrivateKey) -> str:
    from cryptography.hazmat.primitives import serialization

    raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return raw.hex()


def test_an_edited_or_foreign_journal_is_refused(
    minted: tuple[Path, Path, Ed25519PrivateKey], tmp_path: Path
) -> None:
    path, journal, _ = minted
    lines = journal.read_bytes().splitlines(keepends=True)
    edited = tmp_path / "edited.jsonl"
    edited.write_bytes(lines[0] + lines[1].replace(DIGEST.encode(), b"cd" * 32))
    assert verify_certificate_bytes(path.read_bytes(), edited).code is CertErrorCode.JOURNAL_CHAIN
    foreign = tmp_path / "foreign.jsonl"
    _journal(foreign, "cd" * 32)  # a well-formed journal that recorded another eviction
    assert verify_certificate_bytes(path.read_bytes(), foreign).code is CertErrorCode.ANCHOR
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(lines[0])
    assert verify_certificate_bytes(path.read_bytes(), cut).code is CertErrorCode.ANCHOR


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_any_flipped_byte_in_a_certificate_is_refused(
    minted: tuple[Path, Path, Ed25519PrivateKey], data: st.DataObject
) -> None:
    path, journal, _ = minted
    raw = bytearray(path.read_bytes())
    offset = data.draw(st.integers(0, len(raw) - 1), label="offset")
    raw[offset] ^= data.draw(st.integers(1, 255), label="mask")
    verdict = verify_certificate_bytes(bytes(raw), journal)
    assert not verdict.valid and verdict.code is not None


def test_mint_refuses_an_inexact_or_empty_eviction(tmp_path: Path) -> None:
    key = load_or_create_key(tmp_path / "k.pem")
    anchor = _journal(tmp_path / "j.jsonl")
    inexact = EvictionEvidence(0, 4, 4, max_abs_delta=3e-6, run_id="r")
    with pytest.raises(CertError) as err:
        mint(inexact, anchor, key)
    assert err.value.code is CertErrorCode.EQUIVALENCE
    with pytest.raises(CertError) as err:
        mint(EvictionEvidence(0, 4, 0, 0.0, "r"), anchor, key)
    assert err.value.code is CertErrorCode.NO_EVICTION


def test_the_key_file_is_created_0600_once_and_refused_when_open(tmp_path: Path) -> None:
    path = tmp_path / "conf" / "fak" / "key.pem"
    first = load_or_create_key(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert _hex(load_or_create_key(path)) == _hex(first)
    os.chmod(path, 0o644)
    with pytest.raises(CertError) as err:
        load_or_create_key(path)
    assert err.value.code is CertErrorCode.KEY
    os.chmod(path, 0o600)
    path.write_bytes(b"not a key")
    with pytest.raises(CertError):
        load_or_create_key(path)


def test_the_key_path_comes_from_settings() -> None:
    env = {"HOME": "/home/u"}
    assert (
        Settings.from_environ(env).cert_key_path(env)
        == "/home/u/.config/fak/deletioncert-ed25519.pem"
    )
    env = {"HOME": "/home/u", "FAK_CERT_KEY": "/srv/k.pem"}
    assert Settings.from_environ(env).cert_key_path(env) == "/srv/k.pem"


def test_cli_verify_exit_codes(
    minted: tuple[Path, Path, Ed25519PrivateKey], tmp_path: Path
) -> None:
    path, journal, _ = minted
    ok = CliRunner().invoke(cli, ["cert", "verify", str(path), "--journal", str(journal)])
    assert ok.exit_code == 0 and ok.output.startswith("valid: ")
    foreign = tmp_path / "foreign.jsonl"
    _journal(foreign, "cd" * 32)
    bad = CliRunner().invoke(
        cli, ["cert", "verify", str(path), "--journal", str(foreign), "--json"]
    )
    assert bad.exit_code == 1
    body = orjson.loads(bad.output)
    assert body["valid"] is False and body["failed"] == "FAK-CERT-ANCHOR"
    assert body["signature_ok"] is True and body["anchor_ok"] is False
    text = CliRunner().invoke(cli, ["cert", "verify", str(path), "--journal", str(foreign)])
    assert text.output.startswith("invalid: [FAK-CERT-ANCHOR] the journal has no row 2") or (
        text.output.startswith("invalid: [FAK-CERT-ANCHOR] journal row 2")
    )
