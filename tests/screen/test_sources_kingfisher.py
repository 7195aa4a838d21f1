"""The Kingfisher reader of the by-source corpus: the rule bundle found in a binary's bytes,
parsed, and its examples filtered (helpers, low confidence, public identifiers, placeholders,
anything sharing a token with a held-out source)."""

from __future__ import annotations

import gzip
import importlib
import struct
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def kingfisher() -> ModuleType:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        return importlib.import_module("screen_sources_kingfisher")
    finally:
        sys.path.remove(str(BENCHMARKS))


RULES = """rules:
  - name: Acme API Token
    id: kingfisher.acme.1
    pattern: acme_[a-z0-9]{20}
    examples:
      - ACME_TOKEN=acme_q8w7e6r5t4y3u2i1o9p8
      - ACME_TOKEN=acme_your_token_here_xx
      - ACME_TOKEN=acme_heldoutheldoutheld1
  - name: Acme Client ID
    id: kingfisher.acme.2
    pattern: acmeid_[0-9]{8}
    examples:
      - acmeid_12345678
  - name: Acme helper
    id: kingfisher.acme.3
    pattern: x
    visible: false
    examples:
      - helper_q8w7e6r5t4y3u2i1o9p8
  - name: Generic Password
    id: kingfisher.generic.1
    pattern: y
    confidence: low
    examples:
      - password = hunter2hunter2
"""


def binary(tmp_path: Path, files: dict[str, str]) -> Path:
    """A fake ``kingfisher`` binary: noise, a gzip stream that is not the bundle, the bundle."""
    body = b"KFRULES\x01"
    for name, text in files.items():
        data = text.encode()
        body += struct.pack("<IQ", len(name), len(data)) + name.encode() + data
    body += b"\x00\x00\x00\x00"
    path = tmp_path / "kingfisher" / "bin" / "kingfisher"
    path.parent.mkdir(parents=True)
    noise = b"\x7fELF" + b"\x1f\x8b\x08 not gzip" + gzip.compress(b"KFVIEW\x01x")
    path.write_bytes(noise + gzip.compress(body))
    return tmp_path


def test_the_bundle_is_found_and_parsed(kingfisher: ModuleType, tmp_path: Path) -> None:
    site = binary(tmp_path, {"rules/acme.yml": RULES, "README.md": "x"})
    assert kingfisher.bundle(site / "kingfisher" / "bin" / "kingfisher") == {
        "rules/acme.yml": RULES,
        "README.md": "x",
    }


def test_examples_keep_reported_secret_formats_only(kingfisher: ModuleType, tmp_path: Path) -> None:
    site = binary(tmp_path, {"rules/acme.yml": RULES})
    held = kingfisher.held_tokens([b"const X = 'acme_heldoutheldoutheld1';"])
    assert list(kingfisher.examples(site, held)) == [
        ("acme.1", "ACME_TOKEN=acme_q8w7e6r5t4y3u2i1o9p8")
    ]


def test_a_binary_without_a_bundle_is_an_error(kingfisher: ModuleType, tmp_path: Path) -> None:
    path = tmp_path / "kingfisher"
    path.write_bytes(b"\x7fELF" + gzip.compress(b"other data"))
    with pytest.raises(ValueError, match="no rule bundle"):
        kingfisher.bundle(path)
