"""Every request parameter of the official SDKs, classified and sent through fak (issue 24).

The parameters are read from the installed SDKs' own type definitions: ``openai``'s
``CompletionCreateParams`` and ``ResponseCreateParams`` and ``anthropic``'s
``MessageCreateParams`` (streaming and non-streaming variants). Each is classified in ``TABLE``
and sent, with a valid value, through ``fak serve`` (one app per upstream wire, real loopback
sockets) to the recording upstream, once per upstream wire; the test asserts what the
classification states: forwarded (the same wire receives it unchanged), mapped or governed (it
arrives as the stated translation), or refused (a 400 whose ``param`` names it). A new SDK
release that adds a parameter fails ``test_every_sdk_parameter_is_classified`` until it is
classified here (and in docs/gateway.md).
"""

from __future__ import annotations

import json
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from fak.gateway.app import build_app
from fak.gateway.server import LoopbackServer
from fak.gateway.state import GatewayOptions
from fak.gateway.upstream.client import HttpxUpstream
from fak.gateway.upstream.planner import ProxyPlanner
from fak.testing.upstream import MockUpstream

from .conftest import make_kernel

pytestmark = pytest.mark.gateway

CHAT, RESP, MSG = "openai", "openai-responses", "anthropic"
WIRES = (CHAT, RESP, MSG)
ROUTE = {CHAT: "/v1/chat/completions", RESP: "/v1/responses", MSG: "/v1/messages"}
UPSTREAM_PATH = ROUTE

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}
BASE: dict[str, dict[str, Any]] = {
    CHAT: {
        "model": "gpt-x",
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [
            {
                "type": "function",
                "function": {"name": "read_file", "parameters": {"type": "object"}},
            }
        ],
    },
    RESP: {
        "model": "gpt-x",
        "input": [{"role": "user", "content": "hi"}],
        "tools": [{"type": "function", "name": "read_file", "parameters": {"type": "object"}}],
    },
    MSG: {
        "model": "claude-x",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [{"name": "read_file", "input_schema": {"type": "object"}}],
    },
}


@dataclass(frozen=True)
class Arrives:
    """Mapped or governed: each dotted path of the upstream body holds this value."""

    paths: Mapping[str, Any]


@dataclass(frozen=True)
class Absent:
    """A stated translation to nothing (a default, or a governed field fak renders anew)."""

    paths: tuple[str, ...]


FORWARD = "forwarded unchanged"
REFUSED = "refused with a 400 naming it"
Expect = Arrives | Absent | str

# field → (value, class, {upstream wire: what it becomes}); value None: the base request's own.
Row = tuple[Any, str, Mapping[str, Expect]]
_NO = {CHAT: REFUSED, RESP: REFUSED, MSG: REFUSED}


def _fwd(source: str, **cross: Expect) -> dict[str, Expect]:
    """Forwarded on the same wire; across wires as given (refused when not given)."""
    out: dict[str, Expect] = {w: REFUSED for w in WIRES}
    out[source] = FORWARD
    for key, value in cross.items():
        out[{"chat": CHAT, "resp": RESP, "msg": MSG}[key]] = value
    return out


def _same(source: str, field: str, value: Any, *targets: str) -> dict[str, Expect]:
    """Forwarded on the same wire, under the same name on each of ``targets``."""
    return _fwd(source, **{t: Arrives({field: value}) for t in targets})


def _hint(source: str, field: str, value: Any, other: str) -> dict[str, Expect]:
    """A caching hint: same name on the other OpenAI wire, nothing on Messages (which caches
    by cache_control marks; the hint never changes the answer)."""
    return {**_same(source, field, value, other), MSG: Absent((field,))}


CHAT_FORMAT = {
    "type": "json_schema",
    "json_schema": {"name": "city", "schema": SCHEMA, "strict": True},
}
RESP_FORMAT = {"type": "json_schema", "name": "city", "schema": SCHEMA, "strict": True}
MSG_FORMAT = {"type": "json_schema", "schema": SCHEMA}
SYSTEM_AS = {
    CHAT: Arrives({"messages.0": {"role": "system", "content": "Be brief."}}),
    RESP: Arrives({"input.0": {"type": "message", "role": "system", "content": "Be brief."}}),
    MSG: Arrives({"system": "Be brief."}),
}
HI_AS = {
    CHAT: Arrives({"messages.0": {"role": "user", "content": "hi"}}),
    RESP: Arrives({"input.0": {"type": "message", "role": "user", "content": "hi"}}),
    MSG: Arrives({"messages.0": {"role": "user", "content": "hi"}}),
}
TOOLS_AS = {
    CHAT: Arrives({"tools.0.function.name": "read_file"}),
    RESP: Arrives({"tools.0.name": "read_file"}),
    MSG: Arrives({"tools.0.name": "read_file"}),
}
REQUIRED_AS = {
    CHAT: Arrives({"tool_choice": "required"}),
    RESP: Arrives({"tool_choice": "required"}),
    MSG: Arrives({"tool_choice": {"type": "any"}}),
}
NOT_STREAMED = {
    CHAT: Absent(("stream",)),
    RESP: Arrives({"stream": False}),
    MSG: Absent(("stream",)),
}
GONE = {w: Absent(("stream_options",)) for w in WIRES}
MAX_77 = {
    "chat": Arrives({"max_completion_tokens": 77}),
    "resp": Arrives({"max_output_tokens": 77}),
    "msg": Arrives({"max_tokens": 77}),
}
NO_PARALLEL = {
    "chat": Arrives({"parallel_tool_calls": False}),
    "resp": Arrives({"parallel_tool_calls": False}),
    "msg": Arrives({"tool_choice": {"type": "auto", "disable_parallel_tool_use": True}}),
}

TABLE: dict[str, dict[str, Row]] = {
    CHAT: {
        "audio": ({"voice": "alloy", "format": "wav"}, "forwarded", _fwd(CHAT)),
        "frequency_penalty": (0.5, "forwarded", _fwd(CHAT)),
        "function_call": ("auto", "refused", _NO),
        "functions": ([{"name": "f", "parameters": {"type": "object"}}], "refused", _NO),
        "logit_bias": ({"50256": -100}, "forwarded", _fwd(CHAT)),
        "logprobs": (
            True,
            "mapped",
            _fwd(CHAT, resp=Arrives({"include": ["message.output_text.logprobs"]})),
        ),
        "max_completion_tokens": (77, "mapped", _fwd(CHAT, resp=MAX_77["resp"], msg=MAX_77["msg"])),
        "max_tokens": (77, "mapped", _fwd(CHAT, resp=MAX_77["resp"], msg=MAX_77["msg"])),
        "messages": (None, "governed", HI_AS),
        "metadata": ({"k": "v"}, "mapped", _same(CHAT, "metadata", {"k": "v"}, "resp")),
        "modalities": (
            ["text"],
            "mapped",
            _fwd(CHAT, resp=Absent(("modalities",)), msg=Absent(("modalities",))),
        ),
        "model": ("gpt-x", "governed", {w: Arrives({"model": "gpt-x"}) for w in WIRES}),
        "moderation": (
            {"model": "omni-moderation-latest"},
            "mapped",
            _same(CHAT, "moderation", {"model": "omni-moderation-latest"}, "resp"),
        ),
        "n": (2, "refused", _NO),
        "parallel_tool_calls": (
            False,
            "mapped",
            _fwd(CHAT, resp=NO_PARALLEL["resp"], msg=NO_PARALLEL["msg"]),
        ),
        "prediction": ({"type": "content", "content": "x"}, "forwarded", _fwd(CHAT)),
        "presence_penalty": (0.5, "forwarded", _fwd(CHAT)),
        "prompt_cache_key": ("k1", "mapped", _hint(CHAT, "prompt_cache_key", "k1", "resp")),
        "prompt_cache_options": (
            {"mode": "implicit"},
            "mapped",
            _hint(CHAT, "prompt_cache_options", {"mode": "implicit"}, "resp"),
        ),
        "prompt_cache_retention": (
            "24h",
            "mapped",
            _hint(CHAT, "prompt_cache_retention", "24h", "resp"),
        ),
        "reasoning_effort": (
            "low",
            "mapped",
            _fwd(
                CHAT,
                resp=Arrives({"reasoning.effort": "low"}),
                msg=Arrives({"output_config.effort": "low"}),
            ),
        ),
        "response_format": (
            CHAT_FORMAT,
            "mapped",
            _fwd(
                CHAT,
                resp=Arrives({"text.format": RESP_FORMAT}),
                msg=Arrives({"output_config.format": MSG_FORMAT}),
            ),
        ),
        "safety_identifier": ("u1", "mapped", _same(CHAT, "safety_identifier", "u1", "resp")),
        "seed": (7, "forwarded", _fwd(CHAT)),
        "service_tier": ("flex", "mapped", _same(CHAT, "service_tier", "flex", "resp")),
        "stop": (["END"], "mapped", _fwd(CHAT, msg=Arrives({"stop_sequences": ["END"]}))),
        "store": (True, "mapped", _same(CHAT, "store", True, "resp")),
        "stream": (False, "governed", NOT_STREAMED),
        "stream_options": ({"include_usage": True}, "governed", GONE),
        "temperature": (0.5, "mapped", _same(CHAT, "temperature", 0.5, "resp", "msg")),
        "tool_choice": ("required", "governed", REQUIRED_AS),
        "tools": (None, "governed", TOOLS_AS),
        "top_logprobs": (2, "mapped", _same(CHAT, "top_logprobs", 2, "resp")),
        "top_p": (0.5, "mapped", _same(CHAT, "top_p", 0.5, "resp", "msg")),
        "user": (
            "u1",
            "mapped",
            _fwd(CHAT, resp=Arrives({"user": "u1"}), msg=Arrives({"metadata.user_id": "u1"})),
        ),
        "verbosity": ("low", "mapped", _fwd(CHAT, resp=Arrives({"text.verbosity": "low"}))),
        "web_search_options": ({}, "refused", _NO),
    },
    RESP: {
        "access_programs": ({"cyber": "standard"}, "forwarded", _fwd(RESP)),
        "background": (True, "refused", _NO),
        "background_options": ({"completion_window": "2h"}, "forwarded", _fwd(RESP)),
        "context_management": (
            [{"type": "compaction", "compact_threshold": 1000}],
            "forwarded",
            _fwd(RESP),
        ),
        "conversation": ("conv_1", "refused", _NO),
        "image": ({"context_compression": "auto"}, "forwarded", _fwd(RESP)),
        "include": (
            ["reasoning.encrypted_content"],
            "mapped",
            _fwd(RESP, chat=Absent(("include",)), msg=Absent(("include",))),
        ),
        "input": (None, "governed", HI_AS),
        "instructions": ("Be brief.", "governed", SYSTEM_AS),
        "max_output_tokens": (77, "mapped", _fwd(RESP, chat=MAX_77["chat"], msg=MAX_77["msg"])),
        "max_tool_calls": (3, "forwarded", _fwd(RESP)),
        "metadata": ({"k": "v"}, "mapped", _same(RESP, "metadata", {"k": "v"}, "chat")),
        "model": ("gpt-x", "governed", {w: Arrives({"model": "gpt-x"}) for w in WIRES}),
        "moderation": (
            {"model": "omni-moderation-latest"},
            "mapped",
            _same(RESP, "moderation", {"model": "omni-moderation-latest"}, "chat"),
        ),
        "parallel_tool_calls": (
            False,
            "mapped",
            _fwd(RESP, chat=NO_PARALLEL["chat"], msg=NO_PARALLEL["msg"]),
        ),
        "previous_response_id": ("resp_1", "refused", _NO),
        "prompt": ({"id": "pmpt_1"}, "refused", _NO),
        "prompt_cache_key": ("k1", "mapped", _hint(RESP, "prompt_cache_key", "k1", "chat")),
        "prompt_cache_options": (
            {"mode": "implicit"},
            "mapped",
            _hint(RESP, "prompt_cache_options", {"mode": "implicit"}, "chat"),
        ),
        "prompt_cache_retention": (
            "24h",
            "mapped",
            _hint(RESP, "prompt_cache_retention", "24h", "chat"),
        ),
        "reasoning": (
            {"effort": "low"},
            "mapped",
            _fwd(
                RESP,
                chat=Arrives({"reasoning_effort": "low"}),
                msg=Arrives({"output_config.effort": "low"}),
            ),
        ),
        "safety_identifier": ("u1", "mapped", _same(RESP, "safety_identifier", "u1", "chat")),
        "service_tier": ("flex", "mapped", _same(RESP, "service_tier", "flex", "chat")),
        "store": (
            False,
            "mapped",
            {**_same(RESP, "store", False, "chat"), MSG: Absent(("store",))},  # never stored
        ),
        "stream": (False, "governed", NOT_STREAMED),
        "stream_options": ({"include_obfuscation": False}, "governed", GONE),
        "temperature": (0.5, "mapped", _same(RESP, "temperature", 0.5, "chat", "msg")),
        "text": (
            {"format": RESP_FORMAT},
            "mapped",
            _fwd(
                RESP,
                chat=Arrives({"response_format": CHAT_FORMAT}),
                msg=Arrives({"output_config.format": MSG_FORMAT}),
            ),
        ),
        "tool_choice": ("required", "governed", REQUIRED_AS),
        "tools": (None, "governed", TOOLS_AS),
        "top_logprobs": (
            2,
            "mapped",
            _fwd(RESP, chat=Arrives({"top_logprobs": 2, "logprobs": True})),
        ),
        "top_p": (0.5, "mapped", _same(RESP, "top_p", 0.5, "chat", "msg")),
        "truncation": (
            "disabled",
            "mapped",
            _fwd(RESP, chat=Absent(("truncation",)), msg=Absent(("truncation",))),
        ),
        "user": (
            "u1",
            "mapped",
            _fwd(RESP, chat=Arrives({"user": "u1"}), msg=Arrives({"metadata.user_id": "u1"})),
        ),
    },
    MSG: {
        "cache_control": ({"type": "ephemeral"}, "forwarded", _fwd(MSG)),
        "container": ("container_1", "governed", {w: Absent(("container",)) for w in WIRES}),
        "diagnostics": ({"previous_message_id": "msg_1"}, "forwarded", _fwd(MSG)),
        "inference_geo": ("us", "forwarded", _fwd(MSG)),
        "max_tokens": (77, "mapped", _fwd(MSG, chat=MAX_77["chat"], resp=MAX_77["resp"])),
        "messages": (None, "governed", HI_AS),
        "metadata": (
            {"user_id": "u1"},
            "mapped",
            _fwd(MSG, chat=Arrives({"user": "u1"}), resp=Arrives({"user": "u1"})),
        ),
        "model": ("claude-x", "governed", {w: Arrives({"model": "claude-x"}) for w in WIRES}),
        "output_config": (
            {"format": MSG_FORMAT, "effort": "low"},
            "mapped",
            _fwd(
                MSG,
                chat=Arrives(
                    {
                        "response_format": {
                            "type": "json_schema",
                            "json_schema": {"name": "output", "schema": SCHEMA, "strict": True},
                        },
                        "reasoning_effort": "low",
                    }
                ),
                resp=Arrives(
                    {
                        "text.format": {
                            "type": "json_schema",
                            "name": "output",
                            "schema": SCHEMA,
                            "strict": True,
                        },
                        "reasoning.effort": "low",
                    }
                ),
            ),
        ),
        "service_tier": ("auto", "forwarded", _fwd(MSG)),
        "speed": ("fast", "forwarded", _fwd(MSG)),
        "stop_sequences": (["END"], "mapped", _fwd(MSG, chat=Arrives({"stop": ["END"]}))),
        "stream": (
            False,
            "governed",
            {
                CHAT: Absent(("stream",)),
                RESP: Arrives({"stream": False}),
                MSG: Arrives({"stream": False}),  # the client's own bytes
            },
        ),
        "system": ("Be brief.", "governed", SYSTEM_AS),
        "thinking": ({"type": "enabled", "budget_tokens": 1024}, "forwarded", _fwd(MSG)),
        "tool_choice": ({"type": "any"}, "governed", REQUIRED_AS),
        "tools": (None, "governed", TOOLS_AS),
        "user_profile_id": ("up_1", "forwarded", _fwd(MSG)),
        "workspace_id": ("ws_1", "forwarded", _fwd(MSG)),
    },
}


def _sdk_parameters() -> dict[str, set[str]]:
    from anthropic.types import message_create_params as m
    from openai.types.chat import completion_create_params as c
    from openai.types.responses import response_create_params as r

    out: dict[str, set[str]] = {}
    for wire, mod, stem in (
        (CHAT, c, "CompletionCreateParams"),
        (RESP, r, "ResponseCreateParams"),
        (MSG, m, "MessageCreateParams"),
    ):
        names: set[str] = set()
        for variant in ("Streaming", "NonStreaming"):
            names |= set(typing.get_type_hints(getattr(mod, stem + variant)))
        out[wire] = names
    return out


def test_every_sdk_parameter_is_classified() -> None:
    for wire, names in _sdk_parameters().items():
        missing = sorted(names - TABLE[wire].keys())
        assert not missing, f"classify these {wire} parameters in TABLE and docs/gateway.md"
        for field, (_, kind, expect) in TABLE[wire].items():
            assert kind in ("forwarded", "mapped", "governed", "refused"), field
            assert set(expect) == set(WIRES), field


@pytest.fixture(scope="module")
def gateways() -> Iterator[tuple[MockUpstream, dict[str, str]]]:
    mock = MockUpstream()
    servers = [LoopbackServer(mock.app)]
    up = servers[0].start()
    urls: dict[str, str] = {}
    for wire in WIRES:
        planner = ProxyPlanner(HttpxUpstream(), base_url=up + "/v1", provider=wire, api_key="k")
        server = LoopbackServer(build_app(make_kernel(), planner, GatewayOptions()))
        servers.append(server)
        urls[wire] = server.start()
    yield mock, urls
    for server in reversed(servers):
        server.stop()


def _at(body: Any, path: str) -> Any:
    for key in path.split("."):
        if isinstance(body, list):
            body = body[int(key)]
        elif isinstance(body, Mapping) and key in body:
            body = body[key]
        else:
            return _MISSING
    return body


_MISSING = object()
CASES = [
    (source, field, target)
    for source in WIRES
    for field in sorted(TABLE[source])
    for target in WIRES
]


@pytest.mark.parametrize(("source", "field", "target"), CASES)
def test_parameter_reaches_the_upstream_as_classified(
    gateways: tuple[MockUpstream, dict[str, str]], source: str, field: str, target: str
) -> None:
    mock, urls = gateways
    value, _, expects = TABLE[source][field]
    expect = expects[target]
    request = dict(BASE[source])
    if value is not None:
        request[field] = value
    before = len(mock.received)
    reply = httpx.post(urls[target] + ROUTE[source], json=request, timeout=10)
    if expect == REFUSED:
        assert reply.status_code == 400, reply.text
        error = reply.json()["error"]
        assert error["param"] is not None and error["param"].split(" ")[0] == field
        assert error["code"] == "unsupported_parameter"
        assert len(mock.received) == before  # nothing went upstream
        return
    assert reply.status_code == 200, reply.text
    got = mock.received[-1]
    assert got.path == UPSTREAM_PATH[target]
    sent = json.loads(got.body)
    if expect == FORWARD:
        assert sent[field] == value
    elif isinstance(expect, Arrives):
        for path, want in expect.paths.items():
            assert _at(sent, path) == want, (path, sent)
    else:
        assert isinstance(expect, Absent)
        for path in expect.paths:
            assert _at(sent, path) is _MISSING, (path, sent)
