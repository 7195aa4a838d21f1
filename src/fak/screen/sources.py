"""Per-source screen settings: which detectors run and how strict, by tool or tool prefix (tier T1).

A ``ScreenPolicy`` maps a result's source (the tool that produced it) to ``SourceSettings``: an
exact tool rule wins, then the longest matching prefix rule, then the default. Fields a rule
leaves unset come from the default. Plain values built by the kernel from the manifest's
``screen`` section; nothing here reads a manifest or the environment.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from fak.screen.injection import DEFAULT_THRESHOLD

__all__ = ["DETECTOR_FAMILIES", "ScreenPolicy", "SourceRule", "SourceSettings"]

DETECTOR_FAMILIES: tuple[str, ...] = ("secrets", "injection", "pollution")


@dataclass(frozen=True, slots=True)
class SourceSettings:
    """What the screen does for one source. ``quarantine`` is ``span`` or ``whole``: whether a
    held injection or secret may be cut out of the result (pollution is always whole). Without
    a manifest ``screen`` section it is ``whole`` (stub-only consumers see no change); a section
    defaults to ``span``."""

    secrets: bool = True
    injection: bool = True
    pollution: bool = True
    injection_threshold: float = DEFAULT_THRESHOLD
    quarantine: str = "whole"

    @property
    def key(self) -> str:
        """A short stable name of these settings (part of the verdict memo key)."""
        flags = "".join("1" if on else "0" for on in (self.secrets, self.injection, self.pollution))
        return f"{flags}:{self.injection_threshold:g}:{self.quarantine}"


DEFAULT_SETTINGS = SourceSettings()


@dataclass(frozen=True, slots=True)
class SourceRule:
    """Settings for one tool (``prefix=False``) or every tool whose name starts with ``name``.

    ``None`` fields inherit from the policy's default."""

    name: str
    prefix: bool = False
    detectors: tuple[str, ...] | None = None
    injection_threshold: float | None = None
    quarantine: str | None = None

    def apply(self, base: SourceSettings) -> SourceSettings:
        out = base
        if self.detectors is not None:
            on = set(self.detectors)
            out = replace(
                out,
                secrets="secrets" in on,
                injection="injection" in on,
                pollution="pollution" in on,
            )
        if self.injection_threshold is not None:
            out = replace(out, injection_threshold=self.injection_threshold)
        if self.quarantine is not None:
            out = replace(out, quarantine=self.quarantine)
        return out


class ScreenPolicy:
    """Source -> settings. Immutable; resolution is memoized per source name."""

    __slots__ = ("_cache", "_exact", "_prefixes", "default")

    def __init__(
        self, default: SourceSettings = DEFAULT_SETTINGS, rules: Iterable[SourceRule] = ()
    ) -> None:
        self.default = default
        exact: dict[str, SourceSettings] = {}
        prefixes: list[tuple[str, SourceSettings]] = []
        for rule in rules:
            if rule.prefix:
                prefixes.append((rule.name, rule.apply(default)))
            else:
                exact[rule.name] = rule.apply(default)
        self._exact = exact
        self._prefixes = tuple(sorted(prefixes, key=lambda item: -len(item[0])))
        self._cache: dict[str, SourceSettings] = {}

    def for_source(self, source: str) -> SourceSettings:
        """The settings for results of ``source`` (a tool name; ``""`` when unknown)."""
        found = self._cache.get(source)
        if found is not None:
            return found
        found = self._exact.get(source)
        if found is None:
            found = next((s for p, s in self._prefixes if source.startswith(p)), self.default)
        if len(self._cache) < 4096:
            self._cache[source] = found
        return found

    @property
    def trivial(self) -> bool:
        """Every source gets the built-in defaults."""
        return self.default == DEFAULT_SETTINGS and not self._exact and not self._prefixes
