"""Agents' own hook protocols, translated to kernel calls and back (tier T3, pure, no I/O).

Claude Code runs a command before each tool call (``PreToolUse``) and after it
(``PostToolUse``), with a JSON object on stdin, and reads the command's exit code, stderr and
stdout JSON. Its blocking signal is exit code 2 (stderr goes to the model); exit 1 is only a
warning and the tool runs anyway, so every refusal and every failure here maps to exit 2.
Codex (>= 0.124) runs the same ``PreToolUse`` command hooks with the same object and exit codes
(its shell tools arrive as ``Bash`` with ``{"command": ...}``, MCP tools as ``mcp__<server>__<
tool>``); it is told apart by the ``turn_id`` it always sends. Its answers differ: Codex 0.169
refuses ``permissionDecision`` ``allow`` and ``ask`` as unsupported, so an allowed call answers
with nothing (exit 0), and a call that needs a witness or repaired arguments is refused with
the reason. Its ``transcript_path`` is Codex's own rollout, read as one (not as Claude Code's
transcript) for the run's context. fak's own ``{tool, args, meta}`` shape is kept. ``read_hook``
detects which one it was given; the ``answer_*`` functions say what to print and how to exit.
The CLI does the reading and writing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from fak.abi import Verdict, VerdictKind

__all__ = [
    "BLOCK",
    "HookAnswer",
    "HookError",
    "HookInput",
    "answer_failure",
    "answer_post",
    "answer_pre",
    "read_hook",
]

BLOCK: Final = 2
"""Claude Code's blocking exit code; every failure exits with it, in either shape."""

CLAUDE = "claude-code"
CODEX = "codex"
FAK = "fak"


class HookError(ValueError):
    """The input is not a hook call fak understands; the answer is a blocking refusal."""


@dataclass(frozen=True, slots=True)
class HookInput:
    format: str  # "claude-code" | "codex" | "fak"
    event: str  # "PreToolUse" | "PostToolUse" (fak's shape is always PreToolUse)
    tool: str
    args: Any = None
    response: Any = None  # PostToolUse: what the tool returned
    cwd: str = ""
    session: str = ""
    call_id: str = ""
    meta: Mapping[str, str] = field(default_factory=dict)
    transcript: str = ""  # transcript_path (Codex: its rollout): where the run's context is read


@dataclass(frozen=True, slots=True)
class HookAnswer:
    exit_code: int
    stdout: str = ""
    stderr: str = ""


def read_hook(raw: bytes, fmt: str = "auto") -> HookInput:
    """Parse stdin; ``fmt`` is ``auto`` (detect), ``claude-code``, ``codex`` or ``fak``."""
    try:
        doc = json.loads(raw)
    except ValueError as exc:
        raise HookError("the hook input is not JSON") from exc
    if not isinstance(doc, dict):
        raise HookError("the hook input is not a JSON object")
    if fmt == "auto":
        if "hook_event_name" in doc or "tool_name" in doc:
            fmt = CODEX if "turn_id" in doc else CLAUDE
        else:
            fmt = FAK
    if fmt in (CLAUDE, CODEX):
        return _claude(doc, fmt)
    if fmt == FAK:
        return _fak(doc)
    raise HookError(f"unknown hook format {fmt!r}")


def _claude(doc: Mapping[str, Any], fmt: str = CLAUDE) -> HookInput:
    event = doc.get("hook_event_name", "PreToolUse")
    if event not in ("PreToolUse", "PostToolUse"):
        raise HookError(f"fak answers PreToolUse and PostToolUse, not {event!r}")
    tool = doc.get("tool_name")
    if not isinstance(tool, str) or not tool:
        raise HookError("tool_name is missing")
    args = doc.get("tool_input")
    if args is not None and not isinstance(args, dict):
        args = json.dumps(args)  # not an object: the ladder refuses it as MALFORMED
    return HookInput(
        fmt,
        str(event),
        tool,
        args if args is not None else {},
        doc.get("tool_response"),
        cwd=str(doc.get("cwd") or ""),
        session=str(doc.get("session_id") or ""),
        call_id=str(doc.get("tool_use_id") or ""),
        transcript=str(doc.get("transcript_path") or ""),  # Codex: its rollout file
    )


def _fak(doc: Mapping[str, Any]) -> HookInput:
    tool = doc.get("tool")
    if not isinstance(tool, str) or not tool:
        raise HookError("tool is missing")
    raw_meta = doc.get("meta")
    meta = {str(k): str(v) for k, v in raw_meta.items()} if isinstance(raw_meta, dict) else {}
    args = doc.get("args")
    if args is not None and not isinstance(args, dict):
        args = json.dumps(args)
    return HookInput(FAK, "PreToolUse", tool, args, meta=meta)


def _why(verdict: Verdict) -> str:
    text = f"fak: {verdict.kind} {verdict.reason.name} by {verdict.by}"
    return f"{text} ({verdict.claim})" if verdict.claim else text


def answer_pre(hook: HookInput, verdict: Verdict) -> HookAnswer:
    """The answer to a PreToolUse call once the kernel decided it."""
    kind = verdict.kind
    if hook.format == FAK:
        # fak's own shape: the caller reads the verdict line; only a failure exits non-zero
        line = json.dumps({"kind": str(kind), "reason": verdict.reason.name, "by": verdict.by})
        return HookAnswer(0, line + "\n", "")
    if hook.format == CODEX:
        return _answer_codex_pre(verdict)
    out: dict[str, Any] = {"hookEventName": "PreToolUse"}
    if kind == VerdictKind.ALLOW:
        out.update(permissionDecision="allow", permissionDecisionReason=_why(verdict))
    elif kind == VerdictKind.TRANSFORM and verdict.new_args is not None:
        out.update(
            permissionDecision="allow",
            permissionDecisionReason=_why(verdict) + " with repaired arguments",
            updatedInput=dict(verdict.new_args),
        )
    elif kind == VerdictKind.REQUIRE_WITNESS:
        out.update(permissionDecision="ask", permissionDecisionReason=_why(verdict))
    else:
        # exit 2 is the signal every Claude Code version honours; the JSON says the same
        out.update(permissionDecision="deny", permissionDecisionReason=_why(verdict))
        body = json.dumps({"hookSpecificOutput": out})
        return HookAnswer(BLOCK, body + "\n", _why(verdict) + "\n")
    return HookAnswer(0, json.dumps({"hookSpecificOutput": out}) + "\n", "")


def _answer_codex_pre(verdict: Verdict) -> HookAnswer:
    """Codex: silence lets the call run; every other verdict blocks it (exit 2, the reason on
    stderr and in the JSON). Codex has no ``ask`` and takes no ``updatedInput`` without the
    ``allow`` it refuses, so a held call and a repaired one are refused, saying which."""
    why = _why(verdict)
    match verdict.kind:
        case VerdictKind.ALLOW:
            return HookAnswer(0, "", "")
        case VerdictKind.TRANSFORM if verdict.new_args is not None:
            why += (
                "; the call needs repaired arguments, which Codex hooks cannot pass: "
                + (json.dumps(dict(verdict.new_args), sort_keys=True)[:500])
            )
        case VerdictKind.REQUIRE_WITNESS:
            why += "; it needs a person's approval, which Codex hooks cannot ask for"
        case _:
            pass
    out = {"hookEventName": "PreToolUse", "permissionDecision": "deny"}
    body = json.dumps({"hookSpecificOutput": {**out, "permissionDecisionReason": why}})
    return HookAnswer(BLOCK, body + "\n", why + "\n")


def answer_post(hook: HookInput, verdict: Verdict, stub: str) -> HookAnswer:
    """The answer to a PostToolUse call once the result screen judged ``tool_response``."""
    if verdict.kind in (VerdictKind.ALLOW, VerdictKind.TRANSFORM):
        return HookAnswer(0, "", "")
    reason = (
        f"{_why(verdict)}: the tool's output was held out of the conversation; do not trust "
        "or repeat it. A human can review it with `fak recall` / page-in by its id."
    )
    specific: dict[str, Any] = {
        "hookEventName": "PostToolUse",
        "additionalContext": reason,
        "updatedToolOutput": stub,
    }
    if hook.format == CODEX:  # Codex refuses updatedMCPToolOutput as unsupported
        specific.pop("updatedToolOutput")
    elif hook.tool.startswith("mcp__"):
        specific["updatedMCPToolOutput"] = stub
    body = {"decision": "block", "reason": reason, "hookSpecificOutput": specific}
    return HookAnswer(0, json.dumps(body) + "\n", "")


def answer_failure(message: str) -> HookAnswer:
    """Anything that went wrong is a refusal in the client's own terms: exit 2, reason on
    stderr (fak's shape also prints its MALFORMED line on stdout)."""
    line = json.dumps({"kind": "DENY", "reason": "MALFORMED", "by": "hook"})
    return HookAnswer(BLOCK, line + "\n", f"fak: refused: {message}\n")
