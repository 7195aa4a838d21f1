"""The wire set is one closed vocabulary: its values are the CLI's ``--provider`` strings, each
names a package with both directions, and each has the one dialect the proxy speaks it in."""

from __future__ import annotations

import importlib

import pytest

from fak.wire import WireName, dialect_for


def test_wire_names_are_the_provider_strings_and_name_their_packages() -> None:
    assert [str(w) for w in WireName] == ["openai", "openai-responses", "anthropic"]
    assert [w.package for w in WireName] == ["openai_chat", "openai_responses", "anthropic"]
    for w in WireName:
        for side in ("server", "client"):
            importlib.import_module(f"fak.wire.{w.package}.{side}")


@pytest.mark.parametrize(
    ("name", "base", "url"),
    [
        (WireName.OPENAI_CHAT, "http://h/v1", "http://h/v1/chat/completions"),
        (WireName.OPENAI_RESPONSES, "http://h/v1", "http://h/v1/responses"),
        (WireName.ANTHROPIC, "http://h/v1", "http://h/v1/messages"),
        (WireName.ANTHROPIC, "http://h", "http://h/v1/messages"),
    ],
)
def test_each_wire_has_one_dialect_that_finds_its_endpoint(
    name: WireName, base: str, url: str
) -> None:
    dialect = dialect_for(name)
    assert dialect.name is name
    assert dialect.url(base) == url
    assert dialect.passthrough is (name is WireName.ANTHROPIC)
