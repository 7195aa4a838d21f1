"""Private keys without PEM armour (``fak.screen.secret_keys``): DER in base64 or hex (a PEM body
whose armour lines were cut, a cloud reply's ``privateKey``), a JSON Web Key's private member, a
PuTTY key file, .NET's XML RSA key, and the commercial SSH's and OpenVPN's armour. Before this,
each of them reached the model. The keys are generated here by ``cryptography`` (a dependency of
fak) for each run; certificates and public keys in the same encodings must pass."""

from __future__ import annotations

import base64
import datetime
import json
import os

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives import serialization as ser
from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed448, ed25519, rsa, x25519
from cryptography.x509.oid import NameOID

from fak.abi import ToolResult, VerdictKind
from fak.cas import MemoryStore
from fak.kernel.quarantine import QuarantineLedger
from fak.screen.secrets import find_secrets

KEYS = {
    "rsa-1024": lambda: rsa.generate_private_key(65537, 1024),
    "rsa-2048": lambda: rsa.generate_private_key(65537, 2048),
    "dsa-2048": lambda: dsa.generate_private_key(2048),
    "ec-p256": lambda: ec.generate_private_key(ec.SECP256R1()),
    "ec-p521": lambda: ec.generate_private_key(ec.SECP521R1()),
    "ec-k256": lambda: ec.generate_private_key(ec.SECP256K1()),
    "ed25519": ed25519.Ed25519PrivateKey.generate,
    "ed448": ed448.Ed448PrivateKey.generate,
    "x25519": x25519.X25519PrivateKey.generate,
}
FORMATS = {
    "pkcs8": (ser.PrivateFormat.PKCS8, ser.NoEncryption()),
    "pkcs8-encrypted": (ser.PrivateFormat.PKCS8, ser.BestAvailableEncryption(b"hunter2")),
    "traditional": (ser.PrivateFormat.TraditionalOpenSSL, ser.NoEncryption()),
}
CASES = [
    (key, form)
    for key in KEYS
    for form in FORMATS
    if form != "traditional" or key.split("-")[0] in ("rsa", "dsa", "ec")
]


def _der(key: str, form: str) -> bytes:
    private_format, encryption = FORMATS[form]
    return KEYS[key]().private_bytes(ser.Encoding.DER, private_format, encryption)


def _held(text: str) -> list[str]:
    return [hit.kind for hit in find_secrets(text.encode())]


@pytest.mark.parametrize(("key", "form"), CASES)
def test_a_der_private_key_in_base64_or_hex_is_held_in_every_carrier(key: str, form: str) -> None:
    der = _der(key, form)
    b64 = base64.b64encode(der).decode()
    pem_body = "\n".join(b64[i : i + 64] for i in range(0, len(b64), 64))
    carriers = {
        "yaml": f"signing:\n  key: {b64}\n",
        "json": json.dumps({"name": "deploy", "blob": b64}),
        "pem body without armour": f"Here is the key:\n{pem_body}\n",
        "hex": f"key bytes: {der.hex()}\n",
        "upper-case hex": f"KEY {der.hex().upper()}",
        "escaped newline before": json.dumps(f"first line\n{b64}"),
    }
    for name, text in carriers.items():
        assert "private_key" in _held(text), name


def _certificate_and_public_keys() -> dict[str, bytes]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fak.test")])
    now = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=30))
        .sign(key, hashes.SHA256())
    )
    rsa_public = rsa.generate_private_key(65537, 2048).public_key()
    spki = ser.PublicFormat.SubjectPublicKeyInfo
    return {
        "certificate": cert.public_bytes(ser.Encoding.DER),
        "ec public key": key.public_key().public_bytes(ser.Encoding.DER, spki),
        "rsa public key": rsa_public.public_bytes(ser.Encoding.DER, spki),
        "rsa public key (pkcs1)": rsa_public.public_bytes(ser.Encoding.DER, ser.PublicFormat.PKCS1),
        "ed25519 public key": ed25519.Ed25519PrivateKey.generate()
        .public_key()
        .public_bytes(ser.Encoding.DER, spki),
    }


def test_certificates_and_public_keys_in_the_same_encodings_pass() -> None:
    for name, der in _certificate_and_public_keys().items():
        for text in (base64.b64encode(der).decode(), der.hex(), der.hex().upper()):
            assert _held(f"value: {text}\n") == [], name


def test_a_documentation_key_cut_short_with_an_ellipsis_passes() -> None:
    b64 = base64.b64encode(_der("rsa-2048", "pkcs8")).decode()
    assert _held(f"The key looks like {b64[:80]}...") == []
    assert _held(f"The key looks like {b64[:80]}\u2026") == []
    assert _held(f"The key starts {b64[:40]}") == []  # too short to be a key
    assert _held(f"The file reads {b64}") == ["private_key"]


def _b64url(value: bytes) -> str:
    return base64.urlsafe_b64encode(value).rstrip(b"=").decode()


def _jwks() -> dict[str, dict[str, str]]:
    numbers = rsa.generate_private_key(65537, 2048).private_numbers()

    def n2b(value: int) -> str:
        return _b64url(value.to_bytes((value.bit_length() + 7) // 8, "big"))

    return {
        "RSA": {"kty": "RSA", "n": n2b(numbers.public_numbers.n), "e": "AQAB",
                "d": n2b(numbers.d), "p": n2b(numbers.p), "q": n2b(numbers.q)},
        "EC": {"kty": "EC", "crv": "P-256", "x": _b64url(os.urandom(32)),
               "y": _b64url(os.urandom(32)), "d": _b64url(os.urandom(32))},
        "OKP": {"crv": "Ed25519", "d": _b64url(os.urandom(32)), "x": _b64url(os.urandom(32)),
                "kty": "OKP"},
        "oct": {"kty": "oct", "alg": "HS256", "k": _b64url(os.urandom(32))},
    }  # fmt: skip


def test_a_json_web_key_with_its_private_member_is_held_and_its_public_half_passes() -> None:
    for kty, jwk in _jwks().items():
        assert _held(json.dumps({"keys": [jwk]})) == ["private_key"], kty
        assert _held(json.dumps(jwk, indent=2)) == ["private_key"], kty
        public = {k: v for k, v in jwk.items() if k not in ("d", "p", "q", "k")}
        assert _held(json.dumps(public)) == [], kty


def test_a_d_or_k_member_outside_a_json_web_key_passes() -> None:
    value = _b64url(os.urandom(32))
    assert _held(json.dumps({"d": value, "type": "dataset"})) == []
    assert _held(json.dumps({"kty": "RSA", "k": value})) == []  # ``k`` belongs to oct keys
    assert _held(json.dumps({"kty": "EC", "d": "your-private-key-here-please"})) == []


PUTTY = """PuTTY-User-Key-File-3: ssh-ed25519
Encryption: none
Comment: eddsa-key-20260101
Public-Lines: 2
AAAAC3NzaC1lZDI1NTE5AAAAIPtDbH0yIpjJ2a8uUqJxZt0dVm6X7r0oQ1F2nYkq
m3Zk
Private-Lines: 1
AAAAIGm0Nf2Zq7vLx8dA1cRkT3wYp9uHjE6sB4gV0oQiM5nX
Private-MAC: 4f0c2e7a9b1d3c5e7f9a1b3c5d7e9f0a2b4c6d8e0f1a3b5c7d9e1f3a5b7c9d1e
"""


def test_a_putty_key_file_is_held_through_its_private_lines() -> None:
    assert _held(PUTTY) == ["private_key"]
    assert _held(PUTTY.replace("\n", "\r\n")) == ["private_key"]
    # the format's name in prose, or a file cut before its private lines, is no key
    assert _held("Convert it with puttygen; PuTTY-User-Key-File-3: is the first line.") == []
    assert _held(PUTTY.split("Private-Lines")[0]) == []


def test_the_commercial_ssh_and_openvpn_armour_is_held() -> None:
    ssh2 = (
        "---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\n"
        'Comment: "rsa-key-20260101"\n'
        "P2/56wAAA+wAAAA3aWYtbW9kbntzaWdue3JzYS1wa2NzMS1zaGExfSxlbmNyeXB0\n"
        "---- END SSH2 ENCRYPTED PRIVATE KEY ----\n"
    )
    assert _held(ssh2) == ["private_key"]
    static = "\n".join(os.urandom(16).hex() for _ in range(16))
    armour = "OpenVPN Static key V1-----"
    openvpn = f"-----BEGIN {armour}\n{static}\n-----END {armour}"
    assert _held(f"# 2048 bit OpenVPN static key\n{openvpn}\n") == ["private_key"]


def test_dot_net_xml_rsa_key_is_held_and_its_public_form_passes() -> None:
    numbers = rsa.generate_private_key(65537, 1024).private_numbers()

    def b64(value: int) -> str:
        return base64.b64encode(value.to_bytes((value.bit_length() + 7) // 8, "big")).decode()

    public = f"<Modulus>{b64(numbers.public_numbers.n)}</Modulus><Exponent>AQAB</Exponent>"
    private = f"<P>{b64(numbers.p)}</P><Q>{b64(numbers.q)}</Q><D>{b64(numbers.d)}</D>"
    assert _held(f"<RSAKeyValue>{public}{private}</RSAKeyValue>") == ["private_key"]
    assert _held(f"<RSAKeyValue>{public}</RSAKeyValue>") == []
    assert _held(f"<D>{b64(numbers.d)}</D>") == []  # no RSAKeyValue around it


def test_the_gate_quarantines_a_cloud_reply_carrying_a_der_key() -> None:
    b64 = base64.b64encode(_der("ec-p256", "pkcs8")).decode()
    reply = json.dumps({"keyId": "k-1", "algorithm": "EC_P256", "material": b64})
    ledger = QuarantineLedger(MemoryStore(max_bytes=1 << 20))
    admission = ledger.admit(ToolResult(tool="kms_export", payload=reply.encode()))
    assert admission.verdict.kind is VerdictKind.QUARANTINE
    assert admission.verdict.meta["detail"] == "private_key"
