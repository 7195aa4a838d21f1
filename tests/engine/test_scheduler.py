"""Continuous batching in the in-kernel planner: join and leave mid-decode, cancel, client
disconnect, the KV memory cap (429 with Retry-After), and two official OpenAI SDK clients
streaming from a real ``fak serve`` process at the same time."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from fak.abi import Message, PlannerInputError, Role, TextDelta, TurnDone, TurnRequest

pytestmark = pytest.mark.engine

LONG = Message(Role.USER, "Write a long story about a lighthouse keeper and a storm.")
SHORT = Message(Role.USER, "What is the capital of France?")


def _req(message: Message, session: str, max_tokens: int) -> TurnRequest:
    return TurnRequest(model="", messages=(message,), max_tokens=max_tokens, session=session)


def _planner(engine: Any, **kw: Any) -> Any:
    from fak.engine import InKernelPlanner

    return InKernelPlanner(engine, **kw)


def _solo(engine: Any, message: Message, max_tokens: int) -> str:
    planner = _planner(engine)
    try:
        return str(asyncio.run(planner.complete(_req(message, "solo", max_tokens))).text)
    finally:
        asyncio.run(planner.aclose())


async def _wait_for(predicate: Any, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.01)


def test_a_request_joins_mid_decode_and_each_answer_equals_its_solo_run(engine: Any) -> None:
    planner = _planner(engine)

    async def main() -> tuple[Any, Any, int]:
        first = asyncio.create_task(planner.complete(_req(LONG, "a", 20)))
        await _wait_for(lambda: planner.stats()["steps"] >= 3)  # a is decoding
        joined_at = planner.stats()["steps"]
        second = await planner.complete(_req(SHORT, "b", 12))
        return await first, second, joined_at

    try:
        a, b, joined_at = asyncio.run(main())
        stats = planner.stats()
    finally:
        asyncio.run(planner.aclose())
    assert stats["max_batch_seen"] == 2  # b was decoded in the same steps as a
    assert stats["steps"] < joined_at + 12 + 20  # not one after the other
    assert a.usage.completion_tokens == 20
    assert a.text == _solo(engine, LONG, 20)  # batching changed no token of either turn
    assert b.text == _solo(engine, SHORT, 12)
    assert stats["active_requests"] == 0 and stats["kv_bytes_reserved"] == 0


def test_a_cancelled_stream_leaves_and_the_other_is_undisturbed(engine: Any) -> None:
    planner = _planner(engine)

    async def main() -> str:
        keep = asyncio.create_task(planner.complete(_req(SHORT, "keep", 12)))
        stream = planner.stream(_req(LONG, "drop", 64))
        first = await anext(stream)
        assert isinstance(first, TextDelta)
        await stream.aclose()  # the consumer goes away mid-decode
        turn = await keep
        await _wait_for(lambda: planner.stats()["active_requests"] == 0)
        return str(turn.text)

    try:
        text = asyncio.run(main())
        stats = planner.stats()
    finally:
        asyncio.run(planner.aclose())
    assert text == _solo(engine, SHORT, 12)
    assert stats["cancelled"] == 1 and stats["turns"] == 1  # the dropped turn never finished
    assert stats["kv_bytes_reserved"] == 0  # its KV reservation was returned


def test_kv_memory_cap_refuses_with_429_and_retry_after(engine: Any) -> None:
    row = engine.new_cache(1).row_bytes()
    planner = _planner(engine, max_kv_bytes=row * 300)

    async def main() -> None:
        with pytest.raises(PlannerInputError) as too_big:  # can never fit: 400, not 429
            await planner.complete(_req(SHORT, "x", 600))
        assert too_big.value.status == 400 and too_big.value.code == "kv_budget_exceeded"
        running = planner.stream(_req(LONG, "a", 200))
        assert isinstance(await anext(running), TextDelta)
        with pytest.raises(PlannerInputError) as busy:
            await planner.complete(_req(SHORT, "b", 100))
        assert busy.value.status == 429 and busy.value.code == "engine_busy"
        assert busy.value.retry_after is not None and busy.value.retry_after >= 1
        await running.aclose()
        await _wait_for(lambda: planner.stats()["kv_bytes_reserved"] == 0)
        turn = await planner.complete(_req(SHORT, "b", 8))  # room again once a left
        assert turn.usage.completion_tokens > 0

    try:
        asyncio.run(main())
        assert planner.stats()["refused_busy"] == 1
    finally:
        asyncio.run(planner.aclose())


def test_gateway_answers_429_with_retry_after_and_frees_a_disconnected_slot(engine: Any) -> None:
    import openai

    from fak.gateway.app import build_app
    from fak.gateway.server import LoopbackServer
    from fak.kernel import Kernel
    from fak.policy import Policy

    planner = _planner(engine, max_batch=1)
    app = build_app(Kernel(Policy.default()), planner)
    body = {"model": "", "messages": [{"role": "user", "content": LONG.content}], "stream": True}
    with LoopbackServer(app) as url, httpx.Client(timeout=120) as http:
        with http.stream("POST", url + "/v1/chat/completions", json=body) as held:
            assert held.status_code == 200
            # the first chunk: the one slot is taken now. Keep the iterator: a discarded one is
            # closed, and closing it hangs up the stream (the test would race that hang-up)
            lines = held.iter_lines()
            next(lines)
            client = openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0, timeout=60)
            with client, pytest.raises(openai.RateLimitError) as refused:
                client.chat.completions.create(
                    model="", messages=[{"role": "user", "content": "hi"}], max_tokens=4
                )
            assert refused.value.status_code == 429
            assert int(refused.value.response.headers["retry-after"]) >= 1
            assert refused.value.body["code"] == "engine_busy"  # type: ignore[index]
        # the client hung up mid-stream: its slot and memory come back
        deadline = time.monotonic() + 60
        while planner.stats()["active_requests"]:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        stats = planner.stats()
        assert stats["cancelled"] == 1 and stats["kv_bytes_reserved"] == 0
        again = http.post(
            url + "/v1/chat/completions",
            json={"model": "", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4},
        )
        assert again.status_code == 200
    asyncio.run(planner.aclose())


def test_stream_after_a_refusal_sends_no_event(engine: Any) -> None:
    planner = _planner(engine, max_batch=1)

    async def main() -> None:
        running = planner.stream(_req(LONG, "a", 50))
        assert isinstance(await anext(running), TextDelta)
        refused = planner.stream(_req(SHORT, "b", 4))
        with pytest.raises(PlannerInputError):
            await anext(refused)
        rest = [e async for e in running]
        assert isinstance(rest[-1], TurnDone)

    try:
        asyncio.run(main())
        asyncio.run(planner.aclose())  # closing stops the worker; the next turn starts a new one
        again = asyncio.run(planner.complete(_req(SHORT, "c", 2)))
        assert again.usage.completion_tokens == 2
    finally:
        asyncio.run(planner.aclose())


def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = int(s.getsockname()[1])
    s.close()
    return port


@contextlib.contextmanager
def _fak_serve(*flags: str) -> Iterator[str]:
    """A real ``fak serve`` process on the in-kernel engine; its base URL once the model is up."""
    port = _free_port()
    cmd = [sys.executable, "-m", "fak.cli.main", "serve", "--access-log", "off", "--threads", "2"]
    proc = subprocess.Popen(
        [*cmd, *flags, "--addr", f"127.0.0.1:{port}"],
        env=dict(os.environ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                if httpx.get(url + "/healthz").json().get("planner") == "inkernel":
                    break
            except httpx.ConnectError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


def test_fak_serve_in_fast_mode_answers_the_official_openai_sdk(engine: Any) -> None:
    """``fak serve --engine-mode fast`` end to end: healthz names the mode, the SDK gets text.

    (``engine`` only makes the test skip where the engine or its model is not installed.)"""
    import openai

    with _fak_serve("--engine-mode", "fast") as url:
        health = httpx.get(url + "/healthz").json()
        assert health["engine_mode"] == "fast" and health["exact"] is True
        client = openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0, timeout=300)
        with client:
            reply = client.chat.completions.create(
                model="",
                messages=[{"role": "user", "content": "Name three colors."}],
                max_tokens=24,
            )
        text = reply.choices[0].message.content or ""
        assert len(text.split()) >= 3 and reply.usage is not None
        assert reply.usage.completion_tokens > 2
        metrics = httpx.get(url + "/metrics").text
        assert re.search(r"^fak_engine_fast_mode 1(\.0)?$", metrics, flags=re.M), metrics[:2000]


def test_two_openai_sdk_streams_against_fak_serve_are_served_concurrently(engine: Any) -> None:
    """A real ``fak serve`` process on the engine: the second client's first token arrives
    before the first client's stream has finished."""
    import openai

    with _fak_serve() as url:
        marks: dict[str, float] = {}
        texts: dict[str, str] = {}
        started = threading.Event()

        def run(name: str, content: str, max_tokens: int) -> None:
            client = openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0, timeout=300)
            with client:
                stream = client.chat.completions.create(
                    model="",
                    messages=[{"role": "user", "content": content}],
                    max_tokens=max_tokens,
                    stream=True,
                    user=name,
                )
                parts = []
                for chunk in stream:
                    if chunk.choices and chunk.choices[0].delta.content:
                        marks.setdefault(f"{name}_first", time.monotonic())
                        started.set()
                        parts.append(chunk.choices[0].delta.content)
                marks[f"{name}_end"] = time.monotonic()
                texts[name] = "".join(parts)

        one = threading.Thread(target=run, args=("one", LONG.content, 60))
        one.start()
        assert started.wait(180)
        two = threading.Thread(target=run, args=("two", SHORT.content, 8))
        two.start()
        one.join(300)
        two.join(300)
        assert texts["one"] and texts["two"]
        assert marks["two_first"] < marks["one_end"]  # served while one was still streaming
        metrics = httpx.get(url + "/metrics").text
        seen = re.search(r"^fak_engine_max_batch_seen (\S+)$", metrics, flags=re.M)
        assert seen is not None and float(seen.group(1)) == 2
