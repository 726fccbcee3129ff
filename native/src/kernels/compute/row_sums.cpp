#include "kernels/compute/row_sums.h"

#include <algorithm>

#include "kernels/compute/cpu_features.h"
#include "util/compiler.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace etnp {
namespace {

// one row: 8 double lanes (the compiler's vectors), the tree, the tail in order
double row_sum_generic(const float* row, int64_t len) {
  double lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t j = 0;
  for (; j + 8 <= len; j += 8)
    for (int l = 0; l < 8; l++) lane[l] += row[j + l];
  double acc = ((lane[0] + lane[4]) + (lane[1] + lane[5])) + ((lane[2] + lane[6]) + (lane[3] + lane[7]));
  for (; j < len; j++) acc += row[j];
  return acc;
}

#if defined(__x86_64__)
// (l0 + l4, l1 + l5, l2 + l6, l3 + l7) -> ((l0 + l4) + (l1 + l5)) + ((l2 + l6) + (l3 + l7))
ETNP_TARGET_INLINE("avx2") double tree_avx2(__m256d s) {
  const __m128d lo = _mm256_castpd256_pd128(s), hi = _mm256_extractf128_pd(s, 1);
  const double a = _mm_cvtsd_f64(_mm_add_sd(lo, _mm_unpackhi_pd(lo, lo)));
  const double b = _mm_cvtsd_f64(_mm_add_sd(hi, _mm_unpackhi_pd(hi, hi)));
  return a + b;
}

// R rows side by side (independent chains: a short row is otherwise one chain of dependent adds)
template <int R>
ETNP_TARGET("avx512f") void rows_avx512(const float* x, int64_t len, int64_t stride, double* out) {
  __m512d acc[R];
  for (int r = 0; r < R; r++) acc[r] = _mm512_setzero_pd();
  int64_t j = 0;
  for (; j + 8 <= len; j += 8)
    for (int r = 0; r < R; r++) acc[r] = _mm512_add_pd(acc[r], _mm512_cvtps_pd(_mm256_loadu_ps(x + r * stride + j)));
  for (int r = 0; r < R; r++) {
    const __m256d s = _mm256_add_pd(_mm512_extractf64x4_pd(acc[r], 0), _mm512_extractf64x4_pd(acc[r], 1));
    double t = tree_avx2(s);
    for (int64_t k = j; k < len; k++) t += x[r * stride + k];
    out[r] = t;
  }
}

template <int R>
ETNP_TARGET("avx2") void rows_avx2(const float* x, int64_t len, int64_t stride, double* out) {
  __m256d lo[R], hi[R];
  for (int r = 0; r < R; r++) lo[r] = hi[r] = _mm256_setzero_pd();
  int64_t j = 0;
  for (; j + 8 <= len; j += 8)
    for (int r = 0; r < R; r++) {
      lo[r] = _mm256_add_pd(lo[r], _mm256_cvtps_pd(_mm_loadu_ps(x + r * stride + j)));
      hi[r] = _mm256_add_pd(hi[r], _mm256_cvtps_pd(_mm_loadu_ps(x + r * stride + j + 4)));
    }
  for (int r = 0; r < R; r++) {
    double t = tree_avx2(_mm256_add_pd(lo[r], hi[r]));
    for (int64_t k = j; k < len; k++) t += x[r * stride + k];
    out[r] = t;
  }
}
#endif

}  // namespace

void row_sums_f64(const float* x, int64_t rows, int64_t len, int64_t stride, double* out) {
  int64_t r = 0;
#if defined(__x86_64__)
  static const bool avx512 = cpu_has_avx512f(), avx2 = cpu_has_avx2_fma();
  if (avx512) {
    for (; r + 4 <= rows; r += 4) rows_avx512<4>(x + r * stride, len, stride, out + r);
    for (; r < rows; r++) rows_avx512<1>(x + r * stride, len, stride, out + r);
  } else if (avx2) {
    for (; r + 4 <= rows; r += 4) rows_avx2<4>(x + r * stride, len, stride, out + r);
    for (; r < rows; r++) rows_avx2<1>(x + r * stride, len, stride, out + r);
  }
#endif
  for (; r < rows; r++) out[r] = row_sum_generic(x + r * stride, len);
}

void row_sums_sequential_f32(const float* x, int64_t rows, int64_t len, int64_t stride, float* out) {
  constexpr int64_t kRows = 8, kCols = 256;  // a block: 8 rows x 256 columns, transposed (8 KB)
  float t[kCols * kRows];
  for (int64_t r0 = 0; r0 < rows; r0 += kRows) {
    const int64_t n = std::min(kRows, rows - r0);
    float acc[kRows] = {};
    for (int64_t j0 = 0; j0 < len; j0 += kCols) {
      const int64_t m = std::min(kCols, len - j0);
      for (int64_t i = 0; i < kRows; i++)  // (rows past the last: zeros, summed and dropped)
        for (int64_t j = 0; j < m; j++) t[j * kRows + i] = i < n ? x[(r0 + i) * stride + j0 + j] : 0.f;
      if (j0 == 0)  // (the first element itself, not 0 + it: a -0 stays -0, as ExecuTorch's)
        for (int64_t i = 0; i < kRows; i++) acc[i] = t[i];
      for (int64_t j = j0 == 0 ? 1 : 0; j < m; j++)
        for (int64_t i = 0; i < kRows; i++) acc[i] += t[j * kRows + i];  // (vectorised across the rows)
    }
    for (int64_t i = 0; i < n; i++) out[r0 + i] = acc[i];
  }
}

}  // namespace etnp
