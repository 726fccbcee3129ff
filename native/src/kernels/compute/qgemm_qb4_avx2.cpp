// qgemm_qb4's AVX2 path (no VNNI): tiles of up to 4 rows x 8 columns (half a panel). vpmaddubsw
// multiplies the nibbles (u8 0..15) by the rows' int8 activations in pairs (at most 2 * 15 * 128
// in magnitude: no saturation); up to 4 chunks' pairs, low and high nibbles, are summed in int16
// (at most 8 * 3840 < 2^15), then widened by vpmaddwd into the int32 block sum; per block one
// conversion and one FMA a row, as the other paths (qgemm_qb4.h's order: bit-identical).
#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/compute/avx2_lanes.h"
#include "kernels/compute/qgemm_qb4_kernels.h"
#include "util/compiler.h"

namespace etnp::qb4 {
namespace {

constexpr int kMaxRows = (int)kTileRowsAvx2;

inline int32_t load4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// acc[i] = corr[i * nb] + the block's products for rows i: CH chunks (0: ch), int16 sums of up
// to 4 chunks (acc is written after each 4: not live while the chunks go by)
template <int R, int CH>
ETNP_TARGET_INLINE("avx2,fma") void block_sums(__m256i* acc, const uint8_t* d, int64_t ch, const int8_t* x,
                                               const int32_t* corr, int64_t nb) {
  const __m256i m4 = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
  const int64_t n = CH ? CH : ch;
  for (int64_t c0 = 0; c0 < n; c0 += 4) {
    __m256i s[R];
#pragma GCC unroll 4
    for (int i = 0; i < R; i++) s[i] = _mm256_setzero_si256();
    const int64_t c1 = std::min<int64_t>(n, c0 + 4);
#pragma GCC unroll 4
    for (int64_t c = c0; c < c1; c++) {
      const __m256i raw = _mm256_loadu_si256((const __m256i*)(d + c * 64));
      const __m256i l = _mm256_and_si256(raw, m4), h = _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4);
#pragma GCC unroll 4
      for (int i = 0; i < R; i++) {
        const int8_t* xi = x + (c * R + i) * 8;
        s[i] = _mm256_add_epi16(s[i], _mm256_maddubs_epi16(l, _mm256_set1_epi32(load4(xi))));
        s[i] = _mm256_add_epi16(s[i], _mm256_maddubs_epi16(h, _mm256_set1_epi32(load4(xi + 4))));
      }
    }
#pragma GCC unroll 4
    for (int i = 0; i < R; i++)
      acc[i] = _mm256_add_epi32(c0 == 0 ? _mm256_set1_epi32(corr[i * nb]) : acc[i], _mm256_madd_epi16(s[i], ones));
  }
}

// tile t (R rows) x the 8 columns of half hf of panel p
template <int R>
ETNP_TARGET("avx2,fma") void tile(const Acts& a, const PackedQB4& w, int64_t t, int64_t p, int hf, const Out& o) {
  const int64_t m0 = a.tile_m0[t];
  const uint8_t* panel = panel_at(w, p);
  const int64_t n0 = p * 16 + hf * 8, cols = std::min<int64_t>(8, w.N - n0);
  const __m256i lanes = first_lanes_avx2(cols);  // (the columns past N: neither read nor written)
  __m256 F[R];
#pragma GCC unroll 4
  for (int i = 0; i < R; i++)
    F[i] = _mm256_mul_ps(_mm256_set1_ps(a.nza[m0 + i]), _mm256_loadu_ps((const float*)panel + hf * 8));
  const int8_t* xt = a.q + a.tile_at[t];
  for (int64_t b = 0; b < w.nb; b++) {
    const uint8_t* pair = pair_at(w, panel, b);
    const uint8_t* d = pair + w.scale_bytes() + (b % 2) * w.chunks * 64 + hf * 32;
    __m256i acc[R];
    const int32_t* corr = a.corr + m0 * w.nb + b;
    const int64_t ch = w.block_chunks(b);
    const int8_t* x = xt + b * w.chunks * 8 * R;
    if (ch == 4) block_sums<R, 4>(acc, d, 4, x, corr, w.nb);
    else block_sums<R, 0>(acc, d, ch, x, corr, w.nb);
    __m256 sw;
    if (w.f32_scales) {
      sw = _mm256_loadu_ps((const float*)(pair + (b % 2) * 64) + hf * 8);
    } else {
      const __m256i v = _mm256_loadu_si256((const __m256i*)(pair + hf * 32));
      sw = _mm256_castsi256_ps(b % 2 == 0 ? _mm256_slli_epi32(v, 16)
                                          : _mm256_and_si256(v, _mm256_set1_epi32((int)0xFFFF0000u)));
    }
#pragma GCC unroll 4
    for (int i = 0; i < R; i++) F[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[i]), sw, F[i]);
  }
  const __m256 bv = o.bias ? _mm256_maskload_ps(o.bias + n0, lanes) : _mm256_setzero_ps();
  const __m256 vlo = _mm256_set1_ps(o.lo), vhi = _mm256_set1_ps(o.hi);
#pragma GCC unroll 4
  for (int i = 0; i < R; i++) {
    const __m256 r = _mm256_fmadd_ps(F[i], _mm256_set1_ps(a.sa[m0 + i]), bv);
    _mm256_maskstore_ps(o.C + (m0 + i) * o.ldc + n0, lanes, _mm256_min_ps(vhi, _mm256_max_ps(vlo, r)));
  }
}

using Tile = void (*)(const Acts&, const PackedQB4&, int64_t, int64_t, int, const Out&);
const Tile kTiles[kMaxRows] = {&tile<1>, &tile<2>, &tile<3>, &tile<4>};

}  // namespace

void tiles_avx2(const Acts& a, const PackedQB4& w, int64_t t0, int64_t t1, int64_t p0, int64_t p1,
                const Out& o) {
  for (int64_t p = p0; p < p1; p++)
    for (int hf = 0; hf < 2 && p * 16 + hf * 8 < w.N; hf++)
      for (int64_t t = t0; t < t1; t++) kTiles[a.rows(t) - 1](a, w, t, p, hf, o);
}

}  // namespace etnp::qb4
#endif
