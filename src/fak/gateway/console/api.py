"""The console's own JSON routes under /v1/fak/console/ (tier T3).

``holds`` (witness auth, as ``GET /v1/fak/witness``): the newest 200 holds on the book, the
live ones and the newest 20 settled ones with the evidence this process kept when it opened
them (``fak.kernel.evidence``) and where each argument value sits in the run
(``fak.gateway.console.evidence``, memoized per evidence: the page polls every second).
``quarantine`` (client auth): the results this process held out lately, with findings and
stubs. ``verify`` (client auth): the journal's hash chain checked from its first row, off the
event loop. ``page_in`` (witness auth): clear a quarantine id under a witness id and page it in
(journaled as PAGE_IN with the operator); the answer is the re-screen's verdict and, when it
passes, the bytes as text. Approve and deny are not here: the page calls
``POST /v1/fak/witness/{id}`` and ``POST /v1/fak/revoke``, as the CLI does.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from fak.gateway.console.evidence import findings, sink_argument
from fak.gateway.errors import GatewayError
from fak.gateway.http import json_response
from fak.gateway.routes.inputs import gateway, read_object
from fak.gateway.routes.native import operator, witness_auth
from fak.kernel import HoldState, PageInRefused, WitnessError
from fak.kernel.evidence import HoldEvidence

__all__ = ["ROUTES", "Findings", "holds", "page_in", "quarantine", "verify"]

_MAX_ID = 128
_MAX_HOLDS = 200  # the newest holds the page is sent (the book keeps up to 4096)
_SETTLED = 20  # settled holds (used, revoked, expired) sent with their evidence, newest first
_FOUND = 2048  # findings kept, by hold id, while their evidence stays the same


class Findings:
    """Findings per hold, computed once per evidence (the page polls every second); one per
    app, on ``app.state.console_findings``."""

    def __init__(self) -> None:
        self._cache: OrderedDict[str, tuple[HoldEvidence, list[dict[str, Any]]]] = OrderedDict()
        self._lock = threading.Lock()

    def of(self, evidence: HoldEvidence) -> list[dict[str, Any]]:
        with self._lock:
            hit = self._cache.get(evidence.hold_id)
        if hit is not None and hit[0] is evidence:
            return hit[1]
        found = findings(evidence)
        with self._lock:
            self._cache[evidence.hold_id] = (evidence, found)
            self._cache.move_to_end(evidence.hold_id)
            while len(self._cache) > _FOUND:
                self._cache.popitem(last=False)
        return found


async def holds(request: Request) -> Response:
    state = gateway(request)
    kernel = witness_auth(state, request)
    cache: Findings = request.app.state.console_findings
    try:
        book = kernel.witnesses.holds()
    except WitnessError as exc:  # a shared store that cannot be reached
        raise GatewayError(503, exc.code, exc.message, headers={"Retry-After": "5"}) from exc
    out: list[dict[str, Any]] = []
    settled = 0
    for hold in reversed(book[-_MAX_HOLDS:]):
        item: dict[str, Any] = hold.to_json()
        item["created_unix"] = round(hold.created, 3)
        live = hold.state in (HoldState.PENDING, HoldState.APPROVED)
        settled += not live
        evidence = kernel.hold_evidence(hold.id) if live or settled <= _SETTLED else None
        if evidence is None:
            item["evidence"] = None
            item["evidence_sent"] = live or settled <= _SETTLED
        else:
            item["evidence"] = evidence.to_json()
            item["sink"] = sink_argument(evidence.claim)
            item["findings"] = cache.of(evidence)
        out.append(item)
    now = state.options.clock()
    return json_response(
        {"holds": out, "now_unix": round(now, 3), "trust_epoch": kernel.trust_epoch}
    )


async def quarantine(request: Request) -> Response:
    """The results this process held out most recently, newest first, and whether each is
    cleared (client auth, like the journal: ids, findings and the stubs the model saw)."""
    kernel = gateway(request).kernel
    out: list[dict[str, Any]] = []
    for note in reversed(kernel.quarantine_notes()):
        item = note.to_json()
        try:
            item["cleared"] = bool(note.qid) and kernel.ledger.is_cleared(note.qid)
        except ConnectionError:
            item["cleared"] = None  # the shared ledger cannot say
        out.append(item)
    return json_response({"held": out})


async def verify(request: Request) -> Response:
    check = gateway(request).options.journal_verify
    if check is None:
        return json_response({"configured": False})
    report = await anyio.to_thread.run_sync(check)
    return json_response(
        {
            "configured": True,
            "ok": report.ok,
            "rows": report.rows,
            "bad_row": report.bad_row,
            "error": report.error,
            "head_hash": report.head_hash,
        }
    )


def _ident(body: dict[str, Any], key: str) -> str:
    value = body.get(key)
    if not isinstance(value, str) or not value or len(value) > _MAX_ID:
        raise GatewayError(400, f"missing_{key}", f"{key} is required (an id, at most 128 chars)")
    return value


async def page_in(request: Request) -> Response:
    state = gateway(request)
    kernel = witness_auth(state, request)
    body = dict(await read_object(state, request))
    qid, witness = _ident(body, "id"), _ident(body, "witness")
    try:
        kernel.clear(qid, witness)
    except WitnessError as exc:
        raise GatewayError(409, exc.code, exc.message) from exc
    except LookupError as exc:
        raise GatewayError(404, "quarantine_unknown", f"no quarantined result {qid!r}") from exc
    except ConnectionError as exc:
        msg = "the quarantine ledger cannot be reached; retry when it is back"
        raise GatewayError(503, "ledger_unavailable", msg, headers={"Retry-After": "5"}) from exc
    try:
        data = kernel.page_in(qid, operator(state, request))
    except PageInRefused as refused:
        return json_response(
            {"id": qid, "cleared": True, "verdict": "QUARANTINE", "refused": refused.why}
        )
    text = data.decode("utf-8", errors="replace")
    return json_response({"id": qid, "cleared": True, "verdict": "ALLOW", "content": text})


ROUTES: list[Route] = [
    Route("/v1/fak/console/holds", holds, methods=["GET"]),
    Route("/v1/fak/console/quarantine", quarantine, methods=["GET"]),
    Route("/v1/fak/console/verify", verify, methods=["GET"]),
    Route("/v1/fak/console/page-in", page_in, methods=["POST"]),
]
