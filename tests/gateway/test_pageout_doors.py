"""Page-out by size only for clients that can page back in (issue 24, item 3).

An 8 KiB harmless file read by a framework that cannot follow a ``{"_paged":true}`` pointer must
reach the model whole through ``fak serve``: the OpenAI Agents SDK (the real package, Chat and
Responses models), a LangGraph ReAct agent (the real package: its ``ToolNode`` runs the tool) and
langchain-openai's ``ChatOpenAI`` sending the ``ToolMessage`` such a node produces.
A client that says it can page back in (``x-fak-pageout: on``, ``--pageout``, the fak-native
``/v1/fak/admit``) still gets the pointer; quarantine does not depend on any of this.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import httpx
import openai
import pytest

from fak.gateway.upstream.client import HttpxUpstream
from fak.gateway.upstream.planner import ProxyPlanner
from fak.testing.upstream import MockUpstream

from .conftest import POISON

pytestmark = pytest.mark.gateway

_FUNC = (
    "def handle_{n}(request):\n"
    '    """Return the order {n} with its line items, or 404 when it does not exist."""\n'
    "    order = store.get(request.args.get('id', ''))\n"
    "    if order is None:\n"
    "        return Response(status=404)\n"
    "    return Response(json.dumps(order.to_dict()), status=200)\n\n"
)
HANDLERS = "import json\n\n" + "".join(_FUNC.format(n=n) for n in range(32)) + "# end 7f3a\n"
assert 8 * 1024 < len(HANDLERS) < 9 * 1024


def _fak(
    serve_app: Callable[[Any], str],
    app_factory: Callable[..., Any],
    provider: str = "openai",
    **options: Any,
) -> tuple[MockUpstream, str]:
    mock = MockUpstream()
    up = serve_app(mock.app)
    base = up + "/v1"
    planner = ProxyPlanner(HttpxUpstream(), base_url=base, provider=provider, model="m")
    return mock, serve_app(app_factory(planner, **options))


def _tool_results(mock: MockUpstream) -> list[str]:
    """The text of every tool result the upstream received, on either OpenAI wire."""
    out: list[str] = []
    for received in mock.received:
        body = json.loads(received.body)
        for m in body.get("messages", []):
            if m.get("role") == "tool":
                out.append(m["content"] if isinstance(m["content"], str) else json.dumps(m))
        for item in body.get("input", []) if isinstance(body.get("input"), list) else []:
            if item.get("type") == "function_call_output":
                out.append(item["output"])
    return out


@pytest.mark.parametrize("wire", ["chat", "responses"])
def test_agents_sdk_reads_an_8k_file_whole(
    wire: str, serve_app: Callable[[Any], str], app_factory: Callable[..., Any]
) -> None:
    agents = pytest.importorskip("agents")
    agents.set_tracing_disabled(True)
    mock, url = _fak(
        serve_app, app_factory, "openai-responses" if wire == "responses" else "openai"
    )

    @agents.function_tool
    def read_file(path: str) -> str:
        """Read a file of the project."""
        return HANDLERS

    client = openai.AsyncOpenAI(base_url=url + "/v1", api_key="sk-test", max_retries=0)
    if wire == "responses":
        model: Any = agents.OpenAIResponsesModel("gpt-x", openai_client=client)
    else:
        model = agents.OpenAIChatCompletionsModel("gpt-x", openai_client=client)
    agent = agents.Agent(name="coder", instructions="help", tools=[read_file], model=model)

    async def run() -> Any:
        try:
            return await agents.Runner.run(agent, 'call read_file {"path": "handlers.py"}')
        finally:
            await client.close()

    result = asyncio.run(run())
    assert result.final_output == "fak mock planner: received 1 tool result(s)."
    results = _tool_results(mock)
    assert len(results) == 1
    assert HANDLERS in results[0]  # whole, not a pointer
    assert b"_paged" not in mock.bodies


def test_langgraph_agent_reads_an_8k_file_whole(
    serve_app: Callable[[Any], str], app_factory: Callable[..., Any]
) -> None:
    prebuilt = pytest.importorskip("langgraph.prebuilt")
    graph = pytest.importorskip("langgraph.graph")
    lc_openai = pytest.importorskip("langchain_openai")
    lc_tools = pytest.importorskip("langchain_core.tools")
    mock, url = _fak(serve_app, app_factory)

    @lc_tools.tool
    def read_file(path: str) -> str:
        """Read a file of the project."""
        return HANDLERS

    http = httpx.Client()  # owned and closed below: no socket left for the GC to warn about
    chat = lc_openai.ChatOpenAI(
        model="gpt-x", base_url=url + "/v1", api_key="sk-test", max_retries=0, http_client=http
    ).bind_tools([read_file])

    def model(state: Any) -> dict[str, Any]:
        return {"messages": [chat.invoke(state["messages"])]}

    # the ReAct loop as LangGraph's docs build it: a model node, a ToolNode, tools_condition
    builder = graph.StateGraph(graph.MessagesState)
    builder.add_node("model", model)
    builder.add_node("tools", prebuilt.ToolNode([read_file]))
    builder.add_edge(graph.START, "model")
    builder.add_conditional_edges("model", prebuilt.tools_condition)
    builder.add_edge("tools", "model")
    agent = builder.compile()
    with http:
        out = agent.invoke({"messages": [("user", 'call read_file {"path": "handlers.py"}')]})
    assert out["messages"][-1].content == "fak mock planner: received 1 tool result(s)."
    assert _tool_results(mock) == [HANDLERS]  # whole, not a pointer
    assert b"_paged" not in mock.bodies


def test_langchain_tool_message_of_8k_reaches_the_model_whole(
    serve_app: Callable[[Any], str], app_factory: Callable[..., Any]
) -> None:
    messages_mod = pytest.importorskip("langchain_core.messages")
    lc_openai = pytest.importorskip("langchain_openai")
    mock, url = _fak(serve_app, app_factory)
    http = httpx.Client()
    chat = lc_openai.ChatOpenAI(
        model="gpt-x", base_url=url + "/v1", api_key="sk-test", max_retries=0, http_client=http
    )
    call = {"name": "read_file", "args": {"path": "handlers.py"}, "id": "call_1"}
    with http:
        reply = chat.invoke(
            [
                messages_mod.HumanMessage("read handlers.py"),
                messages_mod.AIMessage("", tool_calls=[call]),
                messages_mod.ToolMessage(HANDLERS, tool_call_id="call_1", name="read_file"),
            ]
        )
    assert reply.content == "fak mock planner: received 1 tool result(s)."
    assert _tool_results(mock) == [HANDLERS]


def _chat_with_result(url: str, content: str, **headers: str) -> None:
    with openai.OpenAI(
        base_url=url + "/v1", api_key="sk-test", default_headers=headers, max_retries=0
    ) as client:
        client.chat.completions.create(
            model="gpt-x",
            messages=[
                {"role": "user", "content": "read it"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "read_file", "arguments": "{}"},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "call_1", "content": content},
            ],
        )


def _pointer(text: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(text)
    return doc


def test_a_client_that_says_it_can_page_in_gets_the_pointer(
    serve_app: Callable[[Any], str], app_factory: Callable[..., Any]
) -> None:
    mock, url = _fak(serve_app, app_factory)
    _chat_with_result(url, HANDLERS, **{"x-fak-pageout": "on"})
    (sent,) = _tool_results(mock)
    pointer = _pointer(sent)
    assert pointer["_paged"] is True and pointer["len"] == len(HANDLERS)
    assert pointer["hint"] == "oversize"


def test_serve_pageout_setting_pages_every_wire_client_and_off_header_wins(
    serve_app: Callable[[Any], str], app_factory: Callable[..., Any]
) -> None:
    mock, url = _fak(serve_app, app_factory, pageout=True)
    _chat_with_result(url, HANDLERS)
    _chat_with_result(url, HANDLERS, **{"x-fak-pageout": "off"})
    paged, whole = _tool_results(mock)
    assert _pointer(paged)["_paged"] is True
    assert whole == HANDLERS


def test_quarantine_does_not_depend_on_pageout(
    serve_app: Callable[[Any], str], app_factory: Callable[..., Any]
) -> None:
    mock, url = _fak(serve_app, app_factory)
    _chat_with_result(url, POISON)
    (sent,) = _tool_results(mock)
    assert _pointer(sent)["_quarantined"] is True
    assert b"IGNORE PREVIOUS" not in mock.bodies


def test_native_admit_still_pages_out_by_size(
    serve_app: Callable[[Any], str], app_factory: Callable[..., Any]
) -> None:
    _, url = _fak(serve_app, app_factory)
    r = httpx.post(url + "/v1/fak/admit", json={"tool": "read_file", "result": HANDLERS})
    assert r.status_code == 200
    body = r.json()
    assert body["verdict"]["kind"] == "TRANSFORM"
    assert _pointer(body["content"])["len"] == len(HANDLERS)
