#include "kernels/compute/qgemm_neon.h"

#if defined(__aarch64__)
#include <arm_neon.h>

#include <cstring>

#include "util/compiler.h"

namespace etnp {

// Base ARMv8 (no dot-product extension): weights widened to int16, multiply-accumulated into
// int32 lanes that each hold one (column, t) pair - 16 accumulators of 4 lanes - and the 4 t
// lanes of each column summed once at the end. |x * w| <= 255 * 128 fits the int16 multiply.
void q8_row_panel_neon(int64_t G, const uint8_t* x, const int8_t* b, int32_t* acc) {
  int32x4_t c[16];
#pragma GCC unroll 16
  for (int j = 0; j < 16; j++) c[j] = vdupq_n_s32(0);
  for (int64_t g = 0; g < G; g++, b += 64) {
    uint32_t x4;
    std::memcpy(&x4, x + 4 * g, 4);
    const int16x8_t xx = vreinterpretq_s16_u16(vmovl_u8(vreinterpret_u8_u32(vdup_n_u32(x4))));  // x0..x3 twice
    const int16x4_t xl = vget_low_s16(xx);
#pragma GCC unroll 16
    for (int q = 0; q < 4; q++) {  // columns 4q .. 4q + 3
      const int8x16_t w = vld1q_s8(b + 16 * q);
      const int16x8_t w01 = vmovl_s8(vget_low_s8(w)), w23 = vmovl_high_s8(w);
      c[4 * q + 0] = vmlal_s16(c[4 * q + 0], vget_low_s16(w01), xl);
      c[4 * q + 1] = vmlal_high_s16(c[4 * q + 1], w01, xx);
      c[4 * q + 2] = vmlal_s16(c[4 * q + 2], vget_low_s16(w23), xl);
      c[4 * q + 3] = vmlal_high_s16(c[4 * q + 3], w23, xx);
    }
  }
#pragma GCC unroll 16
  for (int j = 0; j < 16; j++) acc[j] = vaddvq_s32(c[j]);
}

#if ETNP_NEON_DOT_KERNELS
// ARMv8.2 dot product: SDOT multiplies int8 by int8, and the codes are uint8 - flipped to int8
// (x ^ 0x80 = x - 128), the sum lacks 128 * (the column's weight sum), which starts the
// accumulators. Per group of 4 k, one SDOT a quarter of the panel (4 columns x 4 k) against those
// 4 codes, taken from a lane of 16 (4 groups a load); two chains of accumulators (even and odd
// groups), added at the end: the base kernel's int32 sums.
ETNP_TARGET(ETNP_ARM_DOTPROD)
void q8_row_panel_neon_dot(int64_t G, const uint8_t* x, const int8_t* b, const int32_t* col_sum, int32_t* acc) {
  int32x4_t c[4], d[4];
#pragma GCC unroll 16
  for (int q = 0; q < 4; q++) c[q] = vshlq_n_s32(vld1q_s32(col_sum + 4 * q), 7), d[q] = vdupq_n_s32(0);
  const uint8x16_t flip = vdupq_n_u8(0x80);
  int64_t g = 0;
  for (; g + 4 <= G; g += 4, b += 4 * 64) {
    const int8x16_t xs = vreinterpretq_s8_u8(veorq_u8(vld1q_u8(x + 4 * g), flip));  // groups g .. g + 3
#pragma GCC unroll 16
    for (int q = 0; q < 4; q++) {
      c[q] = vdotq_laneq_s32(c[q], vld1q_s8(b + 16 * q), xs, 0);
      d[q] = vdotq_laneq_s32(d[q], vld1q_s8(b + 64 + 16 * q), xs, 1);
      c[q] = vdotq_laneq_s32(c[q], vld1q_s8(b + 128 + 16 * q), xs, 2);
      d[q] = vdotq_laneq_s32(d[q], vld1q_s8(b + 192 + 16 * q), xs, 3);
    }
  }
  for (; g < G; g++, b += 64) {
    uint32_t x4;
    std::memcpy(&x4, x + 4 * g, 4);
    const int8x8_t xs = vreinterpret_s8_u8(veor_u8(vreinterpret_u8_u32(vdup_n_u32(x4)), vget_low_u8(flip)));
#pragma GCC unroll 16
    for (int q = 0; q < 4; q++) c[q] = vdotq_lane_s32(c[q], vld1q_s8(b + 16 * q), xs, 0);
  }
#pragma GCC unroll 16
  for (int q = 0; q < 4; q++) vst1q_s32(acc + 4 * q, vaddq_s32(c[q], d[q]));
}
#endif

}  // namespace etnp
#endif  // __aarch64__
