// winograd_impl.h's and winograd1d_impl.h's steps on AVX2 (8 lanes).
#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>

#include "kernels/compute/avx2_lanes.h"

// Everything defined below (winograd_impl.h's templates included) is compiled for this path's
// instruction set; the function-level attribute, so the rest of the build stays portable.
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#else
#pragma GCC target("avx2,fma")
#endif

#include "kernels/compute/winograd1d_impl.h"
#include "kernels/compute/winograd_impl.h"

namespace etnp {
namespace {

struct Avx2 {
  using V = __m256;
  using M = __m256i;
  static constexpr int64_t W = 8;
  static M mask(int64_t n) { return first_lanes_avx2(std::min<int64_t>(n, 8)); }
  static V load(const float* p, M m) { return _mm256_maskload_ps(p, m); }
  static void store(float* p, V v, M m) { _mm256_maskstore_ps(p, m, v); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static V set1(float x) { return _mm256_set1_ps(x); }
  static V clamp(V v, V lo, V hi) { return _mm256_min_ps(hi, _mm256_max_ps(lo, v)); }
};

}  // namespace

void winograd_tile_rows_avx2(const WinogradGeom& g, const float* X, const std::vector<PackedB>& U, float* Y,
                             const GemmEpilogue& ep,
    int64_t tr0, int64_t tr1, float* v, float* mb, const float* zeros) {
  winograd_impl::tile_rows<Avx2>(g, X, U, Y, ep, tr0, tr1, v, mb, zeros);
}

void winograd1d_bands_avx2(const Winograd1dGeom& g, const std::vector<PackedB>& U, const GemmEpilogue& ep,
                           const Winograd1dBlock& b) {
  winograd1d_impl::bands<Avx2>(g, U, ep, b);
}

}  // namespace etnp

#if defined(__clang__)
#pragma clang attribute pop
#endif
#endif
