"""Structured output through fak with the real frameworks (issue 24, item 1).

LangChain ``with_structured_output``, pydantic-ai ``NativeOutput`` and the OpenAI Agents SDK
``output_type`` each run against ``fak serve`` on a loopback socket, in front of a recording
upstream that answers JSON matching the schema only when the request asks for structured
output, and plain text otherwise: a gateway that drops ``response_format`` / ``text.format``
fails these tests. Each framework speaks both OpenAI wires (Chat Completions and Responses),
and fak forwards to a chat upstream and to a Responses upstream.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from typing import Any

import httpx
import pytest
from pydantic import BaseModel

from fak.gateway.upstream.client import HttpxUpstream
from fak.gateway.upstream.planner import ProxyPlanner
from fak.testing.upstream import MockUpstream, asked_schema

pytestmark = pytest.mark.gateway

ANSWER = {"name": "Paris", "population": 2100000}
PROMPT = "Which city is the capital of France? Answer with its name and population."


class City(BaseModel):
    name: str
    population: int


def _answer(schema: Mapping[str, Any]) -> str:
    props = schema.get("properties")
    assert isinstance(props, Mapping) and set(props) >= {"name", "population"}, schema
    return json.dumps(ANSWER)


UPSTREAMS = {
    "chat": ("openai", "/v1/chat/completions"),
    "responses": ("openai-responses", "/v1/responses"),
}


def _stack(
    serve_app: Callable[[Any], str], app_factory: Callable[..., Any], upstream: str
) -> tuple[MockUpstream, str]:
    mock = MockUpstream(structured=_answer)
    up = serve_app(mock.app)
    provider, _ = UPSTREAMS[upstream]
    planner = ProxyPlanner(HttpxUpstream(), base_url=up + "/v1", provider=provider, api_key="k")
    return mock, serve_app(app_factory(planner)) + "/v1"


def _asked(mock: MockUpstream, upstream: str) -> Mapping[str, Any]:
    """The schema the upstream was asked for, at the path of its wire."""
    got = mock.received[-1]
    assert got.path == UPSTREAMS[upstream][1]
    schema = asked_schema(json.loads(got.body))
    assert schema is not None, got.body
    assert set(schema["properties"]) == {"name", "population"}
    return schema


WIRES = ["chat", "responses"]


@pytest.mark.parametrize("upstream", WIRES)
@pytest.mark.parametrize("client_wire", WIRES)
def test_langchain_with_structured_output(
    serve_app: Callable[[Any], str],
    app_factory: Callable[..., Any],
    client_wire: str,
    upstream: str,
) -> None:
    from langchain_openai import ChatOpenAI

    mock, url = _stack(serve_app, app_factory, upstream)
    with httpx.Client() as http:  # owned and closed: no socket left for the GC to warn about
        llm = ChatOpenAI(
            model="gpt-x",
            base_url=url,
            api_key="local",  # type: ignore[arg-type]
            use_responses_api=client_wire == "responses",
            max_retries=0,
            http_client=http,
        )
        city = llm.with_structured_output(City).invoke(PROMPT)
    assert city == City(**ANSWER)
    _asked(mock, upstream)


@pytest.mark.parametrize("upstream", WIRES)
@pytest.mark.parametrize("client_wire", WIRES)
def test_pydantic_ai_native_output(
    serve_app: Callable[[Any], str],
    app_factory: Callable[..., Any],
    client_wire: str,
    upstream: str,
) -> None:
    from openai import AsyncOpenAI
    from pydantic_ai import Agent, NativeOutput
    from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
    from pydantic_ai.providers.openai import OpenAIProvider

    mock, url = _stack(serve_app, app_factory, upstream)

    async def run() -> Any:
        client = AsyncOpenAI(base_url=url, api_key="local", max_retries=0)
        try:
            provider = OpenAIProvider(openai_client=client)
            model = (
                OpenAIResponsesModel("gpt-x", provider=provider)
                if client_wire == "responses"
                else OpenAIChatModel("gpt-x", provider=provider)
            )
            agent = Agent(model, output_type=NativeOutput(City))
            return (await agent.run(PROMPT)).output
        finally:
            await client.close()

    assert asyncio.run(run()) == City(**ANSWER)
    _asked(mock, upstream)


@pytest.mark.parametrize("upstream", WIRES)
@pytest.mark.parametrize("client_wire", WIRES)
def test_agents_sdk_output_type(
    serve_app: Callable[[Any], str],
    app_factory: Callable[..., Any],
    client_wire: str,
    upstream: str,
) -> None:
    from agents import (
        Agent,
        OpenAIChatCompletionsModel,
        OpenAIResponsesModel,
        Runner,
        set_tracing_disabled,
    )
    from openai import AsyncOpenAI

    set_tracing_disabled(True)
    mock, url = _stack(serve_app, app_factory, upstream)

    async def run() -> Any:
        client = AsyncOpenAI(base_url=url, api_key="local", max_retries=0)
        try:
            model = (
                OpenAIResponsesModel("gpt-x", openai_client=client)
                if client_wire == "responses"
                else OpenAIChatCompletionsModel("gpt-x", openai_client=client)
            )
            agent = Agent(name="geo", instructions="Answer briefly.", model=model, output_type=City)
            return (await Runner.run(agent, PROMPT)).final_output
        finally:
            await client.close()

    assert asyncio.run(run()) == City(**ANSWER)
    _asked(mock, upstream)


def test_the_double_answers_plain_text_when_no_schema_is_asked(
    serve_app: Callable[[Any], str], app_factory: Callable[..., Any]
) -> None:
    """The recording upstream only answers JSON when asked: without ``response_format`` the
    same framework call gets no City (so the tests above can fail)."""
    from langchain_openai import ChatOpenAI

    mock, url = _stack(serve_app, app_factory, "chat")
    with httpx.Client() as http:
        llm = ChatOpenAI(
            model="gpt-x",
            base_url=url,
            api_key="local",  # type: ignore[arg-type]
            max_retries=0,
            http_client=http,
        )
        reply = llm.invoke(PROMPT)
    with pytest.raises(ValueError):
        City.model_validate_json(str(reply.content))
    assert asked_schema(json.loads(mock.received[-1].body)) is None
