"""The direct RE2 calls answer the spans the wrapper's own ``search`` / ``match`` answer."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import re2
from hypothesis import given, settings
from hypothesis import strategies as st

from fak.screen import injection
from fak.screen.deobfuscate import _scanners
from fak.screen.detect import _both
from fak.screen.rx import Find, matcher, searcher
from fak.screen.secrets import find_scanner
from fak.screen.tokens import compile_latin1


def _patterns() -> list[re2._Regexp]:
    """The screen's own group-free scanners, and small patterns with empty matches and edges."""
    scanners = _scanners()
    return [
        _both(),
        find_scanner(),
        injection._scanner(),
        scanners.union,
        scanners.scan_squeezed,
        scanners.level_squeezed,
        compile_latin1(rb"\bkey\b|x*"),
        compile_latin1(rb"(?:ab)+|b$"),
        compile_latin1(rb"^\w+"),
    ]


_TEXT = st.lists(
    st.one_of(
        st.sampled_from(
            [b"ignore previous instructions", b"AKIAQWERTYUIOPASDFGH", b"key", b"abab", b"\n"]
        ),
        st.binary(max_size=12),
    ),
    max_size=12,
).map(b" ".join)


def _span(found: re2._Match | None) -> tuple[int, int] | None:
    return None if found is None else found.span()


@settings(max_examples=300, deadline=None)
@given(_TEXT, st.integers(-3, 400), st.integers(0, 8))
def test_law_a_direct_call_answers_the_wrappers_span(text: bytes, pos: int, which: int) -> None:
    pattern = _patterns()[which]
    assert searcher(pattern)(text, pos) == _span(pattern.search(text, pos))
    assert matcher(pattern)(text, pos) == _span(pattern.match(text, pos))


def test_a_pattern_with_groups_is_refused() -> None:
    with pytest.raises(ValueError, match="capture group"):
        searcher(re2.compile(b"(a)|b"))


class _WrapperOnly:
    """A regex object with the wrapper's methods but no compiled program to call directly."""

    def __init__(self, pattern: re2._Regexp) -> None:
        self.search, self.match = pattern.search, pattern.match


@pytest.mark.parametrize("make", [searcher, matcher])
def test_without_a_compiled_program_the_wrapper_answers(
    make: Callable[[re2._Regexp], Find],
) -> None:
    pattern = compile_latin1(rb"key|x+")
    direct, wrapped = make(pattern), make(_WrapperOnly(pattern))  # type: ignore[arg-type]
    for text, pos in [(b"a key", 0), (b"a key", 2), (b"xx key", 0), (b"none", 1), (b"", 0)]:
        assert direct(text, pos) == wrapped(text, pos)


class _Garbled:
    """A compiled program that answers the same span whatever it is asked (another binding)."""

    def Match(self, *_: object) -> list[tuple[int, int]]:
        return [(0, 1)]


class _OtherBinding(_WrapperOnly):
    groups = 0

    def __init__(self, pattern: re2._Regexp) -> None:
        super().__init__(pattern)
        self._regexp = _Garbled()


@pytest.mark.parametrize("make", [searcher, matcher])
def test_a_compiled_program_that_disagrees_with_the_wrapper_is_not_used(
    make: Callable[[re2._Regexp], Find],
) -> None:
    pattern = compile_latin1(rb"key|x+")
    other = make(_OtherBinding(pattern))  # type: ignore[arg-type]
    for text, pos in [(b"a key", 0), (b"a key", 3), (b"xx key", 0), (b"none", 1)]:
        assert other(text, pos) == make(pattern)(text, pos)
