// winograd_impl.h's and winograd1d_impl.h's steps on AVX-512F (16 lanes).
#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>

// Everything defined below (winograd_impl.h's templates included) is compiled for this path's
// instruction set; the function-level attribute, so the rest of the build stays portable.
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx2,fma"))), apply_to = function)
#else
#pragma GCC target("avx512f,avx2,fma")
#endif

#include "kernels/compute/winograd1d_impl.h"
#include "kernels/compute/winograd_impl.h"

namespace etnp {
namespace {

struct Avx512 {
  using V = __m512;
  using M = __mmask16;
  static constexpr int64_t W = 16;
  static M mask(int64_t n) { return n >= 16 ? (M)0xFFFF : (M)((1u << n) - 1); }
  static V load(const float* p, M m) { return _mm512_maskz_loadu_ps(m, p); }
  static void store(float* p, V v, M m) { _mm512_mask_storeu_ps(p, m, v); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static V set1(float x) { return _mm512_set1_ps(x); }
  // (maxps / minps return their second operand where either is NaN: a NaN value stays NaN; the
  // zero-masked forms, as GCC 12 warns of the plain ones' undefined source here)
  static V clamp(V v, V lo, V hi) {
    return _mm512_maskz_min_ps((__mmask16)0xFFFF, hi, _mm512_maskz_max_ps((__mmask16)0xFFFF, lo, v));
  }
};

}  // namespace

void winograd_tile_rows_avx512(const WinogradGeom& g, const float* X, const std::vector<PackedB>& U, float* Y,
                               const GemmEpilogue& ep,
    int64_t tr0, int64_t tr1, float* v, float* mb, const float* zeros) {
  winograd_impl::tile_rows<Avx512>(g, X, U, Y, ep, tr0, tr1, v, mb, zeros);
}

void winograd1d_bands_avx512(const Winograd1dGeom& g, const std::vector<PackedB>& U, const GemmEpilogue& ep,
                             const Winograd1dBlock& b) {
  winograd1d_impl::bands<Avx512>(g, U, ep, b);
}

}  // namespace etnp

#if defined(__clang__)
#pragma clang attribute pop
#endif
#endif
