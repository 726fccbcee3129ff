#include "kernels/compute/add_q8.h"

#include <algorithm>
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

// m operands from element i as float32: codes dequantized, or the values
void operands(const Q8Operand& x, int64_t i, int64_t m, float* r) {
  if (x.codes) {
    const int32_t shift = x.shift;
    const float scale = x.scale;
    for (int64_t j = 0; j < m; j++) r[j] = (float)((int32_t)x.codes[i + j] - shift) * scale;
  } else {
    std::memcpy(r, x.values + i, (size_t)m * sizeof(float));
  }
}

// blocks of 256: the operands, their clamped sums, stored (loops the compiler vectorises)
void add_generic(const Q8Operand& a, const Q8Operand& b, float lo, float hi, const QOutput& out, int64_t begin,
                 int64_t end) {
  float r[256], v[256];
  for (int64_t i = begin; i < end;) {
    const int64_t m = std::min<int64_t>(256, end - i);
    operands(a, i, m, r);
    operands(b, i, m, v);
    for (int64_t j = 0; j < m; j++) r[j] = clamp_f32(r[j] + v[j], lo, hi);
    store_q8_row(out, i, r, m);
    i += m;
  }
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

// The same, 8 elements at a time.
ETNP_TARGET_INLINE("avx2,fma") __m256 operand8(const Q8Operand& x, int64_t i) {
  if (!x.codes) return _mm256_loadu_ps(x.values + i);
  const __m256i c = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i*)(x.codes + i)));
  return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(c, _mm256_set1_epi32(x.shift))), _mm256_set1_ps(x.scale));
}

ETNP_TARGET("avx2,fma") void add_avx2(const Q8Operand& a, const Q8Operand& b, float lo, float hi, const QOutput& out,
                                      int64_t begin, int64_t end) {
  const Q8Bounds8 bounds = q8_bounds8(out, lo, hi);
  int64_t i = begin;
  for (; i + 8 <= end; i += 8) store_q8_8(out, i, 8, _mm256_add_ps(operand8(a, i), operand8(b, i)), bounds);
  add_generic(a, b, lo, hi, out, i, end);
}
#endif

// ---- XNNPACK's fixed-point add (add_q8_fixed) ----

// m grid indices from element i: code - shift, or the grid point over the scale, rounded
void indices(const Q8Operand& x, int64_t i, int64_t m, int32_t* r) {
  if (x.codes) {
    for (int64_t j = 0; j < m; j++) r[j] = (int32_t)x.codes[i + j] - x.shift;
  } else {
    const float inv = 1.f / x.scale;
    for (int64_t j = 0; j < m; j++) r[j] = (int32_t)std::nearbyint(x.values[i + j] * inv);
  }
}

// x >> s with the sign kept (defined for negative x, unlike >> before C++20)
inline int32_t asr(int32_t x, int32_t s) { return x >= 0 ? x >> s : ~(~x >> s); }

void add_fixed_generic(const Q8Operand& a, const Q8Operand& b, const Q8AddFixed& p, float lo, float hi,
                       const QOutput& out, int64_t begin, int64_t end) {
  int32_t ia[256], ib[256];
  float r[256];
  const int32_t rounding = 1 << (p.shift - 1);
  for (int64_t i = begin; i < end;) {
    const int64_t m = std::min<int64_t>(256, end - i);
    indices(a, i, m, ia);
    indices(b, i, m, ib);
    for (int64_t j = 0; j < m; j++) r[j] = clamp_f32((float)asr(rounding + p.am * ia[j] + p.bm * ib[j], p.shift), lo, hi);
    store_q8_row(out, i, r, m);
    i += m;
  }
}

#if defined(__x86_64__)
ETNP_TARGET_INLINE("avx512f") __m512i index16(const Q8Operand& x, int64_t i) {
  if (!x.codes) return _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x.values + i), _mm512_set1_ps(1.f / x.scale)));
  return _mm512_sub_epi32(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i*)(x.codes + i))), _mm512_set1_epi32(x.shift));
}

ETNP_TARGET("avx512f") void add_fixed_avx512(const Q8Operand& a, const Q8Operand& b, const Q8AddFixed& p, float lo,
                                             float hi, const QOutput& out, int64_t begin, int64_t end) {
  const Q8Bounds16 bounds = q8_bounds16(out, lo, hi);
  const __m512i am = _mm512_set1_epi32(p.am), bm = _mm512_set1_epi32(p.bm), rnd = _mm512_set1_epi32(1 << (p.shift - 1));
  const __m128i sh = _mm_cvtsi32_si128(p.shift);
  int64_t i = begin;
  for (; i + 16 <= end; i += 16) {
    const __m512i acc = _mm512_add_epi32(_mm512_add_epi32(rnd, _mm512_mullo_epi32(am, index16(a, i))),
                                         _mm512_mullo_epi32(bm, index16(b, i)));
    store_q8_16(out, i, 16, (__mmask16)0xFFFF, _mm512_cvtepi32_ps(_mm512_sra_epi32(acc, sh)), bounds);
  }
  add_fixed_generic(a, b, p, lo, hi, out, i, end);
}

ETNP_TARGET_INLINE("avx2,fma") __m256i index8(const Q8Operand& x, int64_t i) {
  if (!x.codes) return _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x.values + i), _mm256_set1_ps(1.f / x.scale)));
  return _mm256_sub_epi32(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i*)(x.codes + i))), _mm256_set1_epi32(x.shift));
}

ETNP_TARGET("avx2,fma") void add_fixed_avx2(const Q8Operand& a, const Q8Operand& b, const Q8AddFixed& p, float lo,
                                            float hi, const QOutput& out, int64_t begin, int64_t end) {
  const Q8Bounds8 bounds = q8_bounds8(out, lo, hi);
  const __m256i am = _mm256_set1_epi32(p.am), bm = _mm256_set1_epi32(p.bm), rnd = _mm256_set1_epi32(1 << (p.shift - 1));
  const __m128i sh = _mm_cvtsi32_si128(p.shift);
  int64_t i = begin;
  for (; i + 8 <= end; i += 8) {
    const __m256i acc = _mm256_add_epi32(_mm256_add_epi32(rnd, _mm256_mullo_epi32(am, index8(a, i))),
                                         _mm256_mullo_epi32(bm, index8(b, i)));
    store_q8_8(out, i, 8, _mm256_cvtepi32_ps(_mm256_sra_epi32(acc, sh)), bounds);
  }
  add_fixed_generic(a, b, p, lo, hi, out, i, end);
}
#endif

}  // namespace

bool add_fixed_params(float a_scale, float b_scale, float out_scale, Q8AddFixed& p) {
  // (XNNPACK's: the ratios in float32, the larger one's exponent sets the shift, 20 bits of multiplier)
  const float as = std::fabs(a_scale / out_scale), bs = std::fabs(b_scale / out_scale);
  constexpr float kMin = 0x1.0p-10f, kMax = 0x1.0p+8f;
  if (!(as >= kMin && as < kMax && bs >= kMin && bs < kMax)) return false;
  int exp;
  std::frexp(std::max(as, bs), &exp);  // max = f * 2^exp, f in [0.5, 1): its float exponent is exp - 1
  p.shift = 20 - (exp - 1);
  p.am = (int32_t)std::lrint(std::ldexp(as, p.shift));
  p.bm = (int32_t)std::lrint(std::ldexp(bs, p.shift));
  return p.shift >= 12 && p.shift <= 30;
}

void add_q8_fixed(const Q8Operand& a, const Q8Operand& b, const Q8AddFixed& p, float lo, float hi, const QOutput& out,
                  int64_t begin, int64_t end) {
#if defined(__x86_64__)
  static const bool avx512 = cpu_has_avx512f(), avx2 = cpu_has_avx2_fma();
  if (avx512) return add_fixed_avx512(a, b, p, lo, hi, out, begin, end);
  if (avx2) return add_fixed_avx2(a, b, p, lo, hi, out, begin, end);
#endif
  add_fixed_generic(a, b, p, lo, hi, out, begin, end);
}

void add_q8(const Q8Operand& a, const Q8Operand& b, float lo, float hi, const QOutput& out, int64_t begin, int64_t end) {
#if defined(__x86_64__)
  static const bool avx512 = cpu_has_avx512f(), avx2 = cpu_has_avx2_fma();
  if (avx512) {
    add_avx512(a, b, lo, hi, out, begin, end);
    return;
  }
  if (avx2) {
    add_avx2(a, b, lo, hi, out, begin, end);
    return;
  }
#endif
  add_generic(a, b, lo, hi, out, begin, end);
}

}  // namespace etnp
