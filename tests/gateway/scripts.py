"""Planner scripts shared by the gateway tests."""

from __future__ import annotations

from fak.abi import FinishReason, PlannerTurn, ProposedCall, Role, TurnRequest, Usage

READ_ARGS = '{"path":"README.md"}'


def agent_script(request: TurnRequest) -> PlannerTurn:
    """read → an allowed call and a denied one; delete → only a denied one; after tool results a
    text reply; else plain text."""
    last = request.messages[-1]
    if last.role is Role.TOOL:
        return PlannerTurn("I read the results and I am done.", usage=Usage(30, 9))
    text = last.content.lower()
    if "read" in text:
        calls = (
            ProposedCall("call_read", "read_file", READ_ARGS),
            ProposedCall("call_del", "delete_account", '{"user":"bob"}'),
        )
        return PlannerTurn("Let me look. ", calls, FinishReason.TOOL_CALLS, Usage(20, 12))
    if "delete" in text:
        calls = (ProposedCall("call_del", "delete_account", '{"user":"bob"}'),)
        return PlannerTurn("", calls, FinishReason.TOOL_CALLS, Usage(20, 6))
    return PlannerTurn("Hello from the scripted planner, word by word.", usage=Usage(10, 8))
