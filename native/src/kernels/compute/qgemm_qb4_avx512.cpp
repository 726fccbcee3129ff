// qgemm_qb4's AVX-512 VNNI path: tiles of up to 12 rows x one 16-column panel. Per 64-byte chunk
// (8 k of the panel's 16 columns) the low and the high nibbles are masked out once (u8 0..15) and
// multiplied into each row's int32 block sum by vpdpbusd against that row's 4 int8 activations,
// broadcast from memory; per block one conversion and one FMA a row turn the sum into the float
// accumulator (qgemm_qb4.h's order). One row (a decode step) streams the panels once: its task's
// panels as 2 or 4 ranges read side by side, each prefetched ahead (row_panels).
#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "kernels/compute/cpu_features.h"
#include "kernels/compute/qgemm_qb4_kernels.h"
#include "util/compiler.h"

namespace etnp::qb4 {
namespace {

constexpr int kMaxRows = (int)kTileRowsVnni;  // 12: 12 int32 + 12 float accumulators, the nibbles, constants
// One row (a decode step) is bound by how many cache lines one core has in flight, not by its
// arithmetic: its panels are read as ranges side by side, each prefetched kAhead bytes ahead of
// the chunk in use (2048 measured best of 512..4096) - 4 ranges on Intel (Sapphire Rapids: one
// core's streaming read of 4 ranges moves ~1.3x the bytes of one range, ~1.1x with 2 MB pages),
// 2 on AMD (Zen 4, native_tests/qb4_gemv_bench.cpp, one core, medians of 15 interleaved passes of
// 76.5 MB: 2 ranges 3.47-3.53 ms, 22 GB/s, 1.06x a plain streaming read; 4 ranges 4.0-4.15 ms)
constexpr int64_t kAhead = 2048;

// the 16 column scales of the even (odd false) or odd block of a pair, from its scales
ETNP_TARGET_INLINE("avx512f") __m512 block_scales(bool f32, const uint8_t* pair, bool odd) {
  if (f32) return _mm512_loadu_ps(pair + (odd ? 64 : 0));
  const __m512i v = _mm512_loadu_si512(pair);
  return _mm512_castsi512_ps(odd ? _mm512_and_si512(v, _mm512_set1_epi32((int)0xFFFF0000u))
                                 : _mm512_slli_epi32(v, 16));
}

inline int32_t load4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// acc[i] += chunk c's products for rows i (the tile's activations of the block at x); one row
// sums the high nibbles' products in hi[0] (two dependency chains), more rows in acc
template <int R>
ETNP_TARGET_INLINE("avx512f,avx512bw,avx512vnni")
void chunk_sums(__m512i* acc, __m512i* hi, const uint8_t* d, int64_t c, const int8_t* x) {
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  const __m512i raw = _mm512_loadu_si512(d + c * 64);
  const __m512i l = _mm512_and_si512(raw, m4), h = _mm512_and_si512(_mm512_srli_epi16(raw, 4), m4);
#pragma GCC unroll 12
  for (int i = 0; i < R; i++) {
    const int8_t* xi = x + (c * R + i) * 8;
    acc[i] = _mm512_dpbusd_epi32(acc[i], l, _mm512_set1_epi32(load4(xi)));
    __m512i& ah = R == 1 ? hi[0] : acc[i];
    ah = _mm512_dpbusd_epi32(ah, h, _mm512_set1_epi32(load4(xi + 4)));
  }
}

// the block's ch chunks (CH: a count known at compile time, unrolled)
template <int R, int CH>
ETNP_TARGET_INLINE("avx512f,avx512bw,avx512vnni")
void block_sums(__m512i* acc, const uint8_t* d, int64_t ch, const int8_t* x) {
  __m512i hi[1] = {_mm512_setzero_si512()};
  if (CH > 0) {
#pragma GCC unroll 8
    for (int c = 0; c < CH; c++) chunk_sums<R>(acc, hi, d, c, x);
  } else {
    for (int64_t c = 0; c < ch; c++) chunk_sums<R>(acc, hi, d, c, x);
  }
  if (R == 1) acc[0] = _mm512_add_epi32(acc[0], hi[0]);
}

// tile t (R rows) x panel p
template <int R>
ETNP_TARGET("avx512f,avx512bw,avx512vnni")
void tile(const Acts& a, const PackedQB4& w, int64_t t, int64_t p, const Out& o) {
  const int64_t m0 = a.tile_m0[t];
  const uint8_t* panel = panel_at(w, p);
  const int64_t n0 = p * 16, cols = std::min<int64_t>(16, w.N - n0);
  const __mmask16 mask = cols >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << cols) - 1);
  __m512 F[R];
  const __m512 z = _mm512_loadu_ps(panel);
#pragma GCC unroll 12
  for (int i = 0; i < R; i++) F[i] = _mm512_mul_ps(_mm512_set1_ps(a.nza[m0 + i]), z);
  // walking the pairs: block b's scales at pair, its chunks at pair + sb (even) or + sb + cb (odd)
  const bool f32 = w.f32_scales;
  const int64_t sb = w.scale_bytes(), cb = w.chunks * 64, nb = w.nb, full = w.chunks;
  const uint8_t* pair = panel + 64;
  const int8_t* x = a.q + a.tile_at[t];
  const int32_t* corr = a.corr + m0 * nb;
  for (int64_t b = 0; b < nb; b++, x += full * 8 * R) {
    const bool odd = b & 1;
    const uint8_t* d = pair + sb + (odd ? cb : 0);
    __m512i acc[R];
#pragma GCC unroll 12
    for (int i = 0; i < R; i++) acc[i] = _mm512_set1_epi32(corr[i * nb + b]);
    const int64_t ch = b + 1 < nb ? full : w.last_chunks;
    if (ch == 4) block_sums<R, 4>(acc, d, 4, x);  // (blocks of 32, torchao's default)
    else block_sums<R, 0>(acc, d, ch, x);
    const __m512 sw = block_scales(f32, pair, odd);
#pragma GCC unroll 12
    for (int i = 0; i < R; i++) F[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[i]), sw, F[i]);
    if (odd) pair += w.pair_bytes;
  }
  const __m512 bv = o.bias ? _mm512_maskz_loadu_ps(mask, o.bias + n0) : _mm512_setzero_ps();
  const __m512 vlo = _mm512_set1_ps(o.lo), vhi = _mm512_set1_ps(o.hi);
#pragma GCC unroll 12
  for (int i = 0; i < R; i++) {
    const __m512 r = _mm512_fmadd_ps(F[i], _mm512_set1_ps(a.sa[m0 + i]), bv);
    _mm512_mask_storeu_ps(o.C + (m0 + i) * o.ldc + n0, mask, _mm512_min_ps(vhi, _mm512_max_ps(vlo, r)));
  }
}

// the chunk at offset d of P panels for one row (its 8 activations at x): low nibbles' products
// into lo, high into hi, each panel's stream prefetched kAhead bytes ahead (NT: non-temporally,
// PackedQB4::stream)
template <int P, bool NT>
ETNP_TARGET_INLINE("avx512f,avx512bw,avx512vnni")
void row_chunk(__m512i* lo, __m512i* hi, const uint8_t* const* panel, int64_t d, const int8_t* x) {
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  const __m512i xl = _mm512_set1_epi32(load4(x)), xh = _mm512_set1_epi32(load4(x + 4));
#pragma GCC unroll 4
  for (int j = 0; j < P; j++) {
    const uint8_t* q = panel[j] + d;
    _mm_prefetch((const char*)(q + kAhead), NT ? _MM_HINT_NTA : _MM_HINT_T0);
    const __m512i raw = _mm512_loadu_si512(q);
    lo[j] = _mm512_dpbusd_epi32(lo[j], _mm512_and_si512(raw, m4), xl);
    hi[j] = _mm512_dpbusd_epi32(hi[j], _mm512_and_si512(_mm512_srli_epi16(raw, 4), m4), xh);
  }
}

// One row (tile t holds one) x the P panels p, p + stride, ..., p + (P - 1) * stride, their
// chunks read side by side (P streams in flight, each prefetched); per panel the float steps of
// tile<1> in the same order (bit-identical), the broadcast activations shared.
template <int P, bool NT>
ETNP_TARGET("avx512f,avx512bw,avx512vnni")
void row_panels(const Acts& a, const PackedQB4& w, int64_t t, int64_t p, int64_t stride, const Out& o) {
  const int64_t m0 = a.tile_m0[t];
  const uint8_t* panel[P];
  __m512 F[P];
#pragma GCC unroll 4
  for (int j = 0; j < P; j++) {
    panel[j] = panel_at(w, p + j * stride);
    F[j] = _mm512_mul_ps(_mm512_set1_ps(a.nza[m0]), _mm512_loadu_ps(panel[j]));
  }
  const bool f32 = w.f32_scales;
  const int32_t* corr = a.corr + m0 * w.nb;
  for (int64_t b = 0; b < w.nb; b++) {
    const bool odd = b & 1;
    const int64_t at = pair_offset(w, b), d = chunks_offset(w, b), ch = w.block_chunks(b);
    const int8_t* x = a.q + a.tile_at[t] + b * w.chunks * 8;
    __m512i lo[P], hi[P];  // (the low and the high nibbles' products: two chains a panel)
#pragma GCC unroll 4
    for (int j = 0; j < P; j++) lo[j] = _mm512_set1_epi32(corr[b]), hi[j] = _mm512_setzero_si512();
    if (ch == 4) {  // (blocks of 32, torchao's default)
      row_chunk<P, NT>(lo, hi, panel, d, x), row_chunk<P, NT>(lo, hi, panel, d + 64, x + 8);
      row_chunk<P, NT>(lo, hi, panel, d + 128, x + 16), row_chunk<P, NT>(lo, hi, panel, d + 192, x + 24);
    } else {
      for (int64_t c = 0; c < ch; c++) row_chunk<P, NT>(lo, hi, panel, d + c * 64, x + c * 8);
    }
#pragma GCC unroll 4
    for (int j = 0; j < P; j++)
      F[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(lo[j], hi[j])), block_scales(f32, panel[j] + at, odd),
                             F[j]);
  }
  const __m512 vlo = _mm512_set1_ps(o.lo), vhi = _mm512_set1_ps(o.hi), sa = _mm512_set1_ps(a.sa[m0]);
#pragma GCC unroll 4
  for (int j = 0; j < P; j++) {
    const int64_t n0 = (p + j * stride) * 16, cols = std::min<int64_t>(16, w.N - n0);
    const __mmask16 mask = cols >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << cols) - 1);
    const __m512 bv = o.bias ? _mm512_maskz_loadu_ps(mask, o.bias + n0) : _mm512_setzero_ps();
    const __m512 r = _mm512_fmadd_ps(F[j], sa, bv);
    _mm512_mask_storeu_ps(o.C + m0 * o.ldc + n0, mask, _mm512_min_ps(vhi, _mm512_max_ps(vlo, r)));
  }
}

using Tile = void (*)(const Acts&, const PackedQB4&, int64_t, int64_t, const Out&);
const Tile kTiles[kMaxRows] = {&tile<1>, &tile<2>, &tile<3>,  &tile<4>,
                               &tile<5>, &tile<6>, &tile<7>,  &tile<8>,
                               &tile<9>, &tile<10>, &tile<11>, &tile<12>};

}  // namespace

void tiles_vnni(const Acts& a, const PackedQB4& w, int64_t t0, int64_t t1, int64_t p0, int64_t p1,
                const Out& o) {
  auto tile = [&](int64_t t, int64_t p) { kTiles[a.rows(t) - 1](a, w, t, p, o); };
  static const bool two = cpu_is_amd();  // (a decode step: its ranges of panels side by side)
  auto go = [&](auto nt) {
    constexpr bool NT = decltype(nt)::value;
    auto one = [&](int64_t p) { row_panels<1, NT>(a, w, t0, p, 0, o); };
    if (two) run_task<2>(a, t0, t1, p0, p1, [&](int64_t p, int64_t stride) { row_panels<2, NT>(a, w, t0, p, stride, o); }, one, tile);
    else run_task<4>(a, t0, t1, p0, p1, [&](int64_t p, int64_t stride) { row_panels<4, NT>(a, w, t0, p, stride, o); }, one, tile);
  };
  if (w.stream) go(std::true_type{});
  else go(std::false_type{});
}

}  // namespace etnp::qb4
#endif
