"""``fak serve --upstreams``: LiteLLM's proxy config read into routing groups, or refused with
one line per problem and per unsupported key (LiteLLM's own example configs included)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from fak.cli.main import cli
from fak.gateway.upstream.config import (
    RouterConfig,
    UpstreamsError,
    load_upstreams,
    parse_upstreams,
)
from fak.gateway.upstream.strategies import Deployment, UpstreamKind

pytestmark = pytest.mark.gateway

EXAMPLES = Path(__file__).parent / "litellm_configs"

FULL = """
model_list:
  - model_name: gpt
    litellm_params:
      model: openai/gpt-4o
      api_key: os.environ/OPENAI_KEY
      rpm: 60
      timeout: 12
    model_info:
      id: openai-east
  - model_name: gpt
    litellm_params:
      model: hosted_vllm/qwen
      api_base: http://127.0.0.1:8000/v1/
      weight: 3
      input_cost_per_token: 0.000001
    model_info:
      max_input_tokens: 8192
  - model_name: claude
    litellm_params:
      model: anthropic/claude-sonnet-4-5
      api_key: os.environ/ANTHROPIC_KEY
  - model_name: local
    litellm_params:
      model: fak/engine
router_settings:
  routing_strategy: least-busy
  num_retries: 3
  allowed_fails: 2
  cooldown_time: 30
  retry_after: 0.5
litellm_settings:
  fallbacks: [{"gpt": ["claude", "local"]}]
  request_timeout: 40
"""
ENV = {"OPENAI_KEY": "sk-openai", "ANTHROPIC_KEY": "sk-ant"}


def _load(tmp_path: Path, text: str, **kw: object) -> RouterConfig:
    path = tmp_path / "upstreams.yaml"
    path.write_text(text, encoding="utf-8")
    return load_upstreams(str(path), ENV, **kw)  # type: ignore[arg-type]


def test_a_full_config_becomes_groups_deployments_and_rules(tmp_path: Path) -> None:
    c = _load(tmp_path, FULL)
    assert list(c.groups) == ["gpt", "claude", "local"]
    assert c.groups["gpt"].fallbacks == ("claude", "local")
    assert c.groups["gpt"].deployments == (
        Deployment(
            id="openai-east",
            group="gpt",
            kind=UpstreamKind.OPENAI,
            model="gpt-4o",
            api_base="https://api.openai.com/v1",
            api_key="sk-openai",
            rpm=60,
            timeout_s=12.0,
            weight=60.0,
            order=0,
        ),
        Deployment(
            id="gpt/1",
            group="gpt",
            kind=UpstreamKind.HOSTED_VLLM,
            model="qwen",
            api_base="http://127.0.0.1:8000/v1",
            weight=3.0,
            input_cost_per_token=0.000001,
            max_input_tokens=8192,
            order=1,
        ),
    )
    (claude,) = c.groups["claude"].deployments
    assert (claude.kind, claude.model, claude.api_base, claude.api_key) == (
        UpstreamKind.ANTHROPIC,
        "claude-sonnet-4-5",
        "https://api.anthropic.com",
        "sk-ant",
    )
    assert c.groups["local"].deployments[0].kind is UpstreamKind.ENGINE
    assert (c.routing_strategy, c.num_retries, c.allowed_fails) == ("least-busy", 3, 2)
    assert (c.cooldown_s, c.retry_after_s, c.timeout_s, c.unsupported) == (30.0, 0.5, 40.0, ())


def test_each_unsupported_key_is_one_line_by_name_and_the_file_is_refused(tmp_path: Path) -> None:
    text = (
        FULL.replace(
            "      rpm: 60\n", "      rpm: 60\n      vertex_project: p\n      max_retries: 2\n"
        ).replace("      weight: 3\n", "      weight: 3\n      vertex_project: q\n")
        + "general_settings:\n  master_key: x\n"
    )
    with pytest.raises(UpstreamsError) as err:
        _load(tmp_path, text)
    assert err.value.lines == (
        "[FAK-UPSTREAMS-UNSUPPORTED] general_settings: not supported by fak",
        "[FAK-UPSTREAMS-UNSUPPORTED] model_list[].litellm_params.vertex_project: not supported "
        "by fak",
        "[FAK-UPSTREAMS-UNSUPPORTED] model_list[].litellm_params.max_retries: not supported by fak",
    )
    c = _load(tmp_path, text, ignore_unsupported=True)  # the flag: start, keys have no effect
    assert len(c.unsupported) == 3 and len(c.deployments) == 4


def test_bad_values_are_refused_one_line_each(tmp_path: Path) -> None:
    text = """
model_list:
  - model_name: a
    litellm_params: {model: openai/x, api_key: os.environ/NOPE}
  - model_name: b
    litellm_params: {model: hosted_vllm/y}
  - model_name: c
    litellm_params: {model: llama3, rpm: lots}
router_settings: {routing_strategy: round-robin-please}
litellm_settings: {fallbacks: [{"a": ["zzz"]}]}
"""
    with pytest.raises(UpstreamsError) as err:
        _load(tmp_path, text)
    assert err.value.lines == (
        "[FAK-UPSTREAMS-BAD] model_list[0].litellm_params.api_key: os.environ/NOPE: the "
        "variable NOPE is unset or empty",
        "[FAK-UPSTREAMS-BAD] model_list[1]: hosted_vllm/ needs litellm_params.api_base",
        "[FAK-UPSTREAMS-BAD] model_list[2].litellm_params.model: 'llama3' has no provider "
        "prefix; write openai/NAME (any OpenAI-compatible server), hosted_vllm/NAME, "
        "anthropic/NAME or fak/engine",
        "[FAK-UPSTREAMS-BAD] router_settings.routing_strategy: 'round-robin-please' is not one "
        "of simple-shuffle, least-busy, latency-based-routing, usage-based-routing, "
        "usage-based-routing-v2, cost-based-routing, size-based, hybrid",
        "[FAK-UPSTREAMS-BAD] fallbacks: 'zzz' is not a model_name in model_list",
    )


def test_a_missing_file_and_broken_yaml_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(UpstreamsError) as err:
        load_upstreams(str(tmp_path / "none.yaml"), {})
    assert err.value.lines == (
        "[FAK-UPSTREAMS-BAD] cannot read the file: No such file or directory",
    )
    with pytest.raises(UpstreamsError) as err:
        _load(tmp_path, "model_list:\n  - model_name: [unclosed\n")
    assert err.value.lines == ("[FAK-UPSTREAMS-BAD] not YAML at line 3",)


# LiteLLM's own example configs (copied from its package, MIT: see litellm_configs/LICENSE)
LITELLM_ENV = {"AZURE_API_KEY": "k", "FAKE_OPENAI_API_BASE": "http://127.0.0.1:9/v1"}
U = "[FAK-UPSTREAMS-UNSUPPORTED]"


@pytest.mark.parametrize(
    ("name", "lines"),
    [
        ("simple_config.yaml", None),
        (
            "load_balancer.yaml",
            (
                f"{U} environment_variables: not supported by fak",
                f"{U} model_list[].tpm: not supported by fak",
                f"{U} model_list[].rpm: not supported by fak",
                f"{U} model_list[].litellm_params.model provider openrouter/: not supported by fak",
                f"{U} model_list[].litellm_params.model provider mistralai/: not supported by fak",
                f"{U} litellm_settings.drop_params: not supported by fak",
            ),
        ),
        ("multi_instance_simple_config.yaml", (f"{U} general_settings: not supported by fak",)),
        (
            "azure_config.yaml",
            (
                f"{U} model_list[].litellm_params.api_version: not supported by fak",
                f"{U} model_list[].litellm_params.stream_timeout: not supported by fak",
                f"{U} model_list[].litellm_params.max_retries: not supported by fak",
                f"{U} model_list[].litellm_params.model provider azure/: not supported by fak",
            ),
        ),
    ],
)
def test_litellm_example_configs_load_or_fail_one_line_per_unsupported_key(
    name: str, lines: tuple[str, ...] | None
) -> None:
    path = str(EXAMPLES / name)
    if lines is None:
        c = load_upstreams(path, LITELLM_ENV)
        (d,) = c.deployments
        assert (d.group, d.kind, d.model, c.routing_strategy) == (
            "gpt-5-mini",
            UpstreamKind.OPENAI,
            "gpt-5-mini",
            "simple-shuffle",
        )
        return
    with pytest.raises(UpstreamsError) as err:
        load_upstreams(path, LITELLM_ENV)
    assert err.value.lines == lines


def test_fak_serve_refuses_a_file_with_unsupported_keys_one_line_each(tmp_path: Path) -> None:
    path = tmp_path / "up.yaml"
    path.write_text((EXAMPLES / "multi_instance_simple_config.yaml").read_text())
    r = CliRunner().invoke(cli, ["serve", "--upstreams", str(path)], env={})
    assert r.exit_code == 1
    assert r.output.splitlines() == [
        f"error: --upstreams {path}: [FAK-UPSTREAMS-BAD] model_list[0].litellm_params.api_base: "
        "os.environ/FAKE_OPENAI_API_BASE: the variable FAKE_OPENAI_API_BASE is unset or empty",
        f"error: --upstreams {path}: {U} general_settings: not supported by fak",
    ]


def test_parse_takes_a_decoded_document_too() -> None:
    doc = {"model_list": [{"model_name": "m", "litellm_params": {"model": "openai/m"}}]}
    assert [d.id for d in parse_upstreams(doc, {}).deployments] == ["m/0"]


def test_fak_serve_upstreams_routes_through_a_real_process(tmp_path: Path, serve_app: Any) -> None:
    from fak.testing.upstream import MockUpstream

    from ..scripts import agent_script

    up = MockUpstream(agent_script)
    up_url = serve_app(up.app)
    cfg = tmp_path / "up.yaml"
    cfg.write_text(
        "model_list:\n"
        "  - model_name: chat\n"
        "    litellm_params: {model: openai/m1, api_base: " + up_url + "/v1, "
        "api_key: os.environ/FAK_T_UPKEY}\n"
        "    model_info: {id: primary}\n"
        "general_settings: {master_key: x}\n"
    )
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    cmd = [sys.executable, "-m", "fak.cli.main", "serve", "--upstreams", str(cfg)]
    cmd += ["--upstreams-ignore-unsupported", "--access-log", "off", "--addr", f"127.0.0.1:{port}"]
    proc = subprocess.Popen(
        cmd, env={**os.environ, "FAK_T_UPKEY": "sk-up"}, stderr=subprocess.PIPE, text=True
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                health = httpx.get(url + "/healthz")
                break
            except httpx.ConnectError:
                assert proc.poll() is None and time.monotonic() < deadline
                time.sleep(0.05)
        assert health.json()["planner"] == "router"
        r = httpx.post(
            url + "/v1/chat/completions",
            json={"model": "chat", "messages": [{"role": "user", "content": "hello"}]},
        )
        assert r.json()["choices"][0]["message"]["content"] == (
            "Hello from the scripted planner, word by word."
        )
        assert up.received[-1].headers["authorization"] == "Bearer sk-up"
        metrics = httpx.get(url + "/metrics").text
        assert 'fak_route_attempts_total{deployment="primary",group="chat",outcome="OK"} 1.0' in (
            metrics
        )
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=10)
    assert f"--upstreams {cfg}: {U} general_settings: not supported by fak (ignored" in err
