"""The run context of a Claude Code session, read from its transcript (tier T3).

The provenance rung (sink rules, ``after_untrusted``) asks where an argument's value came from:
the user's words or a tool result. The gateway rebuilds that from the conversation it carries;
a hook sees one call at a time, but every hook call names the session's transcript
(``transcript_path``, JSON lines). ``TranscriptContext`` reads it into a ``fak.abi.Context``:
the user's own text is trusted, each ``tool_result`` is an untrusted result of the tool whose
``tool_use`` it answers. It reads only what was appended since its last look (the transcript
is append-only), so a resident decider keeps one per session and pays per new line. A line
that is not JSON is skipped, as is an entry of a kind it does not know.

Claude Code appends to its transcript asynchronously: measured with 2.1.328, the PreToolUse
hook of a call can run before the previous call's ``tool_result`` line is on disk. The file is
written in order, so a transcript that already holds the ``tool_use`` of the call being decided
holds everything before it; ``records`` tells the decider when it may trust what it read.

Codex names its own rollout (JSON lines of ``response_item`` records holding the Responses
items the model saw): with ``codex=True`` the same reader takes user and developer messages as
trusted and each ``function_call_output`` / ``custom_tool_call_output`` as an untrusted result
of the call it answers (Codex 0.169/0.171 write the call before its PreToolUse hook runs).
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping
from typing import Any, Final

from fak.abi import Context

__all__ = ["TranscriptContext", "TranscriptError"]

READ_MAX: Final = 256 * 1024 * 1024
"""Bytes of one transcript read at most; a longer one refuses (the rung must not guess)."""


_TURNS: Final = frozenset({"user", "assistant"})
"""Entry types that are the conversation itself (Claude Code also writes request blobs,
attachments and bookkeeping records to the same file)."""


class TranscriptError(OSError):
    """The transcript cannot be read as a regular file within ``READ_MAX``."""


def _text(content: Any) -> str:
    """The text of a message or tool_result content (a string or a list of blocks)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts: list[str] = []
    for block in content:
        if isinstance(block, Mapping) and isinstance(block.get("text"), str):
            parts.append(block["text"])
    return "\n".join(parts)


class TranscriptContext:
    """One session's context, kept up to date from its transcript file."""

    __slots__ = ("_carry", "_codex", "_names", "_offset", "_seen", "context", "path")

    def __init__(self, path: str, *, codex: bool = False) -> None:
        self.path = path
        self._codex = codex  # a Codex rollout rather than a Claude Code transcript
        self.context = Context()
        self._offset = 0
        self._carry = b""  # a last line not yet ended by a newline
        self._names: dict[str, str] = {}  # tool_use id -> tool name
        self._seen: set[str] = set()  # tool_result ids already added

    def _restart(self) -> None:
        self.context = Context()
        self._offset = 0
        self._carry = b""
        self._names.clear()
        self._seen.clear()

    def refresh(self) -> Context:
        """Read what was appended since the last call; the context as of now."""
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
        try:
            fd = os.open(self.path, flags)
        except OSError as exc:
            raise TranscriptError(exc.errno, f"cannot open the transcript: {exc.strerror}") from exc
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise TranscriptError(0, "the transcript is not a regular file")
            if st.st_size > READ_MAX:
                raise TranscriptError(0, f"the transcript is over {READ_MAX} bytes")
            if st.st_size < self._offset:  # rewritten, not appended: start again
                self._restart()
            f.seek(self._offset)
            data = f.read(st.st_size - self._offset)
        self._offset += len(data)
        lines = (self._carry + data).split(b"\n")
        self._carry = lines.pop()
        for line in lines:
            self._entry(line)
        return self.context

    def records(self, call_id: str) -> bool:
        """Whether the transcript, as read so far, holds the ``tool_use`` of ``call_id``."""
        return call_id in self._names

    def _entry(self, line: bytes) -> None:
        try:
            doc = json.loads(line)
        except ValueError:
            return
        if self._codex:
            if isinstance(doc, Mapping) and doc.get("type") == "response_item":
                self._rollout_item(doc.get("payload"))
            return
        if not isinstance(doc, Mapping) or doc.get("type") not in _TURNS:
            return  # request blobs, attachments, queue records: not the conversation
        message = doc.get("message")
        if not isinstance(message, Mapping):
            return
        role = message.get("role")
        content = message.get("content")
        if role == "assistant" and isinstance(content, list):
            for block in content:
                if isinstance(block, Mapping) and block.get("type") == "tool_use":
                    self._names[str(block.get("id", ""))] = str(block.get("name", ""))
            return
        if role != "user":
            return
        if isinstance(content, str):
            self.context.user(content)
            return
        if not isinstance(content, list):
            return
        for block in content:
            if not isinstance(block, Mapping):
                continue
            if block.get("type") == "tool_result":
                call_id = str(block.get("tool_use_id", ""))
                if call_id in self._seen:
                    continue
                self._seen.add(call_id)
                tool = self._names.get(call_id, "tool_result")
                self.context.result(tool, call_id, _text(block.get("content")) or "(empty)")
            elif block.get("type") == "text" and isinstance(block.get("text"), str):
                self.context.user(block["text"])

    def _rollout_item(self, item: Any) -> None:
        """One ``response_item`` of a Codex rollout: the Responses-API item the model saw."""
        if not isinstance(item, Mapping):
            return
        kind = item.get("type")
        if kind in _ROLLOUT_CALLS:
            self._names[str(item.get("call_id", ""))] = str(item.get("name", kind))
        elif kind in _ROLLOUT_OUTPUTS:
            call_id = str(item.get("call_id", ""))
            if call_id in self._seen:
                return
            self._seen.add(call_id)
            tool = self._names.get(call_id, "tool_result")
            self.context.result(tool, call_id, _output_text(item.get("output")) or "(empty)")
        elif kind == "message" and item.get("role") in _ROLLOUT_TRUSTED:
            text = _output_text(item.get("content"))
            if text:
                self.context.user(text)


_ROLLOUT_CALLS: Final = frozenset({"function_call", "custom_tool_call", "local_shell_call"})
_ROLLOUT_OUTPUTS: Final = frozenset({"function_call_output", "custom_tool_call_output"})
_ROLLOUT_TRUSTED: Final = frozenset({"user", "developer", "system"})
"""Roles whose messages are the user's or the operator's own words (assistant text is the
model's, never a source of trust)."""


def _output_text(value: Any) -> str:
    """The text of a rollout item's ``output`` or ``content``: a string, a list of content
    items (``input_text``/``output_text``/``text``), or an object carrying ``content``."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return _output_text(value.get("content"))
    if not isinstance(value, list):
        return ""
    return "\n".join(
        block["text"]
        for block in value
        if isinstance(block, Mapping) and isinstance(block.get("text"), str)
    )
