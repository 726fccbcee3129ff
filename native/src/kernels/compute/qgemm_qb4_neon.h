// What qgemm_qb4's two NEON paths share (aarch64 only): reading a block's column scales and the
// output step, C = clamp(fma(F, sa, bias)), as the other paths make it (qgemm_qb4.h), so that the
// base ARMv8 kernels (qgemm_qb4_neon.cpp) and the dot-product ones (qgemm_qb4_neon_dot.cpp) give
// the same bits as the x86 and portable paths.
#pragma once
#if defined(__aarch64__)
#include <arm_neon.h>

#include <algorithm>
#include <cstring>

#include "kernels/compute/qgemm_qb4_kernels.h"

namespace etnp::qb4::neon {

// the 4 column scales of group g (columns 4g .. 4g + 3) of block b of the pair at `pair` (odd: b
// odd), from its bfloat16 words or float32 values
inline float32x4_t block_scales(bool f32, const uint8_t* pair, bool odd, int g) {
  if (f32) return vld1q_f32((const float*)(pair + (odd ? 64 : 0)) + 4 * g);
  const uint32x4_t v = vld1q_u32((const uint32_t*)pair + 4 * g);
  return vreinterpretq_f32_u32(odd ? vandq_u32(v, vdupq_n_u32(0xFFFF0000u)) : vshlq_n_u32(v, 16));
}

// x86's max_ps / min_ps, as the other paths clamp: max(lo, r) = lo > r ? lo : r, then
// min(hi, m) = hi < m ? hi : m (NaN stays NaN; -0 stays -0 against a bound of 0)
inline float32x4_t clamp(float32x4_t r, float32x4_t lo, float32x4_t hi) {
  const float32x4_t m = vbslq_f32(vcgtq_f32(lo, r), lo, r);
  return vbslq_f32(vcltq_f32(hi, m), hi, m);
}

// Row m's results of the 4 columns from n (F: their float sums), of which the first `cols` exist
// (the rest, past N, are not stored): clamp(fma(F, sa, bias)), the bias (or 0) read as a vector
// where all 4 exist. (F by value: an array whose address a kernel passed would live in memory.)
inline void store4(const Out& o, int64_t m, int64_t n, int64_t cols, float sa, float32x4_t F) {
  if (cols <= 0) return;
  const float32x4_t vlo = vdupq_n_f32(o.lo), vhi = vdupq_n_f32(o.hi), vsa = vdupq_n_f32(sa);
  float* c = o.C + m * o.ldc + n;
  if (cols >= 4) {
    const float32x4_t bv = o.bias ? vld1q_f32(o.bias + n) : vdupq_n_f32(0.f);
    vst1q_f32(c, clamp(vfmaq_f32(bv, F, vsa), vlo, vhi));
    return;
  }
  float bb[4] = {}, r[4];  // (a ragged last panel: the bias lane by lane)
  for (int64_t j = 0; o.bias && j < cols; j++) bb[j] = o.bias[n + j];
  vst1q_f32(r, clamp(vfmaq_f32(vld1q_f32(bb), F, vsa), vlo, vhi));
  std::memcpy(c, r, (size_t)cols * sizeof(float));
}

}  // namespace etnp::qb4::neon
#endif
