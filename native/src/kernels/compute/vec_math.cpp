// vec_math's portable path (the same algorithms, written for the compiler's auto-vectoriser) and
// the run-time choice.
#include "kernels/compute/vec_math.h"

#include <cmath>
#include <cstring>

#include "kernels/compute/cpu_features.h"
#include "kernels/compute/vec_math_impl.h"
#include "kernels/compute/portable_ops.h"

namespace etnp {

#if defined(__x86_64__)
void vec_exp_avx512(const float*, float*, int64_t);
void vec_sigmoid_avx512(const float*, float*, int64_t);
void vec_silu_avx512(const float*, float*, int64_t);
void vec_tanh_avx512(const float*, float*, int64_t);
void vec_gelu_avx512(const float*, float*, int64_t);
void vec_gelu_xnn_avx512(const float*, float*, int64_t);
void vec_hardswish_avx512(const float*, float*, int64_t);
void vec_softmax_avx512(const float*, float*, int64_t);
void vec_softmax_xnn_avx512(const float*, float*, int64_t);
void vec_exp_avx2(const float*, float*, int64_t);
void vec_sigmoid_avx2(const float*, float*, int64_t);
void vec_silu_avx2(const float*, float*, int64_t);
void vec_tanh_avx2(const float*, float*, int64_t);
void vec_gelu_avx2(const float*, float*, int64_t);
void vec_gelu_xnn_avx2(const float*, float*, int64_t);
void vec_hardswish_avx2(const float*, float*, int64_t);
void vec_softmax_avx2(const float*, float*, int64_t);
void vec_softmax_xnn_avx2(const float*, float*, int64_t);
#endif

#if defined(__aarch64__)
void vec_exp_neon(const float*, float*, int64_t);
void vec_sigmoid_neon(const float*, float*, int64_t);
void vec_silu_neon(const float*, float*, int64_t);
void vec_tanh_neon(const float*, float*, int64_t);
void vec_gelu_neon(const float*, float*, int64_t);
void vec_gelu_xnn_neon(const float*, float*, int64_t);
void vec_softmax_neon(const float*, float*, int64_t);
void vec_softmax_xnn_neon(const float*, float*, int64_t);
void vec_hardswish_neon(const float*, float*, int64_t);
#endif

namespace {

// The portable path: vec_math_impl.h's algorithms over plain floats, with every operation written
// so that the loops over them vectorise (portable_ops.h: selects as bit blends; rounding to an
// integer by adding and subtracting 1.5 * 2^23, exact for the |x| < 2^22 the algorithms round,
// where SSE2 has no rounding instruction; powers of two by integer conversion). Its one
// difference from the FMA paths: a multiply-add rounds twice (an exact one, emulated, is 3-5x
// slower) - results within the accuracy bounds of vec_math.h, not the FMA paths' bits - except
// where a double evaluation is exact (Fused).
struct Portable {
  using V = float;
  using M = bool;
  static constexpr int W = 1;
  static V set1(float x) { return x; }
  static V load(const float* p) { return *p; }
  static void store(float* p, V v) { *p = v; }
  static V add(V a, V b) { return a + b; }
  static V sub(V a, V b) { return a - b; }
  static V mul(V a, V b) { return a * b; }
  static V div(V a, V b) { return a / b; }
  static V fmadd(V a, V b, V c) { return a * b + c; }
  static V fnmadd(V a, V b, V c) { return c - a * b; }
  static V min(V a, V b) { return min_f32(a, b); }  // b when either is NaN, as minps
  static V max(V a, V b) { return max_f32(a, b); }
  static V abs(V a) { return bits_float(float_bits(a) & 0x7fffffffu); }
  static V neg(V a) { return -a; }
  static V copysign(V mag, V sgn) { return bits_float((float_bits(mag) & 0x7fffffffu) | (float_bits(sgn) & 0x80000000u)); }
  static V round(V a) { return (a + 12582912.f) - 12582912.f; }  // (to nearest even, |a| < 2^22)
  static V shl23(V a) { return bits_float(float_bits(a) << 23); }  // the bits shifted into a float's exponent field
  static V pow2(V k) { return bits_float((uint32_t)((int32_t)k + 127) << 23); }
  static M lt(V a, V b) { return a < b; }
  static M gt(V a, V b) { return a > b; }
  static M isnan(V a) { return a != a; }
  static V select(M m, V a, V b) { return select_f32(m, a, b); }
  static float hmax(V a) { return a; }
  static float hsum_f32(V a) { return a; }
  static double hsum(V a) { return a; }
};

// Portable with the multiply-add in double, rounded once to float: the product of two floats is
// exact in double, so only the double sum can differ from the FMA's (rounding twice) - at 2-4x the
// cost of two roundings, not 10x of an emulated FMA. For hardswish's x / 6 + 1/2 it never differs
// (every float x checked): the FMA paths' bits. GELU with two roundings exceeds its 3-ulp bound
// (3.3 ulp, 26 points near x = 3.6); with these, every x >= 0 is within 2.91 ulp (all checked).
struct Fused : Portable {
  static V fmadd(V a, V b, V c) { return (float)((double)a * (double)b + (double)c); }
};

// Softmax rows on the portable path, summed in the AVX-512 path's order (16 lanes; then the lanes
// as _mm512_reduce_add_ps / that path's double sum adds them), so the two differ only by the
// multiply-adds inside e^x. Each e^(x - max) is one loop over the row (the map's), the sums loops
// over 16-float arrays: all vectorise.
constexpr int kLanes = 16;

// The largest of x[0, n) (-inf for n = 0; a NaN may or may not be passed over, as the vector paths')
float row_max_portable(const float* x, int64_t n) {
  float m[kLanes];
  for (int l = 0; l < kLanes; l++) m[l] = -INFINITY;
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; l++) m[l] = max_f32(m[l], x[i + l]);
  float r = m[0];
  for (int l = 1; l < kLanes; l++) r = max_f32(m[l], r);
  for (; i < n; i++) r = x[i] > r ? x[i] : r;
  return r;
}

// a[0] + ... + a[15] as _mm512_reduce_add_ps: halves added pairwise (8, 4, 2, 1 apart)
float lanes_sum_f32(float* a) {
  for (int h = kLanes / 2; h >= 1; h /= 2)
    for (int l = 0; l < h; l++) a[l] += a[l + h];
  return a[0];
}

void softmax_portable(const float* x, float* y, int64_t n) {
  if (n <= 0) return;
  const float m = row_max_portable(x, n);
  if (std::isnan(m) || std::isinf(m)) {  // (the scalar definition)
    vec_impl::softmax_row<Portable>(x, y, n);
    return;
  }
  for (int64_t i = 0; i < n; i++) y[i] = vec_impl::exp_full<Portable>(x[i] - m);
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; l++) acc[l] += y[i + l];
  double d[8];  // the lanes in double: i and i + 8, then halves pairwise; then the tail one by one
  for (int l = 0; l < 8; l++) d[l] = (double)acc[l] + (double)acc[l + 8];
  for (int h = 4; h >= 1; h /= 2)
    for (int l = 0; l < h; l++) d[l] += d[l + h];
  double sum = d[0];
  for (; i < n; i++) sum += y[i];
  const float inv = (float)(1.0 / sum);
  for (i = 0; i < n; i++) y[i] *= inv;
}

void softmax_xnn_portable(const float* x, float* y, int64_t n) {
  if (n <= 0) return;
  const float m = row_max_portable(x, n);
  if (std::isnan(m) || std::isinf(m)) {
    vec_impl::softmax_row<Portable>(x, y, n);
    return;
  }
  for (int64_t i = 0; i < n; i++) y[i] = vec_impl::exp_minus_max_xnn<Portable>(x[i] - m);
  // blocks of 4 vectors into two accumulators (1st and 3rd, 2nd and 4th), the two added, whole
  // vectors, the tail (its padding lanes add e^-inf = 0), the lanes
  float a0[kLanes] = {}, a1[kLanes] = {};
  int64_t i = 0;
  for (; i + 4 * kLanes <= n; i += 4 * kLanes)
    for (int l = 0; l < kLanes; l++) {
      a0[l] += y[i + l];
      a1[l] += y[i + kLanes + l];
      a0[l] += y[i + 2 * kLanes + l];
      a1[l] += y[i + 3 * kLanes + l];
    }
  for (int l = 0; l < kLanes; l++) a0[l] += a1[l];
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; l++) a0[l] += y[i + l];
  for (int l = 0; i + l < n; l++) a0[l] += y[i + l];
  const float scale = 1.f / lanes_sum_f32(a0);
  for (i = 0; i < n; i++) y[i] *= scale;
}

using Fn = void (*)(const float*, float*, int64_t);
struct Table { Fn exp, sigmoid, tanh, gelu, softmax, hardswish, gelu_xnn, softmax_xnn, silu; };

const Table& table() {
  static const Table t = [] {
    using P = vec_impl::Path<Portable>;
    using F = vec_impl::Path<Fused>;
    Table s{P::exp, P::sigmoid, P::tanh, F::gelu, softmax_portable, F::hardswish, P::gelu_xnn, softmax_xnn_portable, P::silu};
#if defined(__x86_64__)
    if (cpu_has_avx512f()) s = {vec_exp_avx512, vec_sigmoid_avx512, vec_tanh_avx512, vec_gelu_avx512, vec_softmax_avx512,
                                  vec_hardswish_avx512, vec_gelu_xnn_avx512, vec_softmax_xnn_avx512, vec_silu_avx512};
    else if (cpu_has_avx2_fma()) s = {vec_exp_avx2, vec_sigmoid_avx2, vec_tanh_avx2, vec_gelu_avx2, vec_softmax_avx2, vec_hardswish_avx2,
                                         vec_gelu_xnn_avx2, vec_softmax_xnn_avx2, vec_silu_avx2};
#endif
#if defined(__aarch64__)
    if (cpu_has_neon()) s = {vec_exp_neon, vec_sigmoid_neon, vec_tanh_neon, vec_gelu_neon, vec_softmax_neon, vec_hardswish_neon,
                             vec_gelu_xnn_neon, vec_softmax_xnn_neon, vec_silu_neon};
#endif
    return s;
  }();
  return t;
}

}  // namespace

void vec_exp(const float* x, float* y, int64_t n) { table().exp(x, y, n); }
void vec_sigmoid(const float* x, float* y, int64_t n) { table().sigmoid(x, y, n); }
void vec_silu(const float* x, float* y, int64_t n) { table().silu(x, y, n); }
void vec_tanh(const float* x, float* y, int64_t n) { table().tanh(x, y, n); }
void vec_gelu(const float* x, float* y, int64_t n) { table().gelu(x, y, n); }
void vec_gelu_xnn(const float* x, float* y, int64_t n) { table().gelu_xnn(x, y, n); }
void vec_hardswish(const float* x, float* y, int64_t n) { table().hardswish(x, y, n); }
void vec_softmax_row(const float* x, float* y, int64_t n) { table().softmax(x, y, n); }
void vec_softmax_xnn_row(const float* x, float* y, int64_t n) { table().softmax_xnn(x, y, n); }

}  // namespace etnp
