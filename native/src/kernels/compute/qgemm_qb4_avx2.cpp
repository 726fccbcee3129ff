// qgemm_qb4's AVX2 path (no VNNI): tiles of up to 4 rows x 8 columns (half a panel). vpmaddubsw
// multiplies the nibbles (u8 0..15) by the rows' int8 activations in pairs (at most 2 * 15 * 128
// in magnitude: no saturation); up to 4 chunks' pairs, low and high nibbles, are summed in int16
// (at most 8 * 3840 < 2^15), then widened by vpmaddwd into the int32 block sum; per block one
// conversion and one FMA a row, as the other paths (qgemm_qb4.h's order: bit-identical). One row
// (a decode step) streams whole panels, two ranges side by side (row_panels).
#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

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

// One row (a decode step) is bound by the cache lines one core has in flight (as on the VNNI
// path, qgemm_qb4_avx512.cpp): its panels are read as kStreams ranges side by side, each
// prefetched kAhead bytes ahead, both halves of a panel's chunk from one read (16 registers:
// two panels' two halves' int16 sums and float accumulators, and the constants).
constexpr int kStreams = 2;
constexpr int64_t kAhead = 2048;

// the chunk at offset d of P panels for one row (its 8 activations at x) into the int16 sums
// s[j * 2 + half] (NT: prefetched non-temporally, PackedQB4::stream)
template <int P, bool NT>
ETNP_TARGET_INLINE("avx2,fma") void row_chunk(__m256i* s, const uint8_t* const* panel, int64_t d, const int8_t* x) {
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  const __m256i xl = _mm256_set1_epi32(load4(x)), xh = _mm256_set1_epi32(load4(x + 4));
#pragma GCC unroll 4
  for (int j = 0; j < P; j++) {
    const uint8_t* q = panel[j] + d;
    _mm_prefetch((const char*)(q + kAhead), NT ? _MM_HINT_NTA : _MM_HINT_T0);
#pragma GCC unroll 2
    for (int hf = 0; hf < 2; hf++) {
      const __m256i raw = _mm256_loadu_si256((const __m256i*)(q + hf * 32));
      const __m256i l = _mm256_and_si256(raw, m4), h = _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4);
      __m256i& sj = s[j * 2 + hf];
      sj = _mm256_add_epi16(sj, _mm256_maddubs_epi16(l, xl));
      sj = _mm256_add_epi16(sj, _mm256_maddubs_epi16(h, xh));
    }
  }
}

// One row (tile t holds one) x the P panels p, p + stride, ...: per column the float steps of
// tile<1> in the same order (bit-identical); integer sums regrouped (exact)
template <int P, bool NT>
ETNP_TARGET("avx2,fma") void row_panels(const Acts& a, const PackedQB4& w, int64_t t, int64_t p, int64_t stride,
                                        const Out& o) {
  const int64_t m0 = a.tile_m0[t];
  const uint8_t* panel[P];
  __m256 F[P * 2];
#pragma GCC unroll 4
  for (int j = 0; j < P; j++) {
    panel[j] = panel_at(w, p + j * stride);
#pragma GCC unroll 2
    for (int hf = 0; hf < 2; hf++)
      F[j * 2 + hf] = _mm256_mul_ps(_mm256_set1_ps(a.nza[m0]), _mm256_loadu_ps((const float*)panel[j] + hf * 8));
  }
  const __m256i ones = _mm256_set1_epi16(1);
  const int32_t* corr = a.corr + m0 * w.nb;
  for (int64_t b = 0; b < w.nb; b++) {
    const bool odd = b & 1;
    const int64_t at = pair_offset(w, b), d = chunks_offset(w, b), ch = w.block_chunks(b);
    const int8_t* x = a.q + a.tile_at[t] + b * w.chunks * 8;
    __m256i acc[P * 2];
    for (int64_t c0 = 0; c0 < ch; c0 += 4) {  // (int16 sums of up to 4 chunks: no overflow)
      __m256i s[P * 2];
#pragma GCC unroll 8
      for (int i = 0; i < P * 2; i++) s[i] = _mm256_setzero_si256();
      const int64_t c1 = std::min<int64_t>(ch, c0 + 4);
      for (int64_t c = c0; c < c1; c++) row_chunk<P, NT>(s, panel, d + c * 64, x + c * 8);
#pragma GCC unroll 8
      for (int i = 0; i < P * 2; i++)
        acc[i] = _mm256_add_epi32(c0 == 0 ? _mm256_set1_epi32(corr[b]) : acc[i], _mm256_madd_epi16(s[i], ones));
    }
#pragma GCC unroll 4
    for (int j = 0; j < P; j++) {
      const uint8_t* pair = panel[j] + at;
#pragma GCC unroll 2
      for (int hf = 0; hf < 2; hf++) {
        __m256 sw;
        if (w.f32_scales) {
          sw = _mm256_loadu_ps((const float*)(pair + (odd ? 64 : 0)) + hf * 8);
        } else {
          const __m256i v = _mm256_loadu_si256((const __m256i*)(pair + hf * 32));
          sw = _mm256_castsi256_ps(odd ? _mm256_and_si256(v, _mm256_set1_epi32((int)0xFFFF0000u))
                                       : _mm256_slli_epi32(v, 16));
        }
        F[j * 2 + hf] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[j * 2 + hf]), sw, F[j * 2 + hf]);
      }
    }
  }
  const __m256 vlo = _mm256_set1_ps(o.lo), vhi = _mm256_set1_ps(o.hi), sa = _mm256_set1_ps(a.sa[m0]);
#pragma GCC unroll 4
  for (int j = 0; j < P; j++)
#pragma GCC unroll 2
    for (int hf = 0; hf < 2; hf++) {
      const int64_t n0 = (p + j * stride) * 16 + hf * 8, cols = std::min<int64_t>(8, w.N - n0);
      if (cols <= 0) continue;
      const __m256i lanes = first_lanes_avx2(cols);  // (the columns past N: neither read nor written)
      const __m256 bv = o.bias ? _mm256_maskload_ps(o.bias + n0, lanes) : _mm256_setzero_ps();
      const __m256 r = _mm256_fmadd_ps(F[j * 2 + hf], sa, bv);
      _mm256_maskstore_ps(o.C + m0 * o.ldc + n0, lanes, _mm256_min_ps(vhi, _mm256_max_ps(vlo, r)));
    }
}

using Tile = void (*)(const Acts&, const PackedQB4&, int64_t, int64_t, int, const Out&);
const Tile kTiles[kMaxRows] = {&tile<1>, &tile<2>, &tile<3>, &tile<4>};

}  // namespace

void tiles_avx2(const Acts& a, const PackedQB4& w, int64_t t0, int64_t t1, int64_t p0, int64_t p1,
                const Out& o) {
  auto decode = [&](auto nt) {  // (a decode step: kStreams ranges of panels side by side)
    constexpr bool NT = decltype(nt)::value;
    return decode_streams<kStreams>(
        a, t0, t1, p0, p1, [&](int64_t p, int64_t stride) { row_panels<kStreams, NT>(a, w, t0, p, stride, o); },
        [&](int64_t p) { row_panels<1, NT>(a, w, t0, p, 0, o); });
  };
  if (w.stream ? decode(std::true_type{}) : decode(std::false_type{})) return;
  for (int64_t p = p0; p < p1; p++)
    for (int hf = 0; hf < 2 && p * 16 + hf * 8 < w.N; hf++)
      for (int64_t t = t0; t < t1; t++) kTiles[a.rows(t) - 1](a, w, t, p, hf, o);
}

}  // namespace etnp::qb4
#endif
