"""A planner's client-fixable refusal (e.g. a prompt longer than the model's context) is a 400
with its stable code on every wire, streamed or not — never a 500 — seen by the official SDKs."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import anthropic
import openai
import pytest

from fak.abi import PlannerEvent, PlannerInputError, PlannerTurn, TurnRequest
from fak.testing.planner import MockPlanner

pytestmark = pytest.mark.gateway


class TooLongPlanner(MockPlanner):
    """Refuses every request the way the engine refuses an over-long prompt."""

    def _refuse(self) -> PlannerInputError:
        return PlannerInputError("context_length_exceeded", "the prompt is 9000 tokens; 8192 fit")

    async def complete(self, request: TurnRequest) -> PlannerTurn:
        raise self._refuse()

    async def stream(self, request: TurnRequest) -> AsyncIterator[PlannerEvent]:
        raise self._refuse()
        yield  # pragma: no cover - makes this an async generator


@pytest.fixture
def base(app_factory: Callable[..., Any], serve_app: Callable[[Any], str]) -> str:
    return serve_app(app_factory(TooLongPlanner(model="tiny")))


@pytest.mark.parametrize("stream", [False, True])
def test_openai_chat_gets_a_400_with_the_code(base: str, stream: bool) -> None:
    # closed here: a pooled socket left for the GC warns (an error) in whichever test runs next
    with (
        openai.OpenAI(base_url=f"{base}/v1", api_key="k", max_retries=0) as client,
        pytest.raises(openai.BadRequestError) as info,
    ):
        client.chat.completions.create(
            model="tiny", messages=[{"role": "user", "content": "hi"}], stream=stream
        )
    assert info.value.status_code == 400
    assert info.value.code == "context_length_exceeded"
    assert "8192 fit" in str(info.value)


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_messages_gets_a_400(base: str, stream: bool) -> None:
    with (
        anthropic.Anthropic(base_url=base, api_key="k", max_retries=0) as client,
        pytest.raises(anthropic.BadRequestError) as info,
    ):
        client.messages.create(
            model="tiny",
            max_tokens=8,
            messages=[{"role": "user", "content": "hi"}],
            stream=stream,
        )
    assert info.value.status_code == 400
    assert "8192 fit" in str(info.value)
