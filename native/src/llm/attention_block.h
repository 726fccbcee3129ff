// The two inner kernels of attention_f32 (attention.h), with the query heads that share a KV head
// (grouped-query attention) together, so each K row is read once per KV head, each V row once per
// three of its query heads (their sums held in registers):
//   attention_scores: s[g][j] = dot(q_g, k_j) * scale (+ mask[j]) for the G query rows and a block
//                     of keys;
//   attention_values: out_g[d0, d1) += w[g][j] * v_j[d0, d1) for j = 0, 1, ... in order (weights
//                     exactly 0 skipped), a range of the head dimension.
// Both make the float operations of the plain per-head loops they replace, in the same order - the
// dot product in 8 lanes (lane t sums q[8c + t] * k[8c + t] over c, a multiply and an add each),
// those lanes added ((0+4)+(1+5))+((2+6)+(3+7)), the tail after them; the value sums one multiply
// and one add per weight - so results are bit-identical on every path and for any split of the
// work. Paths: AVX2 (x86-64, chosen at run time; ETNP_CPU caps it) and a portable one written for
// the auto-vectoriser.
#pragma once
#include <cstdint>

namespace etnp {
namespace llm {

struct ScoreBlock {
  const float* q = nullptr;     // G rows of head_dim floats, contiguous
  const float* k = nullptr;     // the block's first key of this KV head; key j at k + j * kv_stride
  const float* mask = nullptr;  // additive mask for the block's keys (shared by the G rows), or null
  int64_t groups = 1, head_dim = 0, kv_stride = 0, n = 0;
  float scale = 1.f;
  float* s = nullptr;  // out: row g's scores at s + g * ld
  int64_t ld = 0;
};

struct ValueSums {
  const float* w = nullptr;  // G rows of n weights, row g at w + g * ld
  int64_t ld = 0;
  const float* v = nullptr;  // value j of this KV head at v + j * kv_stride
  int64_t groups = 1, kv_stride = 0, n = 0;
  int64_t d0 = 0, d1 = 0;    // the head-dimension range summed
  float* out = nullptr;      // G rows of head_dim floats (row g at out + g * head_dim), added to
  int64_t head_dim = 0;
};

void attention_scores(const ScoreBlock& a);
void attention_values(const ValueSums& a);

#if defined(__x86_64__)
void attention_scores_avx2(const ScoreBlock& a);
void attention_values_avx2(const ValueSums& a);
#endif
void attention_scores_portable(const ScoreBlock& a);
void attention_values_portable(const ValueSums& a);

}  // namespace llm
}  // namespace etnp
