"""Tool-lock middleware: the contract's test families F1-F15, in Python."""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from fak.abi import Reason, VerdictKind
from fak.kernel import (
    AdmissionAuditEvent,
    DenialKind,
    DenialReason,
    Kernel,
    MiddlewareRequest,
    ToolAdmissionDeniedError,
    admitted_args,
    create_tool_lock,
)
from fak.policy import Policy

POLICY = Policy.loads(
    '{"allow": ["search_kb", "update_note"], "deny": {"refund_payment": "POLICY_BLOCK"},'
    ' "redact_fields": ["token"]}'
)


class SpyNext:
    def __init__(self, result: Any = "tool-result", error: BaseException | None = None) -> None:
        self.calls = 0
        self.result = result
        self.error = error

    def __call__(self) -> Awaitable[Any]:
        self.calls += 1

        async def run() -> Any:
            if self.error is not None:
                raise self.error
            return self.result

        return run()


def _run(stage: Callable[..., Awaitable[Any]], req: MiddlewareRequest, nxt: SpyNext) -> Any:
    return asyncio.run(stage(req, nxt))


def _req(tool: str, args: Any = None, **kw: Any) -> MiddlewareRequest:
    return MiddlewareRequest(
        caller="agent-7", tool=tool, args=args if args is not None else {}, **kw
    )


# F1 / F13 -----------------------------------------------------------------------------------
def test_module_shape() -> None:
    stage = create_tool_lock(POLICY)
    assert inspect.iscoroutinefunction(stage)
    assert ToolAdmissionDeniedError.http_status == 403
    assert issubclass(ToolAdmissionDeniedError, Exception)
    fields = [f.name for f in dataclasses.fields(AdmissionAuditEvent)]
    assert fields == ["type", "caller", "tool", "reason", "at"]


# F2 / F12 -----------------------------------------------------------------------------------
def test_admit_calls_next_once_and_propagates_the_result_unchanged() -> None:
    events: list[Any] = []
    denies: list[Any] = []
    stage = create_tool_lock(POLICY, on_event=events.append, on_deny=denies.append)
    sentinel = object()
    nxt = SpyNext(result=sentinel)
    assert _run(stage, _req("search_kb", {"q": "x"}), nxt) is sentinel
    assert nxt.calls == 1 and events == [] and denies == []


def test_next_rejection_propagates_the_same_error() -> None:
    stage = create_tool_lock(POLICY)
    boom = ValueError("downstream")
    with pytest.raises(ValueError) as info:
        _run(stage, _req("search_kb"), SpyNext(error=boom))
    assert info.value is boom


# F3 / F4 / F5 / F6 --------------------------------------------------------------------------
def test_deny_never_calls_next_and_emits_event_then_deny_then_raises() -> None:
    journal: list[str] = []
    seen: dict[str, Any] = {}

    def on_event(event: AdmissionAuditEvent) -> None:
        journal.append("event")
        seen["event"] = event

    def on_deny(reason: DenialReason) -> None:
        journal.append("deny")
        seen["reason"] = reason

    stage = create_tool_lock(POLICY, on_event=on_event, on_deny=on_deny)
    nxt = SpyNext()
    with pytest.raises(ToolAdmissionDeniedError) as info:
        _run(stage, _req("refund_payment", {"amount": 5}), nxt)
    err = info.value
    assert nxt.calls == 0
    assert journal == ["event", "deny"]
    assert (err.caller, err.tool, err.http_status) == ("agent-7", "refund_payment", 403)
    assert err.reason is seen["reason"]  # the same object, no defensive copy
    assert err.reason.kind == DenialKind.POLICY
    assert (err.verdict.kind, err.verdict.reason) == (VerdictKind.DENY, Reason.POLICY_BLOCK)
    event = seen["event"]
    assert (event.type, event.caller, event.tool, event.at) == (
        "admission_deny",
        "agent-7",
        "refund_payment",
        1,
    )
    assert event.reason is err.reason
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.at = 99  # type: ignore[misc]
    assert "POLICY_BLOCK" in str(err) and "5" not in str(err)


def test_unlisted_tool_is_default_deny() -> None:
    with pytest.raises(ToolAdmissionDeniedError) as info:
        _run(create_tool_lock(POLICY), _req("wire_money"), SpyNext())
    assert info.value.reason.reason == Reason.DEFAULT_DENY


# F7 ------------------------------------------------------------------------------------------
def test_rule_version_pin() -> None:
    kernel = Kernel(POLICY)
    stage = create_tool_lock(kernel)
    nxt = SpyNext()
    assert _run(stage, _req("search_kb", rule_version=kernel.policy_version), nxt) == "tool-result"
    with pytest.raises(ToolAdmissionDeniedError) as info:
        _run(stage, _req("search_kb", rule_version="0" * 64), nxt)
    assert info.value.reason.kind == DenialKind.RULE_VERSION_MISMATCH
    assert info.value.reason.rule_version == kernel.policy_version
    assert nxt.calls == 1
    # a policy swap invalidates old pins
    old = kernel.policy_version
    kernel.replace_policy(Policy.loads('{"allow": ["search_kb"]}'))
    with pytest.raises(ToolAdmissionDeniedError):
        _run(stage, _req("search_kb", rule_version=old), nxt)


# F8 / I16 ------------------------------------------------------------------------------------
def test_an_evaluator_fault_becomes_a_clean_denial() -> None:
    class BrokenKernel(Kernel):
        @property
        def policy_version(self) -> str:
            raise RuntimeError("hash failed")

    stage = create_tool_lock(BrokenKernel(POLICY))
    nxt = SpyNext()
    with pytest.raises(ToolAdmissionDeniedError) as info:
        _run(stage, _req("search_kb"), nxt)
    assert info.value.reason.kind == DenialKind.RULE_REJECTED
    assert info.value.reason.detail == "evaluator_threw:RuntimeError"
    assert info.value.verdict.by == "<adapter>"
    assert nxt.calls == 0


# F10 / F14 -----------------------------------------------------------------------------------
def test_counter_is_monotonic_per_instance_and_independent() -> None:
    a_events: list[AdmissionAuditEvent] = []
    b_events: list[AdmissionAuditEvent] = []
    a = create_tool_lock(POLICY, on_event=a_events.append)
    b = create_tool_lock(POLICY, on_event=b_events.append)
    for stage in (a, a, b, a):
        with pytest.raises(ToolAdmissionDeniedError):
            _run(stage, _req("refund_payment"), SpyNext())
    _run(a, _req("search_kb"), SpyNext())  # an admit does not advance it
    with pytest.raises(ToolAdmissionDeniedError):
        _run(a, _req("refund_payment"), SpyNext())
    assert [e.at for e in a_events] == [1, 2, 3, 4]
    assert [e.at for e in b_events] == [1]


# F11 -----------------------------------------------------------------------------------------
def test_mode_defaults_and_is_passed_as_call_metadata_only() -> None:
    from fak.abi import ToolCall

    seen: list[ToolCall] = []

    class Spy(Kernel):
        def decide(self, call: ToolCall) -> Any:
            seen.append(call)
            return super().decide(call)

    stage = create_tool_lock(Spy(POLICY), default_mode="audit")
    _run(stage, _req("search_kb"), SpyNext())
    _run(stage, _req("search_kb", mode="strict"), SpyNext())
    assert [c.meta["mode"] for c in seen] == ["audit", "strict"]
    plain = create_tool_lock(Spy(POLICY))
    _run(plain, _req("search_kb"), SpyNext())
    assert seen[-1].meta["mode"] == "normal"


# F15 -----------------------------------------------------------------------------------------
def test_listener_exceptions_are_swallowed_and_order_kept() -> None:
    order: list[str] = []

    def bad_event(event: AdmissionAuditEvent) -> None:
        order.append("event")
        raise RuntimeError("listener bug")

    def bad_deny(reason: DenialReason) -> None:
        order.append("deny")
        raise KeyError("listener bug")

    stage = create_tool_lock(POLICY, on_event=bad_event, on_deny=bad_deny)
    with pytest.raises(ToolAdmissionDeniedError):
        _run(stage, _req("refund_payment"), SpyNext())
    assert order == ["event", "deny"]


# TRANSFORM and non-object arguments ----------------------------------------------------------
def test_transform_is_refused_unless_the_pipeline_reads_admitted_args() -> None:
    req = _req("update_note", {"text": "hi", "token": "secret-value"})
    with pytest.raises(ToolAdmissionDeniedError) as info:
        _run(create_tool_lock(POLICY), req, SpyNext())
    assert info.value.reason.kind == DenialKind.RULE_REJECTED

    got: dict[str, Any] = {}

    def nxt() -> Awaitable[Any]:
        async def run() -> Any:
            got["args"] = dict(admitted_args() or {})
            return "ok"

        return run()

    stage = create_tool_lock(POLICY, allow_transform=True)
    assert asyncio.run(stage(req, nxt)) == "ok"
    assert got["args"] == {"text": "hi", "token": "[REDACTED]"}
    assert admitted_args() is None


def test_non_object_arguments_are_malformed() -> None:
    with pytest.raises(ToolAdmissionDeniedError) as info:
        _run(create_tool_lock(POLICY), _req("search_kb", [1, 2]), SpyNext())
    assert info.value.reason.reason == Reason.MALFORMED


def test_stage_goes_through_the_kernel_counters() -> None:
    kernel = Kernel(POLICY)
    stage = create_tool_lock(kernel)
    _run(stage, _req("search_kb"), SpyNext())
    with pytest.raises(ToolAdmissionDeniedError):
        _run(stage, _req("refund_payment"), SpyNext())
    assert (kernel.counters["decisions"], kernel.counters["denies"]) == (2, 1)
