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
#include <ATen/ops/empty.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <immintrin.h>

#include <cmath>
#include <algorithm>
#include <cstdint>
#include <vector>

namespace {

constexpr int64_t kBlock = 32;
constexpr int64_t kTile = 4;  // tokens sharing one unpacked weight block

bool cpu_ok() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

bool cpu_vnni() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vl");
}

// x [M, K] float32 -> q [M, K] int8, d [M, K/32], s [M, K/32] (d * sum q). Scalar and
// per row: a row's bytes do not depend on the other rows.
void quantize_rows(const float* x, int64_t m_rows, int64_t k, int8_t* q, float* d, float* s) {
  const int64_t nb = k / kBlock;
  at::parallel_for(0, m_rows, 16, [&](int64_t lo, int64_t hi) {
    for (int64_t m = lo; m < hi; ++m) {
      for (int64_t b = 0; b < nb; ++b) {
        const float* xb = x + m * k + b * kBlock;
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

__attribute__((target("avx2,fma"))) inline float hsum(__m256 v) {
  const __m128 lo = _mm256_castps256_ps128(v);
  const __m128 hi = _mm256_extractf128_ps(v, 1);
  __m128 r = _mm_add_ps(lo, hi);
  r = _mm_add_ps(r, _mm_movehl_ps(r, r));
  r = _mm_add_ss(r, _mm_movehdup_ps(r));
  return _mm_cvtss_f32(r);
}

__attribute__((target("avx2,fma"))) inline __m256i unpack(const uint8_t* w) {
  const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w));
  const __m256i both = _mm256_set_m128i(_mm_srli_epi16(raw, 4), raw);
  return _mm256_and_si256(both, _mm256_set1_epi8(0x0F));
}

// int32 lane l = sum of elements 4l .. 4l+3 of w * x (exact)
__attribute__((target("avx2,fma"))) inline __m256i dot_avx2(__m256i w, __m256i x) {
  const __m256i pairs = _mm256_maddubs_epi16(w, x);
  return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
}

__attribute__((target("avx2,fma,avx512vnni,avx512vl"))) inline __m256i dot_vnni(__m256i w,
                                                                               __m256i x) {
  return _mm256_dpbusd_epi32(_mm256_setzero_si256(), w, x);
}

// One weight row against tokens [m0, m0 + T); DOT is the integer dot. Defined once per
// instruction set so the AVX2 build never contains an AVX-512 instruction.
#define FAK_ROW_TILE(NAME, TARGET, DOT)                                                        \
  template <int T>                                                                             \
  __attribute__((target(TARGET))) inline void NAME(                                            \
      const uint8_t* wrow, const float* dwr, const float* mwr, const int8_t* q, const float* dx, \
      const float* sx, int64_t m0, int64_t k, int64_t nb, float* y, int64_t n, int64_t n_out) { \
    __m256 acc[T];                                                                             \
    float mins[T];                                                                             \
    for (int t = 0; t < T; ++t) {                                                              \
      acc[t] = _mm256_setzero_ps();                                                            \
      mins[t] = 0.f;                                                                           \
    }                                                                                          \
    for (int64_t b = 0; b < nb; ++b) {                                                         \
      const __m256i w = unpack(wrow + b * (kBlock / 2));                                       \
      const float dwb = dwr[b];                                                                \
      const float mwb = mwr[b];                                                                \
      for (int t = 0; t < T; ++t) {                                                            \
        const int64_t m = m0 + t;                                                              \
        const __m256i x =                                                                      \
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + m * k + b * kBlock));      \
        const __m256i p = DOT(w, x);                                                           \
        const __m256 scale = _mm256_set1_ps(dwb * dx[m * nb + b]);                             \
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), scale, acc[t]);                        \
        mins[t] = std::fma(mwb, sx[m * nb + b], mins[t]);                                      \
      }                                                                                        \
    }                                                                                          \
    for (int t = 0; t < T; ++t) y[(m0 + t) * n_out + n] = hsum(acc[t]) + mins[t];              \
  }

FAK_ROW_TILE(row_tile_avx2, "avx2,fma", dot_avx2)
FAK_ROW_TILE(row_tile_vnni, "avx2,fma,avx512vnni,avx512vl", dot_vnni)

#define FAK_MATMUL(NAME, TILE)                                                                 \
  void NAME(const uint8_t* wq, const float* dw, const float* mw, const int8_t* q,              \
            const float* dx, const float* sx, int64_t m_rows, int64_t k, int64_t n_out,        \
            float* y) {                                                                        \
    const int64_t nb = k / kBlock;                                                             \
    at::parallel_for(0, n_out, 16, [&](int64_t lo, int64_t hi) {                               \
      for (int64_t n = lo; n < hi; ++n) {                                                      \
        const uint8_t* wrow = wq + n * (k / 2);                                                \
        const float* dwr = dw + n * nb;                                                        \
        const float* mwr = mw + n * nb;                                                        \
        int64_t m = 0;                                                                         \
        for (; m + kTile <= m_rows; m += kTile)                                                \
          TILE<kTile>(wrow, dwr, mwr, q, dx, sx, m, k, nb, y, n, n_out);                       \
        for (; m < m_rows; ++m) TILE<1>(wrow, dwr, mwr, q, dx, sx, m, k, nb, y, n, n_out);     \
      }                                                                                        \
    });                                                                                        \
  }

FAK_MATMUL(matmul_avx2, row_tile_avx2)
FAK_MATMUL(matmul_vnni, row_tile_vnni)

// x [M, K] float32, wq [N, K/2] uint8, dw/mw [N, K/32] float32 -> [M, N] float32
at::Tensor q4_linear(const at::Tensor& x, const at::Tensor& wq, const at::Tensor& dw,
                     const at::Tensor& mw, bool vnni) {
  TORCH_CHECK(x.dim() == 2 && x.scalar_type() == at::kFloat && x.is_contiguous(), "x: [M, K] f32");
  const int64_t m_rows = x.size(0), k = x.size(1), n_out = wq.size(0);
  TORCH_CHECK(k % kBlock == 0 && wq.size(1) * 2 == k, "K must be a multiple of 32 matching wq");
  TORCH_CHECK(wq.is_contiguous() && wq.scalar_type() == at::kByte, "wq: [N, K/2] uint8");
  TORCH_CHECK(dw.is_contiguous() && mw.is_contiguous(), "scales must be contiguous");
  TORCH_CHECK(dw.numel() == n_out * (k / kBlock) && mw.numel() == dw.numel(), "scale shapes");
  TORCH_CHECK(cpu_ok(), "the q4 kernel needs AVX2 and FMA");
  const int64_t nb = k / kBlock;
  at::Tensor q = at::empty({m_rows, k}, x.options().dtype(at::kChar));
  at::Tensor d = at::empty({m_rows, nb}, x.options());
  at::Tensor s = at::empty({m_rows, nb}, x.options());
  quantize_rows(x.data_ptr<float>(), m_rows, k, q.data_ptr<int8_t>(), d.data_ptr<float>(),
                s.data_ptr<float>());
  at::Tensor y = at::empty({m_rows, n_out}, x.options());
  const bool use_vnni = vnni && cpu_vnni();
  auto run = use_vnni ? matmul_vnni : matmul_avx2;
  run(wq.data_ptr<uint8_t>(), dw.data_ptr<float>(), mw.data_ptr<float>(), q.data_ptr<int8_t>(),
      d.data_ptr<float>(), s.data_ptr<float>(), m_rows, k, n_out, y.data_ptr<float>());
  return y;
}


// ---- attention: one query row at a time over its visible keys ------------------------------
// Keys are read in the blocks the cache hands out (block i holds absolute rows
// [i * block, (i + 1) * block)), in order from 0, with a running maximum; a row sees keys
// [0, limit). Every number a row produces is a function of its query, its limit and the keys:
// the same bits in any batch, tile or thread.

// 2^x for x <= 0 (and -inf): round-to-nearest split, degree-6 polynomial, 0 below -126.
__attribute__((target("avx2,fma"))) inline __m256 exp2_ps(__m256 x) {
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

struct KeyBlock {
  const float* k;
  const float* v;
  int64_t k_head, k_row, v_head, v_row, rows;
};

template <int NV>
__attribute__((target("avx2,fma"))) void attend_row(const float* q, const KeyBlock* blocks,
                                                     int64_t n_blocks, int64_t block, int64_t g,
                                                     int64_t limit, float* scores, float* out) {
  __m256 qv[NV], acc[NV];
  for (int v = 0; v < NV; ++v) {
    qv[v] = _mm256_loadu_ps(q + 8 * v);
    acc[v] = _mm256_setzero_ps();
  }
  float top = -INFINITY, total = 0.f;
  for (int64_t i = 0; i < n_blocks && i * block < limit; ++i) {
    const KeyBlock& kb = blocks[i];
    const int64_t n = std::min(kb.rows, limit - i * block);
    const float* kh = kb.k + g * kb.k_head;
    const float* vh = kb.v + g * kb.v_head;
    int64_t j = 0;
    for (; j + 4 <= n; j += 4) {  // four keys' dot products as independent chains
      __m256 d0 = _mm256_setzero_ps(), d1 = d0, d2 = d0, d3 = d0;
      const float* k0 = kh + j * kb.k_row;
      for (int v = 0; v < NV; ++v) {
        d0 = _mm256_fmadd_ps(qv[v], _mm256_loadu_ps(k0 + 8 * v), d0);
        d1 = _mm256_fmadd_ps(qv[v], _mm256_loadu_ps(k0 + kb.k_row + 8 * v), d1);
        d2 = _mm256_fmadd_ps(qv[v], _mm256_loadu_ps(k0 + 2 * kb.k_row + 8 * v), d2);
        d3 = _mm256_fmadd_ps(qv[v], _mm256_loadu_ps(k0 + 3 * kb.k_row + 8 * v), d3);
      }
      scores[j] = hsum(d0);
      scores[j + 1] = hsum(d1);
      scores[j + 2] = hsum(d2);
      scores[j + 3] = hsum(d3);
    }
    for (; j < n; ++j) {
      __m256 d0 = _mm256_setzero_ps();
      for (int v = 0; v < NV; ++v)
        d0 = _mm256_fmadd_ps(qv[v], _mm256_loadu_ps(kh + j * kb.k_row + 8 * v), d0);
      scores[j] = hsum(d0);
    }
    float block_top = scores[0];
    for (j = 1; j < n; ++j) block_top = std::fmax(block_top, scores[j]);
    const float new_top = std::fmax(top, block_top);
    const float scale = _mm256_cvtss_f32(exp2_ps(_mm256_set1_ps(top - new_top)));
    const int64_t padded = (n + 7) & ~int64_t{7};
    for (j = n; j < padded; ++j) scores[j] = -INFINITY;
    __m256 sum = _mm256_setzero_ps();
    const __m256 shift = _mm256_set1_ps(new_top);
    for (j = 0; j < padded; j += 8) {
      const __m256 p = exp2_ps(_mm256_sub_ps(_mm256_loadu_ps(scores + j), shift));
      _mm256_storeu_ps(scores + j, p);
      sum = _mm256_add_ps(sum, p);
    }
    total = std::fma(total, scale, hsum(sum));
    const __m256 sv = _mm256_set1_ps(scale);
    for (int v = 0; v < NV; ++v) acc[v] = _mm256_mul_ps(acc[v], sv);
    for (j = 0; j < n; ++j) {
      const __m256 p = _mm256_set1_ps(scores[j]);
      const float* vj = vh + j * kb.v_row;
      for (int v = 0; v < NV; ++v) acc[v] = _mm256_fmadd_ps(p, _mm256_loadu_ps(vj + 8 * v), acc[v]);
    }
    top = new_top;
  }
  const __m256 inv = _mm256_set1_ps(1.f / total);
  for (int v = 0; v < NV; ++v) _mm256_storeu_ps(out + 8 * v, _mm256_mul_ps(acc[v], inv));
}

// q [G, R, E] (pre-scaled by log2(e) / sqrt(E)), keys[i] [G, n_i, E], vals[i] [G, n_i, >= E]
// (row stride free), limits [R] -> [G, R, E]
at::Tensor attend(const at::Tensor& q, at::TensorList keys, at::TensorList vals,
                  const at::Tensor& limits, int64_t block) {
  TORCH_CHECK(cpu_ok(), "the attention kernel needs AVX2 and FMA");
  TORCH_CHECK(q.dim() == 3 && q.is_contiguous() && q.scalar_type() == at::kFloat, "q: [G, R, E]");
  const int64_t n_g = q.size(0), n_r = q.size(1), e = q.size(2);
  TORCH_CHECK(e == 64 || e == 128, "head dim must be 64 or 128");
  TORCH_CHECK(keys.size() == vals.size() && !keys.empty(), "one value block per key block");
  TORCH_CHECK(limits.numel() == n_r && limits.scalar_type() == at::kLong, "limits: [R] int64");
  TORCH_CHECK(block > 0 && block <= 4096, "block size");
  std::vector<KeyBlock> blocks;
  for (size_t i = 0; i < keys.size(); ++i) {
    const at::Tensor& k = keys[i];
    const at::Tensor& v = vals[i];
    TORCH_CHECK(k.scalar_type() == at::kFloat && v.scalar_type() == at::kFloat, "f32 cache");
    TORCH_CHECK(k.dim() == 3 && v.dim() == 3 && k.size(0) == n_g && v.size(0) == n_g, "shapes");
    TORCH_CHECK(k.size(2) == e && v.size(2) >= e && k.stride(2) == 1 && v.stride(2) == 1, "E");
    TORCH_CHECK(k.size(1) == v.size(1) && k.size(1) <= block, "block rows");
    TORCH_CHECK(i + 1 == keys.size() || k.size(1) == block, "only the last block may be short");
    blocks.push_back({k.data_ptr<float>(), v.data_ptr<float>(), k.stride(0), k.stride(1),
                      v.stride(0), v.stride(1), k.size(1)});
  }
  const int64_t* lim = limits.data_ptr<int64_t>();
  for (int64_t r = 0; r < n_r; ++r)
    TORCH_CHECK(lim[r] >= 1 && lim[r] <= block * static_cast<int64_t>(blocks.size()) &&
                    (lim[r] - 1) / block < static_cast<int64_t>(blocks.size()) &&
                    lim[r] - (lim[r] - 1) / block * block <= blocks[(lim[r] - 1) / block].rows,
                "a row's limit lies outside the given keys");
  at::Tensor out = at::empty({n_g, n_r, e}, q.options());
  const float* qp = q.data_ptr<float>();
  float* op = out.data_ptr<float>();
  const int64_t span = block * static_cast<int64_t>(blocks.size());
  const int64_t grain = std::max<int64_t>(1, 65536 / span);
  at::parallel_for(0, n_g * n_r, grain, [&](int64_t lo, int64_t hi) {
    std::vector<float> scores(block + 8);
    for (int64_t i = lo; i < hi; ++i) {
      const int64_t g = i / n_r, r = i % n_r;
      const float* qi = qp + i * e;
      float* oi = op + i * e;
      if (e == 64)
        attend_row<8>(qi, blocks.data(), blocks.size(), block, g, lim[r], scores.data(), oi);
      else
        attend_row<16>(qi, blocks.data(), blocks.size(), block, g, lim[r], scores.data(), oi);
    }
  });
  return out;
}

int64_t features() { return (cpu_ok() ? 1 : 0) | (cpu_vnni() ? 2 : 0); }

}  // namespace

TORCH_LIBRARY(fak_q4, m) {
  m.def("linear(Tensor x, Tensor wq, Tensor dw, Tensor mw, bool vnni) -> Tensor", &q4_linear);
  m.def("features() -> int", &features);
  m.def("attend(Tensor q, Tensor[] keys, Tensor[] vals, Tensor limits, int block) -> Tensor",
        &attend);
}
