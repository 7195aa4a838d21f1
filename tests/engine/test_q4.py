"""Fast mode's own kernels (``fak.engine.q4``): accuracy, row and thread invariance, fallback."""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest
import torch

from fak.engine import q4
from fak.engine.rotary import RotaryTables, rotate


@pytest.fixture(scope="module")
def kern() -> q4.Q4Kernel:
    k = q4.kernel()
    if k is None:
        pytest.skip("the q4 kernel cannot be built here (no compiler / AVX2)")
    return k


@pytest.fixture
def two_threads() -> Iterator[None]:
    n = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(n)


def _dequantized(weight: torch.Tensor) -> torch.Tensor:
    codes, step, low = q4.quantize_q4(weight)
    n, k = codes.shape
    blocks = codes.float().view(n, -1, q4.BLOCK) * step.float()[..., None] + low.float()[..., None]
    return blocks.view(n, k)


def test_quantize_reproduces_a_q4_grid_exactly() -> None:
    gen = torch.Generator().manual_seed(0)
    codes = torch.randint(0, 16, (32, 64), generator=gen)
    codes[:, ::16] = 0  # every block uses both ends of the grid, as Q4_1 blocks do
    codes[:, 1::16] = 15
    step = torch.rand(32, 2, generator=gen).add_(0.01).half().float()
    low = torch.randn(32, 2, generator=gen).half().float()
    w = (codes.float().view(32, 2, 32) * step[..., None] + low[..., None]).view(32, 64)
    got_codes, got_step, got_low = q4.quantize_q4(w)
    assert torch.equal(got_codes, codes.int())
    assert torch.equal(got_step.float(), step) and torch.equal(got_low.float(), low)


@pytest.mark.parametrize(("n", "k"), [(96, 64), (48, 1536), (16, 96)])
def test_linear_is_the_dequantized_product_up_to_8_bit_activations(
    kern: q4.Q4Kernel, n: int, k: int
) -> None:
    gen = torch.Generator().manual_seed(n + k)
    w = torch.randn(n, k, generator=gen) * 0.05
    x = torch.randn(7, k, generator=gen)
    ref = x.double() @ _dequantized(w).double().T
    got = q4.Q4Linear(w, kern)(x)
    err = float((got.double() - ref).abs().max() / ref.abs().max())
    assert 0 < err < 0.02  # activations are rounded to 8 bits per block of 32, not exact


def test_fused_norm_swiglu_and_residual_match_their_torch_spelling(kern: q4.Q4Kernel) -> None:
    gen = torch.Generator().manual_seed(3)
    w = torch.randn(64, 128, generator=gen) * 0.05
    lin = q4.Q4Linear(w, kern)
    x = torch.randn(5, 128, generator=gen) * 3
    norm = torch.rand(128, generator=gen) + 0.5
    normed = norm * (x * x.pow(2).mean(-1, keepdim=True).add(1e-5).rsqrt())
    torch.testing.assert_close(lin.fused(x, norm=norm, eps=1e-5), lin(normed), atol=0.05, rtol=0)
    gu = torch.randn(5, 256, generator=gen) * 3
    act = torch.nn.functional.silu(gu[:, :128]) * gu[:, 128:]
    torch.testing.assert_close(lin.fused(gu, swiglu=True), lin(act), atol=0.05, rtol=0)
    res = torch.randn(5, 64, generator=gen)
    assert torch.equal(lin.fused(x, residual=res), res + lin(x))


def test_linear_rows_do_not_depend_on_the_batch_or_threads(
    kern: q4.Q4Kernel, two_threads: None
) -> None:
    gen = torch.Generator().manual_seed(5)
    lin = q4.Q4Linear(torch.randn(80, 192, generator=gen), kern)
    x = torch.randn(23, 192, generator=gen)
    norm = torch.rand(192, generator=gen)
    full = lin.fused(x, norm=norm, eps=1e-5)
    for a, b in ((0, 1), (5, 6), (3, 9), (10, 23), (1, 5)):
        assert torch.equal(lin.fused(x[a:b].contiguous(), norm=norm, eps=1e-5), full[a:b])
    torch.set_num_threads(1)
    assert torch.equal(lin.fused(x, norm=norm, eps=1e-5), full)


def test_rope_attend_is_softmax_attention_and_stores_rotated_keys(kern: q4.Q4Kernel) -> None:
    gen = torch.Generator().manual_seed(7)
    n_h, n_g, e, block, at, m = 4, 2, 64, 128, 200, 3
    rope = RotaryTables.build(e, 1e4, 512)
    qkv = torch.randn(m, (n_h + 2 * n_g) * e, generator=gen)
    k = torch.randn(n_g, at + m, e, generator=gen)
    k_raw, v = torch.zeros_like(k), torch.randn(n_g, at + m, e + 1, generator=gen)
    pos = torch.arange(at, at + m)
    cos, sin = rope.cos[pos].contiguous(), rope.sin[pos].contiguous()
    cache = (k.unsqueeze(0), k_raw.unsqueeze(0), v.unsqueeze(0))  # one layer
    n_blocks = -(-(at + m) // block)
    sources = ([cache[0]] * n_blocks, [cache[2]] * n_blocks, [i * block for i in range(n_blocks)])
    limits = (pos + 1).repeat_interleave(n_h // n_g)
    scale = math.log2(math.e) / math.sqrt(e)
    out = kern.rope_attend(qkv, (cos, sin), cache, (0, at, m), sources, limits, block, scale, n_h)

    heads = qkv.view(m, n_h + 2 * n_g, e)
    qk = rotate(heads[:, : n_h + n_g], cos, sin)
    assert torch.equal(k[:, at:], qk[:, n_h:].transpose(0, 1))
    assert torch.equal(k_raw[:, at:], heads[:, n_h : n_h + n_g].transpose(0, 1))
    assert torch.equal(v[:, at:, :e], heads[:, n_h + n_g :].transpose(0, 1))
    for i in range(m):
        for h in range(n_h):
            g = h // (n_h // n_g)
            keys, vals = k[g, : at + i + 1].double(), v[g, : at + i + 1, :e].double()
            p = torch.softmax(keys @ qk[i, h].double() / math.sqrt(e), -1)
            got = out[i, h * e : (h + 1) * e].double()
            torch.testing.assert_close(got, p @ vals, atol=1e-5, rtol=1e-4)


def test_the_attention_probe_passes_and_can_fail(kern: q4.Q4Kernel, two_threads: None) -> None:
    assert q4.probe_attention(kern) == []

    class RowDependent(q4.Q4Kernel):
        def rope_attend(self, qkv: torch.Tensor, *args: object, **kw: object) -> torch.Tensor:
            out = super().rope_attend(qkv, *args, **kw)  # type: ignore[arg-type]
            return out + 1e-6 * qkv.shape[0]  # a row's bits now depend on its batch

    assert any("rows" in f for f in q4.probe_attention(RowDependent(kern.vnni)))


def test_disabled_kernel_means_none(monkeypatch: pytest.MonkeyPatch) -> None:
    q4.kernel.cache_clear()
    monkeypatch.setenv(q4.KERNEL_ENV, "0")
    try:
        assert q4.kernel() is None
    finally:
        q4.kernel.cache_clear()


def test_the_avx2_and_vnni_dots_give_the_same_bits(kern: q4.Q4Kernel) -> None:
    """Both integer dots are exact, so the choice of instruction set never changes a result."""
    gen = torch.Generator().manual_seed(11)
    w = torch.randn(64, 320, generator=gen)
    x = torch.randn(9, 320, generator=gen) * 5
    plain, vnni = q4.Q4Linear(w, q4.Q4Kernel(vnni=False)), q4.Q4Linear(w, q4.Q4Kernel(vnni=True))
    assert torch.equal(plain(x), vnni(x))


def test_every_token_tile_and_a_split_over_threads_give_a_row_its_own_bits(
    kern: q4.Q4Kernel, two_threads: None
) -> None:
    """1..16 rows cover every token tile (5, 4, 4 + 4, the single rows); the projection is
    big enough to be split over the two threads."""
    gen = torch.Generator().manual_seed(13)
    lin = q4.Q4Linear(torch.randn(2048, 576, generator=gen), kern)
    x = torch.randn(16, 576, generator=gen)
    alone = torch.cat([lin(x[i : i + 1]) for i in range(16)])
    for m in range(1, 17):
        assert torch.equal(lin(x[:m]), alone[:m]), m


def test_rope_attend_batch_gives_each_session_its_own_bits(
    kern: q4.Q4Kernel, two_threads: None
) -> None:
    """Three sessions (different lengths, several key blocks, one with two new rows) in one
    call: each session's output and cache rows equal its own ``rope_attend`` call's."""
    gen = torch.Generator().manual_seed(17)
    n_h, n_g, e, block = 6, 2, 64, 128
    rope = RotaryTables.build(e, 1e4, 1024)
    group = n_h // n_g
    sessions = [(300, 1), (517, 2), (40, 1)]  # (keys already cached, new rows)
    qkv = torch.randn(sum(m for _, m in sessions), (n_h + 2 * n_g) * e, generator=gen)
    caches = []
    for at, m in sessions:
        k = torch.randn(1, n_g, at + m, e, generator=gen)
        caches.append((k, torch.zeros_like(k), torch.randn(1, n_g, at + m, e + 1, generator=gen)))
    pos = torch.cat([torch.arange(at, at + m) for at, m in sessions])
    cos, sin = rope.cos[pos].contiguous(), rope.sin[pos].contiguous()

    def sources(
        cache: tuple[torch.Tensor, ...], end: int
    ) -> tuple[list[torch.Tensor], list[torch.Tensor], list[int]]:
        n = -(-end // block)
        return [cache[0]] * n, [cache[2]] * n, [i * block for i in range(n)]

    def limits(at: int, m: int) -> torch.Tensor:
        return torch.arange(at + 1, at + m + 1).repeat_interleave(group)

    batch_caches = [tuple(t.clone() for t in c) for c in caches]
    starts = [0, 1, 3]
    src = [sources(c, at + m) for c, (at, m) in zip(batch_caches, sessions, strict=True)]
    plan = q4.BatchPlan(
        ([c[0] for c in batch_caches], [c[1] for c in batch_caches], [c[2] for c in batch_caches]),
        ([at for at, _ in sessions], [m for _, m in sessions], starts, [m for _, m in sessions]),
        (
            [t for s in src for t in s[0]],
            [t for s in src for t in s[1]],
            [r for s in src for r in s[2]],
            [len(s[2]) for s in src],
        ),
        torch.cat([limits(at, m) for at, m in sessions]),
    )
    together = kern.rope_attend_batch(qkv, (cos, sin), plan, 0, block, 0.18, n_h)
    for (at, m), a, cache, mine in zip(sessions, starts, caches, batch_caches, strict=True):
        rows = slice(a, a + m)
        alone = kern.rope_attend(
            qkv[rows].contiguous(),
            (cos[rows].contiguous(), sin[rows].contiguous()),
            cache,
            (0, at, m),
            sources(cache, at + m),
            limits(at, m),
            block,
            0.18,
            n_h,
        )
        assert torch.equal(together[rows], alone)
        for t_alone, t_batch in zip(cache, mine, strict=True):
            assert torch.equal(t_alone, t_batch)


def test_ninja_goes_on_path_for_the_build_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """pip's ninja sits beside the interpreter: its directory leads PATH during the build and
    the user's PATH comes back unchanged after it (even when the build fails)."""
    import os
    import sys
    from pathlib import Path

    from fak.engine import q4

    monkeypatch.setattr(q4.shutil, "which", lambda _name: None)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    here = str(Path(sys.executable).parent)
    with q4._ninja_on_path():
        assert os.environ["PATH"].split(os.pathsep)[0] == here
    assert os.environ["PATH"] == "/usr/bin:/bin"
    with pytest.raises(RuntimeError), q4._ninja_on_path():
        raise RuntimeError("build failed")
    assert os.environ["PATH"] == "/usr/bin:/bin"
