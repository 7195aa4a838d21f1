"""Pure detectors over tool-result bytes and the answer-shape witness (tier T1).

``screen_bytes`` is the kernel's first-match result predicate (credential formats, structural
injection scoring, repetition pollution; ``secrets``, ``injection``, ``pollution`` modules);
``screen_deobfuscated`` runs the same detectors over normalized and decoded views; ``sources``
holds per-tool settings. ``FirstMatchScreen`` / ``DeobfuscatingScreen`` wrap them as
``ResultAdmitter``s for the quarantine ledger. No I/O; nothing here logs or keeps the bytes.
"""

from fak.screen.admit import (
    DeobfuscatingScreen,
    FirstMatchScreen,
    ResultAdmitter,
    SourceAwareAdmitter,
    default_admitters,
    finding_verdict,
)
from fak.screen.deobfuscate import (
    DECODE_BUDGET,
    MAX_DECODE_DEPTH,
    decoded_tokens,
    normalize,
    screen_deobfuscated,
)
from fak.screen.detect import (
    INJECTION_MARKERS,
    POLLUTION_CHUNK,
    POLLUTION_MIN_BYTES,
    POLLUTION_MIN_RUN,
    Detector,
    Finding,
    find_injection,
    find_pollution,
    find_secret,
    screen_bytes,
)
from fak.screen.scope import AdmissionScope
from fak.screen.shape import MAX_PERIOD, RUNE_FLOOR, ShapeReport, answer_shape
from fak.screen.sources import DETECTOR_FAMILIES, ScreenPolicy, SourceRule, SourceSettings

__all__ = [
    "DECODE_BUDGET",
    "DETECTOR_FAMILIES",
    "INJECTION_MARKERS",
    "MAX_DECODE_DEPTH",
    "MAX_PERIOD",
    "POLLUTION_CHUNK",
    "POLLUTION_MIN_BYTES",
    "POLLUTION_MIN_RUN",
    "RUNE_FLOOR",
    "AdmissionScope",
    "DeobfuscatingScreen",
    "Detector",
    "Finding",
    "FirstMatchScreen",
    "ResultAdmitter",
    "ScreenPolicy",
    "ShapeReport",
    "SourceAwareAdmitter",
    "SourceRule",
    "SourceSettings",
    "answer_shape",
    "decoded_tokens",
    "default_admitters",
    "find_injection",
    "find_pollution",
    "find_secret",
    "finding_verdict",
    "normalize",
    "screen_bytes",
    "screen_deobfuscated",
]
