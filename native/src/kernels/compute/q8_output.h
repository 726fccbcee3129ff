// Where the int8 kernels (qgemm.h, depthwise_q8.h) put their float32 results, and how one result
// or one vector of them is stored there: as float32, snapped to a static-int8 value's grid, or as
// that grid's byte codes. The scalar and vector stores give the same bytes for the same result.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/compute/quantize_row.h"
#include "util/compiler.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace etnp {

// Where the results go, row m, column n: C[m * ldc + n] as float32 - snapped to `grid` where one
// is given (a static-int8 value kept as float grid points; quantize_row.h) - or, with `codes` (and
// a grid: codes without one are not written), only the grid's byte codes
// codes[m * ldc + n] = grid_code(result, *grid, code_shift).
// `accumulate` (float32 output, no grid; the GEMM only): the product is added to C's values
// before the clamp, C = clamp(C + sa * sw * sum + bias) - blocks of K with scales of their own
// (qb4w) summed in C.
struct QOutput {
  float* C = nullptr;
  uint8_t* codes = nullptr;
  int64_t ldc = 0;
  const Int8Grid* grid = nullptr;
  int32_t code_shift = 0;
  bool accumulate = false;
};

// One (clamped) result r for element i (an index into C or codes)
inline void store_q8(const QOutput& out, int64_t i, float r) {
  if (out.grid && out.codes) out.codes[i] = grid_code(r, *out.grid, out.code_shift);
  else out.C[i] = out.grid ? snap_to_grid(r, *out.grid) : r;
}

// n results r[0, n) for elements i.. (the portable kernels: loops the compiler vectorises)
inline void store_q8_row(const QOutput& out, int64_t i, const float* r, int64_t n) {
  if (out.grid && out.codes) grid_codes(*out.grid, out.code_shift, r, out.codes + i, n);
  else if (out.grid) snap_to_grid(*out.grid, r, out.C + i, n);
  else std::memcpy(out.C + i, r, (size_t)n * sizeof(float));
}

// The clamp [lo, hi] of results and the output grid's as one (the vector stores, the portable
// rows' epilogue): for a grid output, bounds in grid units - r * inv clamped to lo * inv and
// hi * inv each clamped into [grid.lo, grid.hi] is r clamped to [lo, hi], then times inv and
// clamped to the grid, the product being monotonic (a NaN bound is none) - so a store clamps
// once; else [lo, hi]. Made once per block.
inline void q8_bounds(const QOutput& out, float lo, float hi, float& bl, float& bh) {
  bl = lo, bh = hi;
  if (!out.grid) return;
  const Int8Grid& g = *out.grid;
  const float l = lo * g.inv, h = hi * g.inv;
  bl = l > g.lo ? std::min(l, g.hi) : g.lo, bh = h < g.hi ? std::max(h, g.lo) : g.hi;  // (NaN: none)
}

#if defined(__x86_64__)
struct Q8Bounds16 {
  __m512 lo, hi;
};
ETNP_TARGET_INLINE("avx512f") Q8Bounds16 q8_bounds16(const QOutput& out, float lo, float hi) {
  float bl, bh;
  q8_bounds(out, lo, hi, bl, bh);
  return {_mm512_set1_ps(bl), _mm512_set1_ps(bh)};
}

// 16 results for elements i.. (`cols` of them valid, `mask`), clamped to `b`: snapped (max / min
// with the value second keep a NaN, as snap_to_grid), or the grid's codes (value first: a NaN -
// which finite int8 sums cannot give - becomes the lower bound), or float32.
ETNP_TARGET_INLINE("avx512f") void store_q8_16(const QOutput& out, int64_t i, int64_t cols, __mmask16 mask, __m512 r,
                                                const Q8Bounds16& b) {
  if (out.grid) {
    const Int8Grid& g = *out.grid;
    __m512 t = _mm512_mul_ps(r, _mm512_set1_ps(g.inv));
    if (out.codes) {
      t = _mm512_min_ps(_mm512_max_ps(t, b.lo), b.hi);
      // rounded to nearest even as an integer (the rounding in the instruction, whatever MXCSR
      // says) within the grid, shifted: 0..255 (grid.lo + code_shift = 0), one byte each
      const __m512i c = _mm512_add_epi32(_mm512_cvt_roundps_epi32(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC),
                                         _mm512_set1_epi32(out.code_shift));
      const __m128i v = _mm512_cvtusepi32_epi8(c);
      uint8_t* d = out.codes + i;
      if (cols >= 16) {
        _mm_storeu_si128((__m128i*)d, v);
      } else {
        alignas(16) uint8_t tmp[16];
        _mm_store_si128((__m128i*)tmp, v);
        std::memcpy(d, tmp, (size_t)cols);
      }
      return;
    }
    t = _mm512_min_ps(b.hi, _mm512_max_ps(b.lo, t));
    t = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    r = _mm512_mul_ps(t, _mm512_set1_ps(g.scale));
  } else {
    r = _mm512_min_ps(b.hi, _mm512_max_ps(b.lo, r));
  }
  _mm512_mask_storeu_ps(out.C + i, mask, r);
}

// The same bounds for the AVX2 stores (8 results).
struct Q8Bounds8 {
  __m256 lo, hi;
};
ETNP_TARGET_INLINE("avx2,fma") Q8Bounds8 q8_bounds8(const QOutput& out, float lo, float hi) {
  float bl, bh;
  q8_bounds(out, lo, hi, bl, bh);
  return {_mm256_set1_ps(bl), _mm256_set1_ps(bh)};
}

// The same as store_q8_16 for 8 results (`cols` <= 8 of them valid) on AVX2.
ETNP_TARGET_INLINE("avx2,fma") void store_q8_8(const QOutput& out, int64_t i, int64_t cols, __m256 r,
                                               const Q8Bounds8& b) {
  const Int8Grid* grid = out.grid;
  if (grid && out.codes) {
    __m256 t = _mm256_mul_ps(r, _mm256_broadcast_ss(&grid->inv));
    t = _mm256_min_ps(_mm256_max_ps(t, b.lo), b.hi);
    t = _mm256_round_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    // (an integer within the grid, shifted: 0..255 exactly - the packs saturate nothing)
    const __m256i c = _mm256_cvtps_epi32(_mm256_add_ps(t, _mm256_set1_ps((float)out.code_shift)));
    const __m128i w16 = _mm_packus_epi32(_mm256_castsi256_si128(c), _mm256_extracti128_si256(c, 1));
    const __m128i b8 = _mm_packus_epi16(w16, w16);
    uint8_t* d = out.codes + i;
    if (cols >= 8) {
      _mm_storel_epi64((__m128i*)d, b8);
    } else {
      alignas(16) uint8_t tmp[16];
      _mm_store_si128((__m128i*)tmp, b8);
      std::memcpy(d, tmp, (size_t)cols);
    }
    return;
  }
  if (grid) {
    __m256 t = _mm256_mul_ps(r, _mm256_broadcast_ss(&grid->inv));
    t = _mm256_min_ps(b.hi, _mm256_max_ps(b.lo, t));
    t = _mm256_round_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    r = _mm256_mul_ps(t, _mm256_broadcast_ss(&grid->scale));
  } else {
    r = _mm256_min_ps(b.hi, _mm256_max_ps(b.lo, r));
  }
  float* c = out.C + i;
  if (cols >= 8) {
    _mm256_storeu_ps(c, r);
  } else {
    alignas(32) float tmp[8];
    _mm256_store_ps(tmp, r);
    std::memcpy(c, tmp, (size_t)cols * sizeof(float));
  }
}
#endif

}  // namespace etnp
