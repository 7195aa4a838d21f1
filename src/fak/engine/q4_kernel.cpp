// fak fast mode: 4-bit weights x 8-bit activations, blocks of 32 (Q4_1 x Q8_1 style).
//
// y[m, n] = sum_b (dw[n,b] * dx[m,b]) * dot(qw[n,b,:], qx[m,b,:]) + mw[n,b] * sx[m,b]
// with qw in 0..15 (two per byte: byte j holds element j low, element j + 16 high), qx int8,
// sx[m,b] = dx[m,b] * sum(qx[m,b,:]). The integer dot of a block is exact (AVX2 maddubs: pair
// sums <= 2 * 15 * 127 fit in int16; or AVX512-VNNI dpbusd, the same int32 lanes), and each
// (m, n) result is one fixed sequence of float operations on one thread, whatever M, the token
// tile it sits in, or the thread count: row- and thread-invariant by construction.
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <c10/util/Half.h>
#include <ATen/ops/empty.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <immintrin.h>

#include <cmath>
#include <optional>
#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

namespace {

constexpr int64_t kBlock = 32;
constexpr int kChains = 4;  // independent accumulators per token (blocks b % 4): FMA latency
// (the row tiles below spell out chains 0..3)
constexpr int64_t kMaxBlocks = 512;  // K <= 16384
constexpr int64_t kTokenSpan = 16;  // a multiple of every token tile
// A projection is split over threads only past this many (token, block) dots (~90 us): waking
// a sleeping thread (OMP_WAIT_POLICY=PASSIVE) costs ~40-50 us here, so a split must save more
// (one decode row's small projections run on one thread; the head and batched steps split).
constexpr int64_t kParallelWork = 98304;

bool cpu_ok() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
         __builtin_cpu_supports("f16c");
}

bool cpu_vnni() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vl");
}

__attribute__((target("avx2,fma,f16c"))) inline float hsum(__m256 v) {
  const __m128 lo = _mm256_castps256_ps128(v);
  const __m128 hi = _mm256_extractf128_ps(v, 1);
  __m128 r = _mm_add_ps(lo, hi);
  r = _mm_add_ps(r, _mm_movehl_ps(r, r));
  r = _mm_add_ss(r, _mm_movehdup_ps(r));
  return _mm_cvtss_f32(r);
}

__attribute__((target("avx2,fma,f16c"))) inline __m256i unpack(const uint8_t* w) {
  // both 128-bit lanes hold the 16 bytes; the upper lane shifted by 4 gives the high nibbles
  const __m256i raw = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w)));
  const __m256i both = _mm256_srlv_epi32(raw, _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4));
  return _mm256_and_si256(both, _mm256_set1_epi8(0x0F));
}

// 2^x for x <= 0 (and -inf): round-to-nearest split, degree-6 polynomial, 0 below -126.
__attribute__((target("avx2,fma,f16c"))) inline __m256 exp2_ps(__m256 x) {
  const __m256 xi = _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256 f = _mm256_sub_ps(x, xi);
  __m256 p = _mm256_set1_ps(1.5403530e-4f);
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.3333558e-3f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(9.6181291e-3f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(5.5504109e-2f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(2.4022651e-1f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(6.9314718e-1f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.0f));
  const __m256i bits = _mm256_slli_epi32(
      _mm256_add_epi32(_mm256_cvtps_epi32(_mm256_max_ps(xi, _mm256_set1_ps(-127.f))),
                       _mm256_set1_epi32(127)),
      23);
  const __m256 r = _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
  const __m256 tiny = _mm256_cmp_ps(x, _mm256_set1_ps(-126.f), _CMP_LT_OQ);
  return _mm256_andnot_ps(tiny, r);
}

// What the linear applies to each input row before quantizing it (all row-wise).
enum Pre : int64_t { kNone = 0, kRmsNorm = 1, kSwiGlu = 2 };

// Row m of the linear's input into buf [K]: x itself, RMSNorm(x) * w, or silu(gate) * up with
// gate = x[:, :K] and up = x[:, K:]. Fixed-order float maths on this row alone.
__attribute__((target("avx2,fma,f16c"))) void prepare_row(const float* xr, int64_t k, Pre pre,
                                                     const float* w, float eps, float* buf) {
  if (pre == kRmsNorm) {
    __m256 ss = _mm256_setzero_ps();
    for (int64_t j = 0; j < k; j += 8) {
      const __m256 v = _mm256_loadu_ps(xr + j);
      ss = _mm256_fmadd_ps(v, v, ss);
    }
    const float r = 1.f / std::sqrt(hsum(ss) / static_cast<float>(k) + eps);
    const __m256 rv = _mm256_set1_ps(r);
    for (int64_t j = 0; j < k; j += 8)
      _mm256_storeu_ps(buf + j, _mm256_mul_ps(_mm256_loadu_ps(w + j),
                                              _mm256_mul_ps(_mm256_loadu_ps(xr + j), rv)));
  } else if (pre == kSwiGlu) {
    const __m256 one = _mm256_set1_ps(1.f), nlog2e = _mm256_set1_ps(-1.44269504f);
    const __m256 cap = _mm256_set1_ps(127.f);
    for (int64_t j = 0; j < k; j += 8) {
      const __m256 g = _mm256_loadu_ps(xr + j);
      const __m256 e = exp2_ps(_mm256_min_ps(_mm256_mul_ps(g, nlog2e), cap));
      const __m256 silu = _mm256_div_ps(g, _mm256_add_ps(one, e));
      _mm256_storeu_ps(buf + j, _mm256_mul_ps(silu, _mm256_loadu_ps(xr + k + j)));
    }
  } else {
    std::copy(xr, xr + k, buf);
  }
}

// Input rows -> q [M, K] int8, d [M, K/32], s [M, K/32] (d * sum q), per row: a row's bytes do
// not depend on the other rows.
void quantize_rows(const float* x, int64_t x_stride, int64_t m_rows, int64_t k, Pre pre,
                   const float* w, float eps, int8_t* q, float* d, float* s) {
  const int64_t nb = k / kBlock;
  at::parallel_for(0, m_rows, 16, [&](int64_t lo, int64_t hi) {
    std::vector<float> buf(k);
    for (int64_t m = lo; m < hi; ++m) {
      prepare_row(x + m * x_stride, k, pre, w, eps, buf.data());
      for (int64_t b = 0; b < nb; ++b) {
        const float* xb = buf.data() + b * kBlock;
        float amax = 0.f;
        for (int64_t j = 0; j < kBlock; ++j) amax = std::fmax(amax, std::fabs(xb[j]));
        const float db = amax / 127.f;
        const float inv = db > 0.f ? 1.f / db : 0.f;
        int32_t sum = 0;
        int8_t* qb = q + m * k + b * kBlock;
        for (int64_t j = 0; j < kBlock; ++j) {
          const int32_t v = static_cast<int32_t>(std::nearbyint(xb[j] * inv));
          qb[j] = static_cast<int8_t>(v);
          sum += v;
        }
        d[m * nb + b] = db;
        s[m * nb + b] = db * static_cast<float>(sum);
      }
    }
  });
}

// sum_i a[i] * b[i] (a in fp16) in a fixed order: 8 lanes over whole vectors, then the tail
__attribute__((target("avx2,fma,f16c"))) inline float dot_f32(const uint16_t* a, const float* b,
                                                              int64_t n) {
  __m256 acc = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i));
    acc = _mm256_fmadd_ps(_mm256_cvtph_ps(h), _mm256_loadu_ps(b + i), acc);
  }
  float r = hsum(acc);
  for (; i < n; ++i) r = std::fma(_cvtsh_ss(a[i]), b[i], r);
  return r;
}

// int32 lane l = sum of elements 4l .. 4l+3 of w * x (exact)
__attribute__((target("avx2,fma,f16c"))) inline __m256i dot_avx2(__m256i w, __m256i x) {
  const __m256i pairs = _mm256_maddubs_epi16(w, x);
  return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
}

__attribute__((target("avx2,fma,f16c,avx512vnni,avx512vl"))) inline __m256i dot_vnni(__m256i w,
                                                                               __m256i x) {
  return _mm256_dpbusd_epi32(_mm256_setzero_si256(), w, x);
}

// One weight row against tokens [m0, m0 + T); DOT is the integer dot. Defined once per
// instruction set so the AVX2 build never contains an AVX-512 instruction.
// sc[b] = dw[b] (fp16) * dx[b]: a token's per-block scales against one weight row
__attribute__((target("avx2,fma,f16c"))) inline void block_scales(const uint16_t* dw,
                                                                  const float* dx, int64_t nb,
                                                                  float* sc) {
  int64_t i = 0;
  for (; i + 8 <= nb; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(dw + i));
    _mm256_storeu_ps(sc + i, _mm256_mul_ps(_mm256_cvtph_ps(h), _mm256_loadu_ps(dx + i)));
  }
  for (; i < nb; ++i) sc[i] = _cvtsh_ss(dw[i]) * dx[i];
}

// One weight row against tokens [m0, m0 + T); DOT is the integer dot. Defined once per
// instruction set so the AVX2 build never contains an AVX-512 instruction.
// Token t's chain c takes block b: acc_tc += float(dot(w, x_t[b])) * sc[t][b]. The
// accumulators are named variables (not an array), so they live in registers: an array of
// them was kept in memory (a store, and often a reload, per token and block).
#define FAK_TOK(DOT, t, c)                                                                     \
  if constexpr (T > t) {                                                                       \
    const __m256i p = DOT(w, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(             \
                                 q + (m0 + t) * k + b * kBlock)));                             \
    a##t##c = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_broadcast_ss(&sc[t][b]), a##t##c); \
  }
#define FAK_CHAIN(DOT, c)                                                                      \
  if (b0 + c < nb) {                                                                           \
    const int64_t b = b0 + c;                                                                  \
    const __m256i w = unpack(wrow + b * (kBlock / 2));                                         \
    FAK_TOK(DOT, 0, c) FAK_TOK(DOT, 1, c) FAK_TOK(DOT, 2, c) FAK_TOK(DOT, 3, c)                \
    FAK_TOK(DOT, 4, c)                                                                         \
  }
#define FAK_OUT(t)                                                                             \
  if constexpr (T > t) {                                                                       \
    y[(m0 + t) * n_out + n] = hsum(_mm256_add_ps(_mm256_add_ps(a##t##0, a##t##1),              \
                                                 _mm256_add_ps(a##t##2, a##t##3))) +           \
                              dot_f32(mwr, sx + (m0 + t) * nb, nb);                            \
  }

// One weight row against tokens [m0, m0 + T) (T <= 5), four accumulator chains per token
// (block b on chain b % 4); DOT is the integer dot. Defined once per instruction set so the
// AVX2 build never contains an AVX-512 instruction.
#define FAK_ROW_TILE(NAME, TARGET, DOT)                                                        \
  template <int T>                                                                             \
  __attribute__((target(TARGET))) inline void NAME(                                            \
      const uint8_t* wrow, const uint16_t* dwr, const uint16_t* mwr, const int8_t* q,          \
      const float* dx, const float* sx, int64_t m0, int64_t k, int64_t nb, float* y,           \
      int64_t n, int64_t n_out) {                                                              \
    static_assert(T >= 1 && T <= 5, "tiles of 1 to 5 tokens");                                 \
    alignas(32) float sc[T][kMaxBlocks];                                                       \
    for (int t = 0; t < T; ++t) block_scales(dwr, dx + (m0 + t) * nb, nb, sc[t]);             \
    const __m256 z = _mm256_setzero_ps();                                                      \
    __m256 a00 = z, a01 = z, a02 = z, a03 = z, a10 = z, a11 = z, a12 = z, a13 = z;             \
    __m256 a20 = z, a21 = z, a22 = z, a23 = z, a30 = z, a31 = z, a32 = z, a33 = z;             \
    __m256 a40 = z, a41 = z, a42 = z, a43 = z;                                                 \
    for (int64_t b0 = 0; b0 < nb; b0 += kChains) {                                             \
      FAK_CHAIN(DOT, 0) FAK_CHAIN(DOT, 1) FAK_CHAIN(DOT, 2) FAK_CHAIN(DOT, 3)                  \
    }                                                                                          \
    FAK_OUT(0) FAK_OUT(1) FAK_OUT(2) FAK_OUT(3) FAK_OUT(4)                                     \
  }

FAK_ROW_TILE(row_tile_avx2, "avx2,fma,f16c", dot_avx2)
FAK_ROW_TILE(row_tile_vnni, "avx2,fma,f16c,avx512vnni,avx512vl", dot_vnni)

// Output rows are split over threads; within a thread, tokens go in spans of kTokenSpan (their
// 8-bit rows stay in L1 while the thread's weight rows stream past), NT tokens per weight block.
// Output rows [lo, hi): a plain function of its arguments (not a closure over the caller's
// locals), so the loop keeps them in registers whether or not the call below runs on threads.
#define FAK_MATMUL(NAME, TILE, NT)                                                             \
  __attribute__((noinline)) void NAME##_rows(                                                  \
      const uint8_t* wq, const uint16_t* dw, const uint16_t* mw, const int8_t* q,              \
      const float* dx, const float* sx, int64_t m_rows, int64_t k, int64_t n_out, float* y,    \
      int64_t lo, int64_t hi) {                                                                \
    const int64_t nb = k / kBlock;                                                             \
    for (int64_t m0 = 0; m0 < m_rows; m0 += kTokenSpan) {                                      \
      const int64_t m1 = std::min(m_rows, m0 + kTokenSpan);                                    \
      for (int64_t n = lo; n < hi; ++n) {                                                      \
        const uint8_t* wrow = wq + n * (k / 2);                                                \
        const uint16_t* dwr = dw + n * nb;                                                     \
        const uint16_t* mwr = mw + n * nb;                                                     \
        int64_t m = m0;                                                                        \
        /* NT at a time (but 8 as 4 + 4) */                                                    \
        for (; m + NT <= m1 && (NT != 5 || m1 - m != 8); m += NT)                              \
          TILE<NT>(wrow, dwr, mwr, q, dx, sx, m, k, nb, y, n, n_out);                          \
        if (NT > 4 && m1 - m == 8) {                                                           \
          TILE<(NT > 4 ? 4 : 1)>(wrow, dwr, mwr, q, dx, sx, m, k, nb, y, n, n_out);            \
          m += NT > 4 ? 4 : 1;                                                                 \
        }                                                                                      \
        if (NT > 4 && m1 - m == 4) { /* a row's arithmetic is the same in any tile */         \
          TILE<(NT > 4 ? 4 : 1)>(wrow, dwr, mwr, q, dx, sx, m, k, nb, y, n, n_out);            \
          m += NT > 4 ? 4 : 1;                                                                 \
        }                                                                                      \
        for (; m < m1; ++m) TILE<1>(wrow, dwr, mwr, q, dx, sx, m, k, nb, y, n, n_out);         \
      }                                                                                        \
    }                                                                                          \
  }                                                                                            \
  void NAME(const uint8_t* wq, const uint16_t* dw, const uint16_t* mw, const int8_t* q,        \
            const float* dx, const float* sx, int64_t m_rows, int64_t k, int64_t n_out,        \
            float* y) {                                                                        \
    const int64_t nb = k / kBlock;                                                             \
    const int64_t grain = std::max<int64_t>(16, kParallelWork / (nb * m_rows) + 1);            \
    at::parallel_for(0, n_out, grain, [=](int64_t lo, int64_t hi) {                            \
      NAME##_rows(wq, dw, mw, q, dx, sx, m_rows, k, n_out, y, lo, hi);                         \
    });                                                                                        \
  }

FAK_MATMUL(matmul_avx2, row_tile_avx2, 2)  // 16 ymm registers: 2 tokens x 4 chains
FAK_MATMUL(matmul_vnni, row_tile_vnni, 5)  // AVX-512VL has 32: 5 tokens x 4 chains

// x [M, K] (or [M, 2K] for SwiGLU) float32, wq [N, K/2] uint8, dw/mw [N, K/32] float32
// -> [M, N] float32, plus ``residual`` [M, N] when given (added after, as torch would).
at::Tensor q4_linear(const at::Tensor& x, const at::Tensor& wq, const at::Tensor& dw,
                     const at::Tensor& mw, const std::optional<at::Tensor>& norm, double eps,
                     int64_t pre, const std::optional<at::Tensor>& residual, bool vnni) {
  TORCH_CHECK(x.dim() == 2 && x.scalar_type() == at::kFloat && x.stride(1) == 1, "x: [M, K] f32");
  TORCH_CHECK(pre == kNone || pre == kRmsNorm || pre == kSwiGlu, "unknown input transform");
  const int64_t m_rows = x.size(0), n_out = wq.size(0);
  const int64_t k = pre == kSwiGlu ? x.size(1) / 2 : x.size(1);
  TORCH_CHECK(k % kBlock == 0 && wq.size(1) * 2 == k, "K must be a multiple of 32 matching wq");
  TORCH_CHECK(k / kBlock <= kMaxBlocks, "K is too long for the q4 kernel");
  TORCH_CHECK(pre != kSwiGlu || x.size(1) == 2 * k, "SwiGLU input is [M, 2K]");
  TORCH_CHECK(wq.is_contiguous() && wq.scalar_type() == at::kByte, "wq: [N, K/2] uint8");
  TORCH_CHECK(dw.is_contiguous() && mw.is_contiguous(), "scales must be contiguous");
  TORCH_CHECK(dw.scalar_type() == at::kHalf && mw.scalar_type() == at::kHalf, "fp16 scales");
  TORCH_CHECK(dw.numel() == n_out * (k / kBlock) && mw.numel() == dw.numel(), "scale shapes");
  const float* w = nullptr;
  if (pre == kRmsNorm) {
    TORCH_CHECK(norm.has_value() && norm->is_contiguous() && norm->numel() == k, "norm [K]");
    TORCH_CHECK(norm->scalar_type() == at::kFloat, "norm f32");
    w = norm->data_ptr<float>();
  }
  TORCH_CHECK(cpu_ok(), "the q4 kernel needs AVX2 and FMA");
  const int64_t nb = k / kBlock;
  at::Tensor q = at::empty({m_rows, k}, x.options().dtype(at::kChar));
  at::Tensor d = at::empty({m_rows, nb}, x.options());
  at::Tensor s = at::empty({m_rows, nb}, x.options());
  quantize_rows(x.data_ptr<float>(), x.stride(0), m_rows, k, static_cast<Pre>(pre), w,
                static_cast<float>(eps), q.data_ptr<int8_t>(), d.data_ptr<float>(),
                s.data_ptr<float>());
  at::Tensor y = at::empty({m_rows, n_out}, x.options());
  const bool use_vnni = vnni && cpu_vnni();
  auto run = use_vnni ? matmul_vnni : matmul_avx2;
  const auto* dwp = reinterpret_cast<const uint16_t*>(dw.data_ptr<at::Half>());
  const auto* mwp = reinterpret_cast<const uint16_t*>(mw.data_ptr<at::Half>());
  run(wq.data_ptr<uint8_t>(), dwp, mwp, q.data_ptr<int8_t>(),
      d.data_ptr<float>(), s.data_ptr<float>(), m_rows, k, n_out, y.data_ptr<float>());
  if (residual.has_value()) {
    const at::Tensor& r = *residual;
    TORCH_CHECK(r.scalar_type() == at::kFloat && r.is_contiguous(), "residual f32 contiguous");
    TORCH_CHECK(r.dim() == 2 && r.size(0) == m_rows && r.size(1) == n_out, "residual [M, N]");
    const float* rp = r.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    for (int64_t i = 0; i < m_rows * n_out; ++i) yp[i] = rp[i] + yp[i];
  }
  return y;
}

// ---- attention: one query row at a time over its visible keys ------------------------------
// Keys are read in the blocks the cache hands out (block i holds absolute rows
// [i * block, (i + 1) * block)), in order from 0, with a running maximum; a row sees keys
// [0, limit). Every number a row produces is a function of its query, its limit and the keys:
// the same bits in any batch, tile or thread.

struct KeyBlock {
  const float* k;
  const float* v;
  int64_t k_head, k_row, v_head, v_row, rows;
};

// A query row's running state over the key blocks it has seen: the unnormalised output, the
// largest score and the sum of probabilities (both relative to that score).
struct RowState {
  float* acc;  // [E]
  float top;
  float total;
};

// One key block (its first n keys) folded into a row's state.
template <int NV>
__attribute__((target("avx2,fma,f16c"))) void attend_block(const float* q, const KeyBlock& kb,
                                                           int64_t g, int64_t n, float* scores,
                                                           RowState& st) {
  __m256 qv[NV], acc[NV];
  for (int v = 0; v < NV; ++v) {
    qv[v] = _mm256_loadu_ps(q + 8 * v);
    acc[v] = _mm256_loadu_ps(st.acc + 8 * v);
  }
  const float* kh = kb.k + g * kb.k_head;
  const float* vh = kb.v + g * kb.v_head;
  // four keys at a time as independent chains, reduced together (three hadds); past the
  // end the last key is repeated and its scores are dropped: every key, same arithmetic
  int64_t j = 0;
  for (; j < n; j += 4) {
    const float* k0 = kh + j * kb.k_row;
    const float* k1 = kh + std::min(j + 1, n - 1) * kb.k_row;
    const float* k2 = kh + std::min(j + 2, n - 1) * kb.k_row;
    const float* k3 = kh + std::min(j + 3, n - 1) * kb.k_row;
    __m256 d0 = _mm256_setzero_ps(), d1 = d0, d2 = d0, d3 = d0;
    for (int v = 0; v < NV; ++v) {
      d0 = _mm256_fmadd_ps(qv[v], _mm256_loadu_ps(k0 + 8 * v), d0);
      d1 = _mm256_fmadd_ps(qv[v], _mm256_loadu_ps(k1 + 8 * v), d1);
      d2 = _mm256_fmadd_ps(qv[v], _mm256_loadu_ps(k2 + 8 * v), d2);
      d3 = _mm256_fmadd_ps(qv[v], _mm256_loadu_ps(k3 + 8 * v), d3);
    }
    const __m256 u = _mm256_hadd_ps(_mm256_hadd_ps(d0, d1), _mm256_hadd_ps(d2, d3));
    _mm_storeu_ps(scores + j, _mm_add_ps(_mm256_castps256_ps128(u), _mm256_extractf128_ps(u, 1)));
  }
  // the block's largest score (a maximum does not depend on the order it is taken in)
  __m256 tops = _mm256_set1_ps(scores[0]);
  for (j = 0; j + 8 <= n; j += 8) tops = _mm256_max_ps(tops, _mm256_loadu_ps(scores + j));
  const __m128 t4 = _mm_max_ps(_mm256_castps256_ps128(tops), _mm256_extractf128_ps(tops, 1));
  const __m128 t2 = _mm_max_ps(t4, _mm_movehl_ps(t4, t4));
  float block_top = _mm_cvtss_f32(_mm_max_ss(t2, _mm_movehdup_ps(t2)));
  for (; j < n; ++j) block_top = std::fmax(block_top, scores[j]);
  const float new_top = std::fmax(st.top, block_top);
  const float scale = _mm256_cvtss_f32(exp2_ps(_mm256_set1_ps(st.top - new_top)));
  const int64_t padded = (n + 7) & ~int64_t{7};
  for (j = n; j < padded; ++j) scores[j] = -INFINITY;
  __m256 sum = _mm256_setzero_ps();
  const __m256 shift = _mm256_set1_ps(new_top);
  for (j = 0; j < padded; j += 8) {
    const __m256 p = exp2_ps(_mm256_sub_ps(_mm256_loadu_ps(scores + j), shift));
    _mm256_storeu_ps(scores + j, p);
    sum = _mm256_add_ps(sum, p);
  }
  st.total = std::fma(st.total, scale, hsum(sum));
  const __m256 sv = _mm256_set1_ps(scale);
  for (int v = 0; v < NV; ++v) acc[v] = _mm256_mul_ps(acc[v], sv);
  for (j = 0; j < n; ++j) {
    const __m256 p = _mm256_set1_ps(scores[j]);
    const float* vj = vh + j * kb.v_row;
    for (int v = 0; v < NV; ++v) acc[v] = _mm256_fmadd_ps(p, _mm256_loadu_ps(vj + 8 * v), acc[v]);
  }
  for (int v = 0; v < NV; ++v) _mm256_storeu_ps(st.acc + 8 * v, acc[v]);
  st.top = new_top;
}

// Query rows [lo, hi) (index g * R + r) over their keys: block by block, and within a block
// row by row, so a block's keys and values stay in cache while every row that reads them
// passes. A row's own arithmetic is the same whatever rows share its range.
void attend_rows(const float* qp, int64_t lo, int64_t hi, int64_t n_r, int64_t e,
                 const std::vector<KeyBlock>& blocks, int64_t block, const int64_t* lim,
                 const std::function<float*(int64_t)>& out_row) {
  const int64_t n = hi - lo;
  std::vector<float> acc(n * e, 0.f), scores(block + 8);
  std::vector<RowState> st(n);
  for (int64_t i = 0; i < n; ++i) st[i] = {acc.data() + i * e, -INFINITY, 0.f};
  for (size_t b = 0; b < blocks.size(); ++b) {
    const int64_t first = static_cast<int64_t>(b) * block;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t g = (lo + i) / n_r, limit = lim[(lo + i) % n_r];
      if (first >= limit) continue;
      const int64_t rows = std::min(blocks[b].rows, limit - first);
      if (e == 64)
        attend_block<8>(qp + (lo + i) * e, blocks[b], g, rows, scores.data(), st[i]);
      else
        attend_block<16>(qp + (lo + i) * e, blocks[b], g, rows, scores.data(), st[i]);
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    float* out = out_row(lo + i);
    const float inv = 1.f / st[i].total;
    for (int64_t c = 0; c < e; ++c) out[c] = st[i].acc[c] * inv;
  }
}

// Block i of keys [0, end) (absolute rows [i * block, ...)) lives in src_k[i] / src_v[i]
// ([layers, G, rows, E] and [layers, G, rows, >= E]) from local row src_row[i].
std::vector<KeyBlock> key_blocks(at::TensorList src_k, at::TensorList src_v,
                                 c10::IntArrayRef src_row, int64_t layer, int64_t n_g, int64_t e,
                                 int64_t block, int64_t end) {
  const int64_t n_blocks = (end + block - 1) / block;
  TORCH_CHECK(block > 0 && block <= 4096, "block size");
  TORCH_CHECK(static_cast<int64_t>(src_k.size()) == n_blocks &&
                  static_cast<int64_t>(src_v.size()) == n_blocks &&
                  static_cast<int64_t>(src_row.size()) == n_blocks,
              "one source per key block");
  std::vector<KeyBlock> blocks;
  for (int64_t i = 0; i < n_blocks; ++i) {
    const at::Tensor& k = src_k[i];
    const at::Tensor& v = src_v[i];
    const int64_t rows = std::min(block, end - i * block), at_row = src_row[i];
    TORCH_CHECK(k.scalar_type() == at::kFloat && v.scalar_type() == at::kFloat, "f32 cache");
    TORCH_CHECK(k.dim() == 4 && v.dim() == 4 && k.size(1) == n_g && v.size(1) == n_g, "shapes");
    TORCH_CHECK(k.size(3) == e && v.size(3) >= e && k.stride(3) == 1 && v.stride(3) == 1, "E");
    TORCH_CHECK(layer >= 0 && layer < k.size(0) && layer < v.size(0), "layer");
    TORCH_CHECK(at_row >= 0 && at_row + rows <= k.size(2) && at_row + rows <= v.size(2), "rows");
    blocks.push_back({k.data_ptr<float>() + layer * k.stride(0) + at_row * k.stride(2),
                      v.data_ptr<float>() + layer * v.stride(0) + at_row * v.stride(2),
                      k.stride(1), k.stride(2), v.stride(1), v.stride(2), rows});
  }
  return blocks;
}

// x * cos + roll(x, E/2) * sin, as separate roundings (what rotary.rotate computes in torch:
// the cache re-rotates stored raw keys with it, and both must give the same bits).
void rope(const float* x, const float* cos, const float* sin, int64_t e, float* out) {
  const int64_t half = e / 2;
  for (int64_t i = 0; i < e; ++i) {
    const float a = x[i] * cos[i];
    const float b = x[i < half ? i + half : i - half] * sin[i];
    out[i] = a + b;
  }
}

// One session's step after its rotations and cache writes: its scaled queries [G, R, E]
// (r = token * group + i), the key blocks and limits its rows attend with, and where its rows
// go in the output.
struct SessionAttention {
  at::Tensor q;
  std::vector<KeyBlock> blocks;
  const int64_t* lim;
  int64_t n_r;
  float* out;  // its first output row [M, H * E]
};

// One session's new rows: qkv rows [M, >= (H + 2G) E] at ``src`` (row stride ``ld``) and
// cos/sin [M, E]. Rotates Q and K, writes K, raw K and V of its first m_new rows into layer
// ``layer`` of the cache tensors k/k_raw [layers, G, cap, E] and v [layers, G, cap, >= E] at
// local row ``row``; the query rows r (heads in order, r = token * group + i) will attend over
// keys [0, limits[r]) of the key blocks (see key_blocks).
SessionAttention rotate_store(const float* src, int64_t ld, int64_t m_rows, const float* cp,
                              const float* sp, const at::Tensor& k_dst,
                              const at::Tensor& kraw_dst, const at::Tensor& v_dst, int64_t layer,
                              int64_t row, int64_t m_new, at::TensorList src_k,
                              at::TensorList src_v, c10::IntArrayRef src_row,
                              const at::Tensor& limits, int64_t block, double scale, int64_t n_h,
                              float* out) {
  for (const at::Tensor* t : {&k_dst, &kraw_dst, &v_dst})
    TORCH_CHECK(t->dim() == 4 && t->scalar_type() == at::kFloat && t->stride(3) == 1,
                "cache tensors [layers, G, cap, E] f32");
  const int64_t n_g = k_dst.size(1), e = k_dst.size(3);
  const int64_t group = n_h / n_g, n_r = m_rows * group;
  TORCH_CHECK(e == 64 || e == 128, "head dim must be 64 or 128");
  TORCH_CHECK(n_h % n_g == 0 && m_new >= 1 && m_new <= m_rows, "heads / rows");
  TORCH_CHECK(kraw_dst.sizes() == k_dst.sizes() && v_dst.size(3) >= e, "cache shapes");
  TORCH_CHECK(layer >= 0 && layer < k_dst.size(0) && row >= 0 && row + m_new <= k_dst.size(2) &&
                  row + m_new <= v_dst.size(2), "cache rows");
  TORCH_CHECK(limits.numel() == n_r && limits.scalar_type() == at::kLong &&
                  limits.is_contiguous(), "limits [M * group]");
  const int64_t* lim = limits.data_ptr<int64_t>();
  int64_t end = 0;
  for (int64_t r = 0; r < n_r; ++r) {
    TORCH_CHECK(lim[r] >= 1, "every query row sees a key");
    end = std::max(end, lim[r]);
  }
  SessionAttention sa{at::empty({n_g, n_r, e}, k_dst.options()),
                      key_blocks(src_k, src_v, src_row, layer, n_g, e, block, end), lim, n_r,
                      out};
  // queries [G, R, E], rotated and scaled; K/V rows into the cache
  float* qp = sa.q.data_ptr<float>();
  const float sc = static_cast<float>(scale);
  float* kd = k_dst.data_ptr<float>() + layer * k_dst.stride(0) + row * k_dst.stride(2);
  float* krd = kraw_dst.data_ptr<float>() + layer * kraw_dst.stride(0) + row * kraw_dst.stride(2);
  float* vd = v_dst.data_ptr<float>() + layer * v_dst.stride(0) + row * v_dst.stride(2);
  std::vector<float> rot(e);
  for (int64_t m = 0; m < m_rows; ++m) {
    const float* x = src + m * ld;
    for (int64_t h = 0; h < n_h; ++h) {
      float* dst = qp + ((h / group) * n_r + m * group + h % group) * e;
      rope(x + h * e, cp + m * e, sp + m * e, e, rot.data());
      for (int64_t i = 0; i < e; ++i) dst[i] = rot[i] * sc;
    }
    if (m >= m_new) continue;
    for (int64_t g = 0; g < n_g; ++g) {
      const float* kr = x + (n_h + g) * e;
      const float* vr = x + (n_h + n_g + g) * e;
      rope(kr, cp + m * e, sp + m * e, e, kd + g * k_dst.stride(1) + m * k_dst.stride(2));
      std::copy(kr, kr + e, krd + g * kraw_dst.stride(1) + m * kraw_dst.stride(2));
      std::copy(vr, vr + e, vd + g * v_dst.stride(1) + m * v_dst.stride(2));
    }
  }
  return sa;
}

// Query rows [lo, hi) (index g * R + r) of one session, each into its output row.
void attend_session(const SessionAttention& sa, int64_t lo, int64_t hi, int64_t n_h, int64_t e,
                    int64_t block) {
  const int64_t group = n_h / (sa.q.size(0)), n_r = sa.n_r;
  float* op = sa.out;
  const std::function<float*(int64_t)> out_row = [&](int64_t i) {
    const int64_t g = i / n_r, r = i % n_r;
    return op + (r / group) * n_h * e + (g * group + r % group) * e;
  };
  attend_rows(sa.q.data_ptr<float>(), lo, hi, n_r, e, sa.blocks, block, sa.lim, out_row);
}

void check_qkv_rope(const at::Tensor& qkv, const at::Tensor& cos, const at::Tensor& sin,
                    int64_t n_h, int64_t n_g, int64_t e) {
  TORCH_CHECK(cpu_ok(), "the attention kernel needs AVX2 and FMA");
  const int64_t m_rows = qkv.size(0);
  TORCH_CHECK(qkv.dim() == 2 && qkv.stride(1) == 1 && qkv.size(1) >= (n_h + 2 * n_g) * e, "qkv");
  TORCH_CHECK(qkv.scalar_type() == at::kFloat && cos.scalar_type() == at::kFloat &&
                  sin.scalar_type() == at::kFloat, "float32 tensors");
  TORCH_CHECK(cos.is_contiguous() && sin.is_contiguous() && cos.numel() == m_rows * e &&
                  sin.numel() == m_rows * e, "cos/sin [M, E]");
}

// One session's rows: qkv [M, >= (H + 2G) E] (projections of its tokens), cos/sin [M, E];
// see rotate_store -> [M, H * E].
at::Tensor rope_attend(const at::Tensor& qkv, const at::Tensor& cos, const at::Tensor& sin,
                       const at::Tensor& k_dst, const at::Tensor& kraw_dst,
                       const at::Tensor& v_dst, int64_t layer, int64_t row, int64_t m_new,
                       at::TensorList src_k, at::TensorList src_v, c10::IntArrayRef src_row,
                       const at::Tensor& limits, int64_t block, double scale, int64_t n_h) {
  TORCH_CHECK(k_dst.dim() == 4, "cache tensors [layers, G, cap, E] f32");
  const int64_t n_g = k_dst.size(1), e = k_dst.size(3), m_rows = qkv.size(0);
  check_qkv_rope(qkv, cos, sin, n_h, n_g, e);
  at::Tensor out = at::empty({m_rows, n_h * e}, qkv.options());
  const SessionAttention sa = rotate_store(
      qkv.data_ptr<float>(), qkv.stride(0), m_rows, cos.data_ptr<float>(),
      sin.data_ptr<float>(), k_dst, kraw_dst, v_dst, layer, row, m_new, src_k, src_v, src_row,
      limits, block, scale, n_h, out.data_ptr<float>());
  const int64_t n_blocks = static_cast<int64_t>(sa.blocks.size());
  const int64_t grain = std::max<int64_t>(1, 65536 / (block * n_blocks));
  at::parallel_for(0, n_g * sa.n_r, grain, [&](int64_t lo, int64_t hi) {
    attend_session(sa, lo, hi, n_h, e, block);
  });
  return out;
}

// A batch's rope_attend in one call: session s owns rows [starts[s], starts[s] + counts[s]) of
// qkv [sum M, ...], cos, sin and the output, its cache tensors are k/kraw/v_dst[s], its key
// blocks are n_src[s] consecutive entries of src_k / src_v / src_row, its limits the next
// counts[s] * group entries of ``limits``. Every query row of every session goes through the
// same arithmetic as in rope_attend (one row on one thread, blocks in order), so the bits are a
// session's own; the rows of all sessions are split over threads together.
at::Tensor rope_attend_batch(const at::Tensor& qkv, const at::Tensor& cos, const at::Tensor& sin,
                             at::TensorList k_dst, at::TensorList kraw_dst, at::TensorList v_dst,
                             int64_t layer, c10::IntArrayRef rows, c10::IntArrayRef m_new,
                             c10::IntArrayRef starts, c10::IntArrayRef counts,
                             at::TensorList src_k, at::TensorList src_v,
                             c10::IntArrayRef src_row, c10::IntArrayRef n_src,
                             const at::Tensor& limits, int64_t block, double scale, int64_t n_h) {
  const int64_t n_s = static_cast<int64_t>(k_dst.size());
  TORCH_CHECK(n_s >= 1 && static_cast<int64_t>(kraw_dst.size()) == n_s &&
                  static_cast<int64_t>(v_dst.size()) == n_s &&
                  static_cast<int64_t>(rows.size()) == n_s &&
                  static_cast<int64_t>(m_new.size()) == n_s &&
                  static_cast<int64_t>(starts.size()) == n_s &&
                  static_cast<int64_t>(counts.size()) == n_s &&
                  static_cast<int64_t>(n_src.size()) == n_s, "one entry per session");
  TORCH_CHECK(k_dst[0].dim() == 4, "cache tensors [layers, G, cap, E] f32");
  const int64_t n_g = k_dst[0].size(1), e = k_dst[0].size(3), group = n_h / n_g;
  check_qkv_rope(qkv, cos, sin, n_h, n_g, e);
  TORCH_CHECK(limits.scalar_type() == at::kLong && limits.is_contiguous(), "limits");
  at::Tensor out = at::empty({qkv.size(0), n_h * e}, qkv.options());
  std::vector<SessionAttention> sessions;
  std::vector<int64_t> first_item{0};  // session s's query rows are items [first, next first)
  int64_t src_at = 0, lim_at = 0, max_blocks = 1;
  for (int64_t s = 0; s < n_s; ++s) {
    const int64_t a = starts[s], m = counts[s], n = n_src[s];
    TORCH_CHECK(a >= 0 && m >= 1 && a + m <= qkv.size(0), "session rows");
    TORCH_CHECK(n >= 1 && src_at + n <= static_cast<int64_t>(src_k.size()), "key sources");
    TORCH_CHECK(lim_at + m * group <= limits.numel(), "limits");
    sessions.push_back(rotate_store(
        qkv.data_ptr<float>() + a * qkv.stride(0), qkv.stride(0), m,
        cos.data_ptr<float>() + a * e, sin.data_ptr<float>() + a * e, k_dst[s], kraw_dst[s],
        v_dst[s], layer, rows[s], m_new[s], src_k.slice(src_at, n),
        src_v.slice(src_at, n), src_row.slice(src_at, n),
        limits.narrow(0, lim_at, m * group), block, scale, n_h,
        out.data_ptr<float>() + a * n_h * e));
    src_at += n;
    lim_at += m * group;
    first_item.push_back(first_item.back() + n_g * m * group);
    max_blocks = std::max<int64_t>(max_blocks, n);
  }
  TORCH_CHECK(src_at == static_cast<int64_t>(src_k.size()), "key sources");
  // a chunk of items is worth a thread at ~8k (row, key) pairs (a decode step's rows of two
  // sessions at a few hundred keys): below that, waking a thread costs more than it saves
  const int64_t grain = std::max<int64_t>(1, 8192 / (block * max_blocks));
  at::parallel_for(0, first_item.back(), grain, [&](int64_t lo, int64_t hi) {
    for (int64_t s = 0; s < n_s; ++s) {
      const int64_t a = std::max(lo, first_item[s]), b = std::min(hi, first_item[s + 1]);
      if (a < b) attend_session(sessions[s], a - first_item[s], b - first_item[s], n_h, e, block);
    }
  });
  return out;
}

int64_t features() { return (cpu_ok() ? 1 : 0) | (cpu_vnni() ? 2 : 0); }

}  // namespace

TORCH_LIBRARY(fak_q4, m) {
  m.def(
      "linear(Tensor x, Tensor wq, Tensor dw, Tensor mw, Tensor? norm, float eps, int pre, "
      "Tensor? residual, bool vnni) -> Tensor",
      &q4_linear);
  m.def("features() -> int", &features);
  m.def(
      "rope_attend(Tensor qkv, Tensor cos, Tensor sin, Tensor(a!) k_cache, Tensor(b!) kraw_cache, "
      "Tensor(c!) v_cache, int layer, int row, int m_new, Tensor[] src_k, Tensor[] src_v, "
      "int[] src_row, Tensor limits, int block, float scale, int n_heads) -> Tensor",
      &rope_attend);
  m.def(
      "rope_attend_batch(Tensor qkv, Tensor cos, Tensor sin, Tensor(a!)[] k_caches, "
      "Tensor(b!)[] kraw_caches, Tensor(c!)[] v_caches, int layer, int[] rows, int[] m_new, "
      "int[] starts, int[] counts, Tensor[] src_k, Tensor[] src_v, int[] src_row, int[] n_src, "
      "Tensor limits, int block, float scale, int n_heads) -> Tensor",
      &rope_attend_batch);
}
