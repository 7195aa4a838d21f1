"""The answer-shape witness: each signal, the rune floor, thresholds, and its laws."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fak.screen import RUNE_FLOOR, answer_shape

SPEC = Path("/work/shared/spec/fak-faq.txt")
PROSE = (
    "The kernel screens every tool result before it may enter the model's context. A result "
    "either enters as it is, is paged out behind a small pointer because it is benign but large, "
    "or is held out entirely when it looks like a secret, an injection or pollution. Operators "
    "can clear a held id after review; page-in then re-screens the bytes with the current chain."
)


def test_ordinary_prose_is_in_shape() -> None:
    report = answer_shape(PROSE)
    assert not report.degenerate
    assert report.repeat_fraction < 0.25
    assert report.findings == ()


def test_a_looping_answer_is_degenerate_on_several_signals() -> None:
    report = answer_shape("I think the answer is 42. " * 40)
    assert report.degenerate and report.findings == ("repeat",)
    assert report.ngram_repeat > 0.9
    assert report.period_repeat == 1.0 and report.period == 26
    assert report.compression_repeat == 1.0


def test_repeated_line_blocks_are_caught() -> None:
    text = "\n".join(f"Unique opening line number {i}" for i in range(3)) + "\n"
    text += "\n".join(["retrying the request", "waiting for the server", "timeout"] * 10)
    report = answer_shape(text)
    assert report.line_block_repeat == pytest.approx(1 - 6 / 33)
    assert report.degenerate


def test_short_period_tiling_is_caught() -> None:
    report = answer_shape("ab" * 300)
    assert (report.period, report.period_repeat) == (2, 1.0)


def test_below_the_rune_floor_fractions_are_reported_but_never_trip() -> None:
    text = "no no no no no no no"
    assert len(text) < RUNE_FLOOR
    report = answer_shape(text, max_repeat=0.0)
    assert report.repeat_fraction > 0.5
    assert not report.degenerate


def test_max_chars_checks_the_length_in_runes() -> None:
    text = "é" * 30
    assert answer_shape(text, max_chars=30, max_repeat=1.0).findings == ()
    assert answer_shape(text, max_chars=29, max_repeat=1.0).findings == ("length",)
    assert answer_shape(PROSE, max_chars=0).findings == ()


def test_ngram_size_is_a_knob() -> None:
    text = "alpha beta gamma alpha beta delta alpha beta epsilon"
    assert answer_shape(text, ngram=2).ngram_repeat > answer_shape(text, ngram=3).ngram_repeat


@pytest.mark.parametrize(
    "kwargs", [{"max_repeat": -0.1}, {"max_repeat": 1.5}, {"max_chars": -1}, {"ngram": 0}]
)
def test_bad_thresholds_raise(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        answer_shape(PROSE, **kwargs)  # type: ignore[arg-type]


@pytest.mark.skipif(not SPEC.exists(), reason="spec text not present")
def test_a_long_real_document_is_in_shape() -> None:
    report = answer_shape(SPEC.read_text(encoding="utf-8"))
    assert not report.degenerate


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=600))
def test_law_every_signal_is_a_fraction(text: str) -> None:
    report = answer_shape(text)
    for value in (
        report.repeat_fraction,
        report.ngram_repeat,
        report.line_block_repeat,
        report.period_repeat,
        report.compression_repeat,
    ):
        assert 0.0 <= value <= 1.0
    assert report.repeat_fraction == max(
        report.ngram_repeat,
        report.line_block_repeat,
        report.period_repeat,
        report.compression_repeat,
    )
    assert report.runes == len(text)


@settings(max_examples=100, deadline=None)
@given(st.text(min_size=1, max_size=12), st.integers(20, 60))
def test_law_a_unit_repeated_many_times_is_degenerate(unit: str, times: int) -> None:
    text = unit * max(times, RUNE_FLOOR)
    report = answer_shape(text)
    if len(unit) <= 12 and len(text) >= 2 * len(unit) + RUNE_FLOOR:
        assert report.period_repeat == 1.0
        assert report.degenerate
