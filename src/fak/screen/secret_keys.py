"""Private keys written in forms other than PEM armour (tier T1): the formats' own structure.

``fak.screen.secrets`` finds PEM armour (``-----BEGIN … PRIVATE KEY-----``) and that armour in
base64. A key also reaches a tool result as:

- DER in base64 with no armour: a PEM body whose header lines were cut, a ``privateKey`` field
  of a cloud API's reply, a line of a Java or .NET config. ASN.1 fixes how such a key starts:
  a SEQUENCE holding version 0 or 1 and then an algorithm (PKCS #8), a big INTEGER (PKCS #1
  RSA, OpenSSL's DSA), or an OCTET STRING (SEC 1 EC); or an encryption algorithm first (PKCS #8
  EncryptedPrivateKeyInfo); or version 3 and the data or signed-data OID (a PKCS #12 bundle).
  Certificates and public keys (SubjectPublicKeyInfo) start with a SEQUENCE, never with a
  version, so they are not keys here;
- a JSON Web Key with its private member (``"d"`` of an RSA, EC or OKP key, ``"k"`` of an
  ``oct`` key) in an object that names its ``"kty"``;
- a PuTTY key file (``PuTTY-User-Key-File-3:`` … ``Private-Lines:``);
- .NET's XML form of an RSA key (``<RSAKeyValue>`` with ``<D>`` or ``<InverseQ>``).

Each function takes the text and where the RE2 pass found the candidate, and returns the key's
span or None. Pure; no logging.
"""

from __future__ import annotations

import base64
import binascii
import re

from fak.screen.secret_values import BASE64_CHARS as _BASE64
from fak.screen.secret_values import TOKEN_CHARS, is_placeholder, token_end

__all__ = ["KEY_FORMS", "der_key", "jwk_key", "putty_key", "xml_key"]

KEY_FORMS = (
    # DER in base64, by its first bytes: a 4-byte SEQUENCE header (``MII``), then an INTEGER of
    # one byte (the version) or a SEQUENCE (an encryption algorithm); a 3-byte header (``MIG``
    # …), then the version or a SEQUENCE; a 2-byte header, then the version
    rb"(?:\b|\\[nrt])M(?:I[IJKL][A-Za-z0-9+/]{2}(?:[AQgw]IBA|[DTjz])"
    rb"|I[EFGH][A-Za-z0-9+/](?:AgE[ABD]|M)|[A-H][A-Za-z0-9+/]CAQ[AE])"
    # the same in hex: a SEQUENCE's header, then a one-byte INTEGER or a SEQUENCE
    rb"|(?:\b|\\[nrt])30(?:8[1-3](?:[0-9a-f]{2}){1,3}|[0-7][0-9a-f])(?:0201|30)"
    rb"|(?:\b|\\[nrt])30(?:8[1-3](?:[0-9A-F]{2}){1,3}|[0-7][0-9A-F])(?:0201|30)"
    # a JSON Web Key's private member (the object's ``kty`` is looked for around it)
    rb"|\"[dk]\"[ \t]*:[ \t]*\"[A-Za-z0-9_-]{16}"
    rb"|PuTTY-User-Key-File-[0-9]+:"
    rb"|<(?:D|InverseQ)>[A-Za-z0-9+/]{16}"
)
"""RE2 source (Latin-1): where a private key in one of these forms could start."""

_HEX = frozenset(b"0123456789abcdefABCDEF")
# the smallest key (Ed25519 or X25519 in PKCS #8) is 48 bytes: 64 base64 characters, 96 hex
_READ = 1368  # characters decoded at most (in base64, 1,026 bytes: past DSA's parameters)

# algorithm OIDs (DER contents) a PKCS #8 key is named by; another OID counts when the key's
# OCTET STRING is seen after it
_KEY_OIDS = (
    bytes.fromhex("2a864886f70d0101"),  # PKCS #1: rsaEncryption, RSASSA-PSS, ...
    bytes.fromhex("2a8648ce3d0201"),  # id-ecPublicKey
    bytes.fromhex("2a8648ce380401"),  # DSA
    bytes.fromhex("2a864886f70d010301"),  # dhKeyAgreement
    bytes.fromhex("2b65"),  # X25519, X448, Ed25519, Ed448
    bytes.fromhex("2a811ccf55"),  # SM2
    bytes.fromhex("2a8503"),  # GOST
    bytes.fromhex("60864801650304"),  # NIST (CSOR): ML-DSA, ML-KEM, SLH-DSA
)
# PKCS #5 (PBES1, PBES2) and PKCS #12 password-based encryption: an encrypted PKCS #8 key
_PBE_OIDS = (bytes.fromhex("2a864886f70d0105"), bytes.fromhex("2a864886f70d010c01"))
_PKCS7_DATA = (bytes.fromhex("2a864886f70d010701"), bytes.fromhex("2a864886f70d010702"))


def _tlv(der: bytes, at: int) -> tuple[int, int, int] | None:
    """(tag, where the contents start, their length) of the element at ``at``, or None."""
    if at + 2 > len(der):
        return None
    tag, first = der[at], der[at + 1]
    if first < 0x80:
        return tag, at + 2, first
    count = first & 0x7F
    if not 1 <= count <= 3 or at + 2 + count > len(der):
        return None
    return tag, at + 2 + count, int.from_bytes(der[at + 2 : at + 2 + count], "big")


def _oid_in(der: bytes, at: int, known: tuple[bytes, ...]) -> bool | None:
    """Whether the OID at ``at`` starts with one of ``known``; None when no OID is there."""
    oid = _tlv(der, at)
    if oid is None or oid[0] != 0x06 or not 1 <= oid[2] <= 32:
        return None
    return der[oid[1] : oid[1] + oid[2]].startswith(known)


def _is_key(der: bytes) -> bool:
    """Whether ``der`` starts as a private key's ASN.1 structure (see the module's notes)."""
    outer = _tlv(der, 0)
    if outer is None or outer[0] != 0x30 or outer[2] < 40:
        return False
    first = _tlv(der, outer[1])
    if first is None:
        return False
    tag, at, size = first
    if tag == 0x30:  # EncryptedPrivateKeyInfo: an encryption algorithm, then the ciphertext
        return _oid_in(der, at, _PBE_OIDS) is True
    if tag != 0x02 or size != 1 or der[at] not in (0, 1, 3):
        return False
    version = der[at]
    second = _tlv(der, at + 1)
    if second is None:
        return False
    tag, at, size = second
    if version == 3:  # PKCS #12: the version, then the data (or signed data) it carries
        return tag == 0x30 and _oid_in(der, at, _PKCS7_DATA) is True
    if tag == 0x02:  # PKCS #1 RSA / DSA: version 0, then the modulus (or p), 512 bits or more
        return version == 0 and size >= 64
    if tag == 0x04:  # SEC 1 EC: version 1, then the private scalar
        return version == 1 and 16 <= size <= 80
    if tag != 0x30:
        return False
    named = _oid_in(der, at, _KEY_OIDS)  # PKCS #8: the algorithm, then the key's OCTET STRING
    if named is None:
        return False
    after = _tlv(der, at + size)
    return named or (after is not None and after[0] == 0x04 and after[2] >= 16)


def der_key(text: bytes, start: int) -> tuple[int, int] | None:
    """A private key in DER, base64 or hex, starting at ``start`` (after a string escape, two
    bytes on): a run that starts clean, holds 48 bytes or more, is not cut short with an
    ellipsis, and decodes to a key's structure."""
    escaped = text[start] == 0x5C  # ``\\n`` before it
    start += 2 * escaped
    hexed = text[start] == 0x33  # ``30…``: hex
    chars = _HEX if hexed else _BASE64
    if not escaped and start > 0 and text[start - 1] in chars:
        return None
    stop = token_end(text, start, chars, limit=16384)
    if stop - start < (96 if hexed else 64) or text[stop : stop + 3] in (b"...", b"\xe2\x80\xa6"):
        return None
    read = min(stop - start, _READ) // 4 * 4
    try:
        head = text[start : start + read]
        der = bytes.fromhex(head.decode()) if hexed else base64.b64decode(head, validate=True)
    except (binascii.Error, ValueError):
        return None
    if not _is_key(der):
        return None
    if not hexed and text[stop : stop + 1] == b"=":
        stop += text[stop : stop + 2].count(b"=")
    return start, stop


_KTY = re.compile(rb"\"kty\"[ \t]*:[ \t]*\"(RSA|EC|OKP|oct)\"")
_JWK_REACH = 4096  # an RSA key's other members (n, e, p, q, dp, dq, qi) fit in this much


def jwk_key(text: bytes, start: int) -> tuple[int, int] | None:
    """A JSON Web Key's private member at ``start`` (``"d"`` of an RSA, EC or OKP key, ``"k"`` of
    an ``oct`` key) when the object it is in names that key type: the value's span."""
    vstart = text.index(b'"', text.index(b":", start + 3)) + 1
    vend = token_end(text, vstart, TOKEN_CHARS)  # base64url
    value = text[vstart:vend]
    if text[vend : vend + 1] != b'"' or is_placeholder(value) or len(set(value)) < 10:
        return None
    open_at = text.rfind(b"{", max(0, start - _JWK_REACH), start)
    close_at = text.find(b"}", vend, vend + _JWK_REACH)
    if open_at < 0 or close_at < 0:
        return None
    kty = _KTY.search(text, open_at, close_at)
    if kty is None or (kty.group(1) == b"oct") != (text[start + 1] == 0x6B):  # ``k``: oct only
        return None
    return vstart, vend


_PRIVATE_LINES = re.compile(rb"Private-Lines:[ \t]*([0-9]{1,3})\r?\n")


def putty_key(text: bytes, start: int) -> tuple[int, int] | None:
    """A PuTTY key file from its first line through its private lines (their count says how
    many base64 lines follow), when those lines are there."""
    found = _PRIVATE_LINES.search(text, start, start + 16384)
    if found is None:
        return None
    at = found.end()
    for _ in range(int(found.group(1))):
        line_end = text.find(b"\n", at)
        line = text[at : len(text) if line_end < 0 else line_end].rstrip(b"\r")
        if len(line) < 4 or any(c not in _BASE64 and c != 0x3D for c in line):
            return None
        at = len(text) if line_end < 0 else line_end + 1
    return start, at


_XML_OPEN = re.compile(rb"<RSAKeyValue\b")


def xml_key(text: bytes, start: int) -> tuple[int, int] | None:
    """A private member (``<D>``, ``<InverseQ>``) of .NET's XML RSA key, inside ``<RSAKeyValue>``:
    the member's span."""
    if _XML_OPEN.search(text, max(0, start - 8192), start) is None:
        return None
    vstart = text.index(b">", start) + 1
    vend = text.find(b"</", vstart, vstart + 4096)
    if vend < 0:
        return None
    value = text[vstart:vend].strip()
    if len(value) < 16 or any(c not in _BASE64 and c != 0x3D for c in value):
        return None
    return None if is_placeholder(value) else (vstart, vend)
