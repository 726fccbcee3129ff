// vec_math's portable path (the same algorithms, one lane at a time) and the run-time choice.
#include "kernels/compute/vec_math.h"

#include <cmath>
#include <cstring>

#include "kernels/compute/cpu_features.h"
#include "kernels/compute/vec_math_impl.h"
#include "util/fma_exact.h"

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

struct Scalar {
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
  static V fmadd(V a, V b, V c) { return fma_exact(a, b, c); }  // (std::fma is not exact everywhere)
  static V fnmadd(V a, V b, V c) { return fma_exact(-a, b, c); }
  static V min(V a, V b) { return a < b ? a : b; }  // b when either is NaN, as minps
  static V max(V a, V b) { return a > b ? a : b; }
  static V abs(V a) { return std::fabs(a); }
  static V neg(V a) { return -a; }
  static V copysign(V mag, V sgn) { return std::copysign(mag, sgn); }
  static V round(V a) { return std::nearbyint(a); }
  static V shl23(V a) {  // the bits shifted left by 23 (a float's exponent field)
    uint32_t b;
    std::memcpy(&b, &a, 4);
    b <<= 23;
    float f;
    std::memcpy(&f, &b, 4);
    return f;
  }
  static V pow2(V k) {
    int32_t e = ((int32_t)k + 127) << 23;
    float f;
    std::memcpy(&f, &e, 4);
    return f;
  }
  static M lt(V a, V b) { return a < b; }
  static M gt(V a, V b) { return a > b; }
  static M isnan(V a) { return a != a; }
  static V select(M m, V a, V b) { return m ? a : b; }
  static float hmax(V a) { return a; }
  static float hsum_f32(V a) { return a; }
  static double hsum(V a) { return a; }
};

using Fn = void (*)(const float*, float*, int64_t);
struct Table { Fn exp, sigmoid, tanh, gelu, softmax, hardswish, gelu_xnn, softmax_xnn; };

const Table& table() {
  static const Table t = [] {
    using P = vec_impl::Path<Scalar>;
    Table s{P::exp, P::sigmoid, P::tanh, P::gelu, P::softmax, P::hardswish, P::gelu_xnn, P::softmax_xnn};
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
