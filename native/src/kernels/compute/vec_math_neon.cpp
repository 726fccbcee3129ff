// vec_math's aarch64 path: the algorithms of vec_math_impl.h over 4-lane float32x4_t (Advanced
// SIMD is part of the base architecture: no target attribute needed). The lane operations keep
// the x86 paths' semantics where they matter (min/max return the second operand when either is
// NaN, comparisons are false on NaN, round is to nearest even), so results agree across paths.
#if defined(__aarch64__)
#include <arm_neon.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "kernels/compute/vec_math_impl.h"

namespace etnp {
namespace {

struct Neon {
  using V = float32x4_t;
  using M = uint32x4_t;
  static constexpr int W = 4;
  static V set1(float x) { return vdupq_n_f32(x); }
  static V load(const float* p) { return vld1q_f32(p); }
  static void store(float* p, V v) { vst1q_f32(p, v); }
  static V add(V a, V b) { return vaddq_f32(a, b); }
  static V sub(V a, V b) { return vsubq_f32(a, b); }
  static V mul(V a, V b) { return vmulq_f32(a, b); }
  static V div(V a, V b) { return vdivq_f32(a, b); }
  static V fmadd(V a, V b, V c) { return vfmaq_f32(c, a, b); }   // a * b + c, one rounding
  static V fnmadd(V a, V b, V c) { return vfmsq_f32(c, a, b); }  // c - a * b
  static V min(V a, V b) { return vbslq_f32(vcltq_f32(a, b), a, b); }  // b when either is NaN, as minps
  static V max(V a, V b) { return vbslq_f32(vcgtq_f32(a, b), a, b); }
  static V abs(V a) { return vabsq_f32(a); }
  static V neg(V a) { return vnegq_f32(a); }
  static V copysign(V mag, V sgn) { return vbslq_f32(vdupq_n_u32(0x80000000u), sgn, mag); }
  static V round(V a) { return vrndnq_f32(a); }
  static V shl23(V a) { return vreinterpretq_f32_u32(vshlq_n_u32(vreinterpretq_u32_f32(a), 23)); }
  static V pow2(V k) {
    const int32x4_t e = vaddq_s32(vcvtnq_s32_f32(k), vdupq_n_s32(127));
    return vreinterpretq_f32_s32(vshlq_n_s32(e, 23));
  }
  static M lt(V a, V b) { return vcltq_f32(a, b); }
  static M gt(V a, V b) { return vcgtq_f32(a, b); }
  static M isnan(V a) { return vmvnq_u32(vceqq_f32(a, a)); }
  static V select(M m, V a, V b) { return vbslq_f32(m, a, b); }
  static float hmax(V a) {
    float l[4];
    vst1q_f32(l, a);
    float m = l[0];
    for (int i = 1; i < 4; i++) m = l[i] > m ? l[i] : m;
    return m;
  }
  static float hsum_f32(V a) {  // halves added pairwise (2, 1 apart)
    const float32x2_t s = vadd_f32(vget_low_f32(a), vget_high_f32(a));
    return vget_lane_f32(s, 0) + vget_lane_f32(s, 1);
  }
  static double hsum(V a) {
    const float64x2_t s = vaddq_f64(vcvt_f64_f32(vget_low_f32(a)), vcvt_high_f64_f32(a));
    return vgetq_lane_f64(s, 0) + vgetq_lane_f64(s, 1);
  }
};

}  // namespace

void vec_exp_neon(const float* x, float* y, int64_t n) { vec_impl::Path<Neon>::exp(x, y, n); }
void vec_sigmoid_neon(const float* x, float* y, int64_t n) { vec_impl::Path<Neon>::sigmoid(x, y, n); }
void vec_silu_neon(const float* x, float* y, int64_t n) { vec_impl::Path<Neon>::silu(x, y, n); }
void vec_tanh_neon(const float* x, float* y, int64_t n) { vec_impl::Path<Neon>::tanh(x, y, n); }
void vec_gelu_neon(const float* x, float* y, int64_t n) { vec_impl::Path<Neon>::gelu(x, y, n); }
void vec_gelu_xnn_neon(const float* x, float* y, int64_t n) { vec_impl::Path<Neon>::gelu_xnn(x, y, n); }
void vec_hardswish_neon(const float* x, float* y, int64_t n) { vec_impl::Path<Neon>::hardswish(x, y, n); }
void vec_softmax_neon(const float* x, float* y, int64_t n) { vec_impl::Path<Neon>::softmax(x, y, n); }
void vec_softmax_xnn_neon(const float* x, float* y, int64_t n) { vec_impl::Path<Neon>::softmax_xnn(x, y, n); }

}  // namespace etnp
#endif
