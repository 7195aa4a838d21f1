"""The scripted mock planner (tier T4): deterministic turns with no model and no network.

Used when ``fak serve`` has no ``--base-url`` and no engine, and in tests. Without a script it
follows one rule: a user line ``call <tool> <json-args>`` proposes that call; after tool results
it acknowledges them; otherwise it explains how to exercise the gate. A script (a sequence of
turns, or a function of the request) replaces the rule. Requests it saw are kept (bounded) so
tests can prove what reached the planner.
"""

from __future__ import annotations

import asyncio
import re
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

from fak.abi import (
    FinishReason,
    PlannerEvent,
    PlannerTurn,
    ProposedCall,
    Role,
    TextDelta,
    TurnDone,
    TurnRequest,
    Usage,
)
from fak.wire import split_after_spaces

__all__ = ["MockPlanner", "default_rule"]

_CALL = re.compile(r"^\s*call\s+([A-Za-z0-9_.:-]+)(?:\s+(.*\S))?\s*$")
Script = Callable[[TurnRequest], PlannerTurn] | Sequence[PlannerTurn]

HELP_TEXT = (
    "fak mock planner: no model is loaded, so this reply is scripted. Start fak serve with "
    "--base-url to front a real model, or send a user line 'call <tool> <json-args>' to see "
    "the kernel adjudicate a proposed tool call."
)


def _estimate(request: TurnRequest) -> int:
    return max(1, sum(len(m.content) for m in request.messages) // 4)


def default_rule(request: TurnRequest) -> PlannerTurn:
    """The unscripted behaviour described in the module docstring."""
    # the last turn that is not system text (agents such as Claude Code put an environment
    # note after the user's prompt)
    last = next((m for m in reversed(request.messages) if m.role is not Role.SYSTEM), None)
    prompt = _estimate(request)
    if last is not None and last.role is Role.TOOL:
        n = 0
        for m in reversed(request.messages):
            if m.role is not Role.TOOL:
                break
            n += 1
        text = f"fak mock planner: received {n} tool result(s)."
        return PlannerTurn(text, usage=Usage(prompt, len(text) // 4), model=request.model)
    calls: list[ProposedCall] = []
    if last is not None and last.role is Role.USER:
        for line in last.content.splitlines():
            match = _CALL.match(line)
            if match:
                calls.append(
                    ProposedCall(f"call_mock_{len(calls) + 1}", match[1], match[2] or "{}")
                )
    if calls:
        return PlannerTurn(
            "",
            tuple(calls),
            FinishReason.TOOL_CALLS,
            Usage(prompt, 8 * len(calls)),
            request.model,
        )
    return PlannerTurn(HELP_TEXT, usage=Usage(prompt, len(HELP_TEXT) // 4), model=request.model)


class MockPlanner:
    """A ``fak.abi.Planner`` that needs nothing: scripted, deterministic, inspectable."""

    def __init__(
        self,
        script: Script | None = None,
        *,
        model: str = "mock",
        delay_s: float = 0.0,
        keep: int = 64,
    ) -> None:
        self._script = script
        self._step = 0
        self._model = model
        self._delay = delay_s
        self.requests: deque[TurnRequest] = deque(maxlen=keep)

    @property
    def kind(self) -> str:
        return "mock"

    @property
    def model(self) -> str:
        return self._model

    def _next(self, request: TurnRequest) -> PlannerTurn:
        self.requests.append(request)
        script = self._script
        if script is None:
            turn = default_rule(request)
        elif callable(script):
            turn = script(request)
        else:
            turn = script[min(self._step, len(script) - 1)]
            self._step += 1
        if not turn.model:
            turn = PlannerTurn(
                turn.text,
                turn.tool_calls,
                turn.finish_reason,
                turn.usage,
                request.model or self._model,
            )
        return turn

    async def complete(self, request: TurnRequest) -> PlannerTurn:
        if self._delay:
            await asyncio.sleep(self._delay)
        return self._next(request)

    async def stream(self, request: TurnRequest) -> AsyncIterator[PlannerEvent]:
        if self._delay:
            await asyncio.sleep(self._delay)
        turn = self._next(request)
        for piece in split_after_spaces(turn.text):
            yield TextDelta(piece)
        yield TurnDone(turn)

    async def aclose(self) -> None:
        return None

    def stats(self) -> Mapping[str, Any] | None:
        """None: the mock keeps no stats (a subclass may return numbers to test metrics)."""
        return None

    def set_error_hook(self, hook: Callable[[str], None]) -> None:
        """No upstream, so no upstream failures to report."""
