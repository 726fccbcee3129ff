// vec_math's AVX2+FMA path: the algorithms of vec_math_impl.h over 8-lane __m256.
#if defined(__x86_64__)
#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

// Everything defined below (vec_math_impl.h's templates included) is compiled for this path's
// instruction set; the function-level attribute, so the rest of the build stays portable.
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#else
#pragma GCC target("avx2,fma")
#endif

#include "kernels/compute/vec_math_impl.h"

namespace etnp {
namespace {

struct Avx2 {
  using V = __m256;
  using M = __m256;
  static constexpr int W = 8;
  static V set1(float x) { return _mm256_set1_ps(x); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V div(V a, V b) { return _mm256_div_ps(a, b); }
  static V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V fnmadd(V a, V b, V c) { return _mm256_fnmadd_ps(a, b, c); }
  static V min(V a, V b) { return _mm256_min_ps(a, b); }
  static V max(V a, V b) { return _mm256_max_ps(a, b); }
  static V abs(V a) { return _mm256_andnot_ps(_mm256_set1_ps(-0.f), a); }
  static V neg(V a) { return _mm256_xor_ps(a, _mm256_set1_ps(-0.f)); }
  static V copysign(V mag, V sgn) {
    return _mm256_or_ps(abs(mag), _mm256_and_ps(sgn, _mm256_set1_ps(-0.f)));
  }
  static V round(V a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static V shl23(V a) { return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_castps_si256(a), 23)); }
  static V pow2(V k) {
    __m256i e = _mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127));
    return _mm256_castsi256_ps(_mm256_slli_epi32(e, 23));
  }
  static M lt(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
  static M gt(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_GT_OQ); }
  static M isnan(V a) { return _mm256_cmp_ps(a, a, _CMP_UNORD_Q); }
  static V select(M m, V a, V b) { return _mm256_blendv_ps(b, a, m); }
  static float hmax(V a) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
    return _mm_cvtss_f32(m);
  }
  static float hsum_f32(V a) {  // halves added pairwise (4, 2, 1 apart), as XNNPACK's AVX2 kernels
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static double hsum(V a) {
    __m256d s = _mm256_add_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(a)), _mm256_cvtps_pd(_mm256_extractf128_ps(a, 1)));
    __m128d t = _mm_add_pd(_mm256_castpd256_pd128(s), _mm256_extractf128_pd(s, 1));
    return _mm_cvtsd_f64(_mm_add_sd(t, _mm_unpackhi_pd(t, t)));
  }
};

}  // namespace

void vec_exp_avx2(const float* x, float* y, int64_t n) { vec_impl::Path<Avx2>::exp(x, y, n); }
void vec_sigmoid_avx2(const float* x, float* y, int64_t n) { vec_impl::Path<Avx2>::sigmoid(x, y, n); }
void vec_silu_avx2(const float* x, float* y, int64_t n) { vec_impl::Path<Avx2>::silu(x, y, n); }
void vec_tanh_avx2(const float* x, float* y, int64_t n) { vec_impl::Path<Avx2>::tanh(x, y, n); }
void vec_gelu_avx2(const float* x, float* y, int64_t n) { vec_impl::Path<Avx2>::gelu(x, y, n); }
void vec_gelu_xnn_avx2(const float* x, float* y, int64_t n) { vec_impl::Path<Avx2>::gelu_xnn(x, y, n); }
void vec_hardswish_avx2(const float* x, float* y, int64_t n) { vec_impl::Path<Avx2>::hardswish(x, y, n); }
void vec_softmax_avx2(const float* x, float* y, int64_t n) { vec_impl::Path<Avx2>::softmax(x, y, n); }
void vec_softmax_xnn_avx2(const float* x, float* y, int64_t n) { vec_impl::Path<Avx2>::softmax_xnn(x, y, n); }

}  // namespace etnp

#if defined(__clang__)
#pragma clang attribute pop
#endif
#endif
