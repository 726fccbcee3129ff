#include "kernels/compute/window_reduce.h"

#include <cmath>

#include "kernels/compute/cpu_features.h"
#include "util/compiler.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace etnp {
namespace {

// channels [c0, C) of each; the comparison `v > m ? v : m` passes a NaN v over
void max_generic(const float* const* x, int64_t taps, int64_t c0, int64_t C, float* y) {
  for (int64_t c = c0; c < C; c++) {
    float m = -INFINITY;
    for (int64_t t = 0; t < taps; t++) {
      const float v = x[t][c];
      m = v > m ? v : m;
    }
    y[c] = m;
  }
}

void mean_generic(const float* const* x, int64_t taps, int64_t c0, int64_t C, float divisor, float* y) {
  for (int64_t c = c0; c < C; c++) {
    float s = 0.f;
    for (int64_t t = 0; t < taps; t++) s += x[t][c];
    y[c] = s / divisor;
  }
}

#if defined(__x86_64__)
// 16 then 8 channels at a time, all taps in registers; returns the channels done. vmaxps(v, m)
// is v > m ? v : m, lane by lane.
ETNP_TARGET("avx2") int64_t max_avx2(const float* const* x, int64_t taps, int64_t C, float* y) {
  int64_t c = 0;
  for (; c + 16 <= C; c += 16) {
    __m256 m0 = _mm256_set1_ps(-INFINITY), m1 = m0;
    for (int64_t t = 0; t < taps; t++) {
      m0 = _mm256_max_ps(_mm256_loadu_ps(x[t] + c), m0);
      m1 = _mm256_max_ps(_mm256_loadu_ps(x[t] + c + 8), m1);
    }
    _mm256_storeu_ps(y + c, m0);
    _mm256_storeu_ps(y + c + 8, m1);
  }
  for (; c + 8 <= C; c += 8) {
    __m256 m0 = _mm256_set1_ps(-INFINITY);
    for (int64_t t = 0; t < taps; t++) m0 = _mm256_max_ps(_mm256_loadu_ps(x[t] + c), m0);
    _mm256_storeu_ps(y + c, m0);
  }
  return c;
}

ETNP_TARGET("avx2") int64_t mean_avx2(const float* const* x, int64_t taps, int64_t C, float divisor, float* y) {
  int64_t c = 0;
  const __m256 d = _mm256_set1_ps(divisor);
  for (; c + 16 <= C; c += 16) {
    __m256 s0 = _mm256_setzero_ps(), s1 = s0;
    for (int64_t t = 0; t < taps; t++) {
      s0 = _mm256_add_ps(s0, _mm256_loadu_ps(x[t] + c));
      s1 = _mm256_add_ps(s1, _mm256_loadu_ps(x[t] + c + 8));
    }
    _mm256_storeu_ps(y + c, _mm256_div_ps(s0, d));
    _mm256_storeu_ps(y + c + 8, _mm256_div_ps(s1, d));
  }
  for (; c + 8 <= C; c += 8) {
    __m256 s0 = _mm256_setzero_ps();
    for (int64_t t = 0; t < taps; t++) s0 = _mm256_add_ps(s0, _mm256_loadu_ps(x[t] + c));
    _mm256_storeu_ps(y + c, _mm256_div_ps(s0, d));
  }
  return c;
}
#endif

}  // namespace

void window_max(const float* const* x, int64_t taps, int64_t C, float* y) {
  int64_t c = 0;
#if defined(__x86_64__)
  static const bool avx2 = cpu_has_avx2_fma();
  if (avx2) c = max_avx2(x, taps, C, y);
#endif
  max_generic(x, taps, c, C, y);
}

void window_max_u8(const uint8_t* const* x, int64_t taps, int64_t C, uint8_t* y) {
  int64_t c = 0;
#if defined(__x86_64__)
  for (; c + 16 <= C; c += 16) {  // (SSE2: every x86-64)
    __m128i m = _mm_setzero_si128();
    for (int64_t t = 0; t < taps; t++) m = _mm_max_epu8(m, _mm_loadu_si128((const __m128i*)(x[t] + c)));
    _mm_storeu_si128((__m128i*)(y + c), m);
  }
#endif
  for (; c < C; c++) {
    uint8_t m = 0;
    for (int64_t t = 0; t < taps; t++) m = x[t][c] > m ? x[t][c] : m;
    y[c] = m;
  }
}

void window_mean(const float* const* x, int64_t taps, int64_t C, float divisor, float* y) {
  int64_t c = 0;
#if defined(__x86_64__)
  static const bool avx2 = cpu_has_avx2_fma();
  if (avx2) c = mean_avx2(x, taps, C, divisor, y);
#endif
  mean_generic(x, taps, c, C, divisor, y);
}

}  // namespace etnp
