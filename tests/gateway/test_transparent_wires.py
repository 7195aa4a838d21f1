"""What fak does not govern reaches the model unchanged (issue 24, items 2, 6, 7).

Real clients (the official ``openai`` and ``anthropic`` SDKs, LangChain) over loopback sockets,
in front of the recording upstream: an o-series request keeps ``max_completion_tokens``; a
user's image, file and audio parts reach the upstream (unchanged on the same wire, translated
across, refused with a 400 naming the part where no translation exists), while media in a tool
result stays held out with a ``[fak]`` note; a partly refused turn tells the model on the OpenAI
wires too; ``/v1/messages`` answers 401 in the Messages error envelope.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anthropic
import httpx
import openai
import pytest

from fak.abi import FinishReason, PlannerTurn, ProposedCall, Role, TurnRequest, Usage
from fak.gateway.upstream.client import HttpxUpstream
from fak.gateway.upstream.planner import ProxyPlanner
from fak.kernel import Kernel
from fak.policy import Policy
from fak.testing.planner import default_rule
from fak.testing.upstream import MockUpstream

from .conftest import POISON, SECRET, closing

pytestmark = pytest.mark.gateway

PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGBgAAAABQABpfZFQAAAAABJRU5E"
    "rkJggg=="
)
DATA_URL = "data:image/png;base64," + PNG
TOOL = {"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}
POLICY = {"allow": ["read_file"]}


def _script(request: TurnRequest) -> PlannerTurn:
    last = request.messages[-1]
    if last.role is Role.USER and last.content == "read and wipe":
        calls = (
            ProposedCall("c_read", "read_file", '{"path":"README.md"}'),
            ProposedCall("c_wipe", "wipe_disk", '{"device":"/dev/sda"}'),
        )
        return PlannerTurn("", calls, FinishReason.TOOL_CALLS, Usage(5, 5))
    return default_rule(request)


def _fak(
    serve_app: Callable[[Any], str],
    app_factory: Callable[..., Any],
    provider: str,
    **options: Any,
) -> tuple[MockUpstream, str]:
    mock = MockUpstream(_script)
    up = serve_app(mock.app)
    planner = ProxyPlanner(HttpxUpstream(), base_url=up + "/v1", provider=provider, api_key="k")
    kernel = Kernel(Policy.loads(json.dumps(POLICY)))
    return mock, serve_app(app_factory(planner, kernel, **options))


def _sent(mock: MockUpstream) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(mock.received[-1].body)
    return body


# -- item 2: o-series models refuse max_tokens ---------------------------------------------
def test_langchain_o3_keeps_max_completion_tokens(
    serve_app: Callable[[Any], str], app_factory: Callable[..., Any]
) -> None:
    from langchain_openai import ChatOpenAI

    mock, url = _fak(serve_app, app_factory, "openai")
    llm = ChatOpenAI(model="o3", base_url=url + "/v1", api_key="local", max_tokens=50)  # type: ignore[arg-type]
    llm.invoke("hello")
    sent = _sent(mock)
    assert sent["max_completion_tokens"] == 50
    assert "max_tokens" not in sent


# -- item 7: a user's media reaches the upstream --------------------------------------------
USER_PARTS: list[Any] = [
    {"type": "text", "text": "what is in this picture?"},
    {"type": "image_url", "image_url": {"url": DATA_URL, "detail": "low"}},
]


def test_chat_image_reaches_a_chat_upstream_unchanged(
    serve_app: Callable[[Any], str], app_factory: Callable[..., Any]
) -> None:
    mock, url = _fak(serve_app, app_factory, "openai")
    client = closing(openai.OpenAI(base_url=url + "/v1", api_key="local"))
    client.chat.completions.create(
        model="gpt-x", messages=[{"role": "user", "content": USER_PARTS}]
    )
    assert _sent(mock)["messages"] == [{"role": "user", "content": USER_PARTS}]


def test_chat_image_is_translated_for_responses_and_messages_upstreams(
    serve_app: Callable[[Any], str], app_factory: Callable[..., Any]
) -> None:
    expected = {
        "openai-responses": (
            "input",
            {
                "type": "message",
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "what is in this picture?"},
                    {"type": "input_image", "image_url": DATA_URL, "detail": "low"},
                ],
            },
        ),
        "anthropic": (
            "messages",
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "what is in this picture?"},
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": PNG},
                    },
                ],
            },
        ),
    }
    for provider, (key, message) in expected.items():
        mock, url = _fak(serve_app, app_factory, provider)
        client = closing(openai.OpenAI(base_url=url + "/v1", api_key="local"))
        client.chat.completions.create(
            model="gpt-x", messages=[{"role": "user", "content": USER_PARTS}]
        )
        assert _sent(mock)[key] == [message], provider


def test_responses_file_reaches_a_chat_upstream_as_a_file_part(
    serve_app: Callable[[Any], str], app_factory: Callable[..., Any]
) -> None:
    mock, url = _fak(serve_app, app_factory, "openai")
    client = closing(openai.OpenAI(base_url=url + "/v1", api_key="local"))
    client.responses.create(
        model="gpt-x",
        input=[
            {
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "summarise"},
                    {"type": "input_file", "file_id": "file-123"},
                ],
            }
        ],
    )
    assert _sent(mock)["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "summarise"},
                {"type": "file", "file": {"file_id": "file-123"}},
            ],
        }
    ]


def test_anthropic_image_reaches_a_chat_upstream_as_a_data_url(
    serve_app: Callable[[Any], str], app_factory: Callable[..., Any]
) -> None:
    mock, url = _fak(serve_app, app_factory, "openai")
    client = closing(anthropic.Anthropic(base_url=url, api_key="local"))
    client.messages.create(
        model="claude-x",
        max_tokens=64,
        messages=[
            {
                "role": "user",
                "content": [
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": PNG},
                    },
                    {"type": "text", "text": "describe"},
                ],
            }
        ],
    )
    assert _sent(mock)["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "image_url", "image_url": {"url": DATA_URL}},
                {"type": "text", "text": "describe"},
            ],
        }
    ]


def test_audio_with_no_equivalent_is_refused_naming_the_part(
    serve_app: Callable[[Any], str], app_factory: Callable[..., Any]
) -> None:
    mock, url = _fak(serve_app, app_factory, "anthropic")
    client = closing(openai.OpenAI(base_url=url + "/v1", api_key="local", max_retries=0))
    audio = {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(
            model="gpt-x",
            messages=[{"role": "user", "content": [{"type": "text", "text": "hi"}, audio]}],
        )
    error = caught.value.body
    assert isinstance(error, dict)
    assert error["code"] == "unsupported_content"
    assert error["param"] == "messages[0].content[1]"
    assert not mock.received


def test_tool_result_media_stays_held_out_with_a_note(
    serve_app: Callable[[Any], str], app_factory: Callable[..., Any]
) -> None:
    mock, url = _fak(serve_app, app_factory, "openai")
    client = closing(openai.OpenAI(base_url=url + "/v1", api_key="local"))
    call = {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
    client.chat.completions.create(
        model="gpt-x",
        messages=[
            {"role": "user", "content": "look"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {
                "role": "tool",
                "tool_call_id": "c1",
                "content": [
                    {"type": "text", "text": "a chart:"},
                    {"type": "image_url", "image_url": {"url": DATA_URL}},
                ],
            },
        ],
        tools=[TOOL],  # type: ignore[list-item]
    )
    sent = _sent(mock)
    assert sent["messages"][2] == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": "a chart:[fak] an image in this tool result was held out: fak cannot screen it",
    }
    assert PNG.encode() not in mock.bodies


def test_responses_tool_output_image_stays_held_out_with_a_note(
    serve_app: Callable[[Any], str], app_factory: Callable[..., Any]
) -> None:
    mock, url = _fak(serve_app, app_factory, "openai-responses")
    client = closing(openai.OpenAI(base_url=url + "/v1", api_key="local"))
    tools: Any = [{"type": "function", "name": "read_file", "parameters": {"type": "object"}}]
    client.responses.create(
        model="gpt-x",
        tools=tools,
        input=[
            {"role": "user", "content": "look"},
            {"type": "function_call", "call_id": "c1", "name": "read_file", "arguments": "{}"},
            {
                "type": "function_call_output",
                "call_id": "c1",
                "output": [{"type": "input_image", "image_url": DATA_URL}],
            },
        ],
    )
    sent = _sent(mock)
    assert sent["input"][2] == {
        "type": "function_call_output",
        "call_id": "c1",
        "output": "[fak] an image in this tool result was held out: fak cannot screen it",
    }
    assert PNG.encode() not in mock.bodies


def test_a_rebuilt_messages_request_keeps_the_users_image(
    serve_app: Callable[[Any], str], app_factory: Callable[..., Any]
) -> None:
    """A quarantined tool result makes fak rebuild the Messages request instead of passing the
    client's bytes through; the user's own image still reaches the upstream, the poison not."""
    mock, url = _fak(serve_app, app_factory, "anthropic")
    client = closing(anthropic.Anthropic(base_url=url, api_key="local"))
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
    client.messages.create(
        model="claude-x",
        max_tokens=64,
        tools=[{"name": "read_file", "input_schema": {"type": "object"}}],
        messages=[
            {"role": "user", "content": [image, {"type": "text", "text": "and read the file"}]},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "read_file", "input": {}}],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": POISON}],
            },
        ],
    )
    sent = _sent(mock)
    assert sent["messages"][0] == {
        "role": "user",
        "content": [image, {"type": "text", "text": "and read the file"}],
    }
    assert SECRET.encode() not in mock.bodies


# -- item 6: a partly refused turn tells the model on the OpenAI wires ----------------------
NOTE = (
    "[fak] refused 1 tool call(s): wipe_disk → DENY (DEFAULT_DENY/TERMINAL). Propose a "
    "different approach rather than repeating a refused call unchanged."
)


@pytest.mark.parametrize("stream", [False, True])
def test_chat_partly_refused_turn_carries_the_refusal_note(
    serve_app: Callable[[Any], str], app_factory: Callable[..., Any], stream: bool
) -> None:
    _, url = _fak(serve_app, app_factory, "openai")
    client = closing(openai.OpenAI(base_url=url + "/v1", api_key="local"))
    messages: Any = [{"role": "user", "content": "read and wipe"}]
    if not stream:
        r = client.chat.completions.create(model="gpt-x", messages=messages, tools=[TOOL])  # type: ignore[list-item]
        message = r.choices[0].message
        assert [c.function.name for c in message.tool_calls or ()] == ["read_file"]  # type: ignore[union-attr]
        assert message.content == NOTE
        return
    text, names = "", []
    with client.chat.completions.stream(model="gpt-x", messages=messages, tools=[TOOL]) as s:  # type: ignore[list-item]
        for _ in s:
            pass
        final = s.get_final_completion().choices[0].message
    text = final.content or ""
    names = [c.function.name for c in final.tool_calls or ()]
    assert names == ["read_file"]
    assert text == NOTE


@pytest.mark.parametrize("stream", [False, True])
def test_responses_partly_refused_turn_carries_the_refusal_note(
    serve_app: Callable[[Any], str], app_factory: Callable[..., Any], stream: bool
) -> None:
    _, url = _fak(serve_app, app_factory, "openai")
    client = closing(openai.OpenAI(base_url=url + "/v1", api_key="local"))
    tools: Any = [{"type": "function", "name": "read_file", "parameters": {"type": "object"}}]
    if stream:
        with client.responses.stream(model="gpt-x", input="read and wipe", tools=tools) as s:
            for _ in s:
                pass
            r = s.get_final_response()
    else:
        r = client.responses.create(model="gpt-x", input="read and wipe", tools=tools)
    assert [o.name for o in r.output if o.type == "function_call"] == ["read_file"]
    assert r.output_text == NOTE


def test_messages_401_uses_the_messages_error_envelope(
    serve_app: Callable[[Any], str], app_factory: Callable[..., Any]
) -> None:
    _, url = _fak(serve_app, app_factory, "anthropic", require_key="s3cret")
    body = {"model": "claude-x", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}
    r = httpx.post(url + "/v1/messages", json=body)
    assert r.status_code == 401
    assert r.json() == {
        "type": "error",
        "error": {
            "message": "missing or invalid credentials",
            "type": "authentication_error",
            "code": "unauthorized",
            "param": None,
        },
    }
    chat = httpx.post(url + "/v1/chat/completions", json={"messages": []})
    assert chat.status_code == 401
    assert set(chat.json()) == {"error"}
    client = closing(anthropic.Anthropic(base_url=url, api_key="wrong", max_retries=0))
    with pytest.raises(anthropic.AuthenticationError) as caught:
        client.messages.create(**body)
    assert caught.value.body == r.json()
