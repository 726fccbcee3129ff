#include "kernels/compute/add_q8.h"

#include <algorithm>

#include "kernels/compute/cpu_features.h"
#include "util/compiler.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace etnp {
namespace {

inline float operand(const Q8Operand& x, int64_t i) {
  return x.codes ? (float)((int32_t)x.codes[i] - x.shift) * x.scale : x.values[i];
}

void add_generic(const Q8Operand& a, const Q8Operand& b, float lo, float hi, const QOutput& out, int64_t begin,
                 int64_t end) {
  for (int64_t i = begin; i < end; i++) store_q8(out, i, std::min(std::max(operand(a, i) + operand(b, i), lo), hi));
}

#if defined(__x86_64__)
ETNP_TARGET_INLINE("avx512f") __m512 operand16(const Q8Operand& x, int64_t i) {
  if (!x.codes) return _mm512_loadu_ps(x.values + i);
  const __m512i c = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i*)(x.codes + i)));
  return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(c, _mm512_set1_epi32(x.shift))), _mm512_set1_ps(x.scale));
}

ETNP_TARGET("avx512f") void add_avx512(const Q8Operand& a, const Q8Operand& b, float lo, float hi, const QOutput& out,
                                       int64_t begin, int64_t end) {
  const Q8Bounds16 bounds = q8_bounds16(out, lo, hi);
  int64_t i = begin;
  for (; i + 16 <= end; i += 16)
    store_q8_16(out, i, 16, (__mmask16)0xFFFF, _mm512_add_ps(operand16(a, i), operand16(b, i)), bounds);
  add_generic(a, b, lo, hi, out, i, end);
}
#endif

}  // namespace

void add_q8(const Q8Operand& a, const Q8Operand& b, float lo, float hi, const QOutput& out, int64_t begin, int64_t end) {
#if defined(__x86_64__)
  static const bool avx512 = cpu_has_avx512f();
  if (avx512) {
    add_avx512(a, b, lo, hi, out, begin, end);
    return;
  }
#endif
  add_generic(a, b, lo, hi, out, begin, end);
}

}  // namespace etnp
