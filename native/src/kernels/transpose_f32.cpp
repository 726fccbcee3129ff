#include "kernels/transpose_f32.h"

#include <algorithm>

#include "kernels/cpu_features.h"
#include "util/compiler.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace etnp {
namespace {

constexpr int64_t T = 32;  // cache block (elements a side)

void block_generic(const float* x, int64_t R, int64_t S, float* y, int64_t r0, int64_t r1, int64_t s0, int64_t s1) {
  for (int64_t s = s0; s < s1; s++)
    for (int64_t r = r0; r < r1; r++) y[s * R + r] = x[r * S + s];
}

#if defined(__x86_64__)
// y[s0..s0+8)[r0..r0+8) = x[r0..r0+8)[s0..s0+8)^T in registers
ETNP_TARGET_INLINE("avx2") void tile8_avx2(const float* x, int64_t S, float* y, int64_t R) {
  __m256 r0 = _mm256_loadu_ps(x), r1 = _mm256_loadu_ps(x + S), r2 = _mm256_loadu_ps(x + 2 * S),
         r3 = _mm256_loadu_ps(x + 3 * S), r4 = _mm256_loadu_ps(x + 4 * S), r5 = _mm256_loadu_ps(x + 5 * S),
         r6 = _mm256_loadu_ps(x + 6 * S), r7 = _mm256_loadu_ps(x + 7 * S);
  __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1), t2 = _mm256_unpacklo_ps(r2, r3),
         t3 = _mm256_unpackhi_ps(r2, r3), t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5),
         t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
  __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE),
         u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE),
         u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE),
         u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  _mm256_storeu_ps(y, _mm256_permute2f128_ps(u0, u4, 0x20));
  _mm256_storeu_ps(y + R, _mm256_permute2f128_ps(u1, u5, 0x20));
  _mm256_storeu_ps(y + 2 * R, _mm256_permute2f128_ps(u2, u6, 0x20));
  _mm256_storeu_ps(y + 3 * R, _mm256_permute2f128_ps(u3, u7, 0x20));
  _mm256_storeu_ps(y + 4 * R, _mm256_permute2f128_ps(u0, u4, 0x31));
  _mm256_storeu_ps(y + 5 * R, _mm256_permute2f128_ps(u1, u5, 0x31));
  _mm256_storeu_ps(y + 6 * R, _mm256_permute2f128_ps(u2, u6, 0x31));
  _mm256_storeu_ps(y + 7 * R, _mm256_permute2f128_ps(u3, u7, 0x31));
}

ETNP_TARGET("avx2") void rows_avx2(const float* x, int64_t R, int64_t S, float* y, int64_t s0, int64_t s1) {
  for (int64_t sb = s0; sb < s1; sb += T) {
    const int64_t se = std::min(s1, sb + T);
    for (int64_t rb = 0; rb < R; rb += T) {
      const int64_t re = std::min(R, rb + T);
      int64_t s = sb;
      for (; s + 8 <= se; s += 8) {
        int64_t r = rb;
        for (; r + 8 <= re; r += 8) tile8_avx2(x + r * S + s, S, y + s * R + r, R);
        if (r < re) block_generic(x, R, S, y, r, re, s, s + 8);
      }
      if (s < se) block_generic(x, R, S, y, rb, re, s, se);
    }
  }
}
#endif

}  // namespace

void transpose_2d_f32(const float* x, int64_t R, int64_t S, float* y, int64_t s0, int64_t s1) {
#if defined(__x86_64__)
  static const bool avx2 = cpu_has_avx2_fma();
  if (avx2 && R >= 8) {
    rows_avx2(x, R, S, y, s0, s1);
    return;
  }
#endif
  for (int64_t sb = s0; sb < s1; sb += T)
    for (int64_t rb = 0; rb < R; rb += T) block_generic(x, R, S, y, rb, std::min(R, rb + T), sb, std::min(s1, sb + T));
}

}  // namespace etnp
