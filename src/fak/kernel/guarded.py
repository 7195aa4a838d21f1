"""``guarded_tool``: wrap a plain Python tool function behind the kernel, returning Replies (T2).

The decorated function is registered as a kernel tool, with a preflight schema derived from its
signature (required parameters, annotated JSON types, no unknown keywords unless it takes
``**kwargs``), and every call goes through ``Kernel.syscall``: adjudication (and the vDSO),
dispatch, result admission. The caller gets a ``Reply`` instead of an exception: S with the
admitted result, I for arguments the agent must fix, D for a refusal or a held result, E when
the tool (or anything else) failed. Keyword arguments are the tool's arguments.
"""

from __future__ import annotations

import functools
import inspect
import logging
import types
import typing
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from fak.abi import Context, ToolCall
from fak.abi.replies import Reply, ReplyBuilder
from fak.kernel.kernel import Kernel
from fak.kernel.outcome import outcome_reply
from fak.policy import Schema

__all__ = ["guarded_tool", "signature_schema"]

logger = logging.getLogger(__name__)

_JSON_TYPES: Final[tuple[tuple[type, str], ...]] = (
    (bool, "boolean"),
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    (Mapping, "object"),
    (dict, "object"),
    (Sequence, "array"),
    (list, "array"),
)


def _json_types(annotation: Any) -> tuple[str, ...]:
    """JSON types for a plain annotation (``int``, ``str | None``, ...); () when unsure."""
    union = typing.get_origin(annotation) in (typing.Union, types.UnionType)
    options = typing.get_args(annotation) if union else (annotation,)
    out: list[str] = []
    for option in options:
        if option is type(None):
            out.append("null")
            continue
        base = typing.get_origin(option) or option
        if not isinstance(base, type):
            return ()
        name = next((t for cls, t in _JSON_TYPES if issubclass(base, cls)), None)
        if name is None or (name == "array" and issubclass(base, str | bytes)):
            return ()
        out.append(name)
        if name == "number":
            out.append("integer")
    return tuple(dict.fromkeys(out))


def signature_schema(fn: Callable[..., Any]) -> Schema:
    """A preflight schema from ``fn``'s keyword parameters and their annotations."""
    signature = inspect.signature(fn)
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # unresolvable annotations: check presence only
        hints = {}
    required: list[str] = []
    types: dict[str, tuple[str, ...]] = {}
    known: set[str] = set()
    allow_extra = False
    for param in signature.parameters.values():
        if param.kind is param.VAR_KEYWORD:
            allow_extra = True
            continue
        if param.kind in (param.VAR_POSITIONAL, param.POSITIONAL_ONLY):
            continue
        known.add(param.name)
        if param.default is param.empty:
            required.append(param.name)
        declared = _json_types(hints.get(param.name, Any))
        if declared:
            types[param.name] = declared
    return Schema(tuple(required), types, allow_extra, frozenset(known))


def guarded_tool(
    kernel: Kernel,
    *,
    name: str | None = None,
    read_only: bool | None = None,
    idempotent: bool = True,
    caller: str = "",
    trace_ids: Callable[[], str] = lambda: uuid.uuid4().hex,
    context: Context | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Reply]]:
    """Decorate ``fn(**args)`` so that calling it returns a Reply and never raises. With a
    ``context``, sink rules judge its arguments against it and its results are added to it."""

    def decorate(fn: Callable[..., Any]) -> Callable[..., Reply]:
        tool = name or fn.__name__
        kernel.register_tool(
            tool,
            lambda args: fn(**args),
            read_only=read_only,
            idempotent=idempotent,
            schema=signature_schema(fn),
        )

        @functools.wraps(fn)
        def call(**kwargs: Any) -> Reply:
            trace_id = trace_ids()
            try:
                outcome = kernel.syscall(
                    ToolCall(tool, kwargs, caller=caller, trace_id=trace_id, context=context)
                )
                reply = outcome_reply(outcome, tool)
            except Exception as exc:  # the wrapper's promise: a Reply, never an exception
                logger.error("guarded tool %s crashed (%s)", tool, type(exc).__name__)
                data = {"tool": tool, "trace_id": trace_id, "exception": type(exc).__name__}
                return ReplyBuilder().error("MCP-SYS-E-001", data)
            if reply.terminal and "trace_id" not in reply.data:
                return _with_trace(reply, trace_id)
            return reply

        return call

    return decorate


def _with_trace(reply: Reply, trace_id: str) -> Reply:
    data = {**reply.data, "trace_id": trace_id}
    builder = ReplyBuilder()
    match reply.reply_type.value:
        case "I":
            return builder.invalid(reply.code, data)
        case "D":
            return builder.denied(reply.code, data)
    return builder.error(reply.code, data)
