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
void vec_tanh_avx512(const float*, float*, int64_t);
void vec_gelu_avx512(const float*, float*, int64_t);
void vec_gelu_xnn_avx512(const float*, float*, int64_t);
void vec_hardswish_avx512(const float*, float*, int64_t);
void vec_softmax_avx512(const float*, float*, int64_t);
void vec_softmax_xnn_avx512(const float*, float*, int64_t);
void vec_exp_avx2(const float*, float*, int64_t);
void vec_sigmoid_avx2(const float*, float*, int64_t);
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
};

// Portable with the multiply-add in double, rounded once to float: the product of two floats is
// exact in double, so only the double sum can differ from the FMA's (rounding twice) - at 2-4x the
// cost of two roundings, not 10x of an emulated FMA. For hardswish's x / 6 + 1/2 it never differs
// (every float x checked): the FMA paths' bits. GELU with two roundings exceeds its 3-ulp bound
// (3.3 ulp, 26 points near x = 3.6); with these, every x >= 0 is within 2.91 ulp (all checked).
struct Fused : Portable {
  static V fmadd(V a, V b, V c) { return (float)((double)a * (double)b + (double)c); }
};

// 16 lanes of floats as an array (each operation a loop over them): softmax rows, whose sums the
// AVX-512 path adds in 16 lanes - in the same order here (16 floats, then halves added pairwise),
// so the two differ only by the multiply-adds of e^x.
struct Lanes16 {
  static constexpr int W = 16;
  struct V { float v[W]; };
  struct M { bool v[W]; };
  template <class F>
  static V each(F f) {
    V r;
    for (int i = 0; i < W; i++) r.v[i] = f(i);
    return r;
  }
  static V set1(float x) { return each([&](int) { return x; }); }
  static V load(const float* p) { return each([&](int i) { return p[i]; }); }
  static void store(float* p, V v) { for (int i = 0; i < W; i++) p[i] = v.v[i]; }
  static V add(V a, V b) { return each([&](int i) { return a.v[i] + b.v[i]; }); }
  static V sub(V a, V b) { return each([&](int i) { return a.v[i] - b.v[i]; }); }
  static V mul(V a, V b) { return each([&](int i) { return a.v[i] * b.v[i]; }); }
  static V fmadd(V a, V b, V c) { return each([&](int i) { return Portable::fmadd(a.v[i], b.v[i], c.v[i]); }); }
  static V fnmadd(V a, V b, V c) { return each([&](int i) { return Portable::fnmadd(a.v[i], b.v[i], c.v[i]); }); }
  static V min(V a, V b) { return each([&](int i) { return min_f32(a.v[i], b.v[i]); }); }
  static V max(V a, V b) { return each([&](int i) { return max_f32(a.v[i], b.v[i]); }); }
  static V round(V a) { return each([&](int i) { return Portable::round(a.v[i]); }); }
  static V shl23(V a) { return each([&](int i) { return Portable::shl23(a.v[i]); }); }
  static V pow2(V k) { return each([&](int i) { return Portable::pow2(k.v[i]); }); }
  static M lt(V a, V b) {
    M r;
    for (int i = 0; i < W; i++) r.v[i] = a.v[i] < b.v[i];
    return r;
  }
  static M gt(V a, V b) { return lt(b, a); }
  static M isnan(V a) {
    M r;
    for (int i = 0; i < W; i++) r.v[i] = a.v[i] != a.v[i];
    return r;
  }
  static V select(M m, V a, V b) { return each([&](int i) { return select_f32(m.v[i], a.v[i], b.v[i]); }); }
  static float hmax(V a) {  // (the maximum, whatever the order)
    float m = a.v[0];
    for (int i = 1; i < W; i++) m = max_f32(a.v[i], m);
    return m;
  }
  static float hsum_f32(V a) {  // halves added pairwise (8, 4, 2, 1 apart), as _mm512_reduce_add_ps
    for (int h = W / 2; h >= 1; h /= 2)
      for (int i = 0; i < h; i++) a.v[i] += a.v[i + h];
    return a.v[0];
  }
  static double hsum(V a) {  // the AVX-512 path's: lanes i and i + 8 in double, then halves pairwise
    double d[8];
    for (int i = 0; i < 8; i++) d[i] = (double)a.v[i] + (double)a.v[i + 8];
    for (int h = 4; h >= 1; h /= 2)
      for (int i = 0; i < h; i++) d[i] += d[i + h];
    return d[0];
  }
};

using Fn = void (*)(const float*, float*, int64_t);
struct Table { Fn exp, sigmoid, tanh, gelu, softmax, hardswish, gelu_xnn, softmax_xnn; };

const Table& table() {
  static const Table t = [] {
    using P = vec_impl::Path<Portable>;
    using R = vec_impl::Path<Lanes16>;
    using F = vec_impl::Path<Fused>;
    Table s{P::exp, P::sigmoid, P::tanh, F::gelu, R::softmax, F::hardswish, P::gelu_xnn, R::softmax_xnn};
#if defined(__x86_64__)
    if (cpu_has_avx512f()) s = {vec_exp_avx512, vec_sigmoid_avx512, vec_tanh_avx512, vec_gelu_avx512, vec_softmax_avx512,
                                  vec_hardswish_avx512, vec_gelu_xnn_avx512, vec_softmax_xnn_avx512};
    else if (cpu_has_avx2_fma()) s = {vec_exp_avx2, vec_sigmoid_avx2, vec_tanh_avx2, vec_gelu_avx2, vec_softmax_avx2, vec_hardswish_avx2,
                                         vec_gelu_xnn_avx2, vec_softmax_xnn_avx2};
#endif
#if defined(__aarch64__)
    if (cpu_has_neon()) s = {vec_exp_neon, vec_sigmoid_neon, vec_tanh_neon, vec_gelu_neon, vec_softmax_neon, vec_hardswish_neon,
                             vec_gelu_xnn_neon, vec_softmax_xnn_neon};
#endif
    return s;
  }();
  return t;
}

}  // namespace

void vec_exp(const float* x, float* y, int64_t n) { table().exp(x, y, n); }
void vec_sigmoid(const float* x, float* y, int64_t n) { table().sigmoid(x, y, n); }
void vec_tanh(const float* x, float* y, int64_t n) { table().tanh(x, y, n); }
void vec_gelu(const float* x, float* y, int64_t n) { table().gelu(x, y, n); }
void vec_gelu_xnn(const float* x, float* y, int64_t n) { table().gelu_xnn(x, y, n); }
void vec_hardswish(const float* x, float* y, int64_t n) { table().hardswish(x, y, n); }
void vec_softmax_row(const float* x, float* y, int64_t n) { table().softmax(x, y, n); }
void vec_softmax_xnn_row(const float* x, float* y, int64_t n) { table().softmax_xnn(x, y, n); }

}  // namespace etnp
