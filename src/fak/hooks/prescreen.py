"""What a reading tool is about to show the model, computed before it runs (tier T3).

Claude Code cannot take a built-in tool's output back out of the context at ``PostToolUse``, so
the decider screens what ``Read``, ``NotebookRead``, ``Grep`` and ``Glob`` will return at
``PreToolUse`` and refuses the call when the kernel would quarantine it. Each function here
returns that text as the tool will decode it, or ``None`` when there is no text to screen (an
image, a binary file, counts only). Decoding follows the tool: a byte-order mark picks UTF-16 or
UTF-8, an undecodable byte becomes U+FFFD (one stray byte no longer skips the screen), NUL-laced
text that is UTF-16 without a mark is read as UTF-16. A read window (``offset``/``limit``) is
read line by line, so a large file is screened where it is read. Work is bounded: past
``SEARCH_BUDGET`` bytes of files a search raises ``TooMuchToScreen`` and the call is refused
with a reason that says to narrow it. No I/O beyond reading the files the tool would read.
"""

from __future__ import annotations

import codecs
import fnmatch
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Final

import re2

__all__ = [
    "READ_LIMIT",
    "SEARCH_BUDGET",
    "TooMuchToScreen",
    "glob_view",
    "grep_view",
    "read_view",
    "sniff_encoding",
]

READ_LIMIT: Final = 2000  # Read's default number of lines
WINDOW_MAX: Final = 8 * 1024 * 1024  # characters of one view screened at most
SEARCH_BUDGET: Final = 64 * 1024 * 1024  # bytes of files one Grep pre-screen reads at most
NAMES_MAX: Final = 20_000  # paths one Glob / files-only Grep pre-screen lists at most
_HEAD: Final = 8192
_IMAGE_MAGIC: Final = (b"\x89PNG", b"\xff\xd8\xff", b"GIF8", b"RIFF", b"%PDF")


class TooMuchToScreen(Exception):
    """The search would read more than the pre-screen's budget; the caller refuses the call."""


def sniff_encoding(head: bytes) -> str | None:
    """The codec the reading tool decodes these first bytes with; None for binary."""
    if head.startswith(codecs.BOM_UTF8):
        return "utf-8-sig"
    if head.startswith(codecs.BOM_UTF16_LE):
        return "utf-16"
    if head.startswith(codecs.BOM_UTF16_BE):
        return "utf-16"
    if head.startswith(_IMAGE_MAGIC):
        return None  # shown as an image or a document block, not as text
    if b"\x00" not in head:
        return "utf-8"
    even, odd = head[0::2], head[1::2]
    if odd and odd.count(0) > 0.6 * len(odd) and even.count(0) < 0.1 * len(even):
        return "utf-16-le"
    if even and even.count(0) > 0.6 * len(even) and odd.count(0) < 0.1 * len(odd):
        return "utf-16-be"
    return None


def _lines(path: Path) -> Iterator[str] | None:
    try:
        with path.open("rb") as f:
            head = f.read(_HEAD)
    except OSError:
        return None
    codec = sniff_encoding(head)
    if codec is None:
        return None
    return _decoded_lines(path, codec)


def _decoded_lines(path: Path, codec: str) -> Iterator[str]:
    try:
        with path.open("r", encoding=codec, errors="replace", newline=None) as f:
            yield from f
    except OSError:
        return


def _int(value: Any, default: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return default
    return int(value)


def read_view(path: Path, args: Mapping[str, Any]) -> str | None:
    """The text ``Read`` shows for ``path`` with the call's ``offset`` (1-based line) and
    ``limit`` (lines; 2000 by default); None when the file is not text."""
    if not path.is_file():
        return None
    lines = _lines(path)
    if lines is None:
        return None
    start = max(1, _int(args.get("offset"), 1))
    limit = max(1, _int(args.get("limit"), READ_LIMIT))
    out: list[str] = []
    size = 0
    for number, line in enumerate(lines, start=1):
        if number < start:
            continue
        if number >= start + limit or size > WINDOW_MAX:
            break
        out.append(line)
        size += len(line)
    lines.close()  # type: ignore[attr-defined]
    return "".join(out)


def _expand_braces(glob: str) -> list[str]:
    match = re.search(r"\{([^{}]*)\}", glob)
    if match is None:
        return [glob]
    head, tail = glob[: match.start()], glob[match.end() :]
    return [x for part in match.group(1).split(",") for x in _expand_braces(head + part + tail)]


def _matches_glob(rel: str, globs: list[str]) -> bool:
    name = rel.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatchcase(rel if "/" in g else name, g) for g in globs)


def _ignored_names(root: Path) -> frozenset[str]:
    """The plain names (no wildcard, no path) a ``.gitignore`` in ``root`` or an ancestor lists:
    the common case of what ripgrep skips (``node_modules/``, ``build``, ``*.log`` is not one).
    A wildcard rule is not applied: such files are screened, never skipped unseen."""
    names: set[str] = set()
    for folder in (root, *root.parents):
        try:
            text = (folder / ".gitignore").read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for raw in text.splitlines()[:2000]:
            line = raw.strip().removeprefix("/").removesuffix("/")
            if line and not line.startswith(("#", "!")) and not any(c in line for c in "*?[/\\"):
                names.add(line)
    return frozenset(names)


def _files(root: Path, glob: str | None) -> Iterator[Path]:
    """Files a search under ``root`` reads: hidden entries and the plain names a .gitignore
    lists are skipped, as ripgrep does."""
    globs = _expand_braces(glob) if glob else []
    if root.is_file():
        yield root
        return
    ignored = _ignored_names(root)
    for here, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in ignored)
        names = [n for n in names if n not in ignored]
        for name in sorted(names):
            if name.startswith("."):
                continue
            path = Path(here) / name
            rel = path.relative_to(root).as_posix()
            if globs and not _matches_glob(rel, globs):
                continue
            yield path


def _pattern(args: Mapping[str, Any]) -> Any:
    pattern = args.get("pattern")
    if not isinstance(pattern, str) or not pattern:
        return None
    options = re2.Options()
    options.case_sensitive = not bool(args.get("-i"))
    options.dot_nl = bool(args.get("multiline"))
    options.log_errors = False
    try:
        return re2.compile(pattern, options)
    except re2.error:
        flags = re.IGNORECASE if args.get("-i") else 0
        try:
            return re.compile(pattern, flags)
        except re.error:
            return None  # the tool itself will refuse the pattern


def grep_view(cwd: Path, args: Mapping[str, Any]) -> str | None:
    """The text ``Grep`` shows: matching lines with their context in ``content`` mode, the
    candidate paths in ``files_with_matches`` mode (a superset: names are cheap), None for
    counts. Raises ``TooMuchToScreen`` past the budget."""
    mode = args.get("output_mode") or "files_with_matches"
    raw_path = args.get("path")
    root = cwd / Path(raw_path).expanduser() if isinstance(raw_path, str) and raw_path else cwd
    glob = args.get("glob") if isinstance(args.get("glob"), str) else None
    if mode == "count":
        return None
    if mode != "content":
        return _names(_files(root, glob), root)
    pattern = _pattern(args)
    if pattern is None:
        return None
    context = max(0, _int(args.get("-C"), 0))
    before = max(context, _int(args.get("-B"), 0))
    after = max(context, _int(args.get("-A"), 0))
    out: list[str] = []
    size = 0
    budget = SEARCH_BUDGET
    for path in _files(root, glob):
        try:
            budget -= path.stat().st_size
        except OSError:
            continue
        if budget < 0:
            msg = (
                f"the search reads more than {SEARCH_BUDGET // (1024 * 1024)} MiB of files; "
                "narrow it (path, glob) so its results can be screened"
            )
            raise TooMuchToScreen(msg)
        lines = _lines(path)
        if lines is None:
            continue
        text = list(lines)
        for i, line in enumerate(text):
            if pattern.search(line) is None:
                continue
            chunk = "".join(text[max(0, i - before) : i + after + 1])
            out.append(f"{path}:{chunk}")
            size += len(chunk)
            if size > WINDOW_MAX:
                return "".join(out)
    return "".join(out)


def _names(paths: Iterator[Path], root: Path) -> str:
    out: list[str] = []
    for n, path in enumerate(paths):
        if n >= NAMES_MAX:
            break
        out.append(str(path))
    return "\n".join(out)


def glob_view(cwd: Path, args: Mapping[str, Any]) -> str | None:
    """The paths ``Glob`` lists (at most ``NAMES_MAX``)."""
    pattern = args.get("pattern")
    if not isinstance(pattern, str) or not pattern:
        return None
    raw_path = args.get("path")
    root = cwd / Path(raw_path).expanduser() if isinstance(raw_path, str) and raw_path else cwd
    if not root.is_dir():
        return None
    try:
        found = (p for g in _expand_braces(pattern) for p in root.glob(g))
        return _names(found, root)
    except (OSError, ValueError, NotImplementedError):
        return None
