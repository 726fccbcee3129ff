#include "kernels/compute/quantize_row.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/compute/cpu_features.h"
#include "kernels/compute/portable_ops.h"
#include "util/fma_exact.h"
#include "util/compiler.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace etnp {
namespace {

// The qd8 code of one element (quantize_row.h): t = x * m rounded to float, clamped to the codes'
// range [lo, hi] = [-128 - zp, 127 - zp] (NaN stays NaN), rounded to nearest even.
// (selects as bit blends and rounding by nearbyint_f32, so that the loop vectorises)
void row_generic(const float* x, int64_t b, int64_t n, const Qd8Params& p, float* grid, uint8_t* u8) {
  const float lo = (float)(-128 - p.zp), hi = (float)(127 - p.zp), mult = p.mult, scale = p.scale;
  const float shift = (float)(p.zp + 128);
  for (int64_t i = b; i < n; i++) {
    float t = x[i] * mult;
    t = select_f32(t < lo, lo, t);
    t = select_f32(t > hi, hi, t);
    t = nearbyint_f32(t);
    grid[i] = t * scale;
    u8[i] = (uint8_t)(int32_t)select_f32(t == t, t + shift, 0.f);  // (NaN: 0)
  }
}

#if defined(__x86_64__)
ETNP_TARGET("avx512f") int64_t rows_avx512(const float* x, int64_t n, const Qd8Params& p, float* grid,
                                           uint8_t* u8) {
  const __m512 m = _mm512_set1_ps(p.mult), s = _mm512_set1_ps(p.scale), lo = _mm512_set1_ps((float)(-128 - p.zp)),
               hi = _mm512_set1_ps((float)(127 - p.zp));
  const __m512i shift = _mm512_set1_epi32(p.zp + 128), zero = _mm512_setzero_si512();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 t = _mm512_mul_ps(_mm512_loadu_ps(x + i), m);
    t = _mm512_min_ps(hi, _mm512_max_ps(lo, t));  // the value second: NaN stays NaN
    t = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm512_storeu_ps(grid + i, _mm512_mul_ps(t, s));
    // (t is an integer: the conversion rounds nothing; NaN -> INT_MIN -> below 0 -> 0)
    const __m512i c = _mm512_max_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(t), shift), zero);
    _mm_storeu_si128((__m128i*)(u8 + i), _mm512_cvtusepi32_epi8(c));
  }
  return i;
}

ETNP_TARGET("avx2,fma") int64_t rows_avx2(const float* x, int64_t n, const Qd8Params& p, float* grid,
                                          uint8_t* u8) {
  const __m256 m = _mm256_set1_ps(p.mult), s = _mm256_set1_ps(p.scale), lo = _mm256_set1_ps((float)(-128 - p.zp)),
               hi = _mm256_set1_ps((float)(127 - p.zp));
  const __m256i shift = _mm256_set1_epi32(p.zp + 128), zero = _mm256_setzero_si256();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {  // two vectors a step: 16 codes
    __m256 a = _mm256_mul_ps(_mm256_loadu_ps(x + i), m), b = _mm256_mul_ps(_mm256_loadu_ps(x + i + 8), m);
    a = _mm256_min_ps(hi, _mm256_max_ps(lo, a));  // the value second: NaN stays NaN
    b = _mm256_min_ps(hi, _mm256_max_ps(lo, b));
    a = _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    b = _mm256_round_ps(b, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_storeu_ps(grid + i, _mm256_mul_ps(a, s));
    _mm256_storeu_ps(grid + i + 8, _mm256_mul_ps(b, s));
    const __m256i qa = _mm256_max_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(a), shift), zero);  // (NaN -> 0)
    const __m256i qb = _mm256_max_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(b), shift), zero);
    const __m256i w = _mm256_permute4x64_epi64(_mm256_packs_epi32(qa, qb), 0xD8);  // 16 int16 in order
    _mm_storeu_si128((__m128i*)(u8 + i), _mm_packus_epi16(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1)));
  }
  return i;
}

ETNP_TARGET("avx2,fma") int64_t min_max_avx2(const float* x, int64_t n, float& mn, float& mx) {
  __m256 lo0 = _mm256_set1_ps(mn), hi0 = _mm256_set1_ps(mx), lo1 = lo0, hi1 = hi0;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 v0 = _mm256_loadu_ps(x + i), v1 = _mm256_loadu_ps(x + i + 8);
    lo0 = _mm256_min_ps(v0, lo0);  // NaN in v: the accumulator (second operand) is kept
    hi0 = _mm256_max_ps(v0, hi0);
    lo1 = _mm256_min_ps(v1, lo1);
    hi1 = _mm256_max_ps(v1, hi1);
  }
  alignas(32) float l[8], h[8];
  _mm256_store_ps(l, _mm256_min_ps(lo0, lo1));
  _mm256_store_ps(h, _mm256_max_ps(hi0, hi1));
  for (int t = 0; t < 8; t++) {
    mn = std::min(mn, l[t]);
    mx = std::max(mx, h[t]);
  }
  return i;
}

ETNP_TARGET("avx512f") int64_t min_max_avx512(const float* x, int64_t n, float& mn, float& mx) {
  __m512 lo = _mm512_set1_ps(mn), hi = _mm512_set1_ps(mx);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 v = _mm512_loadu_ps(x + i);
    lo = _mm512_min_ps(v, lo);  // NaN in v: the accumulator (second operand) is kept
    hi = _mm512_max_ps(v, hi);
  }
  mn = _mm512_reduce_min_ps(lo);
  mx = _mm512_reduce_max_ps(hi);
  return i;
}

ETNP_TARGET("avx2,fma") int64_t codes_avx2(const float* x, int64_t n, float inv, float shift, uint8_t* codes) {
  const __m256 vi = _mm256_set1_ps(inv), vs = _mm256_set1_ps(shift), zero = _mm256_setzero_ps(),
               top = _mm256_set1_ps(255.f);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256 a = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), vi, vs), b = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8), vi, vs);
    a = _mm256_min_ps(_mm256_max_ps(a, zero), top);  // max(NaN, 0) = 0 (the second operand)
    b = _mm256_min_ps(_mm256_max_ps(b, zero), top);
    const __m256i qa = _mm256_cvtps_epi32(a), qb = _mm256_cvtps_epi32(b);  // nearest even
    const __m256i w = _mm256_permute4x64_epi64(_mm256_packs_epi32(qa, qb), 0xD8);  // 16 int16 in order
    const __m128i bytes = _mm_packus_epi16(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));
    _mm_storeu_si128((__m128i*)(codes + i), bytes);
  }
  return i;
}

// grid_codes where the grid's codes are all bytes (no clamp to [0, 255]): max(NaN, lo) = lo (the
// second operand), as grid_code's t >= lo ? t : lo; vcvtps2dq rounds to nearest even, as the
// 1.5 * 2^23 trick does for |t| < 2^22
ETNP_TARGET("avx2,fma") int64_t grid_codes_avx2(const Int8Grid& g, int32_t shift, const float* x, uint8_t* codes,
                                                int64_t n) {
  const __m256 vi = _mm256_set1_ps(g.inv), lo = _mm256_set1_ps(g.lo), hi = _mm256_set1_ps(g.hi);
  const __m256i sh = _mm256_set1_epi32(shift);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 a = _mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), vi), lo), hi);
    const __m256 b = _mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i + 8), vi), lo), hi);
    const __m256i qa = _mm256_add_epi32(_mm256_cvtps_epi32(a), sh), qb = _mm256_add_epi32(_mm256_cvtps_epi32(b), sh);
    const __m256i w = _mm256_permute4x64_epi64(_mm256_packs_epi32(qa, qb), 0xD8);  // 16 int16 in order
    _mm_storeu_si128((__m128i*)(codes + i), _mm_packus_epi16(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1)));
  }
  return i;
}

// the same, 32 values a step: 16 to a vector, their low bytes stored (vpmovdb)
ETNP_TARGET("avx512f") int64_t grid_codes_avx512(const Int8Grid& g, int32_t shift, const float* x, uint8_t* codes,
                                                int64_t n) {
  const __m512 vi = _mm512_set1_ps(g.inv), lo = _mm512_set1_ps(g.lo), hi = _mm512_set1_ps(g.hi);
  const __m512i sh = _mm512_set1_epi32(shift);
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512 a = _mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(_mm512_loadu_ps(x + i), vi), lo), hi);
    const __m512 b = _mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(_mm512_loadu_ps(x + i + 16), vi), lo), hi);
    _mm_storeu_si128((__m128i*)(codes + i), _mm512_cvtepi32_epi8(_mm512_add_epi32(_mm512_cvtps_epi32(a), sh)));
    _mm_storeu_si128((__m128i*)(codes + i + 16), _mm512_cvtepi32_epi8(_mm512_add_epi32(_mm512_cvtps_epi32(b), sh)));
  }
  return i;
}

ETNP_TARGET("avx2") int64_t codes_to_floats_avx2(const uint8_t* codes, int64_t n, int32_t shift, float scale, float* y) {
  const __m256i sh = _mm256_set1_epi32(shift);
  const __m256 sc = _mm256_set1_ps(scale);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i c = _mm256_sub_epi32(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i*)(codes + i))), sh);
    _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_cvtepi32_ps(c), sc));
  }
  return i;
}

// the table indices of 8 values on grid (inv, lo, hi; off = lo as int32), NaN -> 256
ETNP_TARGET_INLINE("avx2,fma") __m256i grid_index_avx2(__m256 v, __m256 inv, __m256 lo, __m256 hi, __m256i off) {
  const __m256 t = _mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(v, inv), lo), hi);
  const __m256 i = _mm256_castsi256_ps(_mm256_sub_epi32(_mm256_cvtps_epi32(t), off));
  const __m256 nan_index = _mm256_castsi256_ps(_mm256_set1_epi32(256));
  return _mm256_castps_si256(_mm256_blendv_ps(i, nan_index, _mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
}

ETNP_TARGET("avx2,fma") int64_t lookup_avx2(const Int8Grid& g, const float* table, const float* x, float* y,
                                            int64_t n) {
  const __m256 vi = _mm256_set1_ps(g.inv), lo = _mm256_set1_ps(g.lo), hi = _mm256_set1_ps(g.hi);
  const __m256i off = _mm256_set1_epi32((int32_t)g.lo);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i a = grid_index_avx2(_mm256_loadu_ps(x + i), vi, lo, hi, off);
    const __m256i b = grid_index_avx2(_mm256_loadu_ps(x + i + 8), vi, lo, hi, off);
    _mm256_storeu_ps(y + i, _mm256_i32gather_ps(table, a, 4));
    _mm256_storeu_ps(y + i + 8, _mm256_i32gather_ps(table, b, 4));
  }
  return i;
}

// snap_to_grid's formula 8 lanes at a time: max / min with the value second keep a NaN (as the
// scalar comparisons do); rounded by the same add and subtract of 1.5 * 2^23 (vroundps would
// give -0 where the scalar gives +0)
ETNP_TARGET("avx2,fma") int64_t snap_avx2(const Int8Grid& g, const float* x, float* y, int64_t n) {
  const __m256 inv = _mm256_set1_ps(g.inv), lo = _mm256_set1_ps(g.lo), hi = _mm256_set1_ps(g.hi),
               sc = _mm256_set1_ps(g.scale), magic = _mm256_set1_ps(12582912.f);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256 a = _mm256_mul_ps(_mm256_loadu_ps(x + i), inv), b = _mm256_mul_ps(_mm256_loadu_ps(x + i + 8), inv);
    a = _mm256_min_ps(hi, _mm256_max_ps(lo, a));
    b = _mm256_min_ps(hi, _mm256_max_ps(lo, b));
    a = _mm256_sub_ps(_mm256_add_ps(a, magic), magic);
    b = _mm256_sub_ps(_mm256_add_ps(b, magic), magic);
    _mm256_storeu_ps(y + i, _mm256_mul_ps(a, sc));
    _mm256_storeu_ps(y + i + 8, _mm256_mul_ps(b, sc));
  }
  return i;
}
#endif

}  // namespace

void snap_to_grid(const Int8Grid& g, const float* x, float* y, int64_t n) {
  int64_t i = 0;
#if defined(__x86_64__)
  static const bool avx2 = cpu_has_avx2_fma();
  if (avx2) i = snap_avx2(g, x, y, n);
#endif
  // (snap_to_grid's formula with its selects as bit blends, so that the loop vectorises; the
  // parameters in locals, which the stores to y could otherwise alias)
  const float inv = g.inv, lo = g.lo, hi = g.hi, scale = g.scale;
  for (; i < n; i++) {
    float t = x[i] * inv;
    t = select_f32(t < lo, lo, t);
    t = select_f32(t > hi, hi, t);
    y[i] = ((t + 12582912.f) - 12582912.f) * scale;
  }
}

void grid_codes(const Int8Grid& g, int32_t shift, const float* x, uint8_t* codes, int64_t n) {
  const float inv = g.inv, lo = g.lo, hi = g.hi, sh = (float)shift;
  if (lo + sh >= 0.f && hi + sh <= 255.f) {  // the grid's codes all bytes (as they are): no clamp to [0, 255]
    int64_t i = 0;
#if defined(__x86_64__)
    static const bool avx512 = cpu_has_avx512f(), avx2 = cpu_has_avx2_fma();
    if (avx512) i = grid_codes_avx512(g, shift, x, codes, n);
    if (avx2) i += grid_codes_avx2(g, shift, x + i, codes + i, n - i);
#endif
    for (; i < n; i++) {
      float t = x[i] * inv;
      t = select_f32(t >= lo, t, lo);
      t = select_f32(t > hi, hi, t);
      // t + 1.5 * 2^23 holds t rounded to nearest even in its low bits (two's complement below 0)
      codes[i] = (uint8_t)(float_bits(t + 12582912.f) + (uint32_t)shift);
    }
    return;
  }
  for (int64_t i = 0; i < n; i++) {  // (grid_code's formula, selects as bit blends)
    float t = x[i] * inv;
    t = select_f32(t >= lo, t, lo);
    t = select_f32(t > hi, hi, t);
    float c = ((t + 12582912.f) - 12582912.f) + sh;
    c = select_f32(c < 0.f, 0.f, c);
    c = select_f32(c > 255.f, 255.f, c);
    codes[i] = (uint8_t)(int32_t)c;
  }
}

void codes_to_floats(const uint8_t* codes, int64_t n, int32_t shift, float scale, float* y) {
  int64_t i = 0;
#if defined(__x86_64__)
  static const bool avx2 = cpu_has_avx2_fma();
  if (avx2) i = codes_to_floats_avx2(codes, n, shift, scale, y);
#endif
  for (; i < n; i++) y[i] = (float)((int32_t)codes[i] - shift) * scale;
}

void grid_table_lookup(const Int8Grid& g, const float* table, const float* x, float* y, int64_t n) {
  int64_t i = 0;
#if defined(__x86_64__)
  static const bool avx2 = cpu_has_avx2_fma();
  if (avx2) i = lookup_avx2(g, table, x, y, n);
#endif
  // blocks of indices (arithmetic without branches: a loop the compiler vectorises), then their
  // reads one at a time (SSE2 has no gather)
  const float inv = g.inv, lo = g.lo, hi = g.hi, first = (float)(int32_t)g.lo;
  while (i < n) {
    const int64_t m = std::min<int64_t>(256, n - i);
    int32_t index[256];
    for (int64_t j = 0; j < m; j++) {
      const float v = x[i + j];
      float t = v * inv;
      t = select_f32(t < lo, lo, t);
      t = select_f32(hi < t, hi, t);
      index[j] = (int32_t)select_f32(v != v, 256.f, nearbyint_f32(t) - first);  // (NaN: table[256])
    }
    for (int64_t j = 0; j < m; j++) y[i + j] = table[index[j]];
    i += m;
  }
}

void float_to_codes(const float* x, int64_t n, float inv, float shift, uint8_t* codes) {
  int64_t i = 0;
#if defined(__x86_64__)
  static const bool avx2 = cpu_has_avx2_fma();
  if (avx2) i = codes_avx2(x, n, inv, shift, codes);
#endif
  for (; i < n; i++) {
    float t = fma_exact(x[i], inv, shift);  // (as the AVX2 path's FMA)
    t = select_f32(t > 0.f, t, 0.f);  // (NaN -> 0)
    t = select_f32(t < 255.f, t, 255.f);
    codes[i] = (uint8_t)(int32_t)nearbyint_f32(t);
  }
}

void row_min_max(const float* x, int64_t n, float& mn, float& mx) {
  int64_t i = 0;
#if defined(__x86_64__)
  static const bool avx512 = cpu_has_avx512f(), avx2 = cpu_has_avx2_fma();
  if (avx512) i = min_max_avx512(x, n, mn, mx);
  else if (avx2) i = min_max_avx2(x, n, mn, mx);
#endif
  // 16 lanes of minima and maxima (a loop the compiler vectorises: a float min / max reduction it
  // would not reorder), then the lanes, then the tail; min / max are exact, so the order changes
  // nothing (NaN elements are passed over: the comparisons are false)
  if (n - i >= 16) {
    float lmn[16], lmx[16];
    for (int l = 0; l < 16; l++) lmn[l] = mn, lmx[l] = mx;
    for (; i + 16 <= n; i += 16)
      for (int l = 0; l < 16; l++) {
        lmn[l] = select_f32(x[i + l] < lmn[l], x[i + l], lmn[l]);
        lmx[l] = select_f32(x[i + l] > lmx[l], x[i + l], lmx[l]);
      }
    for (int l = 0; l < 16; l++) {
      mn = std::min(mn, lmn[l]);
      mx = std::max(mx, lmx[l]);
    }
  }
  for (; i < n; i++) {
    mn = std::min(mn, x[i]);
    mx = std::max(mx, x[i]);
  }
}

Qd8Params qd8_params(float mn, float mx) {
  // (one rounding per statement, as XNNPACK's C: no contraction into fused multiply-adds)
  const float rmin = std::min(0.f, mn), rmax = std::max(0.f, mx);
  Qd8Params p;
  p.mult = rmin == rmax ? 1.f : 255.f / (rmax - rmin);
  const float dmin = rmin * p.mult;
  const float dmax = rmax * p.mult;
  const float from_min = -128.f + dmin;
  const float from_max = 127.f + dmax;
  float zp = from_min + from_max > 0.f ? -128.f - dmin : 127.f - dmax;
  // fmax / fmin as XNNPACK's math_max_f32 / math_min_f32: a NaN zero point (an infinite input
  // gives mult 0 and 0 * inf) becomes -128 - never an undefined conversion to int32
  zp = std::fmin(std::fmax(zp, -128.f), 127.f);
  p.zp = (int32_t)std::nearbyint(zp);
  p.scale = 1.f / p.mult;
  return p;
}

void quantize_row_q8(const float* x, int64_t n, const Qd8Params& p, float* grid, uint8_t* u8) {
  int64_t done = 0;
#if defined(__x86_64__)
  static const bool avx512 = cpu_has_avx512f(), avx2 = cpu_has_avx2_fma();
  if (avx512) done = rows_avx512(x, n, p, grid, u8);
  else if (avx2) done = rows_avx2(x, n, p, grid, u8);
#endif
  row_generic(x, done, n, p, grid, u8);
}

}  // namespace etnp
