#include "kernels/compute/qgemm_neon.h"

#if defined(__aarch64__)
#include <arm_neon.h>

#include <cstring>

namespace etnp {

// Base ARMv8 (no dot-product extension): weights widened to int16, multiply-accumulated into
// int32 lanes that each hold one (column, t) pair - 16 accumulators of 4 lanes - and the 4 t
// lanes of each column summed once at the end. |x * w| <= 255 * 128 fits the int16 multiply.
void q8_row_panel_neon(int64_t G, const uint8_t* x, const int8_t* b, int32_t* acc) {
  int32x4_t c[16];
  for (int j = 0; j < 16; j++) c[j] = vdupq_n_s32(0);
  for (int64_t g = 0; g < G; g++, b += 64) {
    uint32_t x4;
    std::memcpy(&x4, x + 4 * g, 4);
    const int16x8_t xx = vreinterpretq_s16_u16(vmovl_u8(vreinterpret_u8_u32(vdup_n_u32(x4))));  // x0..x3 twice
    const int16x4_t xl = vget_low_s16(xx);
    for (int q = 0; q < 4; q++) {  // columns 4q .. 4q + 3
      const int8x16_t w = vld1q_s8(b + 16 * q);
      const int16x8_t w01 = vmovl_s8(vget_low_s8(w)), w23 = vmovl_high_s8(w);
      c[4 * q + 0] = vmlal_s16(c[4 * q + 0], vget_low_s16(w01), xl);
      c[4 * q + 1] = vmlal_high_s16(c[4 * q + 1], w01, xx);
      c[4 * q + 2] = vmlal_s16(c[4 * q + 2], vget_low_s16(w23), xl);
      c[4 * q + 3] = vmlal_high_s16(c[4 * q + 3], w23, xx);
    }
  }
  for (int j = 0; j < 16; j++) acc[j] = vaddvq_s32(c[j]);
}

}  // namespace etnp
#endif  // __aarch64__
