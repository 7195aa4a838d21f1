"""The engine facade: a loaded model, its tokenizer and the cache operations (tier T3).

``Engine`` ties the forward pass (``model.py``) to the addressable cache (``kvcache.py``) and
adds the one operation that needs both: ``evict_exact``, which removes a span and recomputes
only the rows that attended to it, so the cache equals one that never saw the span, bit for
bit. It owns thread settings for torch (by default as many threads as the process may use,
``cpus.py``); it does not render chats or talk to the gateway.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from fak.engine.cpus import cpu_budget
from fak.engine.kvcache import KVCache
from fak.engine.model import PREFILL_CHUNK, Transformer, decode_batch, decode_step, greedy, prefill
from fak.engine.tokenizer import ChatFormat, GGUFTokenizer
from fak.engine.weights import read_checkpoint

__all__ = ["Engine", "EvictResult", "LoadProgress"]

log = logging.getLogger(__name__)

# (stage, done, total): stage is "read" (tensors dequantized) or "pack" (layers packed).
LoadProgress = Callable[[str, int, int], None]


@dataclass(frozen=True, slots=True)
class EvictResult:
    """An exact eviction: rows removed, survivor rows recomputed, next-token logits (if any)."""

    removed: int
    recomputed: int
    logits: torch.Tensor | None


class Engine:
    """A Llama GGUF loaded for in-process inference over addressable KV caches."""

    def __init__(
        self,
        model: Transformer,
        tokenizer: GGUFTokenizer,
        chat: ChatFormat,
        *,
        path: Path,
        name: str,
    ) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.chat = chat
        self.path = path
        self.name = name

    @classmethod
    def load(
        cls,
        gguf: str | Path | None = None,
        *,
        threads: int | None = None,
        mode: str = "exact",
        progress: LoadProgress | None = None,
    ) -> Engine:
        """Read, dequantize and pack a GGUF (default: the embedded SmolLM2).

        ``mode`` is ``"exact"`` (float32 weights) or ``"fast"`` (4-bit weights, bfloat16
        activations in the projections); both are batch-invariant with themselves. ``threads``
        defaults to the CPUs this process may use (affinity mask and cgroup quota, not the
        machine's count; ``fak.engine.cpus``).
        """
        if threads is None or threads <= 0:
            budget = cpu_budget()
            threads = budget.usable
            log.info(
                "engine threads: %d (affinity %d, cgroup quota %s)",
                threads,
                budget.affinity,
                "none" if budget.quota is None else f"{budget.quota:g}",
            )
        torch.set_num_threads(threads)

        def on_tensor(done: int, total: int) -> None:
            if progress is not None:
                progress("read", done, total)

        ckpt = read_checkpoint(gguf, on_tensor=on_tensor)
        tokenizer = GGUFTokenizer(ckpt.metadata)
        chat = ChatFormat(ckpt.metadata.get("tokenizer.chat_template"), tokenizer)
        model = Transformer(ckpt, mode=mode, progress=progress)
        name = ckpt.path.stem
        log.info(
            "engine ready: %s, mode=%s, exact=%s, threads=%d",
            name,
            model.mode,
            model.exact,
            torch.get_num_threads(),
        )
        return cls(model, tokenizer, chat, path=ckpt.path, name=name)

    @property
    def exact(self) -> bool:
        """True when the start-up probe proved the batch invariance this process relies on."""
        return self.model.exact

    @property
    def mode(self) -> str:
        """``"exact"`` (float32 reference numerics) or ``"fast"`` (4-bit weights)."""
        return self.model.mode

    @property
    def threads(self) -> int:
        """The most threads a step uses (a loaded machine may get fewer: ``threads.py``)."""
        return self.model.threads.max_threads

    @property
    def stop_ids(self) -> tuple[int, ...]:
        ids = {self.tokenizer.eos_id}
        for tok in ("<|im_end|>", "<|endoftext|>"):
            found = self.tokenizer.token_to_id(tok)
            if found is not None:
                ids.add(found)
        return tuple(sorted(ids))

    # ---- cache operations -------------------------------------------------------------------
    def new_cache(self, capacity: int = 0) -> KVCache:
        return self.model.new_cache(capacity)

    def prefill(
        self, cache: KVCache, ids: Sequence[int], *, all_logits: bool = False
    ) -> torch.Tensor:
        return prefill(self.model, cache, ids, all_logits=all_logits)

    def decode(self, cache: KVCache, token: int) -> torch.Tensor:
        return decode_step(self.model, cache, token)

    # ---- many sessions at once (batch-invariant: each equals its solo run, witness 6) ---------
    def fork(self, prefix: KVCache, length: int | None = None, *, extra: int = 0) -> KVCache:
        """A session over ``prefix``'s first ``length`` rows, sharing its whole key blocks."""
        return prefix.fork(length, extra=extra)

    def decode_batch(self, caches: Sequence[KVCache], tokens: Sequence[int]) -> list[torch.Tensor]:
        """One batched decode step: token i appended to cache i; next-token logits of each."""
        return decode_batch(self.model, caches, tokens)

    def prefill_batch(
        self, caches: Sequence[KVCache], ids: Sequence[Sequence[int]], *, chunk: int = PREFILL_CHUNK
    ) -> list[torch.Tensor]:
        """Prefill each cache's own tokens, all sessions' chunks in one pass per round."""
        if len(caches) != len(ids):
            raise ValueError("prefill_batch needs one token list per cache")
        if any(len(x) == 0 for x in ids):
            raise ValueError("prefill needs at least one token")
        todo = [torch.as_tensor(list(x), dtype=torch.int64) for x in ids]
        out: list[torch.Tensor | None] = [None] * len(caches)
        with torch.inference_mode():
            for a in range(0, max(int(t.numel()) for t in todo), chunk):
                live = [i for i, t in enumerate(todo) if a < t.numel()]
                got = self.model.forward_batch([(caches[i], todo[i][a : a + chunk]) for i in live])
                for i, logits in zip(live, got, strict=True):
                    out[i] = logits
        return [x for x in out if x is not None]

    def generate(
        self,
        cache: KVCache,
        logits: torch.Tensor,
        *,
        max_new_tokens: int,
        stop_ids: Sequence[int] | None = None,
        should_stop: Callable[[list[int]], bool] | None = None,
    ) -> Iterator[int]:
        """Greedy tokens after ``logits``; each is fed to the cache before the next is chosen."""
        stops = self.stop_ids if stop_ids is None else tuple(stop_ids)
        return greedy(
            self.model,
            cache,
            logits,
            max_new_tokens=max_new_tokens,
            stop_ids=stops,
            should_stop=should_stop,
        )

    def session_from_prefix(self, cache: KVCache, length: int, *, extra: int = 0) -> KVCache:
        """A new cache holding the first ``length`` rows of ``cache`` (clone + tail eviction)."""
        if not 0 <= length <= cache.length:
            raise IndexError(f"prefix of {length} rows outside a cache of {cache.length}")
        return cache.slice(0, length, extra=extra)

    def evict_exact(self, cache: KVCache, start: int, n: int) -> EvictResult:
        """Remove rows [start, start+n) and recompute every later row at its new position.

        Rows before ``start`` never attended to the span and stay as they are; rows after it
        did, so they are rebuilt from their token ids on top of the kept prefix. The result
        equals a cache that never saw the span, bit for bit (witnessed in the test suite).
        A tail span has nothing after it and costs no recompute.
        """
        if n <= 0 or not 0 <= start < cache.length:
            return EvictResult(0, 0, None)
        end = min(cache.length, start + n)
        survivors = cache.token_ids()[end:]
        removed = cache.truncate(start)
        logits = self.prefill(cache, survivors) if survivors else None
        return EvictResult(removed - len(survivors), len(survivors), logits)
