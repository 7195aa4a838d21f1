"""The shell write-verb floor: does a command line write, and does it touch a guarded place? (T1)

This is a deliberately over-broad text test, not a shell parser: a false refusal is cheap, a false
allow is the failure the self-modify rung exists to stop. A command "writes" when it contains a
mutating verb in command position (rm, cp, mv, tee, sed -i, chmod, ...), a mutating git
subcommand, ``find -delete/-exec``, an interpreter's inline-eval flag, an in-place editor, an
archive extraction or sync, a downloader writing a file, or a ``>``/``>>`` redirect to a real file.
Pure; the patterns are fixed and compiled once at import.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from fak.policy.globs import GuardGlob

__all__ = ["command_writes", "shell_self_modify"]

_BOUNDARY: Final = r"(?:^|[\s;&|(`'\"/{])"

_WRITE_PATTERNS: Final[tuple[re.Pattern[str], ...]] = tuple(
    re.compile(p)
    for p in (
        # mutating verbs in command position
        _BOUNDARY + r"(?:rm|rmdir|unlink|cp|mv|ln|dd|tee|truncate|shred|install|patch|chmod"
        r"|chown|chgrp|touch|mkdir|mkfifo|mknod|rsync|unzip|split|csplit|sponge)(?=\s|$)",
        # in-place editors
        _BOUNDARY + r"sed\s+(?:[^;&|]*\s)?-[a-z]*i",
        _BOUNDARY + r"sed\s+(?:[^;&|]*\s)?--in-place",
        _BOUNDARY + r"(?:perl|ruby)\s+(?:[^;&|]*\s)?-[a-z]*i",
        _BOUNDARY + r"[gm]?awk\b[^;&|]*-i\s*inplace",
        r"(?:^|[;&|(]\s*)(?:ed|ex|vi|vim|nano)\s",
        # git subcommands that rewrite the work tree, index or history (also via -C / --git-dir)
        _BOUNDARY + r"git\s+(?:[^;&|]*\s)?(?:apply|am|checkout|restore|stash|reset|commit|clean"
        r"|rm|mv|merge|rebase|pull|switch|cherry-pick|revert|worktree|config|update-index)\b",
        # find with a mutating action
        _BOUNDARY + r"find\b[^;&|]*\s-(?:delete|exec|execdir|ok|fprint|fprintf)\b",
        # interpreter inline eval
        _BOUNDARY + r"(?:python[0-9.]*|pypy[0-9.]*|node|deno|bun|ruby|perl|php|lua|bash|sh|zsh"
        r"|dash|ksh|fish|pwsh|powershell)\s+(?:[^;&|]*\s)?(?:-[a-z]*[ce]\b|--eval|-p\b|--print"
        r"|-command)",
        # archive extraction into a destination
        _BOUNDARY + r"tar\b[^;&|]*\s(?:-[a-z]*x|x[a-z]*\s|--extract|--get)",
        # downloaders writing a file
        _BOUNDARY + r"(?:curl|wget)\b[^;&|]*\s(?:-[a-z]*o|-o|--output|--remote-name)",
        # redirect to a real file (not 2>&1, >&2, or /dev/null)
        r"[0-9]?>>?\|?\s*(?!&|/dev/null\b)[^\s&|;<>]",
    )
)


def command_writes(command_lower: str) -> bool:
    """True when a lower-cased, slash-normalised command line is write-shaped."""
    return any(p.search(command_lower) is not None for p in _WRITE_PATTERNS)


def shell_self_modify(command: str, globs: Sequence[GuardGlob]) -> GuardGlob | None:
    """The guarded glob a write-shaped command touches, or None."""
    if not globs:
        return None
    text = command.replace("\\", "/").lower()
    touched = next((g for g in globs if g.in_text(text)), None)
    if touched is None or not command_writes(text):
        return None
    return touched
