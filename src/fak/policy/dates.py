"""Dates and times as values: one normal form for what people and tools write (tier T1, pure).

"January 11th", "11 Jan 2025", "the 11th of January" and ``2025-01-11`` (or ``2025/01/11``,
``2025-01-11T10:00:00``) are one date; "10am", "10:00 AM" and ``10:00`` one time; "2pm" is
``14:00``. English month names and their abbreviations only; a slashed ``01/11/2025`` is not read
(month-first or day-first cannot be told apart), nor are relative words ("tomorrow").

Keys are strings so the text index can hold them beside hosts and numbers: a date written with a
year gives ``Y-MM-DD`` and ``md:MM-DD``; one without gives ``*-MM-DD`` and ``md:MM-DD``; a time
``t:HH:MM``. A value with a year matches a text date with that year or none (the user's
"January 11th" is the tool's ``2025-01-11``); a value without one matches any year.
``fak.policy.provenance`` judges; nothing here refuses.
"""

from __future__ import annotations

import datetime
import re
import unicodedata
from typing import Final

__all__ = ["date_keys", "dates_written", "value_groups"]

_MONTHS: Final = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_MONTH: Final = "|".join(sorted(_MONTHS, key=len, reverse=True))
_ISO: Final = re.compile(r"(?<!\d)(\d{4})([-/.])(\d{1,2})\2(\d{1,2})(?!\d)")
_MONTH_SET: Final = frozenset(_MONTHS)
_LETTERS: Final = re.compile(r"[a-z]+")
# matched against the lower-cased text
_MONTH_FIRST: Final = re.compile(
    rf"\b({_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+(\d{{4}})\b)?"
)
_DAY_FIRST: Final = re.compile(
    rf"(?<!\d)(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH})\b\.?(?:,?\s+(\d{{4}})\b)?"
)
_CLOCK: Final = re.compile(
    r"(?<!\d)(\d{1,2}):(\d{2})(?::\d{2}(?:\.\d+)?)?(?:\s*([ap])\.?\s?m\b\.?)?", re.I
)
_ISO_VALUE: Final = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?"
)
_DIGIT: Final = re.compile(r"\d")
_MERIDIEM: Final = re.compile(r"(?<![\d:])(\d{1,2})\s*([ap])\.?\s?m\b\.?", re.IGNORECASE)


def _date(year: int | None, month: int, day: int) -> tuple[int | None, int, int] | None:
    try:
        datetime.date(year or 2000, month, day)  # 2000: a leap year, so 29 February reads
    except ValueError:
        return None
    return year, month, day


def _dates(text: str) -> list[tuple[int | None, int, int]]:
    found: list[tuple[int | None, int, int]] = []
    taken: list[tuple[int, int]] = []
    for match in _ISO.finditer(text):
        got = _date(int(match[1]), int(match[3]), int(match[4]))
        if got is not None:
            found.append(got)
            taken.append(match.span())
    lower = text.lower()
    if _MONTH_SET.isdisjoint(_LETTERS.findall(lower)):  # no month named: no prose date
        return found
    for pattern, month_at, day_at in ((_MONTH_FIRST, 1, 2), (_DAY_FIRST, 2, 1)):
        for match in pattern.finditer(lower):
            if any(a < match.end() and match.start() < b for a, b in taken):
                continue
            year = int(match[3]) if match[3] else None
            got = _date(year, _MONTHS[match[month_at]], int(match[day_at]))
            if got is not None:
                found.append(got)
                taken.append(match.span())
    return found


def _hour(hour: int, meridiem: str | None) -> int | None:
    if meridiem is None:
        return hour if hour < 24 else None
    if not 1 <= hour <= 12:
        return None
    return hour % 12 + (12 if meridiem.lower() == "p" else 0)


def _times(text: str) -> list[str]:
    found: list[str] = []
    for match in _CLOCK.finditer(text):
        hour, minute = _hour(int(match[1]), match[3]), int(match[2])
        if hour is not None and minute < 60:
            found.append(f"t:{hour:02d}:{minute:02d}")
    for match in _MERIDIEM.finditer(text):
        hour = _hour(int(match[1]), match[2])
        if hour is not None:
            found.append(f"t:{hour:02d}:00")
    return found


def _keys(date: tuple[int | None, int, int]) -> tuple[str, str]:
    year, month, day = date
    head = "*" if year is None else f"{year:04d}"
    return f"{head}-{month:02d}-{day:02d}", f"md:{month:02d}-{day:02d}"


def date_keys(text: str) -> set[str]:
    """Every date and time written in ``text``, as index keys."""
    form = unicodedata.normalize("NFKC", text)
    out: set[str] = set(_times(form))
    for date in _dates(form):
        out.update(_keys(date))
    return out


def value_groups(value: str, *, with_time: bool) -> tuple[tuple[str, ...], ...] | None:
    """What a ``date`` (or ``datetime``) value must be found as: one group of alternative keys
    for its date, and for a datetime that names a time, one for the time; each group must be
    found (a ``date`` value's time is not judged). None when the value holds no date, or more
    than one date, or (a datetime) more than one time."""
    form = value.strip() if value.isascii() else unicodedata.normalize("NFKC", value).strip()
    iso = _ISO_VALUE.fullmatch(form)  # the common case, a tool's own form: one regex
    if iso is not None:
        got = _date(int(iso[1]), int(iso[2]), int(iso[3]))
        if got is None:
            return None
        year, month, day = got
        found: list[tuple[str, ...]] = [
            (f"{year:04d}-{month:02d}-{day:02d}", f"*-{month:02d}-{day:02d}")
        ]
        if with_time and iso[4] is not None:
            hour = int(iso[4])
            if hour > 23 or int(iso[5]) > 59:
                return None
            found.append((f"t:{hour:02d}:{iso[5]}",))
        return tuple(found)
    dates = set(_dates(form))
    if len(dates) != 1:
        return None
    year, month, day = dates.pop()
    if year is None:
        groups: list[tuple[str, ...]] = [(f"md:{month:02d}-{day:02d}",)]
    else:
        groups = [(f"{year:04d}-{month:02d}-{day:02d}", f"*-{month:02d}-{day:02d}")]
    times = set(_times(form)) if with_time else set()
    if len(times) > 1:
        return None
    if times:
        groups.append((times.pop(),))
    return tuple(groups)


def dates_written(text: str) -> list[tuple[tuple[str, ...], ...]]:
    """The groups (as ``value_groups`` gives them) of every date written in ``text``."""
    out: list[tuple[tuple[str, ...], ...]] = []
    if _DIGIT.search(text) is None:  # every form of a date has a digit
        return out
    for year, month, day in dict.fromkeys(_dates(unicodedata.normalize("NFKC", text))):
        if year is None:
            out.append(((f"md:{month:02d}-{day:02d}",),))
        else:
            out.append(((f"{year:04d}-{month:02d}-{day:02d}", f"*-{month:02d}-{day:02d}"),))
    return out
