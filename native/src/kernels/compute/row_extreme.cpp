#include "kernels/compute/row_extreme.h"

#include "kernels/compute/cpu_features.h"
#include "util/compiler.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace etnp {
namespace {

// Two passes: the extreme value (and whether a NaN occurs) in 8 independent lanes - the
// compiler's vectors - then the first element equal to it (or the first NaN).
int64_t extreme_generic(const float* row, int64_t R, bool mx) {
  constexpr int L = 8;
  float m[L];
  bool nan = false;
  for (int l = 0; l < L; l++) m[l] = row[0];
  int64_t j = 0;
  for (; j + L <= R; j += L)
    for (int l = 0; l < L; l++) {
      const float v = row[j + l];
      nan |= v != v;
      m[l] = (mx ? v > m[l] : v < m[l]) ? v : m[l];
    }
  for (; j < R; j++) {
    const float v = row[j];
    nan |= v != v;
    m[0] = (mx ? v > m[0] : v < m[0]) ? v : m[0];
  }
  float e = m[0];
  for (int l = 1; l < L; l++) e = (mx ? m[l] > e : m[l] < e) ? m[l] : e;
  for (int64_t i = 0; i < R; i++)
    if (nan ? row[i] != row[i] : row[i] == e) return i;
  return 0;  // (unreachable)
}

int lowest_bit(uint32_t m) {  // (m != 0)
  int i = 0;
  while (!(m & 1u)) m >>= 1, i++;
  return i;
}

#if defined(__x86_64__)
// The same passes, 16 lanes a step (masked tails: lanes past the end read row[0] in the first
// pass, are left out of the compare in the second). A NaN lane can turn the running extreme into
// NaN (vmaxps/vminps return the second operand then); it is only used when no NaN occurs.
ETNP_TARGET("avx512f") int64_t extreme_avx512(const float* row, int64_t R, bool mx) {
  const __m512 first = _mm512_set1_ps(row[0]);
  __m512 m = first;
  __mmask16 nan = 0;
  int64_t j = 0;
  for (; j + 16 <= R; j += 16) {
    const __m512 v = _mm512_loadu_ps(row + j);
    nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    m = mx ? _mm512_max_ps(m, v) : _mm512_min_ps(m, v);
  }
  if (j < R) {
    const __mmask16 k = (__mmask16)((1u << (R - j)) - 1);
    const __m512 v = _mm512_mask_loadu_ps(first, k, row + j);
    nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    m = mx ? _mm512_max_ps(m, v) : _mm512_min_ps(m, v);
  }
  const __m512 e = _mm512_set1_ps(mx ? _mm512_reduce_max_ps(m) : _mm512_reduce_min_ps(m));
  for (j = 0; j < R; j += 16) {
    const __mmask16 k = R - j >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (R - j)) - 1);
    const __m512 v = _mm512_maskz_loadu_ps(k, row + j);
    const __mmask16 hit = nan ? _mm512_mask_cmp_ps_mask(k, v, v, _CMP_UNORD_Q) : _mm512_mask_cmp_ps_mask(k, v, e, _CMP_EQ_OQ);
    if (hit) return j + lowest_bit(hit);
  }
  return 0;  // (unreachable)
}

ETNP_TARGET("avx2") int64_t extreme_avx2(const float* row, int64_t R, bool mx) {
  __m256 m = _mm256_set1_ps(row[0]), nan = _mm256_setzero_ps();
  int64_t j = 0;
  for (; j + 8 <= R; j += 8) {
    const __m256 v = _mm256_loadu_ps(row + j);
    nan = _mm256_or_ps(nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    m = mx ? _mm256_max_ps(m, v) : _mm256_min_ps(m, v);
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, m);
  bool has_nan = _mm256_movemask_ps(nan) != 0;
  float e = lanes[0];
  for (int l = 1; l < 8; l++) e = (mx ? lanes[l] > e : lanes[l] < e) ? lanes[l] : e;
  for (; j < R; j++) {
    const float v = row[j];
    has_nan |= v != v;
    e = (mx ? v > e : v < e) ? v : e;
  }
  const __m256 ev = _mm256_set1_ps(e);
  for (j = 0; j + 8 <= R; j += 8) {
    const __m256 v = _mm256_loadu_ps(row + j);
    const int hit = _mm256_movemask_ps(has_nan ? _mm256_cmp_ps(v, v, _CMP_UNORD_Q) : _mm256_cmp_ps(v, ev, _CMP_EQ_OQ));
    if (hit) return j + lowest_bit((uint32_t)hit);
  }
  for (; j < R; j++)
    if (has_nan ? row[j] != row[j] : row[j] == e) return j;
  return 0;  // (unreachable)
}
#endif

}  // namespace

int64_t row_extreme_index(const float* row, int64_t n, bool max) {
#if defined(__x86_64__)
  static const bool avx512 = cpu_has_avx512f(), avx2 = cpu_has_avx2_fma();
  if (avx512) return extreme_avx512(row, n, max);
  if (avx2) return extreme_avx2(row, n, max);
#endif
  return extreme_generic(row, n, max);
}

}  // namespace etnp
