"""Name-based call shapes: read-shaped, write-shaped, and the argument keys that carry paths (T1).

These predicates are deliberately conservative substring tests on tool names: a false "write" only
costs a cache miss or a refusal, a false "read" would widen authority. Caller-supplied metadata
never enters them. Pure functions, no state.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = [
    "PATH_KEYS",
    "READ_PREFIXES",
    "SHELL_KEYS",
    "WRITE_NEEDLES",
    "read_shaped",
    "write_shaped",
]

READ_PREFIXES: Final[tuple[str, ...]] = (
    "read_",
    "get_",
    "search_",
    "list_",
    "lookup_",
    "find_",
    "calc",
)
"""The read-only family of the default floor's ``allow_prefix``."""

WRITE_NEEDLES: Final[tuple[str, ...]] = (
    "write",
    "edit",
    "delete",
    "patch",
    "put",
    "exec",
    "run",
    "modify",
    "create",
    "book",
    "update",
    "cancel",
    "send",
    "remove",
    "drop",
    "post",
    "upload",
    "move",
    "rename",
    "insert",
    "kill",
    "destroy",
    "purge",
    "truncate",
    "reset",
    "refund",
    "pay",
    "charge",
    "transfer",
    "bash",
    "shell",
    "apply",
)
"""Substrings that make a tool name write-shaped (case-insensitive)."""

PATH_KEYS: Final[tuple[str, ...]] = (
    "path",
    "file_path",
    "filePath",
    "filepath",
    "file",
    "target",
    "filename",
    "dir",
    "directory",
    "dest",
    "destination",
    "notebook_path",
)
"""Argument keys whose string value names a file a write-shaped tool would touch."""

SHELL_KEYS: Final[tuple[str, ...]] = ("command", "cmd")
"""Argument keys that carry a shell command line."""


_WRITE_RE: Final = re.compile("|".join(re.escape(n) for n in WRITE_NEEDLES))


def write_shaped(tool: str) -> bool:
    """True when the lower-cased name contains any write needle."""
    return _WRITE_RE.search(tool.lower()) is not None


def read_shaped(tool: str) -> bool:
    """True for a low-risk read: a read prefix (or ``calculate``) and not write-shaped."""
    lowered = tool.lower()
    if write_shaped(lowered):
        return False
    return lowered.startswith(READ_PREFIXES) or lowered == "calculate"
