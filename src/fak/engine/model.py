"""The Llama forward pass, float32, in one readable file (gpt-fast style) (tier T3).

Reads top to bottom: weights for one block, the block (RMSNorm -> attention -> RMSNorm -> SwiGLU
MLP), the model, then ``prefill`` / ``decode_step`` / ``greedy`` as plain functions over an
addressable ``KVCache``. Every step is batch-invariant, so a token's logits do not depend on how
the context was chunked: projections are oneDNN linears on pre-packed weights, attention is
batched MKL GEMMs (>= 4 rows) whose reduction length depends only on the query's position (keys
up to the end of its 128-row key tile), the softmax denominator comes out of the same GEMM as
the numerator ([V | 1]), and SiLU is spelled with exp. Shapes are in the comments: M = new
tokens, D = model dim, H/G = query/kv heads, E = head dim, F = MLP dim, V = vocabulary.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import torch

from fak.engine.kvcache import KEY_TILE, KVCache
from fak.engine.numerics import MIN_ROWS_ATTENTION, PackedLinear, ProbeReport, probe
from fak.engine.rotary import RotaryTables, rotate
from fak.engine.weights import GGUFCheckpoint, LlamaConfig

__all__ = ["Block", "Transformer", "decode_step", "greedy", "prefill"]

PREFILL_CHUNK = 512


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """x [M, D] -> [M, D]; the reduction is per row over D, row-count invariant."""
    variance = x.pow(2).mean(-1, keepdim=True)
    return weight * (x * variance.add_(eps).rsqrt_())


def silu(x: torch.Tensor) -> torch.Tensor:
    """x * sigmoid(x) from exp, add and divide (torch's fused silu is not size-invariant)."""
    return x / torch.neg(x).exp_().add_(1.0)


@dataclass(frozen=True, slots=True)
class _Tile:
    """Query rows whose cache row falls in the same KEY_TILE: they all read keys [0, span).

    ``span`` is a function of a row's position alone (its key tile's end), so a token's
    attention GEMMs have the same reduction length however its batch was formed. Only the
    last key tile can hold keys after a query, so only it is masked. ``pad`` repeats the last
    row when the tile has fewer rows than the batch-invariant GEMM needs.
    """

    rows: slice  # in the [M' * group] query-row order
    span: int
    mask: torch.Tensor  # [R, KEY_TILE] bool, True = hidden
    pad: torch.Tensor | None


def _query_tiles(positions: torch.Tensor, group: int) -> list[_Tile]:
    """Split query rows (cache row of each new token, ascending) by the key tile they sit in."""
    tile_of = (positions // KEY_TILE).tolist()
    tiles: list[_Tile] = []
    start = 0
    for i in range(1, len(tile_of) + 1):
        if i < len(tile_of) and tile_of[i] == tile_of[start]:
            continue
        span = (int(tile_of[start]) + 1) * KEY_TILE
        rows = slice(start * group, i * group)
        row_pos = positions[start:i].repeat_interleave(group)  # [R]
        pad = None
        if row_pos.numel() < MIN_ROWS_ATTENTION:
            pick = torch.arange(MIN_ROWS_ATTENTION).clamp_(max=row_pos.numel() - 1)
            row_pos = row_pos[pick]
            pad = pick + rows.start
        last_tile = torch.arange(span - KEY_TILE, span)
        mask = last_tile.unsqueeze(0) > row_pos.unsqueeze(1)
        tiles.append(_Tile(rows, span, mask, pad))
        start = i
    return tiles


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
        tiles = _query_tiles(idx + at, cfg.n_heads // cfg.n_kv_heads)

        x = self.embed[token_rows]  # [M', D]
        for layer, blk in enumerate(self.blocks):
            h = rms_norm(x, blk.attn_norm, cfg.norm_eps)
            x = x + blk.wo(self._attention(layer, blk, h, cache, at, m_new, cos, sin, tiles))
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
        tiles: list[_Tile],
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
        # Queries grouped by the kv head they share: [G, M' * group, E].
        q = (qk[:, :n_h] * self.scale).view(rows, n_g, group, e).transpose(0, 1)
        q = q.reshape(n_g, rows * group, e)
        keys, vals = cache.k[layer], cache.v[layer]  # [G, cap, E], [G, cap, E + 1]
        outs = []
        for t in tiles:
            qt = q[:, t.rows] if t.pad is None else q[:, t.pad]  # [G, R, E], R >= 4
            scores = torch.bmm(qt, keys[:, : t.span].transpose(1, 2))  # [G, R, span]
            scores[:, :, t.span - KEY_TILE :].masked_fill_(t.mask, float("-inf"))
            probs = scores.sub_(scores.amax(-1, keepdim=True)).exp_()
            acc = torch.bmm(probs, vals[:, : t.span])  # [G, R, E + 1]: numerator | denominator
            n = t.rows.stop - t.rows.start
            outs.append(acc[:, :n, :e] / acc[:, :n, e:])
        out = outs[0] if len(outs) == 1 else torch.cat(outs, dim=1)  # [G, M' * group, E]
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
