#include "kernels/compute/transpose_u8.h"

#include <algorithm>
#include <cstring>

#include "kernels/compute/cpu_features.h"
#include "util/compiler.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace etnp {
namespace {

constexpr int64_t T = 64;  // cache block (bytes a side)

void block_generic(const uint8_t* x, int64_t R, int64_t S, uint8_t* y, int64_t r0, int64_t r1, int64_t s0,
                   int64_t s1) {
  for (int64_t s = s0; s < s1; s++)
    for (int64_t r = r0; r < r1; r++) y[s * R + r] = x[r * S + s];
}

#if defined(__x86_64__)
// the 16 x 16 register transpose: rows a[0..16) in, columns out (out[k] is column k). Each stage
// interleaves pairs of vectors at twice the width of the one before: bytes, words, dwords, qwords.
ETNP_TARGET_INLINE("avx2") void transpose16_u8(const __m128i* a, __m128i* out) {
  __m128i b[16], c[16], d[16];
  for (int i = 0; i < 8; i++) {  // b[i], b[8 + i]: rows 2i, 2i + 1 byte-interleaved, columns 0-7, 8-15
    b[i] = _mm_unpacklo_epi8(a[2 * i], a[2 * i + 1]);
    b[8 + i] = _mm_unpackhi_epi8(a[2 * i], a[2 * i + 1]);
  }
  for (int h = 0; h < 2; h++)  // c[4q + i]: rows 4i .. 4i + 3 of columns 4q .. 4q + 3
    for (int i = 0; i < 4; i++) {
      c[8 * h + i] = _mm_unpacklo_epi16(b[8 * h + 2 * i], b[8 * h + 2 * i + 1]);
      c[8 * h + 4 + i] = _mm_unpackhi_epi16(b[8 * h + 2 * i], b[8 * h + 2 * i + 1]);
    }
  for (int q = 0; q < 4; q++)  // d[2p + i]: rows 8i .. 8i + 7 of columns 2p, 2p + 1
    for (int i = 0; i < 2; i++) {
      d[4 * q + i] = _mm_unpacklo_epi32(c[4 * q + 2 * i], c[4 * q + 2 * i + 1]);
      d[4 * q + 2 + i] = _mm_unpackhi_epi32(c[4 * q + 2 * i], c[4 * q + 2 * i + 1]);
    }
  for (int p = 0; p < 8; p++) {  // column 2p, 2p + 1: all 16 rows
    out[2 * p] = _mm_unpacklo_epi64(d[2 * p], d[2 * p + 1]);
    out[2 * p + 1] = _mm_unpackhi_epi64(d[2 * p], d[2 * p + 1]);
  }
}

// the tile at input row r, column s (rc <= 16 rows, sc <= 16 columns): whole tiles in registers,
// edge tiles through a zeroed stack tile (their bytes copied in and out)
ETNP_TARGET_INLINE("avx2") void tile_u8(const uint8_t* x, int64_t S, uint8_t* y, int64_t R, int64_t rc, int64_t sc) {
  __m128i a[16], t[16];
  if (rc == 16 && sc == 16) {
    for (int k = 0; k < 16; k++) a[k] = _mm_loadu_si128((const __m128i*)(x + k * S));
    transpose16_u8(a, t);
    for (int k = 0; k < 16; k++) _mm_storeu_si128((__m128i*)(y + k * R), t[k]);
    return;
  }
  alignas(16) uint8_t in[16][16] = {}, out[16][16];
  for (int64_t k = 0; k < rc; k++) std::memcpy(in[k], x + k * S, (size_t)sc);
  for (int k = 0; k < 16; k++) a[k] = _mm_load_si128((const __m128i*)in[k]);
  transpose16_u8(a, t);
  for (int k = 0; k < 16; k++) _mm_store_si128((__m128i*)out[k], t[k]);
  for (int64_t k = 0; k < sc; k++) std::memcpy(y + k * R, out[k], (size_t)rc);
}

// Few rows (R in 2..7: NCHW -> NHWC of an image's channels): 16 columns are R output vectors;
// byte e of output vector j is column (16j + e) / R of row (16j + e) % R, so each output vector
// is R byte shuffles of the loaded rows merged - no 16 x 16 transpose of mostly empty rows.
template <int R>
struct ShuffleIndices {
  alignas(16) uint8_t idx[R][R][16];
  ShuffleIndices() {
    for (int j = 0; j < R; j++)
      for (int r = 0; r < R; r++)
        for (int e = 0; e < 16; e++) idx[j][r][e] = (16 * j + e) % R == r ? (uint8_t)((16 * j + e) / R) : 0x80;  // (0x80: a zero)
  }
};

template <int R>
ETNP_TARGET("avx2") void few_rows_avx2(const uint8_t* x, int64_t S, uint8_t* y, int64_t s0, int64_t s1) {
  static const ShuffleIndices<R> ix;  // (once: a call covers as few as 32 columns)
  __m128i m[R][R];
  for (int j = 0; j < R; j++)
    for (int r = 0; r < R; r++) m[j][r] = _mm_load_si128((const __m128i*)ix.idx[j][r]);
  int64_t s = s0;
  for (; s + 16 <= s1; s += 16) {
    __m128i in[R];
    for (int r = 0; r < R; r++) in[r] = _mm_loadu_si128((const __m128i*)(x + r * S + s));
    for (int j = 0; j < R; j++) {
      __m128i v = _mm_shuffle_epi8(in[0], m[j][0]);
      for (int r = 1; r < R; r++) v = _mm_or_si128(v, _mm_shuffle_epi8(in[r], m[j][r]));
      _mm_storeu_si128((__m128i*)(y + s * R + 16 * j), v);
    }
  }
  block_generic(x, R, S, y, 0, R, s, s1);
}

ETNP_TARGET("avx2") void rows_avx2(const uint8_t* x, int64_t R, int64_t S, uint8_t* y, int64_t s0, int64_t s1,
                                   int64_t r0, int64_t r1) {
  for (int64_t sb = s0; sb < s1; sb += T) {
    const int64_t se = std::min(s1, sb + T);
    for (int64_t rb = r0; rb < r1; rb += T) {
      const int64_t re = std::min(r1, rb + T);
      for (int64_t r = rb; r < re; r += 16)  // (the far-apart side swept inside: see transpose_f32.cpp)
        for (int64_t s = sb; s < se; s += 16)
          tile_u8(x + r * S + s, S, y + s * R + r, R, std::min<int64_t>(16, re - r), std::min<int64_t>(16, se - s));
    }
  }
}
#endif

}  // namespace

void transpose_2d_u8(const uint8_t* x, int64_t R, int64_t S, uint8_t* y, int64_t s0, int64_t s1, int64_t r0,
                     int64_t r1) {
#if defined(__x86_64__)
  static const bool avx2 = cpu_has_avx2_fma();
  if (avx2 && R >= 2 && R < 8 && r0 == 0 && r1 == R) {
    switch (R) {
      case 2: few_rows_avx2<2>(x, S, y, s0, s1); return;
      case 3: few_rows_avx2<3>(x, S, y, s0, s1); return;
      case 4: few_rows_avx2<4>(x, S, y, s0, s1); return;
      case 5: few_rows_avx2<5>(x, S, y, s0, s1); return;
      case 6: few_rows_avx2<6>(x, S, y, s0, s1); return;
      default: few_rows_avx2<7>(x, S, y, s0, s1); return;
    }
  }
  if (avx2 && R >= 8 && S >= 8) {  // (fewer columns: mostly empty tiles; the plain loop)
    rows_avx2(x, R, S, y, s0, s1, r0, r1);
    return;
  }
#endif
  for (int64_t sb = s0; sb < s1; sb += T)
    for (int64_t rb = r0; rb < r1; rb += T) block_generic(x, R, S, y, rb, std::min(r1, rb + T), sb, std::min(s1, sb + T));
}

}  // namespace etnp
