"""The first-match result screen: credentials, injections, repetition pollution (tier T1).

Pure functions over bytes, linear in the input. One RE2 pass (the secret formats and the
injection cues together) rules out both for almost every benign body; only a body it flags runs
the validators (``fak.screen.secrets``) and the cue scoring (``fak.screen.injection``). The
repeat check (``fak.screen.pollution``) always runs. No I/O, no logging of the bytes; a hit names
the reason, the detector, a detail (kind / cues / period) and a byte span, never the bytes.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from dataclasses import dataclass, field

import re2

from fak.abi import Reason
from fak.screen.injection import (
    DEFAULT_THRESHOLD,
    INJECTION_FIND,
    INJECTION_PREFILTER,
    CueFilter,
    CueHit,
    InjectionHit,
    score_cues,
    score_injection,
)
from fak.screen.intent import IntentHit, read_windows
from fak.screen.pollution import find_repeats
from fak.screen.rx import searcher
from fak.screen.secrets import (
    SECRET_FIND,
    SECRET_PREFILTER,
    SecretHit,
    candidate_at,
    find_scanner,
    find_secrets,
    validate_candidates,
)
from fak.screen.sources import DEFAULT_SETTINGS, SourceSettings
from fak.screen.starts import SharedStarts
from fak.screen.tokens import BIG_DFA, compile_latin1

__all__ = [
    "INJECTION_MARKERS",
    "POLLUTION_CHUNK",
    "POLLUTION_MIN_BYTES",
    "POLLUTION_MIN_RUN",
    "SCAN_BUDGET_MATCHES",
    "SCAN_BUDGET_SPACING",
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
    SCAN_BUDGET = "scan_budget"
    INTENT_MODEL = "intent_model"


@dataclass(frozen=True, slots=True)
class Finding:
    """A screen hit: the reason, the detector that fired and the view it fired on. Never bytes.

    ``view`` is ``raw`` for the first-match screen; the de-obfuscating screen reports
    ``normalized``, ``decoded``, ``reversed``. ``span`` is the [start, end) of the offending bytes
    in the original text when the view maps back to it (``None`` otherwise); ``detail`` names the
    credential kind, the injection cue families or the repeat period.
    """

    reason: Reason
    detector: Detector
    view: str = "raw"
    span: tuple[int, int] | None = field(default=None, compare=False)
    detail: str = field(default="", compare=False)
    score: float = field(default=0.0, compare=False)


# --- secrets ----------------------------------------------------------------------------------


def find_secret(data: bytes, lowered: bytes | None = None) -> Finding | None:
    """SECRET_EXFIL for the first credential with a real structure (see ``fak.screen.secrets``).

    ``lowered`` is accepted for compatibility and ignored: the formats are case-sensitive.
    """
    del lowered
    hits = find_secrets(data, first=True)
    return _secret_finding(hits[0]) if hits else None


def _secret_finding(hit: SecretHit) -> Finding:
    return Finding(
        Reason.SECRET_EXFIL, Detector.SECRET_PATTERN, span=(hit.start, hit.end), detail=hit.kind
    )


# --- injections -------------------------------------------------------------------------------

INJECTION_MARKERS: tuple[bytes, ...] = (
    b"ignore previous instructions",
    b"ignore all previous",
    b"system override",
    b"new instructions:",
    b"reveal your system prompt",
)
"""Phrases that score an injection on their own (one cue family at full weight). Everyday phrases
once listed here ("you are now", "disregard the above") now need other cues beside them."""


def find_injection(
    data: bytes, lowered: bytes | None = None, threshold: float = DEFAULT_THRESHOLD
) -> Finding | None:
    """TRUST_VIOLATION when a window of cues scores ``threshold`` (see ``fak.screen.injection``)."""
    del lowered
    hits = score_injection(data, threshold, first=True)
    return _injection_finding(hits[0]) if hits else None


def _injection_finding(hit: InjectionHit) -> Finding:
    return Finding(
        Reason.TRUST_VIOLATION,
        Detector.INJECTION_MARKER,
        span=(hit.start, hit.end),
        detail=",".join(hit.cues),
        score=hit.score,
    )


def _intent_finding(hit: IntentHit) -> Finding:
    return Finding(
        Reason.TRUST_VIOLATION,
        Detector.INTENT_MODEL,
        span=(hit.start, hit.end),
        detail=f"logit={hit.logit:g}",
        score=hit.logit,
    )


# --- repetition pollution ---------------------------------------------------------------------

POLLUTION_MIN_BYTES = 512
POLLUTION_CHUNK = 16
POLLUTION_MIN_RUN = 51
"""The spec's seal (more than 50 back-to-back 16-byte chunks) is the floor of the repeat rule:
``MIN_RUN`` = 816 bytes of one unit repeated, see ``fak.screen.pollution``."""


def find_pollution(data: bytes) -> Finding | None:
    """OVERSIZE when a stretch of >= 816 bytes repeats one short unit (exactly or near)."""
    hit = find_repeats(data)
    if hit is None:
        return None
    span = (hit.start, hit.end) if hit.view in ("raw", "edited") else None
    return Finding(
        Reason.OVERSIZE, Detector.REPEATED_CHUNK, span=span, detail=f"period={hit.period}"
    )


# --- the first-match screen -----------------------------------------------------------------


SCREEN_PATTERN = b"(?:" + SECRET_PREFILTER + b")|(?:" + INJECTION_PREFILTER + b")"
"""RE2 source (Latin-1 mode): matches wherever a secret format or an injection cue starts."""


_BOTH: re2._Regexp | None = None


def _both() -> re2._Regexp:
    global _BOTH
    if _BOTH is None:
        _BOTH = compile_latin1(SECRET_FIND + b"|" + INJECTION_FIND, BIG_DFA)
    return _BOTH


class _Scan:
    """Credential candidates and injection cues from one find-only RE2 pass.

    ``cues()`` yields cues lazily while collecting candidates in ``secrets``; ``rest()`` finishes
    the pass for candidates alone once the cue scoring has what it needs. The pass resumes one
    byte after each match start, so a match of one family never hides an overlapping one of the
    other; each start is named by the family's own anchored match there. ``starts`` (a union
    pass shared with another scan of the same view) stands in for both searches.
    """

    __slots__ = ("both", "data", "only", "pos", "secrets", "use")

    def __init__(self, data: bytes, use: SourceSettings, starts: SharedStarts | None) -> None:
        self.data = data
        self.use = use
        self.pos = 0
        self.secrets: list[tuple[int, int, str]] = []
        if starts is None:
            self.both, self.only = searcher(_both()), searcher(find_scanner())
        else:
            self.both, self.only = starts.search(_both()), starts.search(find_scanner())

    def cues(self) -> Iterator[CueHit]:
        data, use, search = self.data, self.use, self.both
        cue_filter = CueFilter()
        seen = 0
        while (span := search(data, self.pos)) is not None:
            start = span[0]
            self.pos = start + 1
            seen += 1
            if seen > SCAN_BUDGET_MATCHES and seen * SCAN_BUDGET_SPACING > start:
                raise _OverBudget
            if use.secrets and (found := candidate_at(data, start)) is not None:
                self.secrets.append(found)
            if use.injection and (cue := cue_filter.at(data, start)) is not None:
                yield cue
        self.pos = len(data) + 1

    def rest(self) -> list[tuple[int, int, str]]:
        """All candidates: those seen so far and those after where the cue pass stopped (found
        the same way, every match start, by the credential automaton alone)."""
        data, pos = self.data, self.pos
        if not self.use.secrets or pos > len(data):
            return self.secrets
        search = self.only
        seen = 0
        while (span := search(data, pos)) is not None:
            start = span[0]
            pos = start + 1
            seen += 1
            if seen > SCAN_BUDGET_MATCHES and seen * SCAN_BUDGET_SPACING > start - self.pos:
                raise _OverBudget
            if (found := candidate_at(data, start)) is not None:
                self.secrets.append(found)
        return self.secrets


SCAN_BUDGET_MATCHES = 4096
SCAN_BUDGET_SPACING = 32
"""More than 4096 candidate starts, closer than 32 bytes apart on average: no real result looks
like that, and judging each costs Python time, so the body is held (TRUST_VIOLATION,
``scan_budget``) rather than judged slowly. Keeps hostile inputs linear and fast."""


class _OverBudget(Exception):
    pass


def _recorded(cues: Iterator[CueHit], seen: list[tuple[int, int, float]]) -> Iterator[CueHit]:
    """The cues, each also noted in ``seen`` (the windows the intent model may read)."""
    for cue in cues:
        seen.append((cue.start, cue.end, cue.weight))
        yield cue


def screen_bytes(
    data: bytes,
    settings: SourceSettings | None = None,
    *,
    pollution: bool = True,
    starts: SharedStarts | None = None,
) -> Finding | None:
    """The kernel's result predicate: secret, then injection, then pollution; first hit wins.

    ``settings`` (per source, from the manifest's ``screen`` section) switch detector families
    off or move the injection threshold; ``None`` is the default. One find-only RE2 pass finds
    credential candidates and injection cues together; the validators and the cue scoring then
    run on what it found. ``starts`` (a union pass over ``data`` that another scan of the same
    bytes shares, see ``fak.screen.starts``) stands in for that pass; the finding is the same.
    """
    use = settings or DEFAULT_SETTINGS
    if use.secrets or use.injection:
        scan = _Scan(data, use, starts)
        seen: list[tuple[int, int, float]] = []
        try:
            cues = _recorded(scan.cues(), seen)
            scored = score_cues(cues, use.injection_threshold, first=True)
            if not scored:  # drain: every candidate start must be seen
                for _ in cues:
                    pass
            secrets = scan.rest()
        except _OverBudget:
            return Finding(Reason.TRUST_VIOLATION, Detector.SCAN_BUDGET)
        if secrets and (valid := validate_candidates(data, secrets, first=True)):
            return _secret_finding(valid[0])
        if scored:
            return _injection_finding(scored[0])
        if seen and (read := read_windows(data, seen, use.injection_threshold, first=True)):
            return _intent_finding(read[0])  # cues below the threshold, read by the model
    if pollution and use.pollution:
        return find_pollution(data)
    return None
