"""Tools the fleet tests register with ``fak mcp --tools PATH.py:register``: a notes file that
every process's tools read and write (the shared world the vDSO caches reads of)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def _notes() -> Path:
    return Path(os.environ["FAK_TEST_NOTES"])


def read_notes(args: dict[str, Any]) -> str:
    return _notes().read_text()


def write_notes(args: dict[str, Any]) -> str:
    _notes().write_text(str(args.get("text", "")))
    return "ok"


def register(kernel: Any) -> None:
    kernel.register_tool("read_notes", read_notes, read_only=True)
    kernel.register_tool("write_notes", write_notes)
