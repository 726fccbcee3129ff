// attention_block's AVX2+FMA path: attention_block_impl.h over 8-lane __m256.
#if defined(__x86_64__)
#include <immintrin.h>

#include <cstdint>
#include <limits>

#include "kernels/compute/vec_math.h"
#include "llm/attention_block.h"

// (everything below is compiled for this path's instruction set; the headers above are not)
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#else
#pragma GCC target("avx2,fma")
#endif

#include "llm/attention_block_impl.h"

namespace etnp {
namespace llm {
namespace {
struct Avx2 {
  using V = __m256;
  static constexpr int W = 8;
  static V set1(float x) { return _mm256_set1_ps(x); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static float hsum_f32(V a) {  // halves, then pairs, then the last two
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h = _mm_add_ss(h, _mm_movehdup_ps(h));
    return _mm_cvtss_f32(h);
  }
};
}  // namespace

void attention_block_avx2(const AttnBlock& a) { block_impl::block<Avx2>(a); }

}  // namespace llm
}  // namespace etnp

#if defined(__clang__)
#pragma clang attribute pop
#endif
#endif  // __x86_64__
