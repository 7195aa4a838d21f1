"""The answer-shape witness: how repetitive and how long a piece of text is (tier T1).

A graded, off-hot-path companion to the kernel's binary repeat seal. ``answer_shape`` reports a
repeat fraction in [0, 1] — the largest of four signals (word n-gram repeats, repeated lines,
short-period tiling, compression redundancy) — and a rune count, judged against caller
thresholds. Texts shorter than ``RUNE_FLOOR`` runes report their fractions but never trip on
them. Pure and deterministic; every signal is linear in the text (tiling checks a fixed number of
periods with whole-buffer integer XORs).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

__all__ = [
    "MAX_PERIOD",
    "RUNE_FLOOR",
    "ShapeReport",
    "answer_shape",
]

RUNE_FLOOR = 24
"""Below this many runes a repeat fraction is reported but never makes the text degenerate."""

MAX_PERIOD = 64
"""Tiling is checked for every period from 1 to this many runes."""

# zlib ratios: ordinary prose and code compress to roughly 0.25–0.45 of their size; a looping
# answer to a few percent. The signal is 0 at or above _RATIO_PLAIN and 1 at or below _RATIO_LOOP.
_RATIO_PLAIN = 0.30
_RATIO_LOOP = 0.05
_MIN_COMPRESS = 64  # bytes; zlib's fixed overhead makes shorter texts meaningless


@dataclass(frozen=True, slots=True)
class ShapeReport:
    """The witness: each signal, their maximum, the rune count, and the verdict."""

    runes: int
    repeat_fraction: float
    ngram_repeat: float
    line_block_repeat: float
    period_repeat: float
    compression_repeat: float
    period: int
    max_repeat: float
    max_chars: int
    ngram: int
    degenerate: bool
    findings: tuple[str, ...]

    def to_json(self) -> dict[str, object]:
        return {
            "runes": self.runes,
            "repeat_fraction": round(self.repeat_fraction, 4),
            "signals": {
                "ngram": round(self.ngram_repeat, 4),
                "line_block": round(self.line_block_repeat, 4),
                "period": round(self.period_repeat, 4),
                "compression": round(self.compression_repeat, 4),
            },
            "period": self.period,
            "thresholds": {
                "max_repeat": self.max_repeat,
                "max_chars": self.max_chars,
                "ngram": self.ngram,
                "rune_floor": RUNE_FLOOR,
            },
            "degenerate": self.degenerate,
            "findings": list(self.findings),
        }


def _ngram_repeat(text: str, n: int) -> float:
    words = text.split()
    total = len(words) - n + 1
    if total <= 1:
        return 0.0
    grams = {tuple(words[i : i + n]) for i in range(total)}
    return 1.0 - len(grams) / total


def _line_block_repeat(text: str) -> float:
    lines = [line.strip() for line in text.splitlines()]
    lines = [line for line in lines if line]
    if len(lines) < 2:
        return 0.0
    return 1.0 - len(set(lines)) / len(lines)


def _period_repeat(text: str) -> tuple[float, int]:
    """The best fraction of runes equal to the rune ``p`` places later, over p = 1..MAX_PERIOD."""
    # One byte per rune (the low byte of its code point): a collision can only raise a fraction
    # for non-ASCII text, never hide a real period.
    runes = text.encode("utf-32-le")[::4]
    size = len(runes)
    best, best_p = 0.0, 0
    for p in range(1, min(MAX_PERIOD, size // 2) + 1):
        span = size - p
        diff = int.from_bytes(runes[:span], "little") ^ int.from_bytes(runes[p:], "little")
        equal = diff.to_bytes(span, "little").count(0)
        fraction = equal / span
        if fraction > best:
            best, best_p = fraction, p
    return best, best_p


def _compression_repeat(text: str) -> float:
    raw = text.encode("utf-8")
    if len(raw) < _MIN_COMPRESS:
        return 0.0
    ratio = len(zlib.compress(raw, 9)) / len(raw)
    signal = (_RATIO_PLAIN - ratio) / (_RATIO_PLAIN - _RATIO_LOOP)
    return min(1.0, max(0.0, signal))


def answer_shape(
    text: str, *, max_repeat: float = 0.5, max_chars: int = 0, ngram: int = 3
) -> ShapeReport:
    """Grade ``text``; ``max_chars`` 0 turns the length check off. Bad thresholds: ValueError."""
    if not 0.0 <= max_repeat <= 1.0:
        msg = f"max_repeat must be between 0 and 1, got {max_repeat}"
        raise ValueError(msg)
    if max_chars < 0:
        msg = f"max_chars must be 0 (off) or positive, got {max_chars}"
        raise ValueError(msg)
    if ngram < 1:
        msg = f"ngram must be at least 1, got {ngram}"
        raise ValueError(msg)
    runes = len(text)
    grams = _ngram_repeat(text, ngram)
    lines = _line_block_repeat(text)
    period, period_len = _period_repeat(text)
    compression = _compression_repeat(text)
    fraction = max(grams, lines, period, compression)
    findings: list[str] = []
    if runes >= RUNE_FLOOR and fraction > max_repeat:
        findings.append("repeat")
    if max_chars and runes > max_chars:
        findings.append("length")
    return ShapeReport(
        runes=runes,
        repeat_fraction=fraction,
        ngram_repeat=grams,
        line_block_repeat=lines,
        period_repeat=period,
        compression_repeat=compression,
        period=period_len,
        max_repeat=max_repeat,
        max_chars=max_chars,
        ngram=ngram,
        degenerate=bool(findings),
        findings=tuple(findings),
    )
