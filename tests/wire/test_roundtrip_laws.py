"""parse(render(x)) == x for every wire, in both directions, and for the synthesized streams."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from fak.abi import (
    FinishReason,
    Message,
    PlannerTurn,
    ProposedCall,
    Role,
    ToolSpec,
    TurnRequest,
    Usage,
)
from fak.wire import (
    ParsedRequest,
    SSEDecoder,
    SSEEvent,
    TurnOutcome,
    anthropic,
    encode_event,
    openai_chat,
)
from fak.wire import openai_responses as responses

text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=24)
nonempty_text = text.filter(bool)
names = st.from_regex(r"[a-z][a-z_]{0,10}", fullmatch=True)
json_scalars = st.none() | st.booleans() | st.integers(-(10**6), 10**6) | text
arg_objects = st.dictionaries(names, json_scalars | st.lists(json_scalars, max_size=3), max_size=4)
arguments = arg_objects.map(lambda d: orjson.dumps(d).decode())
tools = st.lists(
    st.builds(
        ToolSpec,
        name=names,
        description=text,
        parameters=st.just({"type": "object", "properties": {"path": {"type": "string"}}}),
    ),
    max_size=3,
)


@st.composite
def conversations(draw: st.DrawFn, *, system: bool = True) -> tuple[Message, ...]:
    out: list[Message] = []
    if system and draw(st.booleans()):
        out.append(Message(Role.SYSTEM, draw(nonempty_text)))
    counter = 0
    for _ in range(draw(st.integers(1, 4))):
        out.append(Message(Role.USER, draw(text)))
        n_calls = draw(st.integers(0, 2))
        calls = []
        for _ in range(n_calls):
            counter += 1
            calls.append(ProposedCall(f"call_{counter}", draw(names), draw(arguments)))
        out.append(Message(Role.ASSISTANT, draw(text), tool_calls=tuple(calls)))
        out.extend(Message(Role.TOOL, draw(text), tool_call_id=c.id, name=c.name) for c in calls)
    return tuple(out)


def _options(draw: st.DrawFn, keys: tuple[str, ...]) -> dict[str, Any]:
    opts: dict[str, Any] = {}
    if "top_p" in keys and draw(st.booleans()):
        opts["top_p"] = draw(st.floats(0.0, 1.0))
    if "stop" in keys and draw(st.booleans()):
        opts["stop"] = tuple(draw(st.lists(nonempty_text, min_size=1, max_size=3)))
    if "tool_choice" in keys and draw(st.booleans()):
        opts["tool_choice"] = draw(
            st.sampled_from(["auto", "none", "required"]) | names.map(lambda n: "tool:" + n)
        )
    if "seed" in keys and draw(st.booleans()):
        opts["seed"] = draw(st.integers(-(2**31), 2**31))
    if "parallel_tool_calls" in keys and draw(st.booleans()):
        opts["parallel_tool_calls"] = draw(st.booleans())
    return opts


@st.composite
def chat_requests(draw: st.DrawFn) -> ParsedRequest:
    stream = draw(st.booleans())
    turn = TurnRequest(
        model=draw(names),
        messages=draw(conversations()),
        tools=tuple(draw(tools)),
        max_tokens=draw(st.none() | st.integers(0, 10**5)),
        temperature=draw(st.none() | st.floats(0.0, 2.0)),
        stream=stream,
        session=draw(st.just("") | names),
    )
    opts = _options(draw, ("top_p", "stop", "tool_choice", "seed", "parallel_tool_calls"))
    if stream:
        opts["include_usage"] = True
    return ParsedRequest(turn, opts)


@st.composite
def anthropic_requests(draw: st.DrawFn) -> ParsedRequest:
    turn = TurnRequest(
        model=draw(names),
        messages=draw(conversations()),
        tools=tuple(draw(tools)),
        max_tokens=draw(st.integers(1, 10**5)),
        temperature=draw(st.none() | st.floats(0.0, 1.0)),
        stream=draw(st.booleans()),
        session=draw(st.just("") | names),
    )
    return ParsedRequest(turn, _options(draw, ("top_p", "stop", "tool_choice")))


@st.composite
def responses_requests(draw: st.DrawFn) -> ParsedRequest:
    turn = TurnRequest(
        model=draw(names),
        messages=draw(conversations()),
        tools=tuple(draw(tools)),
        max_tokens=draw(st.none() | st.integers(0, 10**5)),
        temperature=draw(st.none() | st.floats(0.0, 2.0)),
        stream=draw(st.booleans()),
        session=draw(st.just("") | names),
    )
    return ParsedRequest(turn, _options(draw, ("top_p", "tool_choice", "parallel_tool_calls")))


@st.composite
def outcomes(draw: st.DrawFn) -> TurnOutcome:
    calls = tuple(
        ProposedCall(f"call_{i}", draw(names), draw(arguments))
        for i in range(draw(st.integers(0, 3)))
    )
    finish = (
        FinishReason.TOOL_CALLS
        if calls
        else draw(st.sampled_from([FinishReason.STOP, FinishReason.LENGTH]))
    )
    return TurnOutcome(
        id="fak_" + draw(names),
        model=draw(names),
        created=draw(st.integers(0, 2**31)),
        text=draw(text),
        tool_calls=calls,
        finish_reason=finish,
        usage=Usage(draw(st.integers(0, 10**6)), draw(st.integers(0, 10**6))),
    )


settings.register_profile("wire", max_examples=100, deadline=None)
settings.load_profile("wire")


def _planner_turn(o: TurnOutcome) -> PlannerTurn:
    return PlannerTurn(o.text, o.tool_calls, o.finish_reason, o.usage, o.model)


def _through_json(body: dict[str, Any]) -> Any:
    return orjson.loads(orjson.dumps(body))


_WIRE_KEYS = ("wire", "extra", "raw_tools")


def _neutral(p: ParsedRequest) -> ParsedRequest:
    """``p`` without what a parser keeps for its own wire (the wire's name, the fields it
    carries unchanged, the client's tool objects): the law is about the canonical form."""
    return ParsedRequest(p.turn, {k: v for k, v in p.options.items() if k not in _WIRE_KEYS})


@given(chat_requests())
def test_chat_request_roundtrip(p: Any) -> None:
    body = _through_json(openai_chat.render_request(p, stream=p.turn.stream))
    assert _neutral(openai_chat.parse_request(body)) == p


@given(anthropic_requests())
def test_anthropic_request_roundtrip(p: Any) -> None:
    body = _through_json(anthropic.render_request(p, stream=p.turn.stream))
    assert _neutral(anthropic.parse_request(body)) == p


@given(responses_requests())
def test_responses_request_roundtrip(p: Any) -> None:
    body = _through_json(responses.render_request(p))
    assert _neutral(responses.parse_request(body)) == p


@given(outcomes())
def test_chat_response_roundtrip(o: TurnOutcome) -> None:
    body = _through_json(openai_chat.render_response(o))
    assert openai_chat.parse_response(body) == _planner_turn(o)


@given(outcomes())
def test_anthropic_response_roundtrip(o: TurnOutcome) -> None:
    body = _through_json(anthropic.render_response(o))
    assert anthropic.parse_response(body) == _planner_turn(o)


@given(outcomes())
def test_responses_response_roundtrip(o: TurnOutcome) -> None:
    body = _through_json(responses.render_response(o))
    assert responses.parse_response(body) == _planner_turn(o)


def _decode(frames: list[bytes], cut: int) -> list[SSEEvent]:
    blob = b"".join(frames)
    dec = SSEDecoder()
    events: list[SSEEvent] = []
    step = max(cut, 1)
    for i in range(0, len(blob), step):
        events.extend(dec.feed(blob[i : i + step]))
    events.extend(dec.close())
    return events


@given(outcomes(), st.integers(1, 97))
def test_chat_stream_reassembles_to_the_non_streamed_turn(o: TurnOutcome, cut: int) -> None:
    chunks = openai_chat.ChatChunks(o.id, o.created, o.model)
    frames = [chunks.role()]
    frames += [chunks.text(piece) for piece in _pieces(o.text)]
    if o.tool_calls:
        frames.append(chunks.tool_calls(o.tool_calls))
    frames += [chunks.final(o), chunks.done()]
    acc = openai_chat.ChatStreamAccumulator()
    streamed = ""
    for ev in _decode(frames, cut):
        if ev.data == "[DONE]":
            break
        streamed += acc.feed(orjson.loads(ev.data))
    assert streamed == o.text
    assert acc.finish() == openai_chat.parse_response(openai_chat.render_response(o))


def _pieces(s: str) -> list[str]:
    from fak.wire import split_after_spaces

    return split_after_spaces(s)


@given(outcomes(), st.integers(1, 97))
def test_anthropic_stream_reassembles_to_the_non_streamed_turn(o: TurnOutcome, cut: int) -> None:
    ev = anthropic.MessageEvents(o.id, o.model)
    frames = [ev.start(o.usage.prompt_tokens), ev.ping(), *ev.body(o)]
    acc = anthropic.MessagesStreamAccumulator()
    names = []
    for e in _decode(frames, cut):
        names.append(e.event)
        acc.feed(e.event, orjson.loads(e.data))
    turn, extra = acc.finish()
    assert turn == anthropic.parse_response(anthropic.render_response(o))
    assert extra == {}
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]


@given(outcomes(), st.lists(text, max_size=4))
def test_responses_stream_events_agree_with_the_response(o: TurnOutcome, deltas: list[str]) -> None:
    live = "".join(deltas)
    o2 = TurnOutcome(o.id, o.model, o.created, live, o.tool_calls, o.finish_reason, o.usage)
    ev = responses.ResponseEvents(o2.id, o2.model, o2.created)
    frames = ev.start()
    for d in deltas:
        if d:
            frames += ev.text_delta(d)
    frames += ev.finish(o2)
    events = [orjson.loads(e.data) for e in _decode(frames, 50)]
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta") == live
    assert events[-1]["response"] == orjson.loads(orjson.dumps(responses.render_response(o2)))


@given(
    st.lists(
        st.tuples(
            st.just("") | st.from_regex(r"[a-z_.]{1,12}", fullmatch=True),
            text.filter(lambda s: "\n" not in s and "\r" not in s),
        ),
        max_size=6,
    ),
    st.integers(1, 13),
)
def test_sse_decode_inverts_encode(pairs: list[tuple[str, str]], cut: int) -> None:
    frames = [encode_event(d.encode(), e or None) for e, d in pairs]
    assert _decode(frames, cut) == [SSEEvent(e, d) for e, d in pairs]
