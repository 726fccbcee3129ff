#include "kernels/compute/transpose_f32.h"

#include <algorithm>

#include "kernels/compute/avx2_lanes.h"
#include "kernels/compute/cpu_features.h"
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
// the 8x8 register transpose of rows t[0..8): t[k] becomes column k (in place)
ETNP_TARGET_INLINE("avx2") void transpose8_avx2(__m256* t) {
  __m256 a0 = _mm256_unpacklo_ps(t[0], t[1]), a1 = _mm256_unpackhi_ps(t[0], t[1]), a2 = _mm256_unpacklo_ps(t[2], t[3]),
         a3 = _mm256_unpackhi_ps(t[2], t[3]), a4 = _mm256_unpacklo_ps(t[4], t[5]), a5 = _mm256_unpackhi_ps(t[4], t[5]),
         a6 = _mm256_unpacklo_ps(t[6], t[7]), a7 = _mm256_unpackhi_ps(t[6], t[7]);
  __m256 b0 = _mm256_shuffle_ps(a0, a2, 0x44), b1 = _mm256_shuffle_ps(a0, a2, 0xEE), b2 = _mm256_shuffle_ps(a1, a3, 0x44),
         b3 = _mm256_shuffle_ps(a1, a3, 0xEE), b4 = _mm256_shuffle_ps(a4, a6, 0x44), b5 = _mm256_shuffle_ps(a4, a6, 0xEE),
         b6 = _mm256_shuffle_ps(a5, a7, 0x44), b7 = _mm256_shuffle_ps(a5, a7, 0xEE);
  t[0] = _mm256_permute2f128_ps(b0, b4, 0x20);
  t[1] = _mm256_permute2f128_ps(b1, b5, 0x20);
  t[2] = _mm256_permute2f128_ps(b2, b6, 0x20);
  t[3] = _mm256_permute2f128_ps(b3, b7, 0x20);
  t[4] = _mm256_permute2f128_ps(b0, b4, 0x31);
  t[5] = _mm256_permute2f128_ps(b1, b5, 0x31);
  t[6] = _mm256_permute2f128_ps(b2, b6, 0x31);
  t[7] = _mm256_permute2f128_ps(b3, b7, 0x31);
}

// y[s0..s0+8)[r0..r0+8) = x[r0..r0+8)[s0..s0+8)^T in registers
ETNP_TARGET_INLINE("avx2") void tile8_avx2(const float* x, int64_t S, float* y, int64_t R) {
  __m256 t[8];
  for (int k = 0; k < 8; k++) t[k] = _mm256_loadu_ps(x + k * S);
  transpose8_avx2(t);
  for (int k = 0; k < 8; k++) _mm256_storeu_ps(y + k * R, t[k]);
}

// R (2-4) rows interleaved (NCHW -> NHWC of an image's 3 channels): 8 columns are R output
// vectors; output lane e of vector j is column (8j + e) / R of row (8j + e) % R, so each output
// vector is R permutations of the loaded rows (one index vector per j) merged by channel - no
// 8x8 transpose of mostly empty rows, no overlapping stores.
template <int R>
ETNP_TARGET("avx2") void interleave_avx2(const float* x, int64_t S, float* y, int64_t s0, int64_t s1) {
  alignas(32) int32_t idx[R][8], sel[R][R][8];
  for (int j = 0; j < R; j++)
    for (int e = 0; e < 8; e++) {
      idx[j][e] = (8 * j + e) / R;
      for (int c = 0; c < R; c++) sel[j][c][e] = (8 * j + e) % R == c ? -1 : 0;
    }
  __m256i vi[R], vs[R][R];
  for (int j = 0; j < R; j++) {
    vi[j] = _mm256_load_si256((const __m256i*)idx[j]);
    for (int c = 0; c < R; c++) vs[j][c] = _mm256_load_si256((const __m256i*)sel[j][c]);
  }
  int64_t s = s0;
  for (; s + 8 <= s1; s += 8) {
    __m256 in[R];
    for (int c = 0; c < R; c++) in[c] = _mm256_loadu_ps(x + c * S + s);
    for (int j = 0; j < R; j++) {
      __m256 v = _mm256_permutevar8x32_ps(in[0], vi[j]);
      for (int c = 1; c < R; c++)
        v = _mm256_blendv_ps(v, _mm256_permutevar8x32_ps(in[c], vi[j]), _mm256_castsi256_ps(vs[j][c]));
      _mm256_storeu_ps(y + s * R + 8 * j, v);
    }
  }
  block_generic(x, R, S, y, 0, R, s, s1);
}

// Few rows (R < 8: NCHW -> NHWC of a few channels): 8 output rows s at a time, each R floats;
// every store but those reaching past the range's end writes 8 floats (the next store covers the
// extra ones).
ETNP_TARGET("avx2") void few_rows_avx2(const float* x, int64_t R, int64_t S, float* y, int64_t s0, int64_t s1) {
  const __m256i m = first_lanes_avx2(R);
  int64_t s = s0;
  for (; s + 8 <= s1; s += 8) {
    __m256 t[8];
    for (int k = 0; k < 8; k++) t[k] = k < R ? _mm256_loadu_ps(x + k * S + s) : _mm256_setzero_ps();
    transpose8_avx2(t);
    for (int k = 0; k < 8; k++) {
      float* d = y + (s + k) * R;
      if ((s + k) * R + 8 <= s1 * R) _mm256_storeu_ps(d, t[k]);
      else _mm256_maskstore_ps(d, m, t[k]);
    }
  }
  block_generic(x, R, S, y, 0, R, s, s1);
}

// Few columns (S < 8: NHWC -> NCHW of a few channels): output rows [s0, s1) over columns
// [r0, r1), 8 columns r at a time from 8 input rows of S floats (masked loads near the end).
ETNP_TARGET("avx2") void few_cols_avx2(const float* x, int64_t R, int64_t S, float* y, int64_t s0, int64_t s1,
                                       int64_t r0, int64_t r1) {
  const __m256i m = first_lanes_avx2(S);
  int64_t r = r0;
  for (; r + 8 <= r1; r += 8) {
    __m256 t[8];
    const bool full = (r + 7) * S + 8 <= R * S;  // the last row's 8-float load stays inside x
    for (int k = 0; k < 8; k++) t[k] = full ? _mm256_loadu_ps(x + (r + k) * S) : _mm256_maskload_ps(x + (r + k) * S, m);
    transpose8_avx2(t);
    for (int64_t q = s0; q < s1; q++) _mm256_storeu_ps(y + q * R + r, t[q]);
  }
  for (; r < r1; r++)
    for (int64_t q = s0; q < s1; q++) y[q * R + r] = x[r * S + q];
}

// A partial tile: rc (<= 8) input rows x sc (<= 8) columns, by masked loads and stores (a
// channel count off a multiple of 8 - 12, 18, 36 - left its last rows or columns to scalar code)
ETNP_TARGET_INLINE("avx2") void tile_part_avx2(const float* x, int64_t S, float* y, int64_t R, int64_t rc,
                                               int64_t sc) {
  const __m256i ms = first_lanes_avx2(sc), mr = first_lanes_avx2(rc);
  __m256 t[8];
  for (int k = 0; k < 8; k++)
    t[k] = k >= rc ? _mm256_setzero_ps() : sc == 8 ? _mm256_loadu_ps(x + k * S) : _mm256_maskload_ps(x + k * S, ms);
  transpose8_avx2(t);
  for (int k = 0; k < sc; k++) {
    if (rc == 8) _mm256_storeu_ps(y + k * R, t[k]);
    else _mm256_maskstore_ps(y + k * R, mr, t[k]);
  }
}

// the tile at input row r, column s, cut at re, se
ETNP_TARGET_INLINE("avx2") void tile_at_avx2(const float* x, int64_t R, int64_t S, float* y, int64_t r, int64_t s,
                                             int64_t re, int64_t se) {
  const int64_t rc = std::min<int64_t>(8, re - r), sc = std::min<int64_t>(8, se - s);
  if (rc == 8 && sc == 8) tile8_avx2(x + r * S + s, S, y + s * R + r, R);
  else tile_part_avx2(x + r * S + s, S, y + s * R + r, R, rc, sc);
}

ETNP_TARGET("avx2") void rows_avx2(const float* x, int64_t R, int64_t S, float* y, int64_t s0, int64_t s1,
                                   int64_t r0, int64_t r1) {
  for (int64_t sb = s0; sb < s1; sb += T) {
    const int64_t se = std::min(s1, sb + T);
    for (int64_t rb = r0; rb < r1; rb += T) {
      const int64_t re = std::min(r1, rb + T);
      // The far-apart side is swept in the inner loop, so its cache lines are used whole while
      // loaded: long input rows (S >= R: NCHW -> NHWC), 8 input rows along their columns; else 8
      // output rows along theirs. (Lines a power of two apart share cache sets: 8 x 8 tiles down
      // 32 far-apart rows evicted the first rows' lines before their second half was used.)
      if (S >= R) {
        for (int64_t r = rb; r < re; r += 8)
          for (int64_t s = sb; s < se; s += 8) tile_at_avx2(x, R, S, y, r, s, re, se);
      } else {
        for (int64_t s = sb; s < se; s += 8)
          for (int64_t r = rb; r < re; r += 8) tile_at_avx2(x, R, S, y, r, s, re, se);
      }
    }
  }
}

ETNP_TARGET("avx2") void strided_avx2(const float* x, int64_t rows, int64_t cols, int64_t ldx, float* y, int64_t ldy) {
  for (int64_t rb = 0; rb < rows; rb += T) {
    const int64_t re = std::min(rows, rb + T);
    for (int64_t cb = 0; cb < cols; cb += T) {
      const int64_t ce = std::min(cols, cb + T);
      for (int64_t r = rb; r < re; r += 8)
        for (int64_t c = cb; c < ce; c += 8) {
          const int64_t rc = std::min<int64_t>(8, re - r), sc = std::min<int64_t>(8, ce - c);
          if (rc == 8 && sc == 8) tile8_avx2(x + r * ldx + c, ldx, y + c * ldy + r, ldy);
          else tile_part_avx2(x + r * ldx + c, ldx, y + c * ldy + r, ldy, rc, sc);
        }
    }
  }
}
#endif

}  // namespace

void transpose_strided_f32(const float* x, int64_t rows, int64_t cols, int64_t ldx, float* y, int64_t ldy) {
#if defined(__x86_64__)
  static const bool avx2 = cpu_has_avx2_fma();
  if (avx2) {
    strided_avx2(x, rows, cols, ldx, y, ldy);
    return;
  }
#endif
  for (int64_t rb = 0; rb < rows; rb += T)
    for (int64_t cb = 0; cb < cols; cb += T)
      for (int64_t c = cb; c < std::min(cols, cb + T); c++)
        for (int64_t r = rb; r < std::min(rows, rb + T); r++) y[c * ldy + r] = x[r * ldx + c];
}

void transpose_2d_f32(const float* x, int64_t R, int64_t S, float* y, int64_t s0, int64_t s1, int64_t r0,
                      int64_t r1) {
#if defined(__x86_64__)
  static const bool avx2 = cpu_has_avx2_fma();
  if (avx2 && S < 8) {
    few_cols_avx2(x, R, S, y, s0, s1, r0, r1);
    return;
  }
  if (avx2 && R < 8 && r0 == 0 && r1 == R) {
    if (R == 2) interleave_avx2<2>(x, S, y, s0, s1);
    else if (R == 3) interleave_avx2<3>(x, S, y, s0, s1);
    else if (R == 4) interleave_avx2<4>(x, S, y, s0, s1);
    else few_rows_avx2(x, R, S, y, s0, s1);
    return;
  }
  if (avx2) {
    rows_avx2(x, R, S, y, s0, s1, r0, r1);
    return;
  }
#endif
  for (int64_t sb = s0; sb < s1; sb += T)
    for (int64_t rb = r0; rb < r1; rb += T) block_generic(x, R, S, y, rb, std::min(r1, rb + T), sb, std::min(s1, sb + T));
}

}  // namespace etnp
