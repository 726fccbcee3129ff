// qgemm_qb4's NEON path (base ARMv8 Advanced SIMD, no dot-product extension): one row a tile x one
// 16-column panel, on the nibbles as packed (qgemm_qb4.h). A 64-byte chunk is four 16-byte
// groups of 4 columns x 4 k; each group's low and high nibbles are masked out (0..15) and
// multiplied by the row's 4 values of k = 8c .. 8c + 3 and 8c + 4 .. 8c + 7 with widening int8
// multiplies (|product| <= 15 * 128: a low and a high product add exactly in int16), then added in
// pairs into int32 lanes (vpadalq) - two lanes a column, summed at the block's end. The block's
// exact int32 sum then takes the float steps of qgemm_qb4.h in their order (one fused
// multiply-add a block, the zero point's constant first, the clamp as compares), so the results
// are bit-identical to the x86 and portable paths.
#include "kernels/compute/qgemm_qb4_kernels.h"

#if defined(__aarch64__)
#include <arm_neon.h>

#include "kernels/compute/qgemm_qb4_neon.h"

namespace etnp::qb4 {
namespace {

using neon::block_scales;

// row m (tile t, one row) x panel p
void tile(const Acts& a, const PackedQB4& w, int64_t t, int64_t p, const Out& o) {
  const int64_t m = a.tile_m0[t];
  const uint8_t* panel = panel_at(w, p);
  const int64_t n0 = p * 16, cols = w.N - n0;
  float32x4_t F[4];
#pragma GCC unroll 16
  for (int g = 0; g < 4; g++) F[g] = vmulq_f32(vdupq_n_f32(a.nza[m]), vld1q_f32((const float*)panel + 4 * g));
  const uint8x16_t m4 = vdupq_n_u8(0x0F);
  const int8_t* x = a.q + a.tile_at[t];
  const int32_t* corr = a.corr + m * w.nb;
  for (int64_t b = 0; b < w.nb; b++) {
    const bool odd = b & 1;
    const uint8_t* pair = pair_at(w, panel, b);
    const uint8_t* d = chunks_at(w, panel, b);
    const int64_t ch = w.block_chunks(b);
    const int8_t* xb = x + b * w.chunks * 8;
    int32x4_t acc[8];  // group g: columns 4g, 4g + 1 in acc[2g], 4g + 2, 4g + 3 in acc[2g + 1]
#pragma GCC unroll 16
    for (int i = 0; i < 8; i++) acc[i] = vdupq_n_s32(0);
    for (int64_t c = 0; c < ch; c++) {
      const int32x2_t x8 = vreinterpret_s32_s8(vld1_s8(xb + c * 8));
      const int8x8_t xl = vreinterpret_s8_s32(vdup_lane_s32(x8, 0)), xh = vreinterpret_s8_s32(vdup_lane_s32(x8, 1));
#pragma GCC unroll 16
      for (int g = 0; g < 4; g++) {
        const uint8x16_t raw = vld1q_u8(d + c * 64 + 16 * g);
        const int8x16_t lo = vreinterpretq_s8_u8(vandq_u8(raw, m4)), hi = vreinterpretq_s8_u8(vshrq_n_u8(raw, 4));
        const int16x8_t p0 = vmlal_s8(vmull_s8(vget_low_s8(lo), xl), vget_low_s8(hi), xh);
        const int16x8_t p1 = vmlal_s8(vmull_s8(vget_high_s8(lo), xl), vget_high_s8(hi), xh);
        acc[2 * g] = vpadalq_s16(acc[2 * g], p0);
        acc[2 * g + 1] = vpadalq_s16(acc[2 * g + 1], p1);
      }
    }
    const int32x4_t cv = vdupq_n_s32(corr[b]);
#pragma GCC unroll 16
    for (int g = 0; g < 4; g++) {
      const int32x4_t sum = vaddq_s32(vpaddq_s32(acc[2 * g], acc[2 * g + 1]), cv);
      F[g] = vfmaq_f32(F[g], vcvtq_f32_s32(sum), block_scales(w.f32_scales, pair, odd, g));
    }
  }
#pragma GCC unroll 4
  for (int g = 0; g < 4; g++) neon::store4(o, m, n0 + 4 * g, cols - 4 * g, a.sa[m], F[g]);
}

}  // namespace

void tiles_neon(const Acts& a, const PackedQB4& w, int64_t t0, int64_t t1, int64_t p0, int64_t p1, const Out& o) {
  // panel by panel, every row (the panel's weights stay in L1 across them)
  for (int64_t p = p0; p < p1; p++)
    for (int64_t t = t0; t < t1; t++) tile(a, w, t, p, o);
}

}  // namespace etnp::qb4
#endif
