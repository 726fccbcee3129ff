#include "kernels/compute/qgemm_avx2.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include "kernels/compute/qgemm_generic.h"
#include "os/thread_slot.h"
#include "util/compiler.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace etnp {

#if defined(__x86_64__)
namespace {

constexpr int64_t NR = kQ8PanelCols;

// The weights are packed in k pairs: 32 bytes a pair of k for the 16 columns of a panel,
// (column, k) lanes, so 16 of them widened to int16 are 8 columns x 2 k and one vpmaddwd with a
// broadcast pair of activations (x: widened to int16 once per task) adds 2 k to 8 column sums in
// place - the accumulators hold columns, the epilogue needs no horizontal reduction. A tile is
// ROWS (<= 6) rows x NV (1 or 2) groups of 8 columns: 12 accumulators, 2 weights, a broadcast and
// a product in the 16 registers.
template <int ROWS, int NV>
ETNP_TARGET_INLINE("avx2,fma") void k_pairs(const int8_t* b, const int16_t* x, int64_t J, int64_t Kp,
                                           __m256i (&sums)[ROWS][NV]) {
  __m256i acc[ROWS][NV];
#pragma GCC unroll 6
  for (int i = 0; i < ROWS; i++)
#pragma GCC unroll 2
    for (int v = 0; v < NV; v++) acc[i][v] = sums[i][v];
#pragma GCC unroll 2
  for (int64_t j = 0; j < J; j++, b += NR * 2) {  // (two pairs a loop pass: 4% faster, fewer loop instructions)
    __m256i wv[NV];
#pragma GCC unroll 2
    for (int v = 0; v < NV; v++) wv[v] = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i*)(b + 16 * v)));
#pragma GCC unroll 6
    for (int i = 0; i < ROWS; i++) {
      int32_t two;
      std::memcpy(&two, x + i * Kp + 2 * j, 4);
      const __m256i xa = _mm256_set1_epi32(two);
#pragma GCC unroll 2
      for (int v = 0; v < NV; v++) acc[i][v] = _mm256_add_epi32(acc[i][v], _mm256_madd_epi16(xa, wv[v]));
    }
  }
#pragma GCC unroll 6
  for (int i = 0; i < ROWS; i++)
#pragma GCC unroll 2
    for (int v = 0; v < NV; v++) sums[i][v] = acc[i][v];
}

// The same loop as a function of its own, for the per-row tile: inlined there, with that epilogue's
// values live around it, GCC 12 kept one of the 12 accumulators on the stack (a store and a reload
// every pair: the loop ran at 2/3 of the uniform tile's speed; dynamically quantized BERT-base 1.34x
// slower). The uniform tile keeps it inlined (the call's stores and reloads cost its short-K
// convolutions 2-4 %).
template <int ROWS, int NV>
ETNP_NOINLINE ETNP_TARGET("avx2,fma") void k_pairs_apart(const int8_t* b, const int16_t* x, int64_t J, int64_t Kp,
                                                        __m256i (&sums)[ROWS][NV]) {
  k_pairs<ROWS, NV>(b, x, J, Kp, sums);
}

template <int ROWS, int NV, bool U>
ETNP_TARGET("avx2,fma") void tile(int64_t m0, int64_t p0, const int16_t* x, const QActivations& a, const PackedQ8& w,
                                  const Q8Avx2Call& c, const QOutput& out) {
  const int64_t n0 = p0 * NR;
  // (uniform rows: the accumulators start at minus the zero-point correction, nothing to subtract after)
  __m256i acc[ROWS][NV];
#pragma GCC unroll 2
  for (int v = 0; v < NV; v++) {
    const __m256i start =
        U ? _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_loadu_si256((const __m256i*)(c.uni_corr + n0 + 8 * v)))
          : _mm256_setzero_si256();
#pragma GCC unroll 6
    for (int i = 0; i < ROWS; i++) acc[i][v] = start;
  }
  const int8_t* b = w.data.data() + p0 * (w.Kp / 2) * NR * 2;
  if (U) k_pairs<ROWS, NV>(b, x, w.Kp / 2, w.Kp, acc);
  else k_pairs_apart<ROWS, NV>(b, x, w.Kp / 2, w.Kp, acc);
  const Q8Bounds8 bounds = q8_bounds8(out, c.lo, c.hi);
  const int64_t cols = std::min<int64_t>(NV * 8, w.N - n0);
#pragma GCC unroll 2
  for (int v = 0; v < NV; v++) {
    if (cols <= 8 * v) break;  // (a second group of 8 columns past the panel's last)
    // column parameters padded to whole panels (pack_q8; q8_avx2_call pads the bias)
    const int64_t c0 = n0 + 8 * v;
    const __m256i cs = U ? _mm256_setzero_si256() : _mm256_loadu_si256((const __m256i*)(w.col_sum.data() + c0));
    const __m256i bq = U || w.bias_q.empty() ? _mm256_setzero_si256()  // (the uniform start has it)
                                             : _mm256_loadu_si256((const __m256i*)(w.bias_q.data() + c0));
    const __m256 sw = _mm256_loadu_ps((U ? c.uni_scale : w.scale.data()) + c0), bv = _mm256_loadu_ps(c.bias + c0);
#pragma GCC unroll 6
    for (int i = 0; i < ROWS; i++) {
      __m256i q = acc[i][v];
      __m256 r;
      if (U) {
        r = _mm256_fmadd_ps(_mm256_cvtepi32_ps(q), sw, bv);
      } else {
        const __m256i off = _mm256_set1_epi32(q8_code_offset(a.zero_point[m0 + i]));
        q = _mm256_sub_epi32(_mm256_add_epi32(q, bq), _mm256_mullo_epi32(off, cs));
        const __m256 sa = _mm256_set1_ps(a.scale[m0 + i]), f = _mm256_cvtepi32_ps(q);
        r = a.scale_rows_first ? _mm256_fmadd_ps(_mm256_mul_ps(f, sa), sw, bv)
                               : _mm256_fmadd_ps(f, _mm256_mul_ps(sa, sw), bv);
      }
      if (out.accumulate) {
        const float* prior = out.C + (m0 + i) * out.ldc + c0;
        if (cols >= 8 * (v + 1)) {
          r = _mm256_add_ps(r, _mm256_loadu_ps(prior));
        } else {
          alignas(32) float tmp[8] = {};
          for (int64_t j = 0; j < cols - 8 * v; j++) tmp[j] = prior[j];
          r = _mm256_add_ps(r, _mm256_load_ps(tmp));
        }
      }
      store_q8_8(out, (m0 + i) * out.ldc + c0, std::min<int64_t>(8, cols - 8 * v), r, bounds);
    }
  }
}

// n bytes to int16 (the tiles' activations)
ETNP_TARGET("avx2,fma") void widen(const uint8_t* src, int16_t* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256((__m256i*)(dst + i), _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i*)(src + i))));
  for (; i < n; i++) dst[i] = src[i];
}

using Tile = void (*)(int64_t, int64_t, const int16_t*, const QActivations&, const PackedQ8&, const Q8Avx2Call&,
                      const QOutput&);
template <bool U, int NV, int... R>
constexpr std::array<Tile, sizeof...(R)> tiles(std::integer_sequence<int, R...>) {
  return {&tile<R + 1, NV, U>...};
}
constexpr auto kRows = std::make_integer_sequence<int, (int)kQ8Avx2Rows>();
// [uniform][NV - 1][ROWS - 1]
const std::array<Tile, kQ8Avx2Rows> kTiles[2][2] = {{tiles<false, 1>(kRows), tiles<false, 2>(kRows)},
                                                    {tiles<true, 1>(kRows), tiles<true, 2>(kRows)}};

}  // namespace

Q8Avx2Call q8_avx2_call(int64_t M, const QActivations& a, const PackedQ8& w, const float* bias, float lo, float hi,
                        std::vector<float>& bias_buf, std::vector<int32_t>& corr_buf, std::vector<float>& scale_buf) {
  const int64_t padded = (w.N + NR - 1) / NR * NR;
  bias_buf.assign((size_t)padded, 0.f);
  if (bias) std::copy(bias, bias + w.N, bias_buf.begin());
  Q8Avx2Call c;
  c.bias = bias_buf.data();
  c.lo = lo;
  c.hi = hi;
  // (the uniform tiles multiply by the product of the scales; rows not marked uniform may still be)
  bool uniform = !a.scale_rows_first;
  for (int64_t m = 1; m < M && uniform && !a.uniform; m++)
    uniform = a.zero_point[m] == a.zero_point[0] && a.scale[m] == a.scale[0];
  if (uniform) {  // (the products the per-row epilogue computes, so results are the same)
    corr_buf.resize((size_t)padded);
    scale_buf.resize((size_t)padded);
    for (int64_t n = 0; n < padded; n++) {
      // (wrapping int32 arithmetic, as the per-row epilogue's vpmulld: a corrupt zero point
      // must not be undefined behaviour)
      corr_buf[(size_t)n] = (int32_t)((uint32_t)q8_code_offset(a.zero_point[0]) * (uint32_t)w.col_sum[(size_t)n] -
                                      (w.bias_q.empty() ? 0u : (uint32_t)w.bias_q[(size_t)n]));
      scale_buf[(size_t)n] = a.scale[0] * w.scale[(size_t)n];
    }
    c.uni_corr = corr_buf.data();
    c.uni_scale = scale_buf.data();
  }
  return c;
}

void q8_avx2_rows(int64_t m0, int64_t m1, int64_t p0, int64_t p1, const QActivations& a, const PackedQ8& w,
                  const Q8Avx2Call& c, const QOutput& out) {
  ETNP_THREAD_LOCAL(std::vector<int16_t>, xw);  // this thread's: the rows, widened
  const int64_t n = (m1 - m0) * w.Kp;
  if (xw.size() < (size_t)n) xw.resize((size_t)n);
  int16_t* x16 = xw.data();
  widen(a.data + m0 * w.Kp, x16, n);
  const auto& by_width = kTiles[c.uni_corr ? 1 : 0];
  for (int64_t p = p0; p < p1; p++) {
    const auto& by_rows = by_width[w.N - p * NR > 8 ? 1 : 0];  // a ragged last panel's 8 columns or fewer: one half
    for (int64_t m = m0; m < m1; m += kQ8Avx2Rows)
      by_rows[std::min(kQ8Avx2Rows, m1 - m) - 1](m, p, x16 + (m - m0) * w.Kp, a, w, c, out);
  }
}

#else

Q8Avx2Call q8_avx2_call(int64_t, const QActivations&, const PackedQ8&, const float*, float, float, std::vector<float>&,
                        std::vector<int32_t>&, std::vector<float>&) {
  return {};
}
void q8_avx2_rows(int64_t, int64_t, int64_t, int64_t, const QActivations&, const PackedQ8&, const Q8Avx2Call&,
                  const QOutput&) {}

#endif

}  // namespace etnp
