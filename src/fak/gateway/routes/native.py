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

from fak.abi import AuditJournal, ToolCall, VerdictKind
from fak.gateway.boundary import RequestContext
from fak.gateway.errors import GatewayError
from fak.gateway.http import KeyCheck, json_response, read_json
from fak.gateway.routes.turns import context
from fak.gateway.state import GatewayState
from fak.journal import RowError, rows_after
from fak.wire import WireVerdict

__all__ = ["file_events", "native_routes"]

_log = logging.getLogger(__name__)


def _object(body: Any) -> Mapping[str, Any]:
    if not isinstance(body, Mapping):
        raise GatewayError(400, "invalid_request", "request body must be a JSON object")
    return body


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


def native_routes(state: GatewayState) -> list[Route]:
    o = state.options
    boundary = state.boundary
    kernel = state.kernel

    witness_key = KeyCheck(o.witness_key) if o.witness_key else None

    def witness_auth(request: Request) -> Any:
        """The kernel's witness side, once the request may use it."""
        if witness_key is not None:
            if not witness_key.check(request.headers.get("x-fak-witness-key")):
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

    def witness_error(exc: Exception) -> GatewayError:
        code = getattr(exc, "code", "witness_error")
        status = 404 if code == "witness_unknown" else 409
        return GatewayError(status, code, getattr(exc, "message", str(exc)))

    async def witnesses(request: Request) -> Response:
        k = witness_auth(request)
        holds = [h.to_json() for h in k.witnesses.holds()]
        return json_response({"witnesses": holds, "trust_epoch": k.trust_epoch})

    async def approve(request: Request) -> Response:
        k = witness_auth(request)
        approver = request.headers.get("x-fak-principal", "") or "http"
        try:
            hold = k.approve_witness(request.path_params["id"], approver)
        except LookupError as exc:
            raise witness_error(exc) from exc
        return json_response({"approved": True, "witness": hold.to_json()})

    async def revoke(request: Request) -> Response:
        k = witness_auth(request)
        body = await body_of(request)
        witness = body.get("witness")
        if not isinstance(witness, str) or not witness:
            raise GatewayError(400, "missing_witness", "witness is required: the id to revoke")
        try:
            report = k.revoke_witness(witness)
        except LookupError as exc:
            raise witness_error(exc) from exc
        if state.plane is not None:  # recall pages cleared under it are sealed; feed published
            report["sealed_pages"] = state.plane.revoked(witness, report["evicted"])
        return json_response(report)

    async def body_of(request: Request) -> Mapping[str, Any]:
        body, _ = await read_json(request, o.body_cap, o.read_timeout_s)
        return _object(body)

    async def adjudicate(request: Request) -> Response:
        body = await body_of(request)
        tool, args = _tool(body), _arguments(body)
        ctx = context(request)
        trace_id = _trace(request, body)
        wv, verdict = boundary.decide_one(tool, args, "", RequestContext(trace_id, ctx.principal))
        out: dict[str, Any] = {"verdict": wv.to_json(), "trace_id": trace_id}
        if (
            verdict is not None
            and verdict.kind == VerdictKind.TRANSFORM
            and verdict.new_args is not None
        ):
            out["repaired_arguments"] = dict(verdict.new_args)
        return json_response(out)

    async def syscall(request: Request) -> Response:
        body = await body_of(request)
        tool, args = _tool(body), _arguments(body)
        trace_id = _trace(request, body)
        meta = {"read_only": "true"} if body.get("read_only") is True else {}
        witness = body.get("witness")
        if isinstance(witness, str) and witness:
            meta["witness"] = witness[:128]  # the call is made under this witness id
        call = ToolCall(
            tool=tool,
            args=args,
            caller=request.headers.get("x-fak-principal", ""),
            trace_id=trace_id,
            meta=meta,
        )
        t0 = time.perf_counter()
        try:
            outcome = kernel.syscall(call)
        except (TypeError, ValueError) as exc:
            raise GatewayError(400, "invalid_call", f"the kernel rejected the call: {exc}") from exc
        if state.plane is not None:
            revoked = bool(meta.get("witness")) and kernel.witnesses.is_revoked(meta["witness"])
            state.plane.observe_syscall(tool, outcome.served_by, revoked=revoked)
        verdict = WireVerdict.of(outcome.verdict)
        admission = outcome.admission
        if admission is not None and admission.verdict.kind != VerdictKind.ALLOW:
            verdict = (
                WireVerdict.of(admission.verdict)
                if admission.verdict.kind != VerdictKind.TRANSFORM
                else verdict
            )
        boundary.record("syscall", tool, context(request), verdict, t0)
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
        return json_response(out)

    async def admit(request: Request) -> Response:
        body = await body_of(request)
        tool = _tool(body)
        value = body.get("result")
        if value is None or value == "":
            payload = b"{}"
        elif isinstance(value, str):
            payload = value.encode()
        else:
            payload = orjson.dumps(value)
        call_id = body.get("tool_call_id")
        ctx = context(request)
        trace_id = _trace(request, body)
        wv, admitted, qid = boundary.admit_one(
            tool,
            payload,
            call_id if isinstance(call_id, str) else "",
            RequestContext(trace_id, ctx.principal, ctx.session),
        )
        out: dict[str, Any] = {
            "verdict": wv.to_json(),
            "content": admitted.decode("utf-8", errors="replace"),
            "trace_id": trace_id,
        }
        if qid:
            out["quarantine_id"] = qid
        return json_response(out)

    async def reload(request: Request) -> Response:
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
        return json_response(
            {"reloaded": True, "source": o.policy_source, "summary": dict(summary)}
        )

    async def events(request: Request) -> Response:
        if o.events is None:
            raise GatewayError(
                404, "journal_not_configured", "no decision journal: set FAK_AUDIT_JOURNAL"
            )
        q = request.query_params
        try:
            since = int(q.get("since", "0"))
            limit = min(max(int(q.get("limit", "256")), 1), 1024)
        except ValueError as exc:
            raise GatewayError(400, "invalid_request", "since and limit must be integers") from exc
        try:
            rows = o.events(since, limit)
        except (RowError, OSError) as exc:
            raise GatewayError(
                500,
                "journal_unreadable",
                "the decision journal cannot be read: run `fak journal verify`",
            ) from exc
        cursor = rows[-1].get("seq", since) if rows else since
        return json_response({"events": rows, "cursor": cursor})

    return [
        Route("/v1/fak/adjudicate", adjudicate, methods=["POST"]),
        Route("/v1/fak/syscall", syscall, methods=["POST"]),
        Route("/v1/fak/admit", admit, methods=["POST"]),
        Route("/v1/fak/policy/reload", reload, methods=["POST"]),
        Route("/v1/fak/events", events, methods=["GET"]),
        Route("/v1/fak/witness", witnesses, methods=["GET"]),
        Route("/v1/fak/witness/{id}", approve, methods=["POST"]),
        Route("/v1/fak/revoke", revoke, methods=["POST"]),
    ]
