"""Issue 23 E5: OpenAI-wire image and file parts are never dropped with a 200.

The second hostile run found a user's image and file parts on the OpenAI wires dropped while the
request still answered 200. What docs/gateway.md promises now, through the official ``openai``
SDK over a loopback socket in front of the recording upstream: a user's image and file parts
reach an upstream of the same wire byte for byte (Chat and Responses); a file part with no
equivalent on the upstream's wire is a 400 ``unsupported_content`` naming the part, and nothing
is sent; an image or file inside a tool result is held out with a ``[fak]`` note in its place
(its bytes never reach the upstream); media in an assistant turn is a 400, not a silent drop.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import openai
import pytest

from fak.gateway.upstream.client import HttpxUpstream
from fak.gateway.upstream.planner import ProxyPlanner
from fak.kernel import Kernel
from fak.policy import Policy
from fak.testing.upstream import MockUpstream

from .conftest import closing

pytestmark = pytest.mark.gateway

PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGBgAAAABQABpfZFQAAAAABJRU5E"
    "rkJggg=="
)
DATA_URL = "data:image/png;base64," + PNG
PDF = (
    "JVBERi0xLjQKJcfsj6IKMSAwIG9iago8PC9UeXBlL0NhdGFsb2c+PgplbmRvYmoK"
    "dHJhaWxlcgo8PC9Sb290IDEgMCBSPj4K"
)
PDF_URL = "data:application/pdf;base64," + PDF


def _fak(
    serve_app: Callable[[Any], str], app_factory: Callable[..., Any], provider: str
) -> tuple[MockUpstream, openai.OpenAI]:
    mock = MockUpstream()
    up = serve_app(mock.app)
    planner = ProxyPlanner(HttpxUpstream(), base_url=up + "/v1", provider=provider, api_key="k")
    kernel = Kernel(Policy.loads(json.dumps({"allow": ["read_file"]})))
    url = serve_app(app_factory(planner, kernel))
    return mock, closing(openai.OpenAI(base_url=url + "/v1", api_key="local", max_retries=0))


def _sent(mock: MockUpstream) -> dict[str, Any]:
    assert len(mock.received) == 1
    body: dict[str, Any] = json.loads(mock.received[-1].body)
    return body


def test_E5_chat_image_and_file_parts_reach_a_chat_upstream_unchanged(
    serve_app: Callable[[Any], str], app_factory: Callable[..., Any]
) -> None:
    mock, client = _fak(serve_app, app_factory, "openai")
    parts: Any = [
        {"type": "text", "text": "compare the picture with the report"},
        {"type": "image_url", "image_url": {"url": DATA_URL, "detail": "high"}},
        {"type": "file", "file": {"file_data": PDF_URL, "filename": "report.pdf"}},
        {"type": "file", "file": {"file_id": "file-abc123"}},
    ]
    reply = client.chat.completions.create(
        model="gpt-x", messages=[{"role": "user", "content": parts}]
    )
    assert reply.choices[0].finish_reason == "stop"
    assert _sent(mock)["messages"] == [{"role": "user", "content": parts}]


def test_E5_responses_image_and_file_parts_reach_a_responses_upstream_unchanged(
    serve_app: Callable[[Any], str], app_factory: Callable[..., Any]
) -> None:
    mock, client = _fak(serve_app, app_factory, "openai-responses")
    parts: Any = [
        {"type": "input_text", "text": "compare the picture with the report"},
        {"type": "input_image", "image_url": DATA_URL, "detail": "low"},
        {"type": "input_file", "file_data": PDF_URL, "filename": "report.pdf"},
        {"type": "input_file", "file_id": "file-abc123"},
    ]
    reply = client.responses.create(model="gpt-x", input=[{"role": "user", "content": parts}])
    assert reply.status == "completed"
    sent = _sent(mock)["input"]
    assert [item["content"] for item in sent] == [parts]


def test_E5_a_file_part_with_no_equivalent_upstream_is_a_400_naming_it(
    serve_app: Callable[[Any], str], app_factory: Callable[..., Any]
) -> None:
    mock, client = _fak(serve_app, app_factory, "anthropic")
    parts: Any = [
        {"type": "text", "text": "read the report"},
        {"type": "file", "file": {"file_id": "file-abc123"}},
    ]
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="gpt-x", messages=[{"role": "user", "content": parts}])
    error = caught.value.body
    assert isinstance(error, dict)
    assert (error["code"], error["param"]) == ("unsupported_content", "messages[0].content[1]")
    assert not mock.received


def test_E5_a_file_in_a_chat_tool_result_is_held_out_with_a_note(
    serve_app: Callable[[Any], str], app_factory: Callable[..., Any]
) -> None:
    mock, client = _fak(serve_app, app_factory, "openai")
    call = {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
    tool: Any = {"type": "function", "function": {"name": "read_file", "parameters": {}}}
    messages: Any = [
        {"role": "user", "content": "read it"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {
            "role": "tool",
            "tool_call_id": "c1",
            "content": [
                {"type": "text", "text": "the report: "},
                {"type": "file", "file": {"file_data": PDF_URL, "filename": "r.pdf"}},
            ],
        },
    ]
    client.chat.completions.create(model="gpt-x", messages=messages, tools=[tool])
    assert _sent(mock)["messages"][2] == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": "the report: [fak] a file in this tool result was held out: "
        "fak cannot screen it",
    }
    assert PDF.encode() not in mock.bodies


def test_E5_a_file_in_a_responses_tool_output_is_held_out_with_a_note(
    serve_app: Callable[[Any], str], app_factory: Callable[..., Any]
) -> None:
    mock, client = _fak(serve_app, app_factory, "openai-responses")
    tools: Any = [{"type": "function", "name": "read_file", "parameters": {"type": "object"}}]
    output = [{"type": "input_file", "file_data": PDF_URL, "filename": "r.pdf"}]
    client.responses.create(
        model="gpt-x",
        tools=tools,
        input=[
            {"role": "user", "content": "read it"},
            {"type": "function_call", "call_id": "c1", "name": "read_file", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": output},  # type: ignore[typeddict-item]
        ],
    )
    assert _sent(mock)["input"][2] == {
        "type": "function_call_output",
        "call_id": "c1",
        "output": "[fak] a file in this tool result was held out: fak cannot screen it",
    }
    assert PDF.encode() not in mock.bodies


def test_E5_an_image_in_an_assistant_turn_is_a_400_not_a_silent_drop(
    serve_app: Callable[[Any], str], app_factory: Callable[..., Any]
) -> None:
    mock, client = _fak(serve_app, app_factory, "openai")
    image = {"type": "image_url", "image_url": {"url": DATA_URL}}
    messages: Any = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [image]},
        {"role": "user", "content": "again"},
    ]
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="gpt-x", messages=messages)
    error = caught.value.body
    assert isinstance(error, dict)
    assert (error["code"], error["param"]) == ("unsupported_content", "messages[1].content[0].type")
    assert not mock.received
