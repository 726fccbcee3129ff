// attention_block's AVX2 path: attention_block_impl.h over 8-lane __m256 (separate multiplies and
// adds, as the portable loops: no FMA).
#if defined(__x86_64__)
#include <immintrin.h>

#include <cstdint>

#include "llm/attention_block.h"

// (everything below is compiled for this path's instruction set; the headers above are not)
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2"))), apply_to = function)
#else
#pragma GCC target("avx2")
#endif

#include "llm/attention_block_impl.h"

namespace etnp {
namespace llm {
namespace {
struct Avx2 {
  using V = __m256;
  static V set1(float x) { return _mm256_set1_ps(x); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static void prefetch(const float* p) { _mm_prefetch((const char*)p, _MM_HINT_T0); }
  static float sum8(V a) {
    const __m128 t = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));  // lanes t + (t + 4)
    const __m128 u = _mm_hadd_ps(t, t);                                                  // (0+1), (2+3)
    return _mm_cvtss_f32(_mm_add_ss(u, _mm_movehdup_ps(u)));
  }
};
}  // namespace

void attention_scores_avx2(const ScoreBlock& a) { block_impl::scores<Avx2>(a); }
void attention_values_avx2(const ValueSums& a) { block_impl::values<Avx2>(a); }

}  // namespace llm
}  // namespace etnp

#if defined(__clang__)
#pragma clang attribute pop
#endif
#endif  // __x86_64__
