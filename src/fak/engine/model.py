"""The Llama forward pass, float32, in one readable file (gpt-fast style) (tier T3).

Reads top to bottom: weights for one block, the block (RMSNorm -> attention -> RMSNorm -> SwiGLU
MLP), the model, then ``prefill`` / ``decode_step`` / ``greedy`` as plain functions over an
addressable ``KVCache``. Every step is written to be batch-invariant so a token's logits do not
depend on how the context was chunked: projections are oneDNN linears on pre-packed weights
(>= 2 rows), attention scores and values are strict-MKL GEMMs (>= 4 rows) over key blocks
aligned to absolute cache rows, softmax is max -> exp -> one GEMM against [V | 1] per block,
summed block by block in a fixed order, and SiLU is spelled with exp. Tensor shapes are in the
comments: M = new tokens, L = cached rows, D = model dim, H/G = query/kv heads, E = head dim.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import torch

from fak.engine.kvcache import BLOCK, KVCache
from fak.engine.numerics import MIN_ROWS_ATTENTION, PackedLinear, ProbeReport, probe
from fak.engine.rotary import RotaryTables, rotate
from fak.engine.weights import GGUFCheckpoint, LlamaConfig

__all__ = ["Block", "Transformer", "decode_step", "greedy", "prefill"]

PREFILL_CHUNK = 512


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """x [M, D] -> [M, D]; the reduction is per row over D, row-count invariant."""
    variance = x.pow(2).mean(-1, keepdim=True)
    return weight * (x * torch.rsqrt(variance + eps))


def silu(x: torch.Tensor) -> torch.Tensor:
    """x * sigmoid(x) from exp, add and divide (torch's fused silu is not size-invariant)."""
    return x / (1.0 + torch.exp(-x))


@dataclass(frozen=True, slots=True)
class Block:
    """One decoder layer's weights: norms as tensors, projections packed once."""

    attn_norm: torch.Tensor  # [D]
    wqkv: PackedLinear  # [(H + 2G) * E, D]
    wo: PackedLinear  # [D, H * E]
    ffn_norm: torch.Tensor  # [D]
    w_gate_up: PackedLinear  # [2F, D]
    w_down: PackedLinear  # [D, F]


class Transformer:
    """SmolLM2 / Llama: embeddings -> N blocks -> RMSNorm -> tied head."""

    def __init__(
        self,
        ckpt: GGUFCheckpoint,
        *,
        exact: bool = True,
        onednn: bool = True,
        progress: Callable[[str, int, int], None] | None = None,
    ) -> None:
        cfg = ckpt.config
        self.config: LlamaConfig = cfg
        self.exact = exact
        t = {name: torch.from_numpy(arr) for name, arr in ckpt.tensors.items()}
        self.embed = t["embed"].contiguous()  # [V, D]
        self.norm = t["norm"]
        self.head = PackedLinear(t.get("head", self.embed), onednn=onednn)
        self.blocks: list[Block] = []
        for i in range(cfg.n_layers):
            p = f"layers.{i}."
            self.blocks.append(
                Block(
                    attn_norm=t[p + "attn_norm"],
                    wqkv=PackedLinear(
                        torch.cat([t[p + "wq"], t[p + "wk"], t[p + "wv"]]), onednn=onednn
                    ),
                    wo=PackedLinear(t[p + "wo"], onednn=onednn),
                    ffn_norm=t[p + "ffn_norm"],
                    w_gate_up=PackedLinear(
                        torch.cat([t[p + "w_gate"], t[p + "w_up"]]), onednn=onednn
                    ),
                    w_down=PackedLinear(t[p + "w_down"], onednn=onednn),
                )
            )
            if progress is not None:
                progress("pack", i + 1, cfg.n_layers)
        first = self.blocks[0]
        self.numerics: ProbeReport | None = None
        self.min_rows = 1
        if exact:  # prove the batch invariance on this machine before promising it
            self.numerics = probe([first.wqkv, first.wo, first.w_gate_up, first.w_down, self.head])
            self.exact = self.numerics.ok
            self.min_rows = self.numerics.min_rows if self.exact else 1
        self.rope = RotaryTables.build(cfg.head_dim, cfg.rope_theta, cfg.context_length)
        self.scale = 1.0 / math.sqrt(cfg.head_dim)

    def new_cache(self, capacity: int = 0) -> KVCache:
        cfg = self.config
        return KVCache(
            n_layers=cfg.n_layers,
            n_kv_heads=cfg.n_kv_heads,
            head_dim=cfg.head_dim,
            rope=self.rope,
            capacity=capacity,
        )

    # ---- one forward over M new tokens appended to the cache --------------------------------
    def forward(
        self, cache: KVCache, tokens: torch.Tensor, *, all_logits: bool = False
    ) -> torch.Tensor:
        """Append ``tokens`` [M] to ``cache``; logits [V] for the last token or [M, V] for all."""
        cfg = self.config
        m_new = int(tokens.shape[0])
        at = cache.length
        if cache.end + m_new > self.rope.max_positions:
            raise ValueError(
                f"context of {cache.end + m_new} tokens exceeds {self.rope.max_positions}"
            )
        cache.reserve(at + m_new)
        # Batch-invariant kernels need a minimum row count: repeat the last token (same position).
        rows = max(m_new, self.min_rows)
        idx = torch.arange(rows).clamp_(max=m_new - 1)
        token_rows = tokens[idx]
        pos = cache.end + idx  # [M'] absolute positions
        cos, sin = self.rope.cos[pos], self.rope.sin[pos]  # [M', E]
        n_keys = at + m_new
        n_blocks = -(-n_keys // BLOCK)
        # mask[r, j]: key row j is after the query's position -> hidden.  [M' * H/G, nb * BLOCK]
        key_rows = torch.arange(n_blocks * BLOCK)
        mask = key_rows.unsqueeze(0) > (idx + at).unsqueeze(1)
        group = cfg.n_heads // cfg.n_kv_heads
        mask = mask.repeat_interleave(group, dim=0)
        if mask.shape[0] < MIN_ROWS_ATTENTION:  # strict GEMMs need >= 4 rows: repeat the last
            mask = mask[torch.arange(MIN_ROWS_ATTENTION).clamp_(max=mask.shape[0] - 1)]

        x = self.embed[token_rows]  # [M', D]
        for layer, blk in enumerate(self.blocks):
            h = rms_norm(x, blk.attn_norm, cfg.norm_eps)
            x = x + blk.wo(
                self._attention(layer, blk, h, cache, at, m_new, cos, sin, mask, n_blocks)
            )
            h = rms_norm(x, blk.ffn_norm, cfg.norm_eps)
            gate_up = blk.w_gate_up(h)  # [M', 2F]
            gate, up = gate_up[:, : cfg.ffn_dim], gate_up[:, cfg.ffn_dim :]
            x = x + blk.w_down(silu(gate) * up)
        cache.commit(tokens)

        if all_logits:
            return self.head(rms_norm(x, self.norm, cfg.norm_eps))[:m_new]
        last = x[m_new - 1 : m_new].expand(self.min_rows, -1)
        return self.head(rms_norm(last, self.norm, cfg.norm_eps))[0]

    def _attention(
        self,
        layer: int,
        blk: Block,
        h: torch.Tensor,  # [M', D]
        cache: KVCache,
        at: int,
        m_new: int,
        cos: torch.Tensor,
        sin: torch.Tensor,
        mask: torch.Tensor,
        n_blocks: int,
    ) -> torch.Tensor:
        cfg = self.config
        n_h, n_g, e = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim
        rows = h.shape[0]
        qkv = blk.wqkv(h)  # [M', (H + 2G) * E]
        qk_raw = qkv[:, : (n_h + n_g) * e].view(rows, n_h + n_g, e)
        qk = rotate(qk_raw, cos, sin)  # [M', H + G, E]
        v = qkv[:, (n_h + n_g) * e :].view(rows, n_g, e)
        cache.write(layer, at, qk[:m_new, n_h:], qk_raw[:m_new, n_h:], v[:m_new])

        group = n_h // n_g
        span = n_blocks * BLOCK
        n_rows = rows * group
        keys = cache.k[layer, :, :span]  # [G, nb * BLOCK, E]
        vals = cache.v[layer]  # [G, cap, E + 1]
        # Queries grouped by the kv head they share: [G, R, E], R = max(M' * group, 4).
        q = (qk[:, :n_h] * self.scale).view(rows, n_g, group, e).transpose(0, 1)
        q = q.reshape(n_g, n_rows, e)
        if mask.shape[0] != n_rows:
            q = q[:, torch.arange(mask.shape[0]).clamp_(max=n_rows - 1)]
        scores = torch.bmm(q, keys.transpose(1, 2)).masked_fill_(mask, float("-inf"))
        probs = scores.sub_(scores.amax(-1, keepdim=True)).exp_()  # [G, R, nb * BLOCK]
        acc = torch.bmm(probs[:, :, :BLOCK], vals[:, :BLOCK])  # [G, R, E + 1]
        for b in range(1, n_blocks):
            cols = slice(b * BLOCK, (b + 1) * BLOCK)
            acc.add_(torch.bmm(probs[:, :, cols], vals[:, cols]))
        out = acc[:, :n_rows, :e] / acc[:, :n_rows, e:]  # [G, M' * group, E]
        return out.view(n_g, rows, group * e).transpose(0, 1).reshape(rows, n_h * e)


# ---- plain functions over a model and a cache -----------------------------------------------
def prefill(
    model: Transformer,
    cache: KVCache,
    tokens: Sequence[int] | torch.Tensor,
    *,
    chunk: int = PREFILL_CHUNK,
    all_logits: bool = False,
) -> torch.Tensor:
    """Append a prompt to the cache in chunks; logits of its last token (or of every token)."""
    ids = torch.as_tensor(tokens, dtype=torch.int64).flatten()
    if ids.numel() == 0:
        raise ValueError("prefill needs at least one token")
    parts: list[torch.Tensor] = []
    with torch.inference_mode():
        for a in range(0, int(ids.numel()), chunk):
            out = model.forward(cache, ids[a : a + chunk], all_logits=all_logits)
            parts.append(out)
    return torch.cat(parts) if all_logits else parts[-1]


def decode_step(model: Transformer, cache: KVCache, token: int) -> torch.Tensor:
    """Append one token; logits [V] for the next one."""
    with torch.inference_mode():
        return model.forward(cache, torch.tensor([token], dtype=torch.int64))


def greedy(
    model: Transformer,
    cache: KVCache,
    logits: torch.Tensor,
    *,
    max_new_tokens: int,
    stop_ids: Sequence[int] = (),
    should_stop: Callable[[list[int]], bool] | None = None,
) -> Iterator[int]:
    """Yield argmax tokens, feeding each back; stops after a stop id (not fed) or the budget."""
    produced: list[int] = []
    stop = set(stop_ids)
    for i in range(max_new_tokens):
        token = int(torch.argmax(logits).item())
        produced.append(token)
        yield token
        if token in stop or (should_stop is not None and should_stop(produced)):
            return
        if i + 1 < max_new_tokens:
            logits = decode_step(model, cache, token)
