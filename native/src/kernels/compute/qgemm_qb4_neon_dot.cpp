// qgemm_qb4's NEON dot-product path: ARMv8.2's SDOT (FEAT_DotProd), compiled for it function by
// function (ETNP_TARGET(ETNP_ARM_DOTPROD): the rest of the build stays base ARMv8) and called only
// where the CPU has it (cpu_has_neon_dot()). On the nibbles as packed (qgemm_qb4.h): a 64-byte
// chunk is four 16-byte groups of 4 columns x 4 k; a group's low nibbles (k = 8c .. 8c + 3) and
// its high ones (8c + 4 .. 8c + 7), masked and shifted out as int8 0..15, each go into the 4
// columns' int32 lanes by one SDOT against the row's 4 int8 activations of those k, taken from a
// lane of the row's 8 (vdotq_lane_s32): the block's exact int32 sums, then the float steps of
// qgemm_qb4.h in their order (bit-identical to the base NEON, x86 and portable paths).
// Tiles of up to 4 rows: 2 rows x the whole panel, 3 or 4 rows x half of it at a time (8 int32 and
// 8 float accumulators; the nibbles unpacked once for all the tile's rows). One row (a decode
// step) streams its task's panels as two ranges side by side, each prefetched ahead.
#include "kernels/compute/qgemm_qb4_kernels.h"
#include "util/compiler.h"

#if ETNP_NEON_DOT_KERNELS
#include <arm_neon.h>

#include "kernels/compute/qgemm_qb4_neon.h"

namespace etnp::qb4 {
namespace {

constexpr int kMaxRows = (int)kTileRowsNeonDot;  // 4
// One row reads every panel once: two ranges side by side keep two streams in flight, each
// prefetched kAhead bytes ahead of the chunk in use (the x86 GEMV's scheme, qgemm_qb4_avx512.cpp;
// not measured on Arm hardware: none here).
constexpr int kStreams = 2;
constexpr int64_t kAhead = 1024;

// group g's (G groups from d: 16 bytes each) low and high nibbles as int8 0..15
template <int G>
inline void unpack(const uint8_t* d, int8x16_t* lo, int8x16_t* hi) {
  const uint8x16_t m4 = vdupq_n_u8(0x0F);
#pragma GCC unroll 16
  for (int g = 0; g < G; g++) {
    const uint8x16_t raw = vld1q_u8(d + 16 * g);
    lo[g] = vreinterpretq_s8_u8(vandq_u8(raw, m4));
    hi[g] = vreinterpretq_s8_u8(vshrq_n_u8(raw, 4));
  }
}

// acc[i * G + g] += the block's products of row i (R rows, the tile's activations of the block at
// x) and group g (G groups of 4 columns of each chunk, from d): ch chunks. (Not unrolled for
// blocks of 4 chunks as on x86: GCC 12 then loads all 4 chunks' nibbles first and spills.)
template <int R, int G>
ETNP_TARGET_INLINE(ETNP_ARM_DOTPROD)
void block_sums(int32x4_t* acc, const uint8_t* d, int64_t ch, const int8_t* x) {
  for (int64_t c = 0; c < ch; c++) {
    int8x16_t lo[G], hi[G];
    unpack<G>(d + c * 64, lo, hi);
#pragma GCC unroll 16
    for (int i = 0; i < R; i++) {
      const int8x8_t xi = vld1_s8(x + (c * R + i) * 8);  // k = 8c .. 8c + 3 in lane 0, 8c + 4 .. 8c + 7 in lane 1
#pragma GCC unroll 16
      for (int g = 0; g < G; g++) {
        acc[i * G + g] = vdotq_lane_s32(acc[i * G + g], lo[g], xi, 0);
        acc[i * G + g] = vdotq_lane_s32(acc[i * G + g], hi[g], xi, 1);
      }
    }
  }
}

// tile t (R rows) x the G groups of 4 columns from group g0 of panel p
template <int R, int G>
ETNP_TARGET(ETNP_ARM_DOTPROD)
void tile_part(const Acts& a, const PackedQB4& w, int64_t t, int64_t p, int g0, const Out& o) {
  const int64_t m0 = a.tile_m0[t];
  const uint8_t* panel = panel_at(w, p);
  float32x4_t F[R * G];
#pragma GCC unroll 16
  for (int i = 0; i < R; i++)
#pragma GCC unroll 16
    for (int g = 0; g < G; g++)
      F[i * G + g] = vmulq_f32(vdupq_n_f32(a.nza[m0 + i]), vld1q_f32((const float*)panel + 4 * (g0 + g)));
  // walking the pairs: block b's scales at pair, its chunks at pair + sb (even) or + sb + cb (odd)
  const bool f32 = w.f32_scales;
  const int64_t sb = w.scale_bytes(), cb = w.chunks * 64, nb = w.nb, full = w.chunks;
  const uint8_t* pair = panel + 64;
  const int8_t* x = a.q + a.tile_at[t];
  const int32_t* corr = a.corr + m0 * nb;
  for (int64_t b = 0; b < nb; b++, x += full * 8 * R) {
    const bool odd = b & 1;
    const uint8_t* d = pair + sb + (odd ? cb : 0) + 16 * g0;
    int32x4_t acc[R * G];
#pragma GCC unroll 16
    for (int i = 0; i < R; i++)
#pragma GCC unroll 16
      for (int g = 0; g < G; g++) acc[i * G + g] = vdupq_n_s32(corr[i * nb + b]);
    const int64_t ch = b + 1 < nb ? full : w.last_chunks;
    block_sums<R, G>(acc, d, ch, x);
#pragma GCC unroll 16
    for (int g = 0; g < G; g++) {
      const float32x4_t s = neon::block_scales(f32, pair, odd, g0 + g);
#pragma GCC unroll 16
      for (int i = 0; i < R; i++) F[i * G + g] = vfmaq_f32(F[i * G + g], vcvtq_f32_s32(acc[i * G + g]), s);
    }
    if (odd) pair += w.pair_bytes;
  }
  const int64_t n0 = p * 16 + 4 * g0;
#pragma GCC unroll 4
  for (int i = 0; i < R; i++)
#pragma GCC unroll 4
    for (int g = 0; g < G; g++) neon::store4(o, m0 + i, n0 + 4 * g, w.N - n0 - 4 * g, a.sa[m0 + i], F[i * G + g]);
}

// acc[j * 4 + g] += the block's products of one row (its activations of the block at x) and
// group g of panel j's chunks at offset d (P panels side by side, each prefetched ahead): ch
// chunks (not unrolled: see block_sums)
template <int P>
ETNP_TARGET_INLINE(ETNP_ARM_DOTPROD)
void row_block(int32x4_t* acc, const uint8_t* const* panel, int64_t d, int64_t ch, const int8_t* x) {
  for (int64_t c = 0; c < ch; c++) {
    const int8x8_t xc = vld1_s8(x + c * 8);
#pragma GCC unroll 16
    for (int j = 0; j < P; j++) {
      const uint8_t* q = panel[j] + d + c * 64;
      ETNP_PREFETCH(q + kAhead);
      int8x16_t lo[4], hi[4];
      unpack<4>(q, lo, hi);
#pragma GCC unroll 16
      for (int g = 0; g < 4; g++) {
        acc[j * 4 + g] = vdotq_lane_s32(acc[j * 4 + g], lo[g], xc, 0);
        acc[j * 4 + g] = vdotq_lane_s32(acc[j * 4 + g], hi[g], xc, 1);
      }
    }
  }
}

// One row (tile t holds one) x the P panels p, p + stride, ..., p + (P - 1) * stride, their
// chunks read side by side; per panel the float steps of tile_part in the same order.
template <int P>
ETNP_TARGET(ETNP_ARM_DOTPROD)
void row_panels(const Acts& a, const PackedQB4& w, int64_t t, int64_t p, int64_t stride, const Out& o) {
  const int64_t m0 = a.tile_m0[t];
  const uint8_t* panel[P];
  float32x4_t F[P * 4];
#pragma GCC unroll 16
  for (int j = 0; j < P; j++) {
    panel[j] = panel_at(w, p + j * stride);
#pragma GCC unroll 16
    for (int g = 0; g < 4; g++) F[j * 4 + g] = vmulq_f32(vdupq_n_f32(a.nza[m0]), vld1q_f32((const float*)panel[j] + 4 * g));
  }
  const bool f32 = w.f32_scales;
  const int32_t* corr = a.corr + m0 * w.nb;
  for (int64_t b = 0; b < w.nb; b++) {
    const bool odd = b & 1;
    const int64_t at = pair_offset(w, b), d = chunks_offset(w, b), ch = w.block_chunks(b);
    const int8_t* x = a.q + a.tile_at[t] + b * w.chunks * 8;
    int32x4_t acc[P * 4];
#pragma GCC unroll 16
    for (int j = 0; j < P * 4; j++) acc[j] = vdupq_n_s32(corr[b]);
    row_block<P>(acc, panel, d, ch, x);
#pragma GCC unroll 16
    for (int j = 0; j < P; j++)
#pragma GCC unroll 16
      for (int g = 0; g < 4; g++)
        F[j * 4 + g] = vfmaq_f32(F[j * 4 + g], vcvtq_f32_s32(acc[j * 4 + g]), neon::block_scales(f32, panel[j] + at, odd, g));
  }
#pragma GCC unroll 2
  for (int j = 0; j < P; j++) {
    const int64_t n0 = (p + j * stride) * 16;
#pragma GCC unroll 4
    for (int g = 0; g < 4; g++) neon::store4(o, m0, n0 + 4 * g, w.N - n0 - 4 * g, a.sa[m0], F[j * 4 + g]);
  }
}

// tile t (R rows) x panel p: 2 rows (and 1) the whole panel at once, 3 and 4 half a panel at a
// time (the second half only where it holds a column)
template <int R>
void tile(const Acts& a, const PackedQB4& w, int64_t t, int64_t p, const Out& o) {
  if constexpr (R == 1) {
    row_panels<1>(a, w, t, p, 0, o);
  } else if constexpr (R == 2) {
    tile_part<R, 4>(a, w, t, p, 0, o);
  } else {
    tile_part<R, 2>(a, w, t, p, 0, o);
    if (w.N > p * 16 + 8) tile_part<R, 2>(a, w, t, p, 2, o);
  }
}

using Tile = void (*)(const Acts&, const PackedQB4&, int64_t, int64_t, const Out&);
const Tile kTiles[kMaxRows] = {&tile<1>, &tile<2>, &tile<3>, &tile<4>};

}  // namespace

void tiles_neon_dot(const Acts& a, const PackedQB4& w, int64_t t0, int64_t t1, int64_t p0, int64_t p1,
                    const Out& o) {
  run_task<kStreams>(  // (a decode step: kStreams ranges of panels side by side)
      a, t0, t1, p0, p1, [&](int64_t p, int64_t stride) { row_panels<kStreams>(a, w, t0, p, stride, o); },
      [&](int64_t p) { row_panels<1>(a, w, t0, p, 0, o); }, [&](int64_t t, int64_t p) { kTiles[a.rows(t) - 1](a, w, t, p, o); });
}

}  // namespace etnp::qb4
#endif
