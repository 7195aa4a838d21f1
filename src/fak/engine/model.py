"""The Llama forward pass in one readable file (gpt-fast style) (tier T3).

Reads top to bottom: weights for one block, the block (RMSNorm -> attention -> RMSNorm -> SwiGLU
MLP), the model, then ``prefill`` / ``decode_step`` / ``greedy`` as plain functions over an
addressable ``KVCache``. Every step is batch-invariant, so a token's logits do not depend on how
the context was chunked: projections are oneDNN linears on pre-packed weights, attention is
batched MKL GEMMs (>= 4 rows) whose reduction length depends only on the query's position (keys
up to the end of its 128-row key tile, one 512-key block at a time with a running maximum and
exp2 probabilities; the denominator is a row sum of each block's probabilities), and SiLU is
spelled with exp. Everything is float32 except, in fast mode, the projections. Fast mode runs
its own compiled kernels when they build (``q4.py``: 4-bit weights times 8-bit activations, with
RMSNorm / SwiGLU / the residual inside the projection calls, and one rotate-store-attend call a
layer for all sessions that computes every query row alone: ``_layers_q4``), else torch's int4
kernel on bfloat16 activations in the plain loop; both are row-invariant. Shapes are in the
comments: M = new tokens, D = model dim, H/G = query/kv heads, E = head dim, F = MLP dim,
V = vocabulary.
"""

from __future__ import annotations

import dataclasses
import enum
import logging
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import cast

import torch

from fak.config import engine_workers_sleep
from fak.engine import q4
from fak.engine.kvcache import ATT_BLOCK, KEY_TILE, KVCache
from fak.engine.numerics import (
    MIN_ROWS_ATTENTION,
    Int4Linear,
    Linear,
    PackedLinear,
    ProbeReport,
    int4_available,
    one_thread,
    probe,
)
from fak.engine.rotary import RotaryTables, rotate
from fak.engine.threads import RowSplitter, ThreadGovernor
from fak.engine.weights import GGUFCheckpoint, LlamaConfig

log = logging.getLogger(__name__)

__all__ = [
    "Block",
    "EngineMode",
    "Transformer",
    "decode_batch",
    "decode_step",
    "greedy",
    "prefill",
]

PREFILL_CHUNK = 512
# A query tile whose attention is at most this many (row, key) pairs runs on one thread: a
# decode step's attention (4 padded rows) is a few microseconds of work, and splitting it over
# threads costs more in wake-ups than it saves (and under load, a wait for a descheduled
# thread). The probe checks that the kernels give the same bits on one thread as on all.
SERIAL_ATTENTION_PAIRS = 4 * 2048
_LN2 = math.log(2.0)


class EngineMode(enum.StrEnum):
    """The projections' numerics; both modes are batch-invariant with themselves."""

    EXACT = "exact"  # float32 weights: the reference numerics
    FAST = "fast"  # 4-bit weights on bfloat16 activations (everything else float32)


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
    wqkv: Linear  # [(H + 2G) * E, D]
    wo: Linear  # [D, H * E]
    ffn_norm: torch.Tensor  # [D]
    w_gate_up: Linear  # [2F, D]
    w_down: Linear  # [D, F]


class Transformer:
    """SmolLM2 / Llama: embeddings -> N blocks -> RMSNorm -> tied head.

    ``mode`` picks the projections' numerics (``EngineMode``); in either, ``exact`` is True only
    when the start-up probe proved the batch invariance that makes reuse and eviction equal a
    recompute bit for bit (within the mode).
    """

    def __init__(
        self,
        ckpt: GGUFCheckpoint,
        *,
        mode: str = EngineMode.EXACT,
        onednn: bool = True,
        progress: Callable[[str, int, int], None] | None = None,
        adaptive_threads: bool = True,
    ) -> None:
        if mode not in tuple(EngineMode):
            names = ", ".join(EngineMode)
            raise ValueError(f"engine mode must be one of {names}, not {mode!r}")
        if mode == EngineMode.FAST and not int4_available():
            raise ValueError("fast mode needs torch's CPU int4 matmul (torch >= 2.6)")
        cfg = ckpt.config
        self.config: LlamaConfig = cfg
        self.mode = EngineMode(mode)

        q4_kernel = q4.kernel() if self.mode == EngineMode.FAST else None
        # fast mode's own kernels (q4.py): projections and attention, one row at a time
        self.q4: q4.Q4Kernel | None = q4_kernel

        def linear(weight: torch.Tensor) -> Linear:
            if q4_kernel is not None:
                return q4.Q4Linear(weight, q4_kernel)
            if self.mode == EngineMode.FAST:
                return Int4Linear(weight)
            return PackedLinear(weight, onednn=onednn)

        t = {name: torch.from_numpy(arr) for name, arr in ckpt.tensors.items()}
        self.embed = t["embed"].contiguous()  # [V, D]
        self.norm = t["norm"]
        self.head = linear(t.get("head", self.embed))
        self.blocks: list[Block] = []
        for i in range(cfg.n_layers):
            p = f"layers.{i}."
            self.blocks.append(
                Block(
                    attn_norm=t[p + "attn_norm"],
                    wqkv=linear(torch.cat([t[p + "wq"], t[p + "wk"], t[p + "wv"]])),
                    wo=linear(t[p + "wo"]),
                    ffn_norm=t[p + "ffn_norm"],
                    w_gate_up=linear(torch.cat([t[p + "w_gate"], t[p + "w_up"]])),
                    w_down=linear(t[p + "w_down"]),
                )
            )
            if progress is not None:
                progress("pack", i + 1, cfg.n_layers)
        first = self.blocks[0]
        # prove the batch invariance on this machine before promising it
        self.numerics: ProbeReport = probe(
            [first.wqkv, first.wo, first.w_gate_up, first.w_down, self.head]
        )
        if self.q4 is not None and (bad := q4.probe_attention(self.q4)):
            self.numerics = dataclasses.replace(
                self.numerics,
                ok=False,
                thread_invariant=False,
                failures=(*self.numerics.failures, *bad),
            )
        self.exact = self.numerics.ok
        self.min_rows = self.numerics.min_rows if self.exact else 1
        # Thread count per step (torch's setting at load is the most it uses): adaptive only
        # when every kernel was proven to give the same bits on one thread as on all.
        self.serial_small_attention = self.numerics.thread_invariant
        # A big attention tile's query rows are split over the threads (``RowSplitter``),
        # once attention's kernels are seen to give the same bits on its threads.
        # Only when torch's idle OpenMP threads sleep: a spinning one takes the core a part
        # needs (``fak.config.engine_workers_sleep``).
        self.row_splitter = RowSplitter(torch.get_num_threads())
        sleeping = engine_workers_sleep()
        if not sleeping and torch.get_num_threads() > 1:
            log.warning(
                "torch was imported before fak.engine, so OMP_WAIT_POLICY=PASSIVE did not take "
                "effect: idle OpenMP threads spin, long prefills do not split attention over "
                "threads, and a busy core slows every step. Import fak.engine before torch, or "
                "start the process with OMP_WAIT_POLICY=PASSIVE."
            )
        self.split_rows = (
            self.serial_small_attention and sleeping and _splitter_agrees(self.row_splitter)
        )
        self.threads = ThreadGovernor(
            torch.get_num_threads(), adaptive=adaptive_threads and self.numerics.thread_invariant
        )
        self.rope = RotaryTables.build(cfg.head_dim, cfg.rope_theta, cfg.context_length)
        # softmax(s) = exp2(s * log2 e - max) / sum: log2(e) rides on the query scale
        self.scale = math.log2(math.e) / math.sqrt(cfg.head_dim)

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
        return self.forward_batch([(cache, tokens)], all_logits=all_logits)[0]

    def forward_batch(
        self, items: Sequence[tuple[KVCache, torch.Tensor]], *, all_logits: bool = False
    ) -> list[torch.Tensor]:
        """Append tokens to several caches in one pass; per cache, its logits as ``forward``.

        Every session's rows go through the projections together (one weight stream for the
        whole batch); attention runs per session over its own cache. Each session's rows are
        laid out exactly as ``forward`` would lay them out alone, and every kernel involved is
        row-invariant, so its logits do not depend on the batch it shared (witness 6). The step
        runs at the thread count ``self.threads`` picks (the same bits at any count).
        """
        rows = sum(max(int(tokens.shape[0]), self.min_rows) for _, tokens in items)
        keys = max(cache.end + int(tokens.shape[0]) for cache, tokens in items)
        with self.threads.step(rows, keys):
            return self._forward_batch(items, all_logits=all_logits)

    def _forward_batch(
        self, items: Sequence[tuple[KVCache, torch.Tensor]], *, all_logits: bool
    ) -> list[torch.Tensor]:
        cfg = self.config
        group = cfg.n_heads // cfg.n_kv_heads
        slots: list[_Slot] = []
        token_rows: list[torch.Tensor] = []
        positions: list[torch.Tensor] = []
        offset = 0
        for cache, tokens in items:
            m_new = int(tokens.shape[0])
            if m_new == 0:
                raise ValueError("forward needs at least one token per session")
            at = cache.length
            if cache.end + m_new > self.rope.max_positions:
                raise ValueError(
                    f"context of {cache.end + m_new} tokens exceeds {self.rope.max_positions}"
                )
            cache.reserve(at + m_new)
            # Batch-invariant kernels need a minimum row count: repeat the last token (same
            # position).
            rows = max(m_new, self.min_rows)
            idx = torch.arange(rows).clamp_(max=m_new - 1)
            token_rows.append(tokens[idx])
            positions.append(cache.end + idx)  # [M'] absolute positions
            # the torch attention's query tiles (the q4 kernels attend row by row without them)
            tiles = _query_tiles(idx + at, group) if self.q4 is None else []
            limits = (idx + at + 1).repeat_interleave(group)  # keys [0, limit) per query row
            slots.append(
                _Slot(cache, tokens, at, m_new, slice(offset, offset + rows), tiles, limits)
            )
            offset += rows
        pos = torch.cat(positions)
        cos, sin = self.rope.cos[pos], self.rope.sin[pos]  # [sum M', E]

        x = self.embed[torch.cat(token_rows)]  # [sum M', D]
        if self.q4 is not None:
            x = self._layers_q4(x, slots, cos, sin)
        for layer, blk in enumerate(self.blocks if self.q4 is None else ()):
            h = rms_norm(x, blk.attn_norm, cfg.norm_eps)
            x = x + blk.wo(self._attention(layer, blk, h, slots, cos, sin))
            h = rms_norm(x, blk.ffn_norm, cfg.norm_eps)
            gate_up = blk.w_gate_up(h)  # [sum M', 2F]
            gate, up = gate_up[:, : cfg.ffn_dim], gate_up[:, cfg.ffn_dim :]
            x = x + blk.w_down(silu(gate) * up)
        for slot in slots:
            slot.cache.commit(slot.tokens)

        if all_logits:
            logits = self._head(x)
            return [logits[s.rows.start : s.rows.start + s.m_new] for s in slots]
        last = torch.stack([x[s.rows.start + s.m_new - 1] for s in slots])  # [N, D]
        if last.shape[0] < self.min_rows:
            last = last[torch.arange(self.min_rows).clamp_(max=last.shape[0] - 1)]
        logits = self._head(last)
        return [logits[i] for i in range(len(slots))]

    def _head(self, x: torch.Tensor) -> torch.Tensor:
        if self.q4 is not None:
            return cast(q4.Q4Linear, self.head).fused(x, norm=self.norm, eps=self.config.norm_eps)
        return self.head(rms_norm(x, self.norm, self.config.norm_eps))

    def _layers_q4(
        self, x: torch.Tensor, slots: list[_Slot], cos: torch.Tensor, sin: torch.Tensor
    ) -> torch.Tensor:
        """Fast mode's blocks on the q4 kernels: per layer, four projections that apply their
        RMSNorm / SwiGLU / residual in the same call, and one rotate-store-attend call for all
        sessions (every step row-wise: the same batch invariance as the plain loop)."""
        assert self.q4 is not None
        cfg = self.config
        eps, n_h = cfg.norm_eps, cfg.n_heads
        if len(slots) == 1:  # per step: the session's cache tensors and key sources
            s = slots[0]
            own = s.cache
            tensors = (own.k, own.k_raw, own.v)
            sources = own.block_sources(int(s.at + s.m_new))  # keys up to its last row
            where = (s.at - own.shared, s.m_new)
        else:
            plan = self._batch_plan(slots)
        for layer, blk in enumerate(self.blocks):
            wqkv, wo = cast(q4.Q4Linear, blk.wqkv), cast(q4.Q4Linear, blk.wo)
            w_gate_up, w_down = cast(q4.Q4Linear, blk.w_gate_up), cast(q4.Q4Linear, blk.w_down)
            qkv = wqkv.fused(x, norm=blk.attn_norm, eps=eps)  # [sum M', (H + 2G) * E]
            if len(slots) == 1:
                att = self.q4.rope_attend(
                    qkv,
                    (cos, sin),
                    tensors,
                    (layer, *where),
                    sources,
                    s.limits,
                    ATT_BLOCK,
                    self.scale,
                    n_h,
                )
            else:  # every session's rows in one call, split over threads together
                att = self.q4.rope_attend_batch(
                    qkv, (cos, sin), plan, layer, ATT_BLOCK, self.scale, n_h
                )  # [sum M', H * E]
            x = wo.fused(att, residual=x)
            gate_up = w_gate_up.fused(x, norm=blk.ffn_norm, eps=eps)  # [sum M', 2F]
            x = w_down.fused(gate_up, swiglu=True, residual=x)
        return x

    @staticmethod
    def _batch_plan(slots: list[_Slot]) -> q4.BatchPlan:
        """Every session's cache tensors, rows, key sources and limits, for one batched step."""
        ks, kraws, vs = [], [], []
        at, m_new, starts, counts = [], [], [], []
        src_k: list[torch.Tensor] = []
        src_v: list[torch.Tensor] = []
        src_row: list[int] = []
        n_src: list[int] = []
        for s in slots:
            own = s.cache
            ks.append(own.k)
            kraws.append(own.k_raw)
            vs.append(own.v)
            at.append(s.at - own.shared)
            m_new.append(s.m_new)
            starts.append(s.rows.start)
            counts.append(s.rows.stop - s.rows.start)
            bk, bv, brow = own.block_sources(int(s.at + s.m_new))  # keys up to its last row
            src_k += bk
            src_v += bv
            src_row += brow
            n_src.append(len(brow))
        return q4.BatchPlan(
            (ks, kraws, vs),
            (at, m_new, starts, counts),
            (src_k, src_v, src_row, n_src),
            torch.cat([s.limits for s in slots]),
        )

    def _attention(
        self,
        layer: int,
        blk: Block,
        h: torch.Tensor,  # [sum M', D]
        slots: list[_Slot],
        cos: torch.Tensor,
        sin: torch.Tensor,
    ) -> torch.Tensor:
        cfg = self.config
        n_h, n_g, e = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim
        group = n_h // n_g
        qkv = blk.wqkv(h)  # [sum M', (H + 2G) * E]
        total = h.shape[0]
        qk_raw = qkv[:, : (n_h + n_g) * e].view(total, n_h + n_g, e)
        qk = rotate(qk_raw, cos, sin)  # [sum M', H + G, E]
        v = qkv[:, (n_h + n_g) * e :].view(total, n_g, e)
        outs = []
        for s in slots:
            r, m = s.rows, s.m_new
            rows = r.stop - r.start
            s.cache.write(layer, s.at, qk[r][:m, n_h:], qk_raw[r][:m, n_h:], v[r][:m])
            # Queries grouped by the kv head they share: [G, M' * group, E].
            q = (qk[r, :n_h] * self.scale).view(rows, n_g, group, e).transpose(0, 1)
            out = self._attend(layer, s.cache, q.reshape(n_g, rows * group, e), s.tiles)
            outs.append(out.view(n_g, rows, group * e).transpose(0, 1).reshape(rows, n_h * e))
        return outs[0] if len(outs) == 1 else torch.cat(outs)

    def _attend(
        self, layer: int, cache: KVCache, q: torch.Tensor, tiles: list[_Tile]
    ) -> torch.Tensor:
        """Attention of one session's queries q [G, R, E] over its cache -> [G, R, E].

        Keys are read in ATT_BLOCK blocks aligned to absolute position; scores are computed per
        block, and the probability-value products are summed block by block in a fixed order,
        so a block contributes the same bits wherever it is stored (a fork's shared blocks).
        """
        out = torch.empty_like(q)  # every row is written by exactly one tile
        split: list[tuple[_Tile, torch.Tensor]] = []
        for t in tiles:
            qt = q[:, t.rows] if t.pad is None else q[:, t.pad]  # [G, R, E], R >= 4
            rows = int(qt.shape[1])
            n = t.rows.stop - t.rows.start
            if self.serial_small_attention and rows * t.span <= SERIAL_ATTENTION_PAIRS:
                with one_thread():
                    out[:, t.rows] = self._attend_tile(layer, cache, qt, t.mask, t.span)[:, :n]
            elif self._row_parts(rows) > 1:
                split.append((t, qt))
            else:
                out[:, t.rows] = self._attend_tile(layer, cache, qt, t.mask, t.span)[:, :n]
        if split:
            self._attend_rows(layer, cache, split, out)
        return out  # [G, M' * group, E]

    def _row_parts(self, rows: int) -> int:
        """How many threads share a tile of ``rows`` query rows (each part >= 4 rows)."""
        if not (self.split_rows and self.serial_small_attention):
            return 1  # threads may only run kernels on their own when the bits cannot differ
        most = min(torch.get_num_threads(), self.row_splitter.threads)
        return max(1, min(most, rows // MIN_ROWS_ATTENTION))

    def _attend_rows(
        self,
        layer: int,
        cache: KVCache,
        split: list[tuple[_Tile, torch.Tensor]],
        out: torch.Tensor,
    ) -> None:
        """Big tiles with their query rows split evenly over the threads (one torch thread
        each): every thread runs the whole flash loop for its share of every tile, and writes
        its rows of ``out`` itself. One hand-off per layer, not per tile: each return to
        torch's own threads wakes their sleeping workers, and on a 6,000-token prefill the
        per-tile hand-offs cost ~0.4 s of stalls on the next parallel op."""
        parts = min(self._row_parts(int(qt.shape[1])) for _, qt in split)

        def part(i: int) -> None:
            for t, qt in split:
                rows = int(qt.shape[1])
                a, b = rows * i // parts, rows * (i + 1) // parts
                got = self._attend_tile(layer, cache, qt[:, a:b], t.mask[a:b], t.span)
                keep = min(b, t.rows.stop - t.rows.start) - a  # padding rows are dropped
                if keep > 0:
                    out[:, t.rows.start + a : t.rows.start + a + keep] = got[:, :keep]

        self.row_splitter.map(part, parts)

    def _attend_tile(
        self,
        layer: int,
        cache: KVCache,
        qt: torch.Tensor,
        mask: torch.Tensor,
        span: int,
    ) -> torch.Tensor:
        """Query rows qt [G, R, E] (pre-scaled by log2(e)/sqrt(E)) over keys [0, span).

        Flash-style: one ATT_BLOCK of keys at a time, a running row maximum, probabilities as
        exp2 (three times cheaper than exp here; the log2(e) is folded into the query scale;
        a block's scores are G * R * (multiple of 128) values, whole vectors for exp2), and
        the numerator (probabilities @ V, 64 columns: the cache's ones column is not read, a
        65th column cost ~20 % more GEMM time than a row sum) and denominator rescaled when the
        maximum grows. Nothing span-sized is materialised: a block's scores stay in cache,
        where the one-shot softmax streamed [G, R, span] through memory several times. Blocks
        are visited in a fixed order from position 0, so a row's bits depend only on its
        position and its keys. ``mask`` [R, KEY_TILE] hides the last key tile's future keys.
        """
        e = self.config.head_dim
        acc = total = top = torch.empty(0)
        for a in range(0, span, ATT_BLOCK):
            b = min(a + ATT_BLOCK, span)
            keys, vals = cache.key_block(layer, a, b)
            scores = torch.bmm(qt, keys.transpose(1, 2))  # [G, R, b - a]
            if b == span:  # only the last key tile can hold keys after a query
                scores[:, :, b - a - KEY_TILE :].masked_fill_(mask, float("-inf"))
            block_top = scores.amax(-1, keepdim=True)  # [G, R, 1]
            if a == 0:
                top = block_top
                probs = scores.sub_(top).exp2_()
                acc = torch.bmm(probs, vals[..., :e])  # [G, R, E]
                total = probs.sum(-1, keepdim=True)  # [G, R, 1]
                continue
            new_top = torch.maximum(top, block_top)
            # 2^(top - new_top) as exp(. * ln 2): exp gives the same bits at any length, exp2
            # only on whole 32-lane vectors (and [G, R, 1] is 12 values in a decode step)
            scale = top.sub_(new_top).mul_(_LN2).exp_()
            probs = scores.sub_(new_top).exp2_()
            acc.mul_(scale).add_(torch.bmm(probs, vals[..., :e]))
            total.mul_(scale).add_(probs.sum(-1, keepdim=True))
            top = new_top
        return acc / total


def _splitter_agrees(splitter: RowSplitter, seed: int = 4321) -> bool:
    """Attention's kernels (score and value GEMMs, exp2, row sums) give the same bits on each
    of the splitter's threads as on torch's own threads (the probe checked one thread on the
    calling thread; the splitter's are other OS threads with their own MKL state)."""
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(3, 200, 64, generator=gen)
    keys = torch.randn(3, ATT_BLOCK, 64, generator=gen)
    vals = torch.randn(3, ATT_BLOCK, 65, generator=gen)

    def kernels(_: int) -> list[torch.Tensor]:
        probs = torch.bmm(q, keys.transpose(1, 2)).mul_(0.01).exp2_()
        return [probs, torch.bmm(probs, vals[..., :64]), probs.sum(-1, keepdim=True)]

    with torch.inference_mode():
        ref = kernels(0)
        return all(
            torch.equal(a, b)
            for got in splitter.map(kernels, splitter.threads)
            for a, b in zip(got, ref, strict=True)
        )


@dataclass(frozen=True, slots=True)
class _Slot:
    """One session's part of a batched forward: its cache, new tokens and rows in the batch."""

    cache: KVCache
    tokens: torch.Tensor  # [M]
    at: int  # cache row of the first new token
    m_new: int
    rows: slice  # its rows [start, start + M') in the batch
    tiles: list[_Tile]
    limits: torch.Tensor  # [M' * group] keys each query row sees (its cache row + 1)


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


def decode_batch(
    model: Transformer, caches: Sequence[KVCache], tokens: Sequence[int]
) -> list[torch.Tensor]:
    """Append one token to each cache in one batched step; each cache's next-token logits."""
    if len(caches) != len(tokens):
        raise ValueError("decode_batch needs one token per cache")
    with torch.inference_mode():
        items = [
            (c, torch.tensor([t], dtype=torch.int64)) for c, t in zip(caches, tokens, strict=True)
        ]
        return model.forward_batch(items)


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
