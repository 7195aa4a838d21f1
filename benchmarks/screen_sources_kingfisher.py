"""Kingfisher's rule examples as a train source of secrets for the by-source screen corpus.

MongoDB's Kingfisher secret scanner (Apache-2.0) ships on PyPI as ``kingfisher-bin``: a wheel
holding one native binary. Its 1.x releases carry Kingfisher's own rule files (YAML, one per
vendor: a pattern, requirements and the **examples** each rule must find, written by its
authors) as a gzip-compressed bundle inside that binary. This module reads the bundle as bytes
(the binary is never run), parses the YAML and yields the examples as ``secret`` items for
``screen_sources_secpol.py``. Real strings written for each format by other people, not
strings generated from a regex: a connection string with a password, a GCP service-account
JSON, a 1Password secret key, a vendor token with its checksum.

Left out: rules Kingfisher itself does not report by default (``visible: false`` helpers,
``confidence: low`` generic rules), rules named for a public identifier (publishable keys,
client / account ids, user names, plain URLs), examples that are documentation placeholders by
the common scanners' stop words, and any example sharing a 16+ character token with a held-out
source's files (none on this machine; the check keeps the splits apart if one ever does).
Nothing of it is committed: the items are rebuilt from the installed wheel.
"""

from __future__ import annotations

import re
import struct
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path

PIN = ("kingfisher-bin==1.112.0", "Apache-2.0", "train")
"""The last 1.x release: 2.x bundles betterleaks' rules (a source already) instead of its own."""

_BUNDLE = b"KFRULES\x01"  # the bundle's magic, then (u32 name size, u64 body size, name, body)*
_GZIP = b"\x1f\x8b\x08"
# rules named for an identifier that is public or not a credential
_PUBLIC = re.compile(
    r"(?i)\bpublic\b|publishable|client id|\bids?\b(?!.*(?:secret|token|key))|user ?name\b"
    r"|\burl\b(?!.*(?:secret|token|key|password|cred|sas|webhook|sensitive))|reporter"
)
# scanners' common documentation stop words (gitleaks' and Kingfisher's ``ignore_if_contains``)
_PLACEHOLDER = re.compile(r"(?i)example|xxxx|\*\*\*\*|placeholder|dummy|redacted|your[_-]|<|\$\{")
_TOKEN = re.compile(rb"[A-Za-z0-9+/_-]{16,}")  # a key's, a JWT part's, a base64 line's body


def bundle(binary: Path) -> dict[str, str]:
    """file name -> text of the rule bundle inside Kingfisher's binary (read as bytes)."""
    data = binary.read_bytes()
    at = data.find(_GZIP)
    while at >= 0:
        stream = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            head = stream.decompress(data[at : at + 4096], len(_BUNDLE))
        except zlib.error:
            head = b""
        if head == _BUNDLE:
            out = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data[at:])
            return _entries(out)
        at = data.find(_GZIP, at + 1)
    raise ValueError(f"no rule bundle in {binary}")


def _entries(out: bytes) -> dict[str, str]:
    files: dict[str, str] = {}
    at = len(_BUNDLE)
    while at + 12 <= len(out):
        name_size, body_size = struct.unpack_from("<IQ", out, at)
        if not name_size:
            break  # the bundle's trailer
        name = out[at + 12 : at + 12 + name_size].decode("utf-8")
        start = at + 12 + name_size
        files[name] = out[start : start + body_size].decode("utf-8")
        at = start + body_size
    return files


def rules(site: Path) -> list[dict[str, object]]:
    """Every rule Kingfisher reports by default, not named for a public identifier."""
    import yaml

    kept: list[dict[str, object]] = []
    for name, text in sorted(bundle(site / "kingfisher" / "bin" / "kingfisher").items()):
        if not name.startswith("rules/"):
            continue
        for rule in (yaml.safe_load(text) or {}).get("rules", []):
            if rule.get("visible") is False or rule.get("confidence") == "low":
                continue
            if _PUBLIC.search(str(rule.get("name", ""))):
                continue
            kept.append(rule)
    return kept


def held_tokens(texts: Iterable[bytes]) -> set[bytes]:
    """The 16+ character tokens of the held-out sources' files."""
    found: set[bytes] = set()
    for text in texts:
        found.update(_TOKEN.findall(text))
    return found


def examples(site: Path, held: set[bytes]) -> Iterator[tuple[str, str]]:
    """(family, example): each kept rule's examples (family: the rule id without the
    ``kingfisher.`` prefix), placeholders and anything sharing a token with ``held`` left out."""
    for rule in rules(site):
        family = str(rule["id"]).removeprefix("kingfisher.")
        raw = rule.get("examples") or []
        for text in (str(e).strip() for e in raw if isinstance(raw, list)):
            if not text or _PLACEHOLDER.search(text):
                continue
            if any(t in held for t in _TOKEN.findall(text.encode())):
                continue
            yield family, text
