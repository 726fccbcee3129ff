// vec_math's AVX-512 path: the algorithms of vec_math_impl.h over 16-lane __m512.
#if defined(__x86_64__)
#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

// Everything defined below (vec_math_impl.h's templates included) is compiled for this path's
// instruction set; the function-level attribute, so the rest of the build stays portable.
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx2,fma"))), apply_to = function)
#else
#pragma GCC target("avx512f,avx2,fma")
#endif

#include "kernels/compute/vec_math_impl.h"

namespace etnp {
namespace {

struct Avx512 {
  using V = __m512;
  using M = __mmask16;
  static constexpr int W = 16;
  static V set1(float x) { return _mm512_set1_ps(x); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V div(V a, V b) { return _mm512_div_ps(a, b); }
  static V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V fnmadd(V a, V b, V c) { return _mm512_fnmadd_ps(a, b, c); }
  static V min(V a, V b) { return _mm512_min_ps(a, b); }
  static V max(V a, V b) { return _mm512_max_ps(a, b); }
  static V abs(V a) { return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(a), _mm512_set1_epi32(0x7fffffff))); }
  static V neg(V a) { return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(a), _mm512_set1_epi32((int)0x80000000u))); }
  static V copysign(V mag, V sgn) {
    __m512i s = _mm512_and_si512(_mm512_castps_si512(sgn), _mm512_set1_epi32((int)0x80000000u));
    return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(abs(mag)), s));
  }
  static V round(V a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static V shl23(V a) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_castps_si512(a), 23)); }
  static V pow2(V k) {
    __m512i e = _mm512_add_epi32(_mm512_cvtps_epi32(k), _mm512_set1_epi32(127));
    return _mm512_castsi512_ps(_mm512_slli_epi32(e, 23));
  }
  static M lt(V a, V b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
  static M gt(V a, V b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }
  static M isnan(V a) { return _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q); }
  static V select(M m, V a, V b) { return _mm512_mask_blend_ps(m, b, a); }
  static float hmax(V a) { return _mm512_reduce_max_ps(a); }
  static float hsum_f32(V a) { return _mm512_reduce_add_ps(a); }  // (halves added pairwise: 8, 4, 2, 1 apart)
  static double hsum(V a) {
    __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(a));
    __m512d hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1)));
    return _mm512_reduce_add_pd(_mm512_add_pd(lo, hi));
  }
};

}  // namespace

void vec_exp_avx512(const float* x, float* y, int64_t n) { vec_impl::Path<Avx512>::exp(x, y, n); }
void vec_sigmoid_avx512(const float* x, float* y, int64_t n) { vec_impl::Path<Avx512>::sigmoid(x, y, n); }
void vec_silu_avx512(const float* x, float* y, int64_t n) { vec_impl::Path<Avx512>::silu(x, y, n); }
void vec_tanh_avx512(const float* x, float* y, int64_t n) { vec_impl::Path<Avx512>::tanh(x, y, n); }
void vec_gelu_avx512(const float* x, float* y, int64_t n) { vec_impl::Path<Avx512>::gelu(x, y, n); }
void vec_gelu_xnn_avx512(const float* x, float* y, int64_t n) { vec_impl::Path<Avx512>::gelu_xnn(x, y, n); }
void vec_hardswish_avx512(const float* x, float* y, int64_t n) { vec_impl::Path<Avx512>::hardswish(x, y, n); }
void vec_softmax_avx512(const float* x, float* y, int64_t n) { vec_impl::Path<Avx512>::softmax(x, y, n); }
void vec_softmax_xnn_avx512(const float* x, float* y, int64_t n) { vec_impl::Path<Avx512>::softmax_xnn(x, y, n); }

}  // namespace etnp

#if defined(__clang__)
#pragma clang attribute pop
#endif
#endif
