"""The hook decider (tier T3): one agent hook call in, the client's answer out.

``answer`` reads one hook call — Claude Code's ``PreToolUse`` / ``PostToolUse`` object, or
fak's own ``{tool, args, meta}`` — decides it with the kernel and answers in that client's terms
(``fak.hooks.protocol``). It never raises: anything that goes wrong is a blocking refusal (exit
2), never exit 1. ``HookState`` is what a resident decider (``fak.hooks.daemon``) keeps warm
between calls. It does no process I/O of its own: the verb (``fak.cli.hook_cmd``), the launcher
and the daemon hand it stdin, the caller's cwd and environment.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Final, TypeVar

_T = TypeVar("_T")

if TYPE_CHECKING:
    from fak.abi import Context
    from fak.config import Settings
    from fak.hooks.protocol import HookAnswer, HookInput
    from fak.kernel import Kernel
    from fak.policy import Policy

__all__ = ["HookState", "answer"]


TRANSCRIPT_WAIT_S: Final = 5.0
"""How long a PreToolUse waits for the agent's transcript to record the call it decides."""


class HookState:
    """What a resident decider keeps between hook calls: compiled policies and kernels, keyed
    by everything they are built from (a policy file's identity includes its size and mtime, so
    an edited manifest is reloaded). Without one, every call builds its own."""

    __slots__ = ("_entries", "_limit")

    def __init__(self, limit: int = 32) -> None:
        self._entries: dict[object, object] = {}
        self._limit = limit

    def get(self, key: object, build: Callable[[], _T]) -> _T:
        if key in self._entries:
            value = self._entries.pop(key)
            self._entries[key] = value  # most recently used last
            return value  # type: ignore[return-value]
        made = build()
        if len(self._entries) >= self._limit:
            self._entries.pop(next(iter(self._entries)))
        self._entries[key] = made
        return made


def answer(
    raw: bytes,
    *,
    policy_path: str | None,
    fmt: str,
    cwd: str,
    environ: Mapping[str, str],
    state: HookState | None = None,
) -> HookAnswer:
    """The answer to one hook call: ``raw`` is the hook's stdin, ``cwd`` and ``environ`` are
    the calling process's. Never raises: every failure is a blocking refusal."""
    from fak.hooks.protocol import HookError, answer_failure

    try:
        return _decide(raw, policy_path, fmt, cwd, environ, state or HookState(limit=4))
    except HookError as exc:
        return answer_failure(str(exc))
    except Exception as exc:  # fail closed, in the client's own terms
        return answer_failure(f"{type(exc).__name__}: {exc}"[:300])


def _policy(policy_path: str | None, cwd: str, state: HookState) -> Policy:
    import os

    from fak.hooks.protocol import HookError
    from fak.policy import Policy, PolicyError, default_manifest

    if not policy_path:
        return state.get(("default-policy", cwd), lambda: Policy(default_manifest(), root=cwd))
    path = os.path.join(cwd, os.path.expanduser(policy_path))
    try:
        st = os.stat(path)
        key = ("policy", path, st.st_ino, st.st_size, st.st_mtime_ns, cwd)
        return state.get(key, lambda: Policy.load(path, root=cwd))
    except (OSError, PolicyError) as exc:
        problem = exc.problems[0] if isinstance(exc, PolicyError) else str(exc)
        raise HookError(f"the policy {policy_path} cannot be loaded: {problem}") from exc


def _decide(
    raw: bytes,
    policy_path: str | None,
    fmt: str,
    cwd: str,
    environ: Mapping[str, str],
    state: HookState,
) -> HookAnswer:
    from fak.abi import Reason, ToolCall, Verdict
    from fak.config import Settings
    from fak.hooks.protocol import answer_post, answer_pre, read_hook
    from fak.policy import CompiledFloor

    hook_in = read_hook(raw, fmt)
    policy = _policy(policy_path, cwd, state)
    settings = Settings.from_environ(environ)
    if hook_in.event == "PreToolUse":
        context, missing = _run_context(hook_in, policy, state)
        if missing:
            return answer_pre(hook_in, Verdict.deny(Reason.UNWITNESSED, "hook", claim=missing))
        call = ToolCall(
            hook_in.tool,
            hook_in.args,
            trace_id=hook_in.session,
            call_id=hook_in.call_id,
            meta=hook_in.meta,
            context=context,
        )
        if settings.audit_journal:
            verdict = _kernel(settings, policy, state).decide(call)  # journaled like every entry
        else:
            verdict = state.get(("floor", policy), lambda: CompiledFloor(policy)).decide(call)
        if verdict.admits and hook_in.format == "claude-code":
            held = _prescreen_read(hook_in, cwd, settings, environ, policy, state)
            if held is not None:
                return held
        return answer_pre(hook_in, verdict)
    kernel = _result_kernel(settings, environ, policy, state)
    admission = kernel.admit_value(  # an object or list response is screened decoded
        hook_in.tool, hook_in.response, call_id=hook_in.call_id, trace_id=hook_in.session
    )
    return answer_post(hook_in, admission.verdict, admission.payload.decode("utf-8", "replace"))


def _run_context(
    hook_in: HookInput, policy: Policy, state: HookState
) -> tuple[Context | None, str]:
    """The run's context for a call the provenance rung guards, read from the session's
    transcript (kept per session by a resident decider); or why there is none, which refuses
    the call — a rule that needs the context is never quietly skipped."""
    from fak.hooks.protocol import CODEX
    from fak.hooks.transcript import TranscriptContext, TranscriptError

    rung = policy.provenance
    if rung is None or not rung.guards(hook_in.tool):
        return None, ""
    if not hook_in.transcript:
        return None, (
            f"the policy's provenance rules for {hook_in.tool} need the run's context; this "
            "hook call names no transcript_path (fak's own shape carries none)"
        )
    reader = state.get(
        ("transcript", hook_in.session, hook_in.transcript),
        lambda: TranscriptContext(hook_in.transcript, codex=hook_in.format == CODEX),
    )
    deadline = time.monotonic() + TRANSCRIPT_WAIT_S
    try:
        context = reader.refresh()
        # the agent appends asynchronously: read until the transcript records this very call
        while hook_in.call_id and not reader.records(hook_in.call_id):
            if time.monotonic() >= deadline:
                return None, (
                    f"the transcript does not record call {hook_in.call_id} after "
                    f"{TRANSCRIPT_WAIT_S:g} s, so the run's context cannot be known"
                )
            time.sleep(0.01)
            context = reader.refresh()
    except TranscriptError as exc:
        return None, f"the run's context cannot be read from the transcript: {exc.strerror}"
    return context, ""


_READ_TOOLS = frozenset({"Read", "NotebookRead"})
_SEARCH_TOOLS = frozenset({"Grep", "Glob"})


def _view(hook_in: HookInput, cwd: str) -> str | None:
    """What the reading tool of this call will show the model (``fak.hooks.prescreen``)."""
    from pathlib import Path

    from fak.hooks import prescreen

    args = hook_in.args
    if not isinstance(args, dict):
        return None
    here = Path(hook_in.cwd or cwd)
    if hook_in.tool in _READ_TOOLS:
        raw_path = args.get("file_path") or args.get("notebook_path")
        if not isinstance(raw_path, str) or not raw_path:
            return None
        return prescreen.read_view(here / Path(raw_path).expanduser(), args)
    if hook_in.tool == "Grep":
        return prescreen.grep_view(here, args)
    return prescreen.glob_view(here, args)


def _prescreen_read(
    hook_in: HookInput,
    cwd: str,
    settings: Settings,
    environ: Mapping[str, str],
    policy: Policy,
    state: HookState,
) -> HookAnswer | None:
    """Screen what a reading tool will show *before* Claude Code runs it: its PostToolUse
    answer cannot take a built-in tool's output back out of the context (measured with
    2.1.328), so a view that would be quarantined is refused at PreToolUse instead, and its
    bytes go to the CAS. A search too large to screen is refused with a reason to narrow it."""
    from fak.abi import Reason, ToolResult, Verdict, VerdictKind
    from fak.hooks.prescreen import TooMuchToScreen
    from fak.hooks.protocol import answer_pre

    if hook_in.tool not in _READ_TOOLS and hook_in.tool not in _SEARCH_TOOLS:
        return None
    try:
        view = _view(hook_in, cwd)
    except TooMuchToScreen as exc:
        return answer_pre(hook_in, Verdict.deny(Reason.POLICY_BLOCK, "ctxmmu", claim=str(exc)))
    if not view:
        return None
    kernel = _result_kernel(settings, environ, policy, state)
    admission = kernel.admit_result(
        ToolResult(
            hook_in.tool, view.encode("utf-8"), call_id=hook_in.call_id, trace_id=hook_in.session
        )
    )
    held = admission.verdict
    if held.kind not in (VerdictKind.QUARANTINE, VerdictKind.DENY):
        return None
    detector = held.meta.get("detector", "screen")
    claim = f"the content is held out ({detector}, quarantine_id={admission.quarantine_id})"
    return answer_pre(hook_in, Verdict.deny(held.reason, "ctxmmu", claim=claim))


def _result_kernel(
    settings: Settings, environ: Mapping[str, str], policy: Policy, state: HookState
) -> Kernel:
    """The kernel that screens results: held bytes go to the durable hook CAS."""
    return _kernel(settings.with_overrides(blob_dir=settings.hook_blob_dir(environ)), policy, state)


def _kernel(settings: Settings, policy: Policy, state: HookState) -> Kernel:
    from fak.journal import JournalCorruptError, open_error_line
    from fak.kernel import build_kernel

    try:
        return state.get(("kernel", settings, policy), lambda: build_kernel(settings, policy))
    except (OSError, JournalCorruptError) as exc:
        blob_dir = settings.blob_dir
        if isinstance(exc, OSError) and blob_dir and _under(exc.filename, blob_dir):
            why = exc.strerror or type(exc).__name__
            msg = (
                f"[FAK-BLOB-DIR] cannot use the blob directory {blob_dir} ({why}); point "
                "FAK_BLOB_DIR at a directory this user can write"
            )
            raise RuntimeError(msg) from exc
        raise RuntimeError(open_error_line(str(settings.audit_journal), exc)) from exc


def _under(filename: object, directory: str) -> bool:
    """``filename`` (an OSError's) is ``directory`` or inside it."""
    import os

    if not isinstance(filename, str | bytes):
        return False
    name = os.fsdecode(filename)
    base = os.path.abspath(directory)
    return os.path.abspath(name) == base or os.path.abspath(name).startswith(base + os.sep)
