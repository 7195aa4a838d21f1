"""Fast mode's own 4-bit x 8-bit kernel, compiled at first use (tier T3).

``q4_kernel.cpp`` multiplies Q4_1-style weights (blocks of 32: 4-bit codes, a step and an
offset) with activations quantized per row to 8 bits per block of 32 — what llama.cpp does for
a Q4_1 model — with AVX2 (or AVX512-VNNI) integer dots, parallel over output rows with torch's
own thread pool. It is compiled once per machine with ``torch.utils.cpp_extension`` (g++ and
ninja) into a cache directory and loaded as the ``torch.ops.fak_q4`` operators. When it cannot
be built or the CPU lacks AVX2, ``kernel()`` says why and fast mode keeps torch's int4 kernel.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import torch

from fak.config import Settings, process_environ, user_cache_dir

__all__ = ["BLOCK", "KERNEL_ENV", "BatchPlan", "Q4Kernel", "Q4Linear", "kernel", "quantize_q4"]

log = logging.getLogger(__name__)

# FAK_Q4_KERNEL=0 keeps fast mode on torch's int4 kernel (=1, the default, builds ours).
KERNEL_ENV = "FAK_Q4_KERNEL"
_SOURCE = Path(__file__).with_name("q4_kernel.cpp")
_NAME = "fak_q4_v15"
_PRE_NONE, _PRE_NORM, _PRE_SWIGLU = 0, 1, 2  # the input transforms the C++ linear knows
# Weights and activations are quantized in blocks of this many inputs (a Q4_1 block's size).
BLOCK = 32


class Q4Kernel:
    """The loaded operators; ``vnni`` selects the AVX512-VNNI dot where the CPU has it."""

    __slots__ = ("vnni",)

    def __init__(self, vnni: bool) -> None:
        self.vnni = vnni

    def linear(
        self,
        x: torch.Tensor,
        wq: torch.Tensor,
        dw: torch.Tensor,
        mw: torch.Tensor,
        *,
        norm: torch.Tensor | None = None,
        eps: float = 0.0,
        swiglu: bool = False,
        residual: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """x [M, K] -> [M, N]; first RMSNorm(x) * norm (``norm``) or silu(x[:, :K]) * x[:, K:]
        (``swiglu``, x [M, 2K]) per row, and ``residual`` + the product after."""
        pre = _PRE_NORM if norm is not None else _PRE_SWIGLU if swiglu else _PRE_NONE
        out: torch.Tensor = torch.ops.fak_q4.linear(
            x, wq, dw, mw, norm, eps, pre, residual, self.vnni
        )
        return out

    def rope_attend(
        self,
        qkv: torch.Tensor,
        rope: tuple[torch.Tensor, torch.Tensor],
        cache: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
        where: tuple[int, int, int],
        sources: tuple[list[torch.Tensor], list[torch.Tensor], list[int]],
        limits: torch.Tensor,
        block: int,
        scale: float,
        n_heads: int,
    ) -> torch.Tensor:
        """One session's attention step. Rotates Q and K of qkv [M, (H + 2G) E] by ``rope``
        (cos, sin [M, E]); writes K, raw K and V of its first ``m_new`` rows into ``cache``
        (K, raw K, V tensors [layers, G, cap, E(+1)]) at ``where`` = (layer, local row, m_new);
        attends query row r = token * group + i over keys [0, limits[r]), key block j read
        from ``sources`` (``KVCache.block_sources``) -> [M, H * E].

        Each query row is computed alone, in a fixed order: row- and thread-invariant. Keys
        are rotated with the same roundings as ``rotary.rotate`` (the cache re-rotates with it).
        """
        out: torch.Tensor = torch.ops.fak_q4.rope_attend(
            qkv, *rope, *cache, *where, *sources, limits, block, scale, n_heads
        )
        return out

    def rope_attend_batch(
        self,
        qkv: torch.Tensor,
        rope: tuple[torch.Tensor, torch.Tensor],
        plan: BatchPlan,
        layer: int,
        block: int,
        scale: float,
        n_heads: int,
    ) -> torch.Tensor:
        """``rope_attend`` for several sessions in one call: session s owns rows
        ``plan.starts[s]`` .. + ``plan.counts[s]`` of qkv [sum M, (H + 2G) E], cos/sin and the
        result [sum M, H * E]. Every row goes through the arithmetic ``rope_attend`` gives it
        (same bits); the query rows of all sessions are split over threads together."""
        out: torch.Tensor = torch.ops.fak_q4.rope_attend_batch(
            qkv,
            *rope,
            *plan.caches,
            layer,
            *plan.rows,
            *plan.sources,
            plan.limits,
            block,
            scale,
            n_heads,
        )
        return out


@dataclass(frozen=True, slots=True)
class BatchPlan:
    """What ``rope_attend_batch`` needs of a step's sessions, built once per step.

    ``caches``: K, raw K and V tensors per session; ``rows``: (local cache row, m_new, first
    row in the batch, rows in the batch) per session; ``sources``: every session's key blocks
    (``KVCache.block_sources``) concatenated, with the number per session; ``limits``: every
    session's query-row limits concatenated.
    """

    caches: tuple[list[torch.Tensor], list[torch.Tensor], list[torch.Tensor]]
    rows: tuple[list[int], list[int], list[int], list[int]]
    sources: tuple[list[torch.Tensor], list[torch.Tensor], list[int], list[int]]
    limits: torch.Tensor


def _cache_dir() -> Path:
    base = Path(user_cache_dir(process_environ()))
    return base / "fak" / "torch_extensions" / f"torch{torch.__version__}"


@contextlib.contextmanager
def _ninja_on_path() -> Iterator[None]:
    """pip's ninja installs its binary beside the interpreter, which need not be on PATH;
    torch's build runs ``ninja`` from the process environment's PATH, so the interpreter's
    directory goes in front for the build only and PATH is put back after it."""
    if shutil.which("ninja") is not None:
        yield
        return
    before = process_environ().get("PATH")
    here = str(Path(sys.executable).parent)
    os.environ["PATH"] = here + os.pathsep + (before or "")
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("PATH", None)
        else:
            os.environ["PATH"] = before


@functools.cache
def kernel() -> Q4Kernel | None:
    """The compiled kernel, or None (logged) when it is disabled, unbuildable or unsupported."""
    if not Settings.from_environ(process_environ()).q4_kernel:
        return None
    try:
        from torch.utils import cpp_extension

        build = _cache_dir() / _NAME
        build.mkdir(parents=True, exist_ok=True)
        with _ninja_on_path():
            cpp_extension.load(
                name=_NAME,
                sources=[str(_SOURCE)],
                # -fopenmp: at::parallel_for is a header template that only runs in parallel when
                # _OPENMP is defined where it is compiled; the link resolves to the libgomp.so.1
                # torch has already loaded (one OpenMP runtime, one thread count)
                extra_cflags=[
                    "-O3",
                    "-fno-math-errno",
                    "-ffp-contract=off",
                    "-fopenmp",
                    "-falign-loops=64",
                ],
                extra_ldflags=["-fopenmp"],
                build_directory=str(build),
                is_python_module=False,
                verbose=False,
            )
        features = int(torch.ops.fak_q4.features())
    except Exception as exc:  # any build or load failure means: keep torch's kernel
        log.warning("fast-mode q4 kernel unavailable (%s); using torch's int4 kernel", exc)
        return None
    if not features & 1:
        log.warning("fast-mode q4 kernel needs AVX2 + FMA; using torch's int4 kernel")
        return None
    return Q4Kernel(vnni=bool(features & 2))


def quantize_q4(weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """W [N, K] -> 4-bit codes [N, K] (int32, 0..15), step and offset [N, K/32] (float16).

    Asymmetric per block, as Q4_1 is: w ~= code * step + offset, with the step and offset in
    float16 as Q4_1 stores them (a GGUF Q4_1 tensor's blocks, dequantized, come back on their
    own grid). Half-precision scales: decode streams every weight once per token, and float32
    ones were a quarter of the bytes.
    """
    n_out, k_in = (int(d) for d in weight.shape)
    if k_in % BLOCK:
        raise ValueError(f"4-bit weights need in % {BLOCK} == 0")
    groups = weight.float().reshape(n_out, k_in // BLOCK, BLOCK)
    low = groups.amin(-1)
    step = (groups.amax(-1) - low) / 15
    step = torch.where(step > 0, step, torch.ones_like(step)).to(torch.float16)
    low16 = low.to(torch.float16)
    q = ((groups - low16.float().unsqueeze(-1)) / step.float().unsqueeze(-1)).round_().clamp_(0, 15)
    return q.to(torch.int32).reshape(n_out, k_in), step.contiguous(), low16.contiguous()


class Q4Linear:
    """y = x @ W.T with W as 4-bit blocks and x quantized to 8 bits per block, on ``kernel()``.

    Each output value is one fixed sequence of operations on one thread (its token's 8-bit
    row, its weight row), so a row's bits do not depend on the batch or the thread count; the
    probe re-checks it. Not exact against float32: that is what fast mode trades.
    """

    __slots__ = ("_kernel", "_mins", "_packed", "_steps", "in_features", "out_features")

    def __init__(self, weight: torch.Tensor, kern: Q4Kernel) -> None:
        codes, step, low = quantize_q4(weight)
        self.out_features, self.in_features = (int(d) for d in codes.shape)
        blocks = codes.to(torch.uint8).reshape(self.out_features, -1, 2, BLOCK // 2)
        # byte j of a block holds element j (low nibble) and element j + 16 (high nibble)
        packed = blocks[:, :, 0] | (blocks[:, :, 1] << 4)
        self._packed = packed.reshape(self.out_features, self.in_features // 2).contiguous()
        self._steps, self._mins, self._kernel = step, low, kern

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return self.fused(x)

    def fused(
        self,
        x: torch.Tensor,
        *,
        norm: torch.Tensor | None = None,
        eps: float = 0.0,
        swiglu: bool = False,
        residual: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """The projection with the row-wise steps around it done in the same call (see
        ``Q4Kernel.linear``): fewer dispatched ops per layer."""
        if x.dtype != torch.float32 or x.stride(-1) != 1:
            x = x.float().contiguous()
        return self._kernel.linear(
            x,
            self._packed,
            self._steps,
            self._mins,
            norm=norm,
            eps=eps,
            swiglu=swiglu,
            residual=residual,
        )


def probe_attention(kern: Q4Kernel, *, seed: int = 99) -> list[str]:
    """Re-check, on this machine, that ``rope_attend`` gives a query row the same bits alone
    as in a batch, on one thread as on all, and that it stores the keys ``rotary.rotate``
    would (the cache re-rotates raw keys with it). Failure names, [] when all hold."""
    from fak.engine.rotary import RotaryTables, rotate

    gen = torch.Generator().manual_seed(seed)
    n_h, n_g, e, block, m, at = 6, 2, 64, 128, 40, 150  # keys [0, at) cached, m rows follow
    rope = RotaryTables.build(e, 1e5, 512)
    qkv = torch.randn(m, (n_h + 2 * n_g) * e, generator=gen)
    k = torch.randn(n_g, at + m, e, generator=gen)
    k_raw, v = torch.zeros_like(k), torch.randn(n_g, at + m, e + 1, generator=gen)

    k = k.unsqueeze(0)  # one layer
    k_raw, v = k_raw.unsqueeze(0), v.unsqueeze(0)

    def run(a: int, b: int) -> torch.Tensor:
        pos = torch.arange(at + a, at + b)
        n_blocks = -(-(at + b) // block)
        sources = ([k] * n_blocks, [v] * n_blocks, [i * block for i in range(n_blocks)])
        return kern.rope_attend(
            qkv[a:b].contiguous(),
            (rope.cos[pos].contiguous(), rope.sin[pos].contiguous()),
            (k, k_raw, v),
            (0, at + a, b - a),
            sources,
            (pos + 1).repeat_interleave(n_h // n_g),
            block,
            0.18,
            n_h,
        )

    full = run(0, m)  # writes every new row's K, raw K and V
    failures: list[str] = []
    pos = torch.arange(at, at + m)
    raw = qkv[:, n_h * e : (n_h + n_g) * e].view(m, n_g, e)
    if not torch.equal(k[0, :, at:].transpose(0, 1), rotate(raw, rope.cos[pos], rope.sin[pos])):
        failures.append("rope_attend keys differ from rotary.rotate")
    for a, b in ((0, 1), (7, 8), (3, 9), (20, 40)):
        if not torch.equal(run(a, b), full[a:b]):
            failures.append(f"rope_attend rows [{a}:{b}]")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        if not torch.equal(run(0, m), full):
            failures.append("rope_attend one thread")
    finally:
        torch.set_num_threads(threads)
    return failures
