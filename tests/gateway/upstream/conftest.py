"""Shared pieces of the router tests: a fake clock, the gateway over a router on loopback."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import openai
import pytest

from fak.gateway.server import LoopbackServer
from fak.gateway.upstream.client import HttpxUpstream
from fak.gateway.upstream.config import parse_upstreams
from fak.gateway.upstream.router import Router, build_router
from fak.journal import MemoryJournal
from fak.kernel import Kernel
from fak.policy import Policy
from fak.testing.upstream import MockUpstream

from ..conftest import closing
from ..scripts import agent_script


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)


def _entry(
    group: str, dep: str, url: str, kind: str = "openai", model: str = "m"
) -> dict[str, Any]:
    base = url + "/v1" if kind == "openai" else url
    return {
        "model_name": group,
        "litellm_params": {"model": f"{kind}/{model}", "api_base": base},
        "model_info": {"id": dep},
    }


def _killed() -> str:
    server = LoopbackServer(MockUpstream(agent_script).app)
    url = server.start()
    server.stop()
    return url


class Gateway:
    def __init__(self, router: Router, url: str, journal: MemoryJournal) -> None:
        self.router = router
        self.url = url
        self.journal = journal

    def routes(self) -> list[tuple[str, str, str, str]]:
        return [
            (r["tool"], r["by"], r["verdict"], r.get("reason", ""))
            for r in self.journal.rows
            if r["kind"] == "ROUTE"
        ]

    def decided(self) -> list[str]:
        return [r["tool"] for r in self.journal.rows if r["kind"] == "DECIDE"]

    def client(self) -> openai.OpenAI:
        return closing(openai.OpenAI(base_url=self.url + "/v1", api_key="c", max_retries=0))


@pytest.fixture
def gateway(
    app_factory: Callable[..., Any], serve_app: Callable[[Any], str]
) -> Callable[..., Gateway]:
    def start(document: dict[str, Any], clock: Clock | None = None) -> Gateway:
        clock = clock or Clock()
        router = build_router(
            parse_upstreams(document, {}),
            lambda timeout: HttpxUpstream(timeout_s=timeout or 10.0),
            clock=clock,
            sleep=clock.sleep,
        )
        journal = MemoryJournal()
        kernel = Kernel(Policy.default(), journal=journal)
        return Gateway(router, serve_app(app_factory(router, kernel=kernel)), journal)

    return start


def _ask(gw: Gateway, model: str, text: str = "hello", **kw: Any) -> Any:
    return gw.client().chat.completions.create(
        model=model, messages=[{"role": "user", "content": text}], **kw
    )
