"""The forward pass against the HF transformers oracle loading the same GGUF."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.engine

PROMPTS = ("The capital of France is", "1, 2, 3, 4,", "def add(a, b):\n    return")


@pytest.mark.parametrize("text", PROMPTS)
def test_logits_match_hf_at_every_position(engine: Any, hf_model: Any, text: str) -> None:
    import torch

    ids = engine.tokenizer.encode(text)
    with torch.inference_mode():
        ref = hf_model(torch.tensor([ids])).logits[0]
    ours = engine.prefill(engine.new_cache(), ids, all_logits=True)
    assert ours.shape == ref.shape
    assert torch.equal(ours.argmax(-1), ref.argmax(-1))
    last = (ours[-1] - ref[-1]).abs().max().item()
    assert last <= 1e-4, f"last-position logits differ by {last:.3e}"


def test_chat_greedy_matches_hf_and_reads_as_english(engine: Any, hf_model: Any) -> None:
    import torch

    question = "Explain in two sentences why the sky is blue."
    spans, tail = engine.chat.render([{"role": "user", "content": question}])
    ids = [t for s in spans for t in s.ids] + list(tail)
    with torch.inference_mode():
        out = hf_model.generate(
            torch.tensor([ids]),
            attention_mask=torch.ones(1, len(ids), dtype=torch.long),
            do_sample=False,
            max_new_tokens=20,
            pad_token_id=engine.tokenizer.eos_id,
        )
    hf_tokens = out[0, len(ids) :].tolist()
    assert len(hf_tokens) == 20
    cache = engine.new_cache()
    ours = list(engine.generate(cache, engine.prefill(cache, ids), max_new_tokens=20))
    assert ours == hf_tokens
    text = engine.tokenizer.decode(ours)
    words = text.split()
    assert len(words) >= 10 and all(w.isascii() for w in words)
    assert "sky" in text.lower() or "light" in text.lower(), text


def test_each_mode_agrees_with_hf_on_the_next_token(engine_any_mode: Any, hf_model: Any) -> None:
    """Fast mode (4-bit weights) is not exact: it must still pick HF's token almost always.

    Measured here: 96 % of positions agree on a 400-token paragraph; the bound leaves room for
    another CPU's kernels, not for a broken quantizer (which agrees on a few per cent).
    """
    import torch

    engine = engine_any_mode
    text = " ".join(PROMPTS) + " The weather in Paris today is mild, with a light breeze. " * 8
    ids = engine.tokenizer.encode(text)
    with torch.inference_mode():
        ref = hf_model(torch.tensor([ids])).logits[0]
    ours = engine.prefill(engine.new_cache(), ids, all_logits=True)
    agree = float((ours.argmax(-1) == ref.argmax(-1)).float().mean())
    assert agree >= (0.999 if engine.mode == "exact" else 0.9), agree
    cache = engine.new_cache()
    prompt = engine.tokenizer.encode("The capital of France is")
    answer = engine.tokenizer.decode(
        list(engine.generate(cache, engine.prefill(cache, prompt), max_new_tokens=4))
    )
    assert "Paris" in answer, answer
