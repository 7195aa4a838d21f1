"""Tokenizer and chat template built from GGUF metadata alone."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.engine

TEXTS = (
    "Hello, world!",
    "The year 2024 had 366 days; 3.14159 is pi.",
    "  leading spaces and\ttabs\nnew lines\n\n",
    "naïve café — “quotes” and emoji 🎉 and 中文字符",
    "def f(x):\n    return x ** 2  # comment",
    "<|im_start|>user\nhi<|im_end|>\n",
    "URL: https://example.com/a?b=c&d=e",
)


@pytest.fixture(scope="module")
def hf_tokenizer(engine: Any) -> Any:
    transformers = pytest.importorskip("transformers", reason="needs the `oracle` extra")
    return transformers.AutoTokenizer.from_pretrained(
        str(engine.path.parent), gguf_file=engine.path.name, local_files_only=True
    )


def test_config_is_read_from_metadata(engine: Any) -> None:
    cfg = engine.model.config
    assert (cfg.n_layers, cfg.dim, cfg.ffn_dim, cfg.n_heads, cfg.n_kv_heads) == (
        30,
        576,
        1536,
        9,
        3,
    )
    assert (cfg.head_dim, cfg.vocab_size, cfg.rope_theta) == (64, 49152, 100000.0)
    assert cfg.tied_embeddings


@pytest.mark.parametrize("text", TEXTS)
def test_encoding_matches_transformers(engine: Any, hf_tokenizer: Any, text: str) -> None:
    ours = engine.tokenizer.encode(text)
    assert ours == hf_tokenizer(text, add_special_tokens=False)["input_ids"]
    assert engine.tokenizer.decode(ours, skip_special=False) == text


def test_special_tokens(engine: Any) -> None:
    tok = engine.tokenizer
    assert tok.encode("<|im_start|>") == [1]
    assert tok.encode("<|im_end|>") == [2]
    assert (tok.bos_id, tok.eos_id) == (1, 2)
    assert 2 in engine.stop_ids


def test_chat_render_matches_transformers_template(engine: Any, hf_tokenizer: Any) -> None:
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi there"},
        {"role": "assistant", "content": "Hello!"},
        {"role": "user", "content": "What is 2+2?"},
    ]
    spans, tail = engine.chat.render(messages)
    expected = hf_tokenizer.apply_chat_template(
        messages, tokenize=False, add_generation_prompt=True
    )
    assert (
        "".join(s.text for s in spans) + engine.tokenizer.decode(tail, skip_special=False)
        == expected
    )
    per_message = [t for s in spans for t in s.ids] + list(tail)
    assert per_message == engine.tokenizer.encode(expected)
    assert [s.role for s in spans] == ["system", "user", "assistant", "user"]


def test_default_system_message_and_tools(engine: Any) -> None:
    tools = [{"name": "get_weather", "parameters": {"properties": {"city": {"type": "string"}}}}]
    spans, _ = engine.chat.render([{"role": "user", "content": "hi"}], tools=tools)
    assert spans[0].role == "system"
    assert "get_weather" in spans[0].text and "<tools>" in spans[0].text
    assert spans[2].text.startswith("<|im_start|>assistant\n<tool_call>")
    assert spans[-1].role == "user"
