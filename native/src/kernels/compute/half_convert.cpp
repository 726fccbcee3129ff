#include "kernels/compute/half_convert.h"

#include "core/dtype.h"
#include "kernels/compute/cpu_features.h"
#include "util/compiler.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace etnp {

namespace {

#if defined(__x86_64__)
constexpr int kRne = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

ETNP_TARGET("avx512f") void round_half_avx512(const float* x, float* d, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(d + i, _mm512_cvtph_ps(_mm512_cvtps_ph(_mm512_loadu_ps(x + i), kRne)));
  if (i < n) {
    const __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(d + i, m, _mm512_cvtph_ps(_mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, x + i), kRne)));
  }
}
ETNP_TARGET("avx2,f16c") void round_half_f16c(const float* x, float* d, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(d + i, _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_loadu_ps(x + i), kRne)));
  for (; i < n; i++) d[i] = half_to_float(float_to_half(x[i]));
}
ETNP_TARGET("avx2,f16c") void half_to_float_f16c(const uint16_t* h, float* d, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(d + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(h + i))));
  for (; i < n; i++) d[i] = half_to_float(h[i]);
}
ETNP_TARGET("avx2,f16c") void float_to_half_f16c(const float* x, uint16_t* h, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm_storeu_si128((__m128i*)(h + i), _mm256_cvtps_ph(_mm256_loadu_ps(x + i), kRne));
  for (; i < n; i++) h[i] = float_to_half(x[i]);
}
#endif

}  // namespace

void round_to_half(const float* x, float* d, int64_t n) {
#if defined(__x86_64__)
  if (cpu_has_avx512f()) return round_half_avx512(x, d, n);
  if (cpu_has_f16c()) return round_half_f16c(x, d, n);
#endif
  for (int64_t i = 0; i < n; i++) d[i] = half_to_float(float_to_half(x[i]));
}

void round_to_bf16(const float* x, float* d, int64_t n) {  // (integer operations: vectorised by the compiler)
  for (int64_t i = 0; i < n; i++) d[i] = bf16_to_float(float_to_bf16(x[i]));
}

void half_to_float_n(const uint16_t* h, float* d, int64_t n) {
#if defined(__x86_64__)
  if (cpu_has_f16c()) return half_to_float_f16c(h, d, n);
#endif
  for (int64_t i = 0; i < n; i++) d[i] = half_to_float(h[i]);
}

void float_to_half_n(const float* x, uint16_t* h, int64_t n) {
#if defined(__x86_64__)
  if (cpu_has_f16c()) return float_to_half_f16c(x, h, n);
#endif
  for (int64_t i = 0; i < n; i++) h[i] = float_to_half(x[i]);
}

}  // namespace etnp
