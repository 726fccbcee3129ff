// One block of keys of grouped-query attention, the inner kernel of attention_f32 (attention.h):
// the G query rows that share a KV head against keys [n0, n0 + n) of that head, with the softmax
// left unnormalised so blocks can be merged afterwards (online-softmax partials):
//   s[g][j] = dot(q_g, k_j) * scale (+ mask[j])          (the scores, kept in `scores`, G x n)
//   m[g]    = max_j s[g][j]  (NaN ignored; -inf when every key is masked)
//   l[g]    = sum_j e^(s[g][j] - m[g]),   acc[g] = sum_j e^(s[g][j] - m[g]) v_j
// Each key row is read once for all G query rows (K for the scores, then V for the sums). A
// block with m[g] = -inf leaves l[g] = 0 and acc[g] = 0. Keys whose weight is exactly 0 add
// nothing to acc (as the unblocked kernel did).
// Paths: AVX-512, AVX2+FMA (x86-64, chosen at run time; ETNP_CPU caps the choice), and a
// portable one written for the auto-vectoriser (NEON on aarch64).
#pragma once
#include <cstdint>

namespace etnp {
namespace llm {

struct AttnBlock {
  const float* q = nullptr;  // G rows of head_dim floats, contiguous
  const float* k = nullptr;  // key n0 of this KV head; key j at k + j * kv_stride
  const float* v = nullptr;  // likewise for the values
  const float* mask = nullptr;  // additive mask for keys n0.. (shared by the G rows), or null
  int64_t groups = 1, head_dim = 0, kv_stride = 0, n = 0;
  float scale = 1.f;
  float* scores = nullptr;  // scratch, groups * n floats
  float* m = nullptr;       // out: groups floats
  float* l = nullptr;       // out: groups floats
  float* acc = nullptr;     // out: groups * head_dim floats
};

void attention_block(const AttnBlock& a);

#if defined(__x86_64__)
void attention_block_avx512(const AttnBlock& a);
void attention_block_avx2(const AttnBlock& a);
#endif
void attention_block_portable(const AttnBlock& a);

}  // namespace llm
}  // namespace etnp
