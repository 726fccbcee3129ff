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
  // sum8 of four vectors at once: lanes t + (t + 4) of two vectors per register, then two rounds
  // of pairwise adds - (t0 + t1) + (t2 + t3) per vector, sum8's order
  static void sum8x4(V a0, V a1, V a2, V a3, float* out) {
    const __m256 s01 = _mm256_add_ps(_mm256_permute2f128_ps(a0, a1, 0x20), _mm256_permute2f128_ps(a0, a1, 0x31));
    const __m256 s23 = _mm256_add_ps(_mm256_permute2f128_ps(a2, a3, 0x20), _mm256_permute2f128_ps(a2, a3, 0x31));
    const __m256 h = _mm256_hadd_ps(s01, s23);  // [a0: 01 23, a2: 01 23 | a1: 01 23, a3: 01 23]
    const __m256 h2 = _mm256_hadd_ps(h, h);     // [a0, a2, a0, a2 | a1, a3, a1, a3]
    const __m128 lo = _mm256_castps256_ps128(h2), hi = _mm256_extractf128_ps(h2, 1);
    out[0] = _mm_cvtss_f32(lo);
    out[1] = _mm_cvtss_f32(hi);
    out[2] = _mm_cvtss_f32(_mm_movehdup_ps(lo));
    out[3] = _mm_cvtss_f32(_mm_movehdup_ps(hi));
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
