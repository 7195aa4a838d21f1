"""Rotary position embedding tables and the one rotation both the model and the cache use (T3).

The cache re-derives a moved key from its stored pre-RoPE copy with exactly the arithmetic the
forward pass used to rotate it the first time (same table row, same elementwise ops), so a
re-rotated key is bitwise equal to a key rotated at that position directly. Rotating an
already-rotated key by an offset would not be, so nothing here composes rotations.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

__all__ = ["RotaryTables", "rotate"]


@dataclass(frozen=True, slots=True)
class RotaryTables:
    """cos/sin for every position up to ``max_positions``: float32 [max_positions, head_dim].

    ``sin`` has its first half negated, so rotate-half is a roll: (-x2, x1) * sin equals
    roll(x) * signed sin exactly (a sign flip is exact in floating point).
    """

    cos: torch.Tensor
    sin: torch.Tensor

    @classmethod
    def build(cls, head_dim: int, theta: float, max_positions: int) -> RotaryTables:
        exponents = torch.arange(0, head_dim, 2, dtype=torch.int64).to(torch.float32) / head_dim
        inv_freq = 1.0 / (theta**exponents)  # [head_dim/2]
        positions = torch.arange(max_positions, dtype=torch.float32)
        freqs = torch.outer(positions, inv_freq)  # [P, head_dim/2]
        emb = torch.cat((freqs, freqs), dim=-1)  # [P, head_dim]
        half = head_dim // 2
        sin = emb.sin()
        sin[:, :half] = -sin[:, :half]
        return cls(cos=emb.cos().contiguous(), sin=sin.contiguous())

    @property
    def max_positions(self) -> int:
        return int(self.cos.shape[0])


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Half-split RoPE: x [..., T, H, D] with cos/sin [T, D] broadcast over heads H.

    Equals x * cos + cat(-x2, x1) * sin, with the sign folded into the table.
    """
    swapped = torch.roll(x, x.shape[-1] // 2, dims=-1)  # (x2, x1)
    return x * cos.unsqueeze(-2) + swapped * sin.unsqueeze(-2)
