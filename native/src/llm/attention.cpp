// Scaled dot-product attention over a KV cache (see attention.h), float32 scores like ExecuTorch's
// flash-attention kernel, computed in blocks of keys:
//  - a task is (batch, query position, KV head) x one block of kKeyBlock keys; the G query heads
//    that share the KV head (grouped-query attention) go together, so each K and V row is read
//    once per KV head rather than once per query head (attention_block.h);
//  - a block leaves an unnormalised softmax partial (its max m, sum l of e^(s - m), and the
//    e^(s - m)-weighted sum of values); the partials of a row's blocks are merged in block order:
//    out = sum_b e^(m_b - M) acc_b / sum_b e^(m_b - M) l_b with M = max_b m_b.
// Blocks are fixed in size and merged in a fixed order, so results do not depend on the number of
// threads; the threads share the (row group, block) tasks, so a decode step's long context is
// split across them even with few KV heads.
#include "llm/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/kernel_util.h"
#include "llm/attention_block.h"

namespace etnp {
namespace llm {

namespace {
constexpr int64_t kKeyBlock = 256;            // keys per block: G x 256 scores stay in L1
constexpr int64_t kPartialFloats = 1 << 18;   // partials of one pass over row groups (1 MiB)
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// out[G][D] from the nb partials of one row group (m[G], l[G], acc[G*D] each, `part` floats apart)
void merge_partials(const float* P, int64_t nb, int64_t part, int64_t G, int64_t D, float* out) {
  for (int64_t g = 0; g < G; g++) {
    float* o = out + g * D;
    std::fill(o, o + D, 0.f);
    float M = kNegInf;
    for (int64_t b = 0; b < nb; b++) M = std::max(M, P[b * part + g]);
    if (!(M > kNegInf)) continue;  // nothing to attend: zeros
    float L = 0.f;
    for (int64_t b = 0; b < nb; b++) {
      const float* pb = P + b * part;
      if (!(pb[g] > kNegInf)) continue;  // a block with every key masked (or past the row's keys)
      const float e = std::exp(pb[g] - M);
      L += e * pb[G + g];
      const float* acc = pb + 2 * G + g * D;
      for (int64_t d = 0; d < D; d++) o[d] += e * acc[d];
    }
    const float inv = 1.f / L;
    for (int64_t d = 0; d < D; d++) o[d] *= inv;
  }
}
}  // namespace

void attention_f32(KernelContext& ctx, const AttentionShape& s, const float* q, const float* k, const float* v,
                   const float* mask, float* out) {
  const int64_t D = s.head_dim, Hq = s.q_heads, Hkv = s.kv_heads, G = s.q_heads / s.kv_heads;
  const int64_t kv_row = Hkv * D, kv_batch = s.kv_rows * kv_row;
  const int64_t row_groups = s.batch * s.q_len * Hkv;  // (batch, query position, KV head)
  const int64_t nb = std::max<int64_t>(1, (s.num_keys + kKeyBlock - 1) / kKeyBlock);
  const int64_t part = G * (D + 2);  // one block's partial: m[G], l[G], acc[G][D]
  const int64_t per_pass = std::max<int64_t>(1, kPartialFloats / (nb * part));
  thread_local std::vector<float> partials;
  partials.resize((size_t)(std::min(row_groups, per_pass) * nb * part));
  float* parts = partials.data();  // (the workers' own thread_locals are not this thread's)
  // a task should carry ~64k multiply-adds before it is worth a thread
  const int64_t task_work = std::max<int64_t>(1, G * std::min(s.num_keys, kKeyBlock) * D * 2);
  const int64_t grain = std::max<int64_t>(1, 65536 / task_work);
  const int64_t merge_grain = std::max<int64_t>(1, 65536 / (nb * part));
  for (int64_t r0 = 0; r0 < row_groups; r0 += per_pass) {
    const int64_t r1 = std::min(row_groups, r0 + per_pass);
    parallel(ctx, (r1 - r0) * nb, grain, [&](int64_t t0, int64_t t1) {
      thread_local std::vector<float> scores;
      scores.resize((size_t)(G * kKeyBlock));
      for (int64_t t = t0; t < t1; t++) {
        const int64_t rg = r0 + t / nb, blk = t % nb;
        const int64_t h = rg % Hkv, i = (rg / Hkv) % s.q_len, b = rg / (Hkv * s.q_len);
        const int64_t nk = s.causal ? std::min(s.num_keys, s.start_pos + i + 1) : s.num_keys;
        const int64_t n0 = blk * kKeyBlock, n1 = std::min(nk, n0 + kKeyBlock);
        float* P = parts + t * part;
        if (n1 <= n0) {  // past this row's keys: an empty partial
          std::fill(P, P + G, kNegInf);
          std::fill(P + G, P + 2 * G, 0.f);
        } else {
          AttnBlock a;
          a.q = q + ((b * s.q_len + i) * Hq + h * G) * D;
          a.k = k + b * kv_batch + n0 * kv_row + h * D;
          a.v = v + b * kv_batch + n0 * kv_row + h * D;
          a.mask = mask ? mask + i * s.num_keys + n0 : nullptr;
          a.groups = G, a.head_dim = D, a.kv_stride = kv_row, a.n = n1 - n0;
          a.scale = s.scale;
          a.scores = scores.data();
          a.m = P, a.l = P + G, a.acc = P + 2 * G;
          attention_block(a);
        }
        if (nb == 1) merge_partials(P, 1, part, G, D, out + (rg / Hkv * Hq + h * G) * D);
      }
    });
    if (nb == 1) continue;
    parallel(ctx, r1 - r0, merge_grain, [&](int64_t g0, int64_t g1) {
      for (int64_t g = g0; g < g1; g++) {
        const int64_t rg = r0 + g;
        merge_partials(parts + g * nb * part, nb, part, G, D, out + (rg / Hkv * Hq + (rg % Hkv) * G) * D);
      }
    });
  }
}

}  // namespace llm
}  // namespace etnp
