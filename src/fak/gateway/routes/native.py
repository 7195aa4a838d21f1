"""The fak-native routes under /v1/fak/ (tier T3): one POST, one verdict.

``adjudicate`` (verdict only; ``repaired_arguments`` only on TRANSFORM), ``syscall`` (adjudicate
and run a registered tool through the kernel), ``admit`` (screen a result the client ran),
``policy/reload`` (replace the floor from its source, never merge; 404 when the gateway was not
started with a policy, 400 with the loader's message and the old floor untouched on failure),
``events`` (the decision journal, 404 without one), ``witness`` (list the held calls; approve
one by id) and ``revoke`` (retire a witness). Approving and revoking need a key: the witness key
in ``X-Fak-Witness-Key`` when one is configured, else the client key; with neither they refuse.
The body key is ``arguments``; unknown keys are ignored. A refusal is a 200 carrying the
verdict.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from fak.abi import AuditJournal, Context, ToolCall, VerdictKind
from fak.gateway.boundary import RequestContext
from fak.gateway.errors import GatewayError
from fak.gateway.http import KeyCheck, json_response
from fak.gateway.routes.inputs import context, gateway, read_object
from fak.gateway.state import GatewayState
from fak.journal import RowError, rows_after
from fak.kernel import Admission, CallOutcome, Kernel
from fak.wire import WireVerdict

__all__ = [
    "ROUTES",
    "adjudicate",
    "admit",
    "approve",
    "events",
    "file_events",
    "operator",
    "reload",
    "revoke",
    "syscall",
    "witness_auth",
    "witnesses",
]

_log = logging.getLogger(__name__)


# the keys each route reads; any other is refused by name (``read_object``)
_REVOKE_FIELDS = frozenset({"witness"})
_ADJUDICATE_FIELDS = frozenset({"tool", "arguments", "trace_id", "context"})
_SYSCALL_FIELDS = _ADJUDICATE_FIELDS | {"read_only", "witness"}
_ADMIT_FIELDS = frozenset({"tool", "result", "tool_call_id", "trace_id"})


def _tool(body: Mapping[str, Any]) -> str:
    tool = body.get("tool")
    if not isinstance(tool, str) or not tool:
        raise GatewayError(
            400, "missing_tool", "tool is required: the name of the tool to check", param="tool"
        )
    return tool


def _arguments(body: Mapping[str, Any]) -> Mapping[str, Any] | str:
    value = body.get("arguments")
    if value is None:
        return "{}"
    if isinstance(value, Mapping | str):
        return value
    raise GatewayError(
        400,
        "invalid_arguments",
        "arguments must be a JSON object or a JSON-encoded string",
        param="arguments",
    )


def _trace(request: Request, body: Mapping[str, Any]) -> str:
    t = body.get("trace_id")
    return t if isinstance(t, str) and t else str(request.scope.get("fak.trace_id", ""))


def file_events(
    path: str, journal: AuditJournal | None = None
) -> Callable[[int, int], list[dict[str, Any]]]:
    """A reader for ``/v1/fak/events``: rows with ``seq > since``, from the journal's in-memory
    tail when it covers the cursor, else by seeking the file from the cursor (never a re-read
    of the whole journal)."""

    def read(since: int, limit: int) -> list[dict[str, Any]]:
        if journal is not None:
            rows = journal.rows_after(since, limit)
            if rows is not None:
                return list(rows)
        return rows_after(path, since, limit)

    return read


# -- witness holds: list, approve, revoke ------------------------------------------------


def witness_auth(state: GatewayState, request: Request) -> Kernel:
    """The kernel's witness side, once the request may use it."""
    o, kernel = state.options, state.kernel
    if o.witness_key:
        if not KeyCheck(o.witness_key).check(request.headers.get("x-fak-witness-key")):
            raise GatewayError(
                403,
                "witness_auth_failed",
                "approving or revoking a witness needs the witness key in X-Fak-Witness-Key",
            )
    elif o.require_key is None:  # the client key was checked by the middleware when set
        raise GatewayError(
            403,
            "witness_auth_required",
            "approving or revoking a witness needs a key: start fak serve with "
            "--witness-key-env VAR (or --require-key-env VAR)",
        )
    return kernel


def operator(state: GatewayState, request: Request) -> str:
    """Who approves or revokes, as the journal names them: the key that let them (the witness
    key, else the client key) and the name they give in ``X-Fak-Principal`` (``http`` when they
    give none; printable, at most 48 characters)."""
    key = "witness-key" if state.options.witness_key else "client-key"
    name = request.headers.get("x-fak-principal", "")
    if not name or len(name) > 48 or not name.isprintable():
        name = "http"
    return f"{key}:{name}"


def _witness_error(exc: Exception) -> GatewayError:
    code = getattr(exc, "code", "witness_error")
    if code == "witness_store_unavailable":  # the shared store is down: say so, retryable
        message = "the witness store (Redis) cannot be reached; retry when it is back"
        return GatewayError(503, code, message, headers={"Retry-After": "5"})
    status = 404 if code == "witness_unknown" else 409
    return GatewayError(status, code, getattr(exc, "message", str(exc)))


async def witnesses(request: Request) -> Response:
    k = witness_auth(gateway(request), request)
    try:
        holds = [h.to_json() for h in k.witnesses.holds()]
    except LookupError as exc:  # WitnessError: the shared store is unreachable
        raise _witness_error(exc) from exc
    return json_response({"witnesses": holds, "trust_epoch": k.trust_epoch})


async def approve(request: Request) -> Response:
    state = gateway(request)
    k = witness_auth(state, request)
    approver = operator(state, request)
    try:
        hold = k.approve_witness(request.path_params["id"], approver)
    except LookupError as exc:
        raise _witness_error(exc) from exc
    return json_response({"approved": True, "witness": hold.to_json()})


async def revoke(request: Request) -> Response:
    state = gateway(request)
    k = witness_auth(state, request)
    body = await read_object(state, request, _REVOKE_FIELDS)
    witness = body.get("witness")
    if not isinstance(witness, str) or not witness:
        raise GatewayError(400, "missing_witness", "witness is required: the id to revoke")
    try:
        report = k.revoke_witness(witness, operator(state, request))
    except LookupError as exc:
        raise _witness_error(exc) from exc
    if state.plane is not None:  # recall pages cleared under it are sealed; feed published
        report["sealed_pages"] = state.plane.revoked(witness, report["evicted"])
    return json_response(report)


# -- one call: adjudicate, syscall, admit ------------------------------------------------


async def adjudicate(request: Request) -> Response:
    state = gateway(request)
    body = await read_object(state, request, _ADJUDICATE_FIELDS)
    tool, args = _tool(body), _arguments(body)
    ctx = context(request)
    trace_id = _trace(request, body)
    run = _run_context(body)
    wv, verdict = state.boundary.decide_one(
        tool, args, "", RequestContext(trace_id, ctx.principal), provenance=run
    )
    out: dict[str, Any] = {"verdict": wv.to_json(), "trace_id": trace_id}
    if (
        verdict is not None
        and verdict.kind == VerdictKind.TRANSFORM
        and verdict.new_args is not None
    ):
        out["repaired_arguments"] = dict(verdict.new_args)
    return json_response(out)


def _run_context(body: Mapping[str, Any]) -> Context | None:
    """The run's context a caller sends with a call (``context``: ``user`` texts and tool
    ``results`` as the model was shown them), for sink and ``after_untrusted`` rules; None when
    it sends none (the rules then judge the worst case: fak.policy.provenance)."""
    raw = body.get("context")
    if raw is None:
        return None
    bad = GatewayError(
        400,
        "invalid_context",
        'context must be {"user": [text, ...], "results": [{"tool", "call_id", "text"}, ...]}',
        param="context",
    )
    if not isinstance(raw, Mapping) or set(raw) - {"user", "results"}:
        raise bad
    users, results = raw.get("user", []), raw.get("results", [])
    if not isinstance(users, list) or not isinstance(results, list):
        raise bad
    ctx = Context()
    for text in users:
        if not isinstance(text, str):
            raise bad
        ctx.user(text)
    for item in results:
        if not isinstance(item, Mapping) or not isinstance(item.get("text"), str):
            raise bad
        tool, call_id = item.get("tool", "tool_result"), item.get("call_id", "")
        if not isinstance(tool, str) or not isinstance(call_id, str):
            raise bad
        ctx.result(tool, call_id, item["text"] or "(empty)")
    return ctx


def _call(request: Request, body: Mapping[str, Any], trace_id: str) -> ToolCall:
    """The tool call a ``/v1/fak/syscall`` body asks for, made by the requesting principal."""
    meta = {"read_only": "true"} if body.get("read_only") is True else {}
    witness = body.get("witness")
    if isinstance(witness, str) and witness:
        meta["witness"] = witness[:128]  # the call is made under this witness id
    return ToolCall(
        tool=_tool(body),
        args=_arguments(body),
        caller=request.headers.get("x-fak-principal", ""),
        trace_id=trace_id,
        meta=meta,
        context=_run_context(body),
    )


def _observe_syscall(state: GatewayState, call: ToolCall, outcome: CallOutcome) -> None:
    """Tell the coherence plane how the call was served (and whether its witness is revoked)."""
    if state.plane is None:
        return
    meta = call.meta
    revoked = bool(meta.get("witness")) and state.kernel.witnesses.is_revoked(meta["witness"])
    state.plane.observe_syscall(call.tool, outcome.served_by, revoked=revoked)


def _syscall_verdict(outcome: CallOutcome, admission: Admission | None) -> WireVerdict:
    """The call's verdict, unless admitting its result refused or quarantined it."""
    verdict = WireVerdict.of(outcome.verdict)
    if admission is not None and admission.verdict.kind != VerdictKind.ALLOW:
        verdict = (
            WireVerdict.of(admission.verdict)
            if admission.verdict.kind != VerdictKind.TRANSFORM
            else verdict
        )
    return verdict


def _syscall_body(
    outcome: CallOutcome, admission: Admission | None, verdict: WireVerdict, trace_id: str
) -> dict[str, Any]:
    result: dict[str, Any] = {
        "status": outcome.status,
        "content": bytes(outcome.payload).decode("utf-8", errors="replace"),
        "served_by": outcome.served_by,
    }
    if admission is not None and admission.quarantine_id:
        result["quarantine_id"] = admission.quarantine_id
    out: dict[str, Any] = {"verdict": verdict.to_json(), "result": result, "trace_id": trace_id}
    v = outcome.verdict
    if v.kind == VerdictKind.TRANSFORM and v.new_args is not None:
        out["repaired_arguments"] = dict(v.new_args)
    return out


async def syscall(request: Request) -> Response:
    state = gateway(request)
    body = await read_object(state, request, _SYSCALL_FIELDS)
    trace_id = _trace(request, body)
    call = _call(request, body, trace_id)
    t0 = time.perf_counter()
    try:
        outcome = state.kernel.syscall(call)
    except (TypeError, ValueError) as exc:
        raise GatewayError(400, "invalid_call", f"the kernel rejected the call: {exc}") from exc
    _observe_syscall(state, call, outcome)
    admission = outcome.admission
    verdict = _syscall_verdict(outcome, admission)
    state.boundary.record("syscall", call.tool, context(request), verdict, t0)
    return json_response(_syscall_body(outcome, admission, verdict, trace_id))


def _payload(value: Any) -> bytes:
    if value is None or value == "":
        return b"{}"
    if isinstance(value, str):
        return value.encode()
    return orjson.dumps(value)


async def admit(request: Request) -> Response:
    state = gateway(request)
    body = await read_object(state, request, _ADMIT_FIELDS)
    tool = _tool(body)
    if "result" not in body:  # admitting nothing would answer for bytes the client still holds
        raise GatewayError(
            400,
            "missing_result",
            "result is required: the tool's output to admit (a string or any JSON value)",
            param="result",
        )
    payload = _payload(body["result"])
    call_id = body.get("tool_call_id")
    ctx = context(request, pageout=True)  # a fak-native client can page a pointer back in
    trace_id = _trace(request, body)
    wv, admitted, qid = state.boundary.admit_one(
        tool,
        payload,
        call_id if isinstance(call_id, str) else "",
        RequestContext(trace_id, ctx.principal, ctx.session, pageout=ctx.pageout),
    )
    out: dict[str, Any] = {
        "verdict": wv.to_json(),
        "content": admitted.decode("utf-8", errors="replace"),
        "trace_id": trace_id,
    }
    if qid:
        out["quarantine_id"] = qid
    return json_response(out)


# -- the floor and the journal -----------------------------------------------------------


async def reload(request: Request) -> Response:
    state = gateway(request)
    o, kernel = state.options, state.kernel
    if o.policy_reloader is None:
        raise GatewayError(
            404,
            "policy_reload_unavailable",
            "this gateway was not started with --policy; nothing to reload",
        )
    try:
        policy, summary = o.policy_reloader()
    except Exception as exc:  # the loader's message says what is wrong with the file
        _log.warning("policy reload failed; the running floor is unchanged")
        raise GatewayError(400, "policy_reload_failed", f"policy reload failed: {exc}") from exc
    kernel.replace_policy(policy)
    if state.plane is not None:
        state.plane.policy_reloaded(o.policy_source)
    return json_response({"reloaded": True, "source": o.policy_source, "summary": dict(summary)})


_CURSOR_MAX = 2**63 - 1  # a journal's seq is a signed 64-bit integer (PostgreSQL bigint)


def _cursor(request: Request) -> tuple[int, int]:
    """``since`` (a journal seq, 0 for the start) and ``limit`` (1-1024) from the query; a
    negative, oversized or non-integer value is the client's to fix (400), not a 500."""
    q = request.query_params
    raw_since, raw_limit = q.get("since", "0"), q.get("limit", "256")
    if len(raw_since) > 20 or len(raw_limit) > 20:
        raise GatewayError(400, "invalid_cursor", "since and limit must be integers", param="since")
    try:
        since, limit = int(raw_since), int(raw_limit)
    except ValueError as exc:
        raise GatewayError(400, "invalid_cursor", "since and limit must be integers") from exc
    if not 0 <= since <= _CURSOR_MAX:
        raise GatewayError(
            400, "invalid_cursor", f"since must be a seq between 0 and {_CURSOR_MAX}", param="since"
        )
    return since, min(max(limit, 1), 1024)


async def events(request: Request) -> Response:
    read = gateway(request).options.events
    if read is None:
        raise GatewayError(
            404, "journal_not_configured", "no decision journal: set FAK_AUDIT_JOURNAL"
        )
    since, limit = _cursor(request)
    try:
        rows = read(since, limit)
    except (RowError, OSError) as exc:
        raise GatewayError(
            500,
            "journal_unreadable",
            "the decision journal cannot be read: run `fak journal verify`",
        ) from exc
    cursor = rows[-1].get("seq", since) if rows else since
    return json_response({"events": rows, "cursor": cursor})


ROUTES: list[Route] = [
    Route("/v1/fak/adjudicate", adjudicate, methods=["POST"]),
    Route("/v1/fak/syscall", syscall, methods=["POST"]),
    Route("/v1/fak/admit", admit, methods=["POST"]),
    Route("/v1/fak/policy/reload", reload, methods=["POST"]),
    Route("/v1/fak/events", events, methods=["GET"]),
    Route("/v1/fak/witness", witnesses, methods=["GET"]),
    Route("/v1/fak/witness/{id}", approve, methods=["POST"]),
    Route("/v1/fak/revoke", revoke, methods=["POST"]),
]
