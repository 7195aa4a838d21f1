"""The signing key of deletion certificates: one ed25519 key in a 0600 file (tier T2).

Created on first use (``O_CREAT | O_EXCL``, mode 0600, fsync'd, PKCS#8 PEM), refused afterwards
if anyone but the owner can read it or if it is not an ed25519 key. Signatures come from the
``cryptography`` package; nothing here is hand-rolled. The key's bytes are never logged.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from fak.certs.errors import CertError, CertErrorCode

__all__ = ["load_or_create_key", "public_key_hex"]


def public_key_hex(key: Ed25519PrivateKey) -> str:
    raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return raw.hex()


def _create(path: Path) -> Ed25519PrivateKey:
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, pem)
        os.fsync(fd)
    finally:
        os.close(fd)
    return key


def load_or_create_key(path: str | os.PathLike[str]) -> Ed25519PrivateKey:
    """The key at ``path``, created (0600) if absent; ``CertError`` KEY if it is unusable."""
    target = Path(path)
    try:
        return _create(target)
    except FileExistsError:
        pass
    except OSError as exc:
        msg = f"cannot create the certificate key {target}: {exc.strerror or type(exc).__name__}"
        raise CertError(CertErrorCode.KEY, msg) from exc
    try:
        mode = target.stat().st_mode
        pem = target.read_bytes()
    except OSError as exc:
        msg = f"cannot read the certificate key {target}: {exc.strerror or type(exc).__name__}"
        raise CertError(CertErrorCode.KEY, msg) from exc
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        msg = f"the certificate key {target} is readable by others: chmod 600 it"
        raise CertError(CertErrorCode.KEY, msg)
    try:
        key = serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError) as exc:
        msg = f"{target} is not an unencrypted PEM private key"
        raise CertError(CertErrorCode.KEY, msg) from exc
    if not isinstance(key, Ed25519PrivateKey):
        msg = f"{target} holds a {type(key).__name__}, not an ed25519 key"
        raise CertError(CertErrorCode.KEY, msg)
    return key
