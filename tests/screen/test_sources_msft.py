"""The reader of Microsoft's identifiable-key patterns: classified patterns once each, the key
group without its boundary characters, unclassified and legacy patterns left out."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def msft() -> ModuleType:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        return importlib.import_module("screen_sources_msft")
    finally:
        sys.path.remove(str(BENCHMARKS))


def test_the_key_group_is_kept_with_the_leading_flags(msft: ModuleType) -> None:
    source = r"(?i)(^|[^a-z0-9])(?P<refine>oy2[a-z2-7]{43})([^a-z0-9]|$)"
    assert msft.refined(source) == "(?i)oy2[a-z2-7]{43}"
    nested = r"(^|[^A-Z])(?P<refine>[A-Z]{3}(7|8)Q~[)(]{2})(x|$)"
    assert msft.refined(nested) == "[A-Z]{3}(7|8)Q~[)(]{2}"
    assert msft.refined("dapi[0-9a-f]{32}") == "dapi[0-9a-f]{32}"


def test_classified_patterns_are_read_once(msft: ModuleType, tmp_path: Path) -> None:
    base = tmp_path / "microsoft_security_utilities_secret_masker" / "GeneratedRegexPatterns"
    base.mkdir(parents=True)
    key = {"Id": "SEC101/152", "Name": "StorageKey", "Pattern": "(?P<refine>[a-z]{76}\\+ASt)"}
    legacy = {"Id": "SEC101/106", "Name": "StorageLegacyCredentials", "Pattern": "x.+y"}
    loose = {"Id": "SEC000/000", "Name": "Unclassified32ByteBase64String", "Pattern": "[a-z]{43}="}
    (base / "PreciselyClassifiedSecurityKeys.json").write_text(json.dumps([key, legacy]))
    (base / "HighConfidenceSecurityModels.json").write_text(json.dumps([key, loose]))
    assert msft.rules(tmp_path) == [("StorageKey", "[a-z]{76}\\+ASt")]
