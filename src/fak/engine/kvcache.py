"""The addressable KV cache: a kernel-owned object with explicit positions (tier T3).

Per layer it holds post-RoPE keys, pre-RoPE keys and values (with a trailing ones column the
attention uses to form its softmax denominator in the same GEMM), plus the token id and the
absolute position of every row. Rows are always compact: row i holds position i of the prefix
it starts at (``start``, 0 for a whole context; a radix-tree segment starts deeper). Operations:
clone, slice, concat, ``fork`` (a session over a shared prefix: whole ``ATT_BLOCK`` key blocks
are read from the parent in place, only the block holding the divergence is copied), and
``evict(start, n)`` which slices a span out of every layer, compacts positions and re-rotates
each moved survivor's key from its pre-RoPE copy in one rotation. It never runs the model:
recomputing what attended to an evicted span is ``engine.py``'s job.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from fak.engine.rotary import RotaryTables, rotate

__all__ = ["ATT_BLOCK", "KEY_TILE", "KVCache"]

# Attention reads keys in whole tiles of this many rows; capacity is kept a multiple.
KEY_TILE = 128
# Attention sums its key blocks of this many rows (aligned to absolute position) in a fixed
# order, so a block gives the same bits wherever it is stored: a fork shares whole blocks.
ATT_BLOCK = 512


def _round_up(n: int, block: int = KEY_TILE) -> int:
    return max(block, -(-n // block) * block)


class KVCache:
    """K, pre-RoPE K and V for every layer, rows [0, length) valid, capacity a multiple of KEY_TILE.

    Shapes: ``k``/``k_raw`` [layers, kv_heads, capacity, head_dim]; ``v`` [layers, kv_heads,
    capacity, head_dim + 1] (last column is 1.0); ``tokens``/``positions`` int64 [capacity].
    Rows past ``length`` hold finite stale values: the attention masks them and multiplies them
    by exact zeros, so they never change a result.

    A fork (``base`` set) reads its first ``shared`` rows (a multiple of ``ATT_BLOCK``) from the
    parent cache it was forked from, without a copy; its own tensors hold rows [shared, length)
    at local index ``row - shared``. Public row numbers always count from the context start.
    The parent is frozen while forks exist (``forks`` > 0): its shared rows cannot change.
    """

    __slots__ = (
        "_length",
        "_owners",
        "base",
        "forks",
        "k",
        "k_raw",
        "positions",
        "rope",
        "shared",
        "start",
        "tokens",
        "v",
    )

    def __init__(
        self,
        *,
        n_layers: int,
        n_kv_heads: int,
        head_dim: int,
        rope: RotaryTables,
        capacity: int = 0,
        start: int = 0,
    ) -> None:
        cap = _round_up(capacity)
        self.k = torch.zeros(n_layers, n_kv_heads, cap, head_dim)
        self.k_raw = torch.zeros(n_layers, n_kv_heads, cap, head_dim)
        self.v = torch.zeros(n_layers, n_kv_heads, cap, head_dim + 1)
        self.v[..., head_dim] = 1.0
        self.tokens = torch.zeros(cap, dtype=torch.int64)
        self.positions = torch.zeros(cap, dtype=torch.int64)
        self.rope = rope
        self.start = start
        self._length = 0
        self.base: KVCache | None = None
        self.shared = 0
        self.forks = 0
        # for a fork, per shared block: (cache whose own tensors hold it, that cache's ``shared``)
        self._owners: list[tuple[KVCache, int]] = []

    # ---- shape -----------------------------------------------------------------------------
    def __len__(self) -> int:
        return self._length

    @property
    def length(self) -> int:
        return self._length

    @property
    def end(self) -> int:
        """Absolute position one past the last row."""
        return self.start + self._length

    @property
    def capacity(self) -> int:
        return int(self.k.shape[2])

    @property
    def n_layers(self) -> int:
        return int(self.k.shape[0])

    @property
    def head_dim(self) -> int:
        return int(self.k.shape[3])

    @property
    def own_rows(self) -> int:
        """Rows held in this cache's own tensors (all of them unless it is a fork)."""
        return self._length - self.shared

    def token_ids(self) -> list[int]:
        own = [int(t) for t in self.tokens[: self.own_rows].tolist()]
        if self.base is None:
            return own
        return self.base.token_ids()[: self.shared] + own

    def row_bytes(self) -> int:
        """Bytes one cached row costs (K, pre-RoPE K and V of every layer, token, position)."""
        return (self.k[:, :, 0].numel() * 2 + self.v[:, :, 0].numel()) * 4 + 16

    def nbytes(self) -> int:
        """Bytes of the valid rows this cache holds itself (a fork's shared rows not counted)."""
        return self.row_bytes() * self.own_rows

    def key_block(self, layer: int, a: int, b: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Keys [G, b-a, E] and values [G, b-a, E+1] of rows [a, b) inside one ATT_BLOCK."""
        if b <= self.shared:
            owner, off = self._owners[a // ATT_BLOCK]
            return owner.k[layer, :, a - off : b - off], owner.v[layer, :, a - off : b - off]
        a, b = a - self.shared, b - self.shared
        return self.k[layer, :, a:b], self.v[layer, :, a:b]

    def _empty_like(self, capacity: int, start: int) -> KVCache:
        nl, kvh, _, hd = self.k.shape
        return KVCache(
            n_layers=nl, n_kv_heads=kvh, head_dim=hd, rope=self.rope, capacity=capacity, start=start
        )

    def reserve(self, total: int) -> None:
        """Make room for ``total`` rows (grows geometrically; keeps contents)."""
        total -= self.shared
        if total <= self.capacity:
            return
        bigger = self._empty_like(max(total, 2 * self.capacity), self.start)
        n = self.own_rows
        bigger.k[:, :, :n] = self.k[:, :, :n]
        bigger.k_raw[:, :, :n] = self.k_raw[:, :, :n]
        bigger.v[:, :, :n] = self.v[:, :, :n]
        bigger.tokens[:n] = self.tokens[:n]
        bigger.positions[:n] = self.positions[:n]
        self.k, self.k_raw, self.v = bigger.k, bigger.k_raw, bigger.v
        self.tokens, self.positions = bigger.tokens, bigger.positions

    # ---- writes (the forward pass) ---------------------------------------------------------
    def write(
        self,
        layer: int,
        at: int,
        k: torch.Tensor,
        k_raw: torch.Tensor,
        v: torch.Tensor,
    ) -> None:
        """Store rows [at, at+T) of one layer from k/k_raw/v shaped [T, kv_heads, head_dim]."""
        n = k.shape[0]
        hd = self.head_dim
        at -= self.shared
        self.k[layer, :, at : at + n] = k.transpose(0, 1)
        self.k_raw[layer, :, at : at + n] = k_raw.transpose(0, 1)
        self.v[layer, :, at : at + n, :hd] = v.transpose(0, 1)

    def block_sources(self, end: int) -> tuple[list[torch.Tensor], list[torch.Tensor], list[int]]:
        """Where each ATT_BLOCK of rows [0, end) lives, as ``key_block`` reads it: per block the
        whole K and V tensors [layers, kv_heads, rows, ...] holding it and the local row it
        starts at (a kernel indexes them by layer itself, so one list serves every layer)."""
        ks: list[torch.Tensor] = []
        vs: list[torch.Tensor] = []
        rows: list[int] = []
        for a in range(0, end, ATT_BLOCK):
            if min(a + ATT_BLOCK, end) <= self.shared:
                owner, off = self._owners[a // ATT_BLOCK]
                ks.append(owner.k)
                vs.append(owner.v)
                rows.append(a - off)
            else:
                ks.append(self.k)
                vs.append(self.v)
                rows.append(a - self.shared)
        return ks, vs, rows

    def commit(self, token_ids: torch.Tensor) -> None:
        """Record the tokens whose rows the forward pass just wrote; advances ``length``."""
        n = int(token_ids.shape[0])
        at = self.own_rows
        self.tokens[at : at + n] = token_ids
        self.positions[at : at + n] = torch.arange(self.end, self.end + n, dtype=torch.int64)
        self._length += n

    # ---- copies ----------------------------------------------------------------------------
    def clone(self, extra: int = 0) -> KVCache:
        """A deep copy of the valid rows (room for ``extra`` more); a fork's clone shares too."""
        if self.base is None:
            return self.slice(0, self._length, extra=extra)
        return self.base._forked(self._length, self.shared, self, extra)

    def slice(self, a: int, b: int, *, extra: int = 0) -> KVCache:
        """Rows [a, b) as a new cache starting at absolute position ``start + a``."""
        if not 0 <= a <= b <= self._length:
            raise IndexError(f"slice [{a}, {b}) outside a cache of {self._length} rows")
        out = self._empty_like(b - a + extra, self.start + a)
        self._copy_rows(out, 0, a, b)
        out._length = b - a
        return out

    def _copy_rows(self, out: KVCache, at: int, a: int, b: int) -> None:
        """Copy public rows [a, b) into ``out``'s own tensors from local row ``at`` on."""
        if a < self.shared:
            assert self.base is not None
            cut = min(b, self.shared)
            self.base._copy_rows(out, at, a, cut)
            at, a = at + cut - a, cut
        if a >= b:
            return
        n, la, lb = b - a, a - self.shared, b - self.shared
        out.k[:, :, at : at + n] = self.k[:, :, la:lb]
        out.k_raw[:, :, at : at + n] = self.k_raw[:, :, la:lb]
        out.v[:, :, at : at + n] = self.v[:, :, la:lb]
        out.tokens[at : at + n] = self.tokens[la:lb]
        out.positions[at : at + n] = self.positions[la:lb]

    def fork(self, length: int | None = None, *, extra: int = 0) -> KVCache:
        """A new session over the first ``length`` rows, sharing whole ATT_BLOCKs without a copy.

        Only the rows of the block the prefix ends in are copied (copy-on-write at the
        divergence); the parent cannot be evicted from until every fork is released. A fork can
        be forked in turn: each shared block is read from whichever cache in the chain holds it.
        """
        if self.start != 0:
            raise ValueError("fork a cache that starts at position 0")
        n = self._length if length is None else length
        if not 0 <= n <= self._length:
            raise IndexError(f"prefix of {n} rows outside a cache of {self._length}")
        return self._forked(n, (n // ATT_BLOCK) * ATT_BLOCK, self, extra)

    def _forked(self, n: int, shared: int, src: KVCache, extra: int) -> KVCache:
        """A fork of ``self`` sharing rows [0, shared); rows [shared, n) copied from ``src``."""
        out = self._empty_like(n - shared + extra, 0)
        src._copy_rows(out, 0, shared, n)
        out.base = self if shared else None
        out.shared = shared
        out._length = n
        if shared:
            self.forks += 1
            out._owners = [
                self._owners[i] if i < len(self._owners) else (self, self.shared)
                for i in range(shared // ATT_BLOCK)
            ]
        return out

    def release(self) -> None:
        """Drop this fork (its rows are discarded): the parent may change again once all are."""
        if self.base is not None:
            self.base.forks -= 1
            self.base = None
        self.shared = 0
        self._owners = []
        self._length = 0

    def unshare(self) -> None:
        """Copy the shared rows into this cache's own tensors; it stops reading its parent."""
        base = self.base
        if base is None:
            return
        self._frozen_check()  # forks of this one read its own tensors in place
        own = self._empty_like(self._length, 0)
        self._copy_rows(own, 0, 0, self._length)
        self.k, self.k_raw, self.v = own.k, own.k_raw, own.v
        self.tokens, self.positions = own.tokens, own.positions
        self.base, self.shared, self._owners = None, 0, []
        base.forks -= 1

    def _frozen_check(self) -> None:
        if self.forks:
            raise RuntimeError("this cache is shared by forks; it cannot be changed in place")

    @staticmethod
    def concat(parts: Sequence[KVCache], *, extra: int = 0) -> KVCache:
        """Join caches whose positions are contiguous (a radix path) into one new cache."""
        if not parts:
            raise ValueError("concat needs at least one cache")
        first = parts[0]
        if any(p.base is not None for p in parts):
            raise ValueError("concatenate whole caches, not forks")
        total = sum(p.length for p in parts)
        out = first._empty_like(total + extra, first.start)
        at = 0
        for part in parts:
            if part.start != first.start + at:
                raise ValueError("caches to concatenate must be contiguous in position")
            n = part.length
            out.k[:, :, at : at + n] = part.k[:, :, :n]
            out.k_raw[:, :, at : at + n] = part.k_raw[:, :, :n]
            out.v[:, :, at : at + n] = part.v[:, :, :n]
            out.tokens[at : at + n] = part.tokens[:n]
            out.positions[at : at + n] = part.positions[:n]
            at += n
        out._length = total
        return out

    # ---- eviction --------------------------------------------------------------------------
    def evict(self, start: int, n: int) -> int:
        """Remove rows [start, start+n) from every layer; returns the number removed.

        Survivors after the span move down by ``n``: their positions are compacted and their
        keys re-derived from the stored pre-RoPE keys with a single rotation at the new
        position. Values carry no position and are moved as they are. Survivors that had
        attended to the span keep that influence in their K/V content; only recomputing them
        removes it (``Engine.evict_exact``).
        """
        length = self._length
        if n <= 0 or start < 0 or start >= length:
            return 0
        self._frozen_check()
        if start < self.shared:
            self.unshare()
        n = min(n, length - start)
        tail = length - (start + n)
        off = self.shared
        if tail:
            src = slice(start + n - off, length - off)
            dst = slice(start - off, start - off + tail)
            self.k_raw[:, :, dst] = self.k_raw[:, :, src].clone()
            self.v[:, :, dst] = self.v[:, :, src].clone()
            self.tokens[dst] = self.tokens[src].clone()
            new_pos = torch.arange(self.start + start, self.start + start + tail, dtype=torch.int64)
            self.positions[dst] = new_pos
            cos = self.rope.cos[new_pos]
            sin = self.rope.sin[new_pos]
            raw = self.k_raw[:, :, dst].transpose(1, 2)  # [layers, tail, kv_heads, head_dim]
            self.k[:, :, dst] = rotate(raw, cos, sin).transpose(1, 2)
        self._length = length - n
        return n

    def truncate(self, length: int) -> int:
        """Keep rows [0, length): a tail eviction, which has no survivors to re-rotate."""
        return self.evict(length, self._length - length)
