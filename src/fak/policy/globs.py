"""Path and glob matching for the policy floor: guarded fragments and ``allow_glob`` (tier T1).

Two matchers. ``GuardGlob`` answers "does this path (or command line) touch a guarded place?" and
is over-broad on purpose (case-insensitive, substring for plain fragments). ``AllowGlob`` answers
"is this value a path that stays under the permitted glob?" and fails closed on a ``..`` escape.
Wildcards compile to RE2 so matching stays linear in the input. With a ``root`` (the project
directory), ``AllowGlob`` resolves a value against it, symlinks included, so an absolute path
inside the project matches a relative glob and anything that lands outside it fails closed;
that resolution is the one filesystem access here.
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass, field
from typing import Any

from fak.policy.regex import compile_re2

__all__ = ["AllowGlob", "GuardGlob", "narrower_root", "normalize_path"]

_WILD = frozenset("*?[")


def normalize_path(value: str) -> str:
    """Slash-normalise (``\\`` → ``/``) and collapse ``.``/``..`` segments lexically."""
    slashed = value.replace("\\", "/")
    if not slashed:
        return slashed
    return posixpath.normpath(slashed)


def _translate(glob: str, *, segment: str) -> str:
    """Glob → RE2 body: ``*`` and ``?`` never cross ``segment`` characters; ``[...]`` kept."""
    out: list[str] = []
    i = 0
    while i < len(glob):
        ch = glob[i]
        if ch == "*":
            out.append(f"[^{segment}]*")
        elif ch == "?":
            out.append(f"[^{segment}]")
        elif ch == "[":
            end = glob.find("]", i + 1)
            if end == -1 or end == i + 1:  # no class (or an empty one): a literal [
                out.append(r"\[")
            else:
                body = glob[i + 1 : end]
                if body.startswith(("!", "^")):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = end
        elif ch == "\\" and i + 1 < len(glob):
            i += 1
            out.append(_escape(glob[i]))
        else:
            out.append(_escape(ch))
        i += 1
    return "".join(out)


def _escape(ch: str) -> str:
    # RE2 rejects an escaped non-ASCII character; outside ASCII every character is literal
    return "\\" + ch if ch.isascii() and not ch.isalnum() and ch != "_" else ch


@dataclass(frozen=True, slots=True)
class GuardGlob:
    """A guarded place (``self_modify_globs`` entry). Matching is lower-case and over-broad."""

    glob: str
    _fragment: str = field(init=False, repr=False)
    _regex: Any = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        fragment = self.glob.replace("\\", "/").lower()
        object.__setattr__(self, "_fragment", fragment)
        regex = None
        if _WILD.intersection(fragment):
            regex = compile_re2(_translate(fragment, segment=r"/\s"))
        object.__setattr__(self, "_regex", regex)

    def in_path(self, path: str) -> bool:
        """Does a path argument touch the guarded place (raw or after ``..`` collapsing)?"""
        raw = path.replace("\\", "/").lower()
        return self._hit(raw) or self._hit(normalize_path(raw))

    def in_text(self, text_lower: str) -> bool:
        """Does an already lower-cased, slash-normalised command line mention the place?"""
        return self._hit(text_lower)

    def _hit(self, text: str) -> bool:
        if self._regex is not None:
            return self._regex.search(text) is not None
        fragment = self._fragment
        if fragment in text:
            return True
        bare = fragment.rstrip("/")
        # a guarded directory named without its trailing slash ("x/.git" for ".git/")
        return bool(bare) and bare != fragment and (text == bare or text.endswith("/" + bare))


@dataclass(frozen=True, slots=True)
class AllowGlob:
    """``allow_glob``: the value must be a path under the glob; an escape fails closed."""

    glob: str
    root: str | None = None
    _kind: str = field(init=False, repr=False)
    _base: str = field(init=False, repr=False)
    _regex: Any = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        glob = self.glob.replace("\\", "/")
        kind, base, regex = "match", "", None
        if glob in ("**", "./**"):
            kind = "any-relative"
        elif glob.endswith("/**"):
            kind, base = "under", normalize_path(glob[:-3] or "/")
        else:
            regex = compile_re2("^" + _translate(normalize_path(glob), segment="/") + "$")
        object.__setattr__(self, "_kind", kind)
        object.__setattr__(self, "_base", base)
        object.__setattr__(self, "_regex", regex)

    def admits(self, value: str, root: str | None = None) -> bool:
        """``root``: a narrower root for this one value (``narrower_root``), else the rule's."""
        if self.root is not None and not self.glob.startswith("/"):
            inside = _inside_root(root or self.root, value)
            if inside is None:
                return False  # outside the project (or unreadable): the rule refuses
            value = inside
        path = normalize_path(value)
        if not path or "\x00" in path:
            return False
        escapes = path == ".." or path.startswith("../")
        if self._kind == "any-relative":
            return not escapes and not path.startswith("/")
        if self._kind == "under":
            base = self._base
            if escapes and not base.startswith(".."):
                return False
            if base in (".", ""):
                return not escapes and not path.startswith("/")
            if base == "/":
                return path.startswith("/")
            return path == base or path.startswith(base + "/")
        if escapes:
            return False
        return self._regex is not None and self._regex.search(path) is not None


def narrower_root(root: str | None, asked: str) -> str | None:
    """``asked`` (a client's working directory), resolved, when it is an absolute path at or
    under ``root``; else None. A root taken from a request can only narrow the operator's."""
    if root is None or not asked.startswith("/") or _inside_root(root, asked) is None:
        return None
    try:
        return os.path.realpath(asked)
    except (OSError, ValueError):
        return None


def _inside_root(root: str, value: str) -> str | None:
    """``value`` as a path relative to ``root`` after resolving it (``..``, symlinks), or None
    when it resolves outside the root."""
    if not value or "\x00" in value:
        return None
    slashed = value.replace("\\", "/")
    try:
        base = os.path.realpath(root)
        full = os.path.realpath(os.path.join(base, os.path.expanduser(slashed)))
    except (OSError, ValueError):
        return None
    if full == base:
        return "."
    if not full.startswith(base.rstrip("/") + "/"):
        return None
    return full[len(base.rstrip("/")) + 1 :]
