"""Every manifest shipped under examples/ loads strictly and round-trips (a typo'd key in an
example is a broken promise to whoever copies it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fak.policy.manifest import dump_manifest, load_manifest, load_manifest_file

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").rglob("*-policy.json"))


def test_the_examples_are_found() -> None:
    names = {p.name for p in EXAMPLES}
    assert {"banking-policy.json", "shopping-policy.json", "claude-code-policy.json"} <= names


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: str(p.relative_to(p.parents[1])))
def test_an_example_manifest_loads_and_round_trips(path: Path) -> None:
    manifest = load_manifest_file(path)
    assert load_manifest(dump_manifest(manifest)) == manifest
