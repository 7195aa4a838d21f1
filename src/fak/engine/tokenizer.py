"""Tokenizer and chat template built from GGUF metadata alone (tier T3).

A GGUF carries its byte-level BPE vocabulary, merges, control tokens and a jinja chat
template; this module turns them into a ``tokenizers.Tokenizer`` and a sandboxed template
renderer. Chat rendering is per message, so each message is a separately addressable token
span (the planner's segment ledger) and the concatenation equals the whole-prompt encoding
(every ChatML message opens with a control token, which the tokenizer never merges across).
Tools are rendered into the system message; this module does not parse model output.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["ChatFormat", "GGUFTokenizer", "RenderedMessage"]

_CONTROL = 3  # llama.cpp token type for control tokens
# Pre-tokenizer names whose vocabulary was trained with every digit split on its own.
_DIGIT_SPLIT_PRE = frozenset({"smollm"})


class GGUFTokenizer:
    """Byte-level BPE from GGUF metadata (``tokenizer.ggml.model == "gpt2"``)."""

    def __init__(self, metadata: Mapping[str, Any]) -> None:
        from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

        kind = metadata.get("tokenizer.ggml.model")
        if kind != "gpt2":
            raise ValueError(f"unsupported GGUF tokenizer {kind!r}: only byte-level BPE ('gpt2')")
        tokens: list[str] = list(metadata["tokenizer.ggml.tokens"])
        merges = [tuple(m.split(" ", 1)) for m in metadata.get("tokenizer.ggml.merges") or []]
        vocab = {tok: i for i, tok in enumerate(tokens)}
        bpe = models.BPE(vocab=vocab, merges=merges, fuse_unk=False)
        tok = Tokenizer(bpe)
        byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
        if metadata.get("tokenizer.ggml.pre") in _DIGIT_SPLIT_PRE:
            tok.pre_tokenizer = pre_tokenizers.Sequence(
                [pre_tokenizers.Digits(individual_digits=True), byte_level]
            )
        else:
            tok.pre_tokenizer = byte_level
        tok.decoder = decoders.ByteLevel()
        types = list(metadata.get("tokenizer.ggml.token_type") or [])
        control = [t for t, kind_ in zip(tokens, types, strict=False) if kind_ == _CONTROL]
        tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in control])
        self._tok = tok
        self.control_tokens = frozenset(control)
        self.vocab_size = len(tokens)
        self.bos_id = int(metadata.get("tokenizer.ggml.bos_token_id") or 0)
        self.eos_id = int(metadata.get("tokenizer.ggml.eos_token_id") or 0)
        self.add_bos = bool(metadata.get("tokenizer.ggml.add_bos_token") or False)

    def encode(self, text: str) -> list[int]:
        """Token ids for ``text``; control tokens written in the text are kept whole."""
        return list(self._tok.encode(text, add_special_tokens=False).ids)

    def decode(self, ids: Sequence[int], *, skip_special: bool = True) -> str:
        return str(self._tok.decode(list(ids), skip_special_tokens=skip_special))

    def token_to_id(self, token: str) -> int | None:
        found = self._tok.token_to_id(token)
        return None if found is None else int(found)


@dataclass(frozen=True, slots=True)
class RenderedMessage:
    """One message as template text and its tokens: an addressable span of the context."""

    role: str
    text: str
    ids: tuple[int, ...]


_TOOL_PREAMBLE = (
    "You can call tools. Available tools:\n<tools>{tools}</tools>\n"
    'To call a tool, reply with only <tool_call>[{"name": ..., "arguments": {...}}]</tool_call>. '
    "Otherwise answer normally."
)


def _example_turn(tools: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """A one-shot call of the first tool (small models follow an example far better than rules)."""
    first = tools[0]
    params = first.get("parameters")
    props = params.get("properties") if isinstance(params, Mapping) else None
    args = {str(k): f"<{k}>" for k in (props or {})}
    call = json.dumps([{"name": str(first.get("name", "")), "arguments": args}], ensure_ascii=False)
    return [
        {"role": "user", "content": f"Call {first.get('name', '')}."},
        {"role": "assistant", "content": f"<tool_call>{call}</tool_call>"},
    ]


class ChatFormat:
    """Renders messages with the GGUF's own jinja template (sandboxed), one message at a time."""

    def __init__(self, template: str | None, tokenizer: GGUFTokenizer) -> None:
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        env = ImmutableSandboxedEnvironment(
            trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True
        )
        src = template or (
            "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
            "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}"
            "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
        )
        self._template = env.from_string(src)
        self._tok = tokenizer

    def _render(self, messages: Sequence[Mapping[str, str]], *, add_generation_prompt: bool) -> str:
        return str(
            self._template.render(
                messages=list(messages), add_generation_prompt=add_generation_prompt
            )
        )

    def render(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        tools: Sequence[Mapping[str, Any]] = (),
    ) -> tuple[list[RenderedMessage], tuple[int, ...]]:
        """Per-message spans plus the generation prompt's tokens.

        ``messages`` are plain ``{"role", "content"}`` mappings (tool calls already written
        into the content). Tools go into the system message (one is made if absent), followed
        by a one-shot example exchange calling the first tool.
        """
        msgs = [dict(m) for m in messages]
        if tools:
            listing = json.dumps(list(tools), ensure_ascii=False, sort_keys=True)
            block = _TOOL_PREAMBLE.replace("{tools}", listing)
            if msgs and msgs[0]["role"] == "system":
                msgs[0]["content"] = (msgs[0]["content"] + "\n\n" + block).strip()
            else:
                msgs.insert(0, {"role": "system", "content": block})
            msgs[1:1] = _example_turn(tools)
        spans: list[RenderedMessage] = []
        before = ""
        for i in range(len(msgs)):
            text = self._render(msgs[: i + 1], add_generation_prompt=False)
            piece = text[len(before) :] if text.startswith(before) else text
            before = text
            spans.append(
                RenderedMessage(
                    role=msgs[i]["role"], text=piece, ids=tuple(self._tok.encode(piece))
                )
            )
        full = self._render(msgs, add_generation_prompt=True)
        tail = full[len(before) :] if full.startswith(before) else ""
        return spans, tuple(self._tok.encode(tail))
