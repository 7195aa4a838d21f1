"""The gateway over the real in-kernel planner: turns through the official OpenAI SDK on a
loopback socket, the engine's KV-reuse and eviction counters on /metrics, /debug/vars and
/healthz; and ``fak serve --gguf`` refusing a model the engine cannot run."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from .conftest import fak_engine

pytestmark = pytest.mark.engine

TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a text file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]
USER = {"role": "user", "content": "Read notes.txt and tell me when the meeting is."}
CALL = {
    "role": "assistant",
    "content": "",
    "tool_calls": [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "read_file", "arguments": '{"path": "notes.txt"}'},
        }
    ],
}
RESULT = {"role": "tool", "tool_call_id": "call_1", "content": "Meeting at 10:00 in room 4."}


def _engine_metrics(url: str) -> dict[str, float]:
    text = httpx.get(url + "/metrics").text
    return {
        m.group(1): float(m.group(2))
        for m in re.finditer(r"^fak_engine_(\w+) (\S+)$", text, flags=re.M)
    }


def test_gateway_exports_engine_reuse_and_eviction(engine: Any) -> None:
    import openai

    from fak.engine import InKernelPlanner
    from fak.gateway.app import build_app
    from fak.gateway.server import LoopbackServer
    from fak.kernel import Kernel
    from fak.policy import Policy

    planner = InKernelPlanner(engine, max_new_tokens=8)
    app = build_app(Kernel(Policy.default()), planner)
    with LoopbackServer(app) as url:
        client = openai.OpenAI(base_url=url + "/v1", api_key="local", max_retries=0, timeout=120)

        def turn(*messages: Any) -> Any:
            return client.chat.completions.create(
                model="", messages=list(messages), tools=TOOLS, max_tokens=4, user="s1"
            )

        with client:
            health = httpx.get(url + "/healthz").json()
            assert health == {
                "ok": True,
                "planner": "inkernel",
                "model": engine.name,
                "exact": engine.exact,
                "engine_mode": "exact",
            }
            first = turn(USER)
            assert first.usage is not None
            after1 = _engine_metrics(url)
            assert after1["turns_total"] == 1
            assert after1["prefix_tokens_reused_total"] == 0  # a cold tree reuses nothing
            assert after1["tokens_prefilled_total"] == first.usage.prompt_tokens

            second = turn(USER, CALL, RESULT)  # extends the first conversation
            assert second.usage is not None
            after2 = _engine_metrics(url)
            assert after2["turns_total"] == 2
            reused = after2["prefix_tokens_reused_total"]
            assert reused > 0
            prefilled = after2["tokens_prefilled_total"] - after1["tokens_prefilled_total"]
            assert prefilled + reused == second.usage.prompt_tokens  # only the rest was computed
            assert after2["spans_evicted_total"] == 0
            assert after2["sessions"] == 1 and after2["radix_tokens"] > 0

            # the client drops the tool result: its cached span is evicted before the turn runs
            third = turn(USER, CALL, {"role": "user", "content": "Skip the file; say hello."})
            assert third.usage is not None
            after3 = _engine_metrics(url)
            assert after3["spans_evicted_total"] == 1
            assert after3["tokens_evicted_total"] > 0

            dv = httpx.get(url + "/debug/vars").json()
            assert dv["engine"]["spans_evicted"] == 1
            assert dv["engine"]["prefix_tokens_reused"] >= reused
            assert dv["engine"]["turns"] == 3 and dv["gateway"]["planner"] == "inkernel"


@pytest.mark.skipif(fak_engine is None, reason="the engine extra is not installed")
def test_serve_refuses_an_unsupported_gguf_with_exit_2(tmp_path: Path) -> None:
    import gguf
    import numpy as np
    from click.testing import CliRunner

    from fak.cli.main import cli

    path = tmp_path / "gpt2.gguf"
    writer = gguf.GGUFWriter(str(path), "gpt2")
    writer.add_tensor("token_embd.weight", np.zeros((4, 4), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    r = CliRunner().invoke(cli, ["serve", "--gguf", str(path), "--access-log", "off"])
    assert r.exit_code == 2, r.output
    assert "unsupported GGUF architecture 'gpt2'" in r.output
    assert "Traceback" not in r.output
