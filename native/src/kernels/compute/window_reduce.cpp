#include "kernels/compute/window_reduce.h"

#include <cmath>
#include <cstring>

#include "kernels/compute/cpu_features.h"
#include "kernels/compute/portable_ops.h"
#include "util/compiler.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace etnp {
namespace {

// Channels [c0, C) of each, 16 at a time into local arrays (loops the compiler vectorises), then
// one at a time; the comparison `v > m ? v : m` passes a NaN v over.
void max_generic(const float* const* x, int64_t taps, int64_t c0, int64_t C, float* y) {
  int64_t c = c0;
  for (; c + 16 <= C; c += 16) {
    float m[16];
    for (int l = 0; l < 16; l++) m[l] = -INFINITY;
    for (int64_t t = 0; t < taps; t++) {
      const float* v = x[t] + c;
      for (int l = 0; l < 16; l++) m[l] = select_f32(v[l] > m[l], v[l], m[l]);
    }
    for (int l = 0; l < 16; l++) y[c + l] = m[l];
  }
  for (; c < C; c++) {
    float m = -INFINITY;
    for (int64_t t = 0; t < taps; t++) {
      const float v = x[t][c];
      m = v > m ? v : m;
    }
    y[c] = m;
  }
}

void mean_generic(const float* const* x, int64_t taps, int64_t c0, int64_t C, float divisor, float* y) {
  int64_t c = c0;
  for (; c + 16 <= C; c += 16) {  // (each channel's sum in tap order, as below)
    float s[16] = {};
    for (int64_t t = 0; t < taps; t++)
      for (int l = 0; l < 16; l++) s[l] += x[t][c + l];
    for (int l = 0; l < 16; l++) y[c + l] = s[l] / divisor;
  }
  for (; c < C; c++) {
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

// the first tap's row copied, then each later tap's row folded in: whole rows of C codes, loops the
// compiler vectorises (with a vector epilogue: 24 channels are a 16-byte and an 8-byte step), the
// row staying in L1 between taps. (16-lane local arrays a tap at a time came out as 8-, 4-, 2- and
// 1-byte pieces.)
void window_max_u8(const uint8_t* const* x, int64_t taps, int64_t C, uint8_t* y) {
  if (taps == 0) {
    std::memset(y, 0, (size_t)C);
    return;
  }
  std::memcpy(y, x[0], (size_t)C);
  for (int64_t t = 1; t < taps; t++) {
    const uint8_t* v = x[t];
    for (int64_t c = 0; c < C; c++) y[c] = v[c] > y[c] ? v[c] : y[c];
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
