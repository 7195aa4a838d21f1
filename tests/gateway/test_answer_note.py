"""The answer as a sink on every wire: a name in the model's text that only a tool result gave is
annotated after the text, through the official OpenAI (Chat, Responses) and Anthropic SDKs on a
real loopback socket, streamed and not."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anthropic
import openai
import pytest

from fak.abi import FinishReason, PlannerTurn, TurnRequest
from fak.kernel import Kernel
from fak.policy import Policy
from fak.testing.planner import MockPlanner

from .conftest import closing

pytestmark = pytest.mark.gateway

REVIEW = "Guests loved Riverside View Hotel for its gorgeous rooms."
SAID = "You should absolutely visit Riverside View Hotel in Paris."
NOTE = '[fak] "Riverside View Hotel" came from tool result get_reviews#c1'
ASK = "find me a hotel in Paris"


def _answer(request: TurnRequest) -> PlannerTurn:
    del request
    return PlannerTurn(SAID, (), FinishReason.STOP)


@pytest.fixture
def url(app_factory: Callable[..., Any], serve_app: Callable[[Any], str]) -> str:
    manifest = {"allow": ["get_reviews"], "answer": "annotate"}
    kernel = Kernel(Policy.loads(json.dumps(manifest), source="<test>"))
    return serve_app(app_factory(MockPlanner(_answer), kernel))


def _chat_messages() -> list[Any]:
    call = {"id": "c1", "type": "function", "function": {"name": "get_reviews", "arguments": "{}"}}
    return [
        {"role": "user", "content": ASK},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": REVIEW},
    ]


@pytest.mark.parametrize("stream", [False, True])
def test_chat_completions_answer_is_annotated(url: str, stream: bool) -> None:
    client = closing(openai.OpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0))
    if stream:
        chunks = client.chat.completions.create(model="m", messages=_chat_messages(), stream=True)
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    else:
        reply = client.chat.completions.create(model="m", messages=_chat_messages())
        text = reply.choices[0].message.content or ""
    assert text == f"{SAID}\n\n{NOTE}"


@pytest.mark.parametrize("stream", [False, True])
def test_responses_answer_is_annotated(url: str, stream: bool) -> None:
    client = closing(openai.OpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0))
    items: Any = [
        {"role": "user", "content": ASK},
        {"type": "function_call", "call_id": "c1", "name": "get_reviews", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": REVIEW},
    ]
    if stream:
        with client.responses.stream(model="m", input=items) as events:
            deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")
            final = events.get_final_response()
        assert deltas == final.output_text
    else:
        final = client.responses.create(model="m", input=items)
    assert final.output_text == f"{SAID}\n\n{NOTE}"


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_messages_answer_is_annotated(url: str, stream: bool) -> None:
    client = closing(anthropic.Anthropic(base_url=url, api_key="x", max_retries=0))
    messages: Any = [
        {"role": "user", "content": ASK},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "c1", "name": "get_reviews", "input": {}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "c1", "content": REVIEW}],
        },
    ]
    if stream:
        with client.messages.stream(model="m", max_tokens=64, messages=messages) as events:
            message = events.get_final_message()
    else:
        message = client.messages.create(model="m", max_tokens=64, messages=messages)
    texts = [block.text for block in message.content if block.type == "text"]
    assert texts == [f"{SAID}\n\n{NOTE}"]


def test_no_switch_no_note(
    app_factory: Callable[..., Any], serve_app: Callable[[Any], str]
) -> None:
    kernel = Kernel(Policy.loads(json.dumps({"allow": ["get_reviews"]}), source="<test>"))
    base = serve_app(app_factory(MockPlanner(_answer), kernel))
    client = closing(openai.OpenAI(base_url=f"{base}/v1", api_key="x", max_retries=0))
    reply = client.chat.completions.create(model="m", messages=_chat_messages())
    assert reply.choices[0].message.content == SAID


def test_a_long_conversation_is_annotated_off_the_event_loop(url: str) -> None:
    client = closing(openai.OpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0))
    messages = _chat_messages()
    # a long brief from the user (a long tool result would be paged out before the planner)
    messages[0] = {"role": "user", "content": ASK + ". Some notes on my taste follow. " * 2500}
    reply = client.chat.completions.create(model="m", messages=messages)
    assert reply.choices[0].message.content == f"{SAID}\n\n{NOTE}"
