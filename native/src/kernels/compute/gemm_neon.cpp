#include "kernels/compute/gemm_neon.h"

#if defined(__aarch64__)
#include <arm_neon.h>

namespace etnp {

// 24 accumulators (6 rows x 4 quads), 4 B quads and the 6 A values in two registers: 30 of
// the 32 vector registers. Each k step: 4 loads of B, 24 fused multiply-adds by lane of A.
void sgemm_micro_neon_6x16(int64_t K, const float* a, const float* b, float* acc) {
  float32x4_t c[6][4];
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 4; j++) c[i][j] = vdupq_n_f32(0.f);
  for (int64_t k = 0; k < K; k++) {
    const float* bk = b + k * 16;
    const float* ak = a + k * 6;
    const float32x4_t b0 = vld1q_f32(bk), b1 = vld1q_f32(bk + 4), b2 = vld1q_f32(bk + 8), b3 = vld1q_f32(bk + 12);
    const float32x4_t a03 = vld1q_f32(ak);
    const float32x2_t a45 = vld1_f32(ak + 4);
    // row i += A(i, k) * B(k, 0..15): A(i, k) is lane `lane` of a03 (rows 0-3) or a45 (rows 4-5)
#define ETNP_ROW(i, fma, av, lane)          \
  c[i][0] = fma(c[i][0], b0, av, lane);     \
  c[i][1] = fma(c[i][1], b1, av, lane);     \
  c[i][2] = fma(c[i][2], b2, av, lane);     \
  c[i][3] = fma(c[i][3], b3, av, lane);
    ETNP_ROW(0, vfmaq_laneq_f32, a03, 0)
    ETNP_ROW(1, vfmaq_laneq_f32, a03, 1)
    ETNP_ROW(2, vfmaq_laneq_f32, a03, 2)
    ETNP_ROW(3, vfmaq_laneq_f32, a03, 3)
    ETNP_ROW(4, vfmaq_lane_f32, a45, 0)
    ETNP_ROW(5, vfmaq_lane_f32, a45, 1)
#undef ETNP_ROW
  }
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 4; j++) vst1q_f32(acc + i * 16 + j * 4, c[i][j]);
}

}  // namespace etnp
#endif  // __aarch64__
