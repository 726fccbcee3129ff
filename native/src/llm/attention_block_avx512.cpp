// attention_block's AVX-512 path: attention_block_impl.h over 16-lane __m512.
#if defined(__x86_64__)
#include <immintrin.h>

#include <cstdint>
#include <limits>

#include "kernels/compute/vec_math.h"
#include "llm/attention_block.h"

// (everything below is compiled for this path's instruction set; the headers above are not)
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx2,fma"))), apply_to = function)
#else
#pragma GCC target("avx512f,avx2,fma")
#endif

#include "llm/attention_block_impl.h"

namespace etnp {
namespace llm {
namespace {
struct Avx512 {
  using V = __m512;
  static constexpr int W = 16;
  static V set1(float x) { return _mm512_set1_ps(x); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static float hsum_f32(V a) { return _mm512_reduce_add_ps(a); }
};
}  // namespace

void attention_block_avx512(const AttnBlock& a) { block_impl::block<Avx512>(a); }

}  // namespace llm
}  // namespace etnp

#if defined(__clang__)
#pragma clang attribute pop
#endif
#endif  // __x86_64__
