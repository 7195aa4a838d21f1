"""The first-match result screen: secret shapes, injection markers, byte-repeat pollution (tier T1).

Pure functions over bytes, linear in the input: the secret shapes are one RE2 alternation (no
backtracking) behind a literal prefilter, the markers are substring scans of the lower-cased
bytes, and the repeat check is a bounded walk over aligned 16-byte chunks. No I/O, no logging
of the bytes; a hit names only the reason and the detector.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import re2

from fak.abi import Reason

__all__ = [
    "INJECTION_MARKERS",
    "POLLUTION_CHUNK",
    "POLLUTION_MIN_BYTES",
    "POLLUTION_MIN_RUN",
    "SCREEN_PATTERN",
    "Detector",
    "Finding",
    "find_injection",
    "find_pollution",
    "find_secret",
    "screen_bytes",
]


class Detector(enum.StrEnum):
    """Which detector produced a finding; the values are stable wire names."""

    SECRET_PATTERN = "secret_pattern"
    INJECTION_MARKER = "injection_marker"
    REPEATED_CHUNK = "repeated_chunk"
    SQUEEZED_MARKER = "squeezed_marker"
    DECODE_DEPTH = "decode_depth"
    DECODE_BUDGET = "decode_budget"


@dataclass(frozen=True, slots=True)
class Finding:
    """A screen hit: the reason, the detector that fired and the view it fired on. Never bytes.

    ``view`` is ``raw`` for the first-match screen; the de-obfuscating screen reports
    ``normalized``, ``decoded``, ``reversed``.
    """

    reason: Reason
    detector: Detector
    view: str = "raw"


# --- secret shapes --------------------------------------------------------------------------

_SECRET = re2.compile(
    rb"sk-[a-z0-9]{16}"
    rb"|akia[0-9a-z]{12}"
    rb"|-----begin [a-z ]*private key-----"
    rb"|ghp_[a-z0-9]{20}"
    rb"|xox[baprs]-[a-z0-9-]{10}"
)
# The pattern runs on lower-cased bytes (the shapes are case-insensitive). Every alternative
# starts with one of these literals, so the regex only runs when one is present. A minimum-length
# match is enough: `{16,}` and `{16}` accept exactly the same inputs for a search.
_SECRET_PREFIXES = (b"sk-", b"akia", b"-----begin", b"ghp_", b"xox")


def find_secret(data: bytes, lowered: bytes | None = None) -> Finding | None:
    """SECRET_EXFIL if a credential shape (OpenAI/AWS/GitHub/Slack key, PEM private key) occurs."""
    low = data.lower() if lowered is None else lowered
    for prefix in _SECRET_PREFIXES:
        if prefix in low:
            break
    else:
        return None
    if _SECRET.search(low) is None:
        return None
    return Finding(Reason.SECRET_EXFIL, Detector.SECRET_PATTERN)


# --- injection markers ----------------------------------------------------------------------

INJECTION_MARKERS: tuple[bytes, ...] = (
    b"ignore previous instructions",
    b"ignore all previous",
    b"disregard the above",
    b"you are now",
    b"system override",
    b"new instructions:",
    b"###system",
    b"reveal your system prompt",
    b"exfiltrate",
)
"""Lower-case marker phrases; a result containing any of them (case-insensitively) is held out."""


def find_injection(data: bytes, lowered: bytes | None = None) -> Finding | None:
    """TRUST_VIOLATION if any marker phrase occurs, compared case-insensitively."""
    low = data.lower() if lowered is None else lowered
    for marker in INJECTION_MARKERS:
        if marker in low:
            return Finding(Reason.TRUST_VIOLATION, Detector.INJECTION_MARKER)
    return None


# --- byte-repeat pollution ------------------------------------------------------------------

POLLUTION_MIN_BYTES = 512
POLLUTION_CHUNK = 16
POLLUTION_MIN_RUN = 51
"""A run of more than 50 consecutive aligned chunks equal to the first one trips the seal."""


def find_pollution(data: bytes) -> Finding | None:
    """OVERSIZE if the body (≥ 512 bytes) holds > 50 back-to-back aligned copies of its first chunk.

    Walks aligned 16-byte chunks comparing each with the first; the run resets on any mismatch.
    A run that long implies the contiguous needle occurs somewhere, so one linear substring search
    rules out almost every benign body before the walk.
    """
    size = len(data)
    if size < POLLUTION_MIN_BYTES:
        return None
    first = data[:POLLUTION_CHUNK]
    if data.find(first * POLLUTION_MIN_RUN) < 0:
        return None
    run = 0
    for start in range(0, size - POLLUTION_CHUNK + 1, POLLUTION_CHUNK):
        if data.startswith(first, start):
            run += 1
            if run >= POLLUTION_MIN_RUN:
                return Finding(Reason.OVERSIZE, Detector.REPEATED_CHUNK)
        else:
            run = 0
    return None


# --- the first-match screen -----------------------------------------------------------------


SCREEN_PATTERN = (
    b"(?i:" + _SECRET.pattern + b"|" + b"|".join(re2.escape(m) for m in INJECTION_MARKERS) + b")"
)
"""Case-insensitive RE2: matches wherever a secret shape or a marker phrase occurs."""

# One RE2 pass over the raw bytes rules out both the secret shapes and the markers for almost
# every benign body; only a body it flags is lower-cased and classified.
_ANY = re2.compile(SCREEN_PATTERN)


def screen_bytes(data: bytes) -> Finding | None:
    """The kernel's result predicate: secret, then injection, then pollution; first hit wins."""
    if _ANY.search(data) is not None:
        low = data.lower()
        hit = find_secret(data, low) or find_injection(data, low)
        if hit is not None:
            return hit
    return find_pollution(data)
