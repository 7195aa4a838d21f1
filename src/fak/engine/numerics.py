"""Batch-invariant projections (float32, or 4-bit for fast mode) and the probe that proves them.

Exactness (reused prefix == recompute, bit for bit) needs every token's arithmetic to be the
same whatever else shares its batch. Measured on CPU torch: oneDNN linears over pre-packed
weights give each output row the same bits for any row count (one row included) when the
reduction is at most 1024 long, and MKL's batched GEMMs (``bmm``) do for any row count >= 4 at a
fixed reduction length (with or without ``MKL_CBWR=AUTO,STRICT``, which fak still requests: plain
2-D GEMMs of the same shapes were row-dependent without it). Fast mode's int4 weight-only
kernel (bfloat16 activations) is row-invariant too, at every reduction length the model has, and
so is its own compiled one (``q4.py``, 8-bit activations).
``probe()`` re-checks the shapes the model uses, on this machine, in this process; the engine
refuses exact (bit-for-bit) reuse when it fails. No model code lives here. Tier T3.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

import torch

from fak.engine.q4 import Q4Linear

__all__ = [
    "INT4_GROUP",
    "MAX_K",
    "MIN_ROWS_ATTENTION",
    "Int4Linear",
    "Linear",
    "PackedLinear",
    "ProbeReport",
    "int4_available",
    "one_thread",
    "onednn_available",
    "probe",
]

log = logging.getLogger(__name__)

# MKL's batched GEMMs are row-invariant from 4 rows up (1-3 rows take other paths).
MIN_ROWS_ATTENTION = 4
# oneDNN packs weights for this batch-size hint; any hint >= 2 gave row-invariant kernels.
_PACK_HINT = 2
# Longest reduction for which a packed oneDNN linear is row-invariant down to one row.
MAX_K = 1024


def onednn_available() -> bool:
    try:
        return bool(torch.backends.mkldnn.is_available()) and hasattr(  # type: ignore[no-untyped-call]
            torch.ops.mkldnn, "_linear_pointwise"
        )
    except (AttributeError, RuntimeError):  # pragma: no cover - depends on the torch build
        return False


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """Run the enclosed torch ops on the calling thread alone (no parallel region opened)."""
    n = torch.get_num_threads()
    if n == 1:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(n)


class Linear(Protocol):
    """A projection y = x @ W.T over float32 rows x [M, in] -> float32 [M, out]."""

    in_features: int
    out_features: int

    def __call__(self, x: torch.Tensor) -> torch.Tensor: ...


class PackedLinear:
    """y = x @ W.T with W [out, in] packed once for oneDNN (or plain MKL as the fallback).

    oneDNN's packed kernels give a row the same bits for any row count, one row included, as
    long as the reduction is at most ``MAX_K`` long; a longer one (the MLP's down projection)
    is split into equal parts whose results are added in a fixed order.
    """

    __slots__ = ("_parts", "in_features", "onednn", "out_features")

    def __init__(self, weight: torch.Tensor, *, onednn: bool = True) -> None:
        self.onednn = onednn and onednn_available()
        self.out_features, k_in = (int(d) for d in weight.shape)
        self.in_features = k_in
        n_parts = -(-k_in // MAX_K) if self.onednn else 1
        if k_in % n_parts:
            n_parts = 1
        step = k_in // n_parts
        self._parts: list[tuple[int, int, torch.Tensor]] = []
        for i in range(n_parts):
            w = weight[:, i * step : (i + 1) * step].contiguous()
            packed = torch.ops.mkldnn._reorder_linear_weight(w, _PACK_HINT) if self.onednn else w
            self._parts.append((i * step, (i + 1) * step, packed))

    def _one(self, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        if self.onednn:
            out: torch.Tensor = torch.ops.mkldnn._linear_pointwise(x, w, None, "none", [], "")
            return out
        return torch.nn.functional.linear(x, w)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if len(self._parts) == 1:
            return self._one(x, self._parts[0][2])
        a, b, w = self._parts[0]
        y = self._one(x[:, a:b].contiguous(), w)
        for a, b, w in self._parts[1:]:
            y.add_(self._one(x[:, a:b].contiguous(), w))
        return y


# Fast mode quantizes weights in groups of this many along the reduction (a Q4_1 block's size).
INT4_GROUP = 32


def int4_available() -> bool:
    """True when this torch build has the CPU int4 weight-only matmul fast mode uses."""
    return hasattr(torch.ops.aten, "_weight_int4pack_mm_for_cpu") and hasattr(
        torch.ops.aten, "_convert_weight_to_int4pack_for_cpu"
    )


class Int4Linear:
    """Fast mode's projection: 4-bit weights, bfloat16 activations, float32 in and out.

    W [out, in] is quantized per group of ``INT4_GROUP`` inputs with an offset and a step
    (asymmetric, as GGUF's Q4_1 is: a Q4_1 tensor's blocks come back on the same grid, only the
    step and offset rounded to bfloat16). torch's CPU int4 kernel streams a quarter of the
    bytes a bfloat16 weight would; it gives each output row the same bits for any row count,
    which the probe re-checks. Not exact against float32: that is what fast mode trades.
    """

    __slots__ = ("_packed", "_scales", "in_features", "out_features")

    def __init__(self, weight: torch.Tensor) -> None:
        n_out, k_in = (int(d) for d in weight.shape)
        if k_in % INT4_GROUP or n_out % 16:
            raise ValueError(f"int4 weights need in % {INT4_GROUP} == 0 and out % 16 == 0")
        self.out_features, self.in_features = n_out, k_in
        groups = weight.float().reshape(n_out, k_in // INT4_GROUP, INT4_GROUP)
        low = groups.amin(-1)
        step = (groups.amax(-1) - low) / 15
        step = torch.where(step > 0, step, torch.ones_like(step))
        q = ((groups - low.unsqueeze(-1)) / step.unsqueeze(-1)).round_().clamp_(0, 15)
        q_int = q.to(torch.int32).reshape(n_out, k_in)
        self._packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu(q_int, 1)
        # the kernel computes (q - 8) * step + zero, so zero = low + 8 * step
        zero = low + 8 * step
        self._scales = torch.stack([step.t(), zero.t()], dim=-1).to(torch.bfloat16).contiguous()

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = torch.ops.aten._weight_int4pack_mm_for_cpu(
            x.to(torch.bfloat16), self._packed, INT4_GROUP, self._scales
        )
        return out.float()


@dataclass(frozen=True, slots=True)
class ProbeReport:
    """What the start-up probe found; ``ok`` only when every check matched bit for bit.

    ``min_rows`` is the smallest batch the linears are row-invariant for (1 or 2; the
    forward pass pads smaller batches by repeating the last row). ``thread_invariant``: every
    kernel gave the same bits on one thread as on all of them, so the engine may change its
    thread count between steps (``threads.py``) and run small attention tiles on one thread;
    ``thread_failures`` names what differed.
    """

    ok: bool
    backend: str
    min_rows: int
    failures: tuple[str, ...]
    thread_invariant: bool = False
    thread_failures: tuple[str, ...] = ()


def _rows_invariant(fn: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, m: int) -> bool:
    ref = fn(x)
    total = int(x.shape[0])
    for rows in sorted({m, m + 1, 5, total // 2}):
        for off in (0, 3, total - rows):
            if not torch.equal(fn(x[off : off + rows].contiguous()), ref[off : off + rows]):
                return False
    return True


def probe(linears: Sequence[Linear], *, tile: int = 128, seed: int = 1234) -> ProbeReport:
    """Check, on this process's kernels, every invariance the exact forward pass relies on.

    ``linears`` are the model's own projections (one of each shape is enough).
    """
    gen = torch.Generator().manual_seed(seed)
    failures: list[str] = []
    thread_failures: list[str] = []
    if all(isinstance(lin, Int4Linear) for lin in linears):
        backend = "int4-bf16"
    elif all(isinstance(lin, Q4Linear) for lin in linears):
        backend = "q4-q8"
    elif all(getattr(lin, "onednn", False) for lin in linears):
        backend = "onednn-packed"
    else:
        backend = "mkl"
    min_rows = 1
    with torch.inference_mode():
        for lin in linears:
            x = torch.randn(24, lin.in_features, generator=gen)
            while min_rows <= 4 and not _rows_invariant(lin, x, min_rows):
                min_rows *= 2
            for m in (1, 4, 24):
                with one_thread():
                    alone = lin(x[:m])
                if not torch.equal(alone, lin(x[:m])):
                    shape = f"{lin.out_features}x{lin.in_features}"
                    thread_failures.append(f"linear {shape} rows={m}")
        if min_rows > 4:
            failures.append("linear rows")
        # Attention: [G, R, 64] @ [G, 64, span] and [G, R, span] @ [G, span, 65] for spans
        # that are multiples of the key tile; only the row count varies.
        for span in (tile, 3 * tile, 4 * tile):  # every key-block length attention uses
            q = torch.randn(3, 300, 64, generator=gen)
            keys = torch.randn(3, span, 64, generator=gen)
            p = torch.rand(3, 300, span, generator=gen)
            vals = torch.randn(3, span, 65, generator=gen)
            ref_s = torch.bmm(q, keys.transpose(1, 2))
            ref_v = torch.bmm(p, vals[..., :64])  # V read in place beside the ones column
            ref_t = p.sum(-1, keepdim=True)  # the softmax denominator
            ref_e = p.exp2()  # attention's probabilities are exp2 (model.py)
            for r in (MIN_ROWS_ATTENTION, 6, 9, 120):
                for serial in (False, True):  # small tiles run on one thread (model.py)
                    with one_thread() if serial else contextlib.nullcontext():
                        got_s = torch.bmm(q[:, 5 : 5 + r], keys.transpose(1, 2))
                        got_v = torch.bmm(p[:, 7 : 7 + r], vals[..., :64])
                        got_t = p[:, 7 : 7 + r].sum(-1, keepdim=True)
                        got_e = p[:, 7 : 7 + r].exp2()
                    where = f"rows={r} span={span}" + (" one thread" if serial else "")
                    bad = thread_failures if serial else failures
                    if not torch.equal(got_s, ref_s[:, 5 : 5 + r]):
                        bad.append(f"scores {where}")
                    if not torch.equal(got_v, ref_v[:, 7 : 7 + r]):
                        bad.append(f"values {where}")
                    if not torch.equal(got_t, ref_t[:, 7 : 7 + r]):
                        bad.append(f"row sums {where}")
                    if not torch.equal(got_e, ref_e[:, 7 : 7 + r]):
                        bad.append(f"exp2 {where}")
        # Elementwise maths the forward pass uses, over odd lengths and offsets; exp2 only over
        # whole 32-lane vectors (attention applies it to G * R * 128k values; its scalar tail
        # rounds differently, so anything shorter goes through exp).
        z = torch.randn(4099, generator=gen) * 4
        any_length = ((0, 1), (3, 20), (5, 4099), (17, 1000))
        unary = (
            ("exp", torch.exp, any_length),
            ("exp2", torch.exp2, ((0, 32), (3, 355), (5, 4069), (17, 1041))),
            ("rsqrt", lambda t: torch.rsqrt(t.abs() + 0.5), any_length),
        )
        for name, fn, cuts in unary:
            full = fn(z[:4096] if name == "exp2" else z)
            for a, b in cuts:
                if not torch.equal(fn(z[a:b].clone()), full[a:b]):
                    failures.append(f"{name} [{a}:{b}]")
                    break
        rows = torch.randn(40, 576, generator=gen)
        full_mean = rows.pow(2).mean(-1)
        if not torch.equal(rows[3:4].pow(2).mean(-1), full_mean[3:4]):
            failures.append("row mean")
    report = ProbeReport(
        ok=not failures,
        backend=backend,
        min_rows=min(min_rows, 4),
        failures=tuple(failures),
        thread_invariant=not failures and not thread_failures,
        thread_failures=tuple(thread_failures),
    )
    if not report.ok:
        log.warning("engine numerics probe failed (%d checks); exact mode refused", len(failures))
    return report
