// Scaled dot-product attention over a KV cache (see attention.h): one softmax row per
// (batch, query position, head), scores in float32 like ExecuTorch's flash-attention kernel.
#include "llm/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/kernel_util.h"
#include "kernels/compute/vec_math.h"

namespace etnp {
namespace llm {

namespace {
inline float dot(const float* a, const float* b, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (int t = 0; t < 8; t++) acc[t] += a[j + t] * b[j + t];
  float s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
  for (; j < n; j++) s += a[j] * b[j];
  return s;
}
inline void axpy(float w, const float* x, float* y, int64_t n) {
  for (int64_t j = 0; j < n; j++) y[j] += w * x[j];
}
}  // namespace

void attention_f32(KernelContext& ctx, const AttentionShape& s, const float* q, const float* k, const float* v,
                   const float* mask, float* out) {
  const int64_t D = s.head_dim, Hq = s.q_heads, reps = s.q_heads / s.kv_heads;
  const int64_t kv_row = s.kv_heads * D, kv_batch = s.kv_rows * kv_row;
  const int64_t rows = s.batch * s.q_len * Hq;
  // a chunk of rows should carry ~64k multiply-adds before it is worth a thread
  int64_t per_row = std::max<int64_t>(1, s.num_keys * D * 2);
  int64_t grain = std::max<int64_t>(1, 65536 / per_row);
  parallel(ctx, rows, grain, [&](int64_t r0, int64_t r1) {
    std::vector<float> scores((size_t)std::max<int64_t>(1, s.num_keys));
    for (int64_t r = r0; r < r1; r++) {
      int64_t h = r % Hq, i = (r / Hq) % s.q_len, b = r / (Hq * s.q_len);
      const float* qr = q + r * D;
      float* o = out + r * D;
      const float* kb = k + b * kv_batch + (h / reps) * D;
      const float* vb = v + b * kv_batch + (h / reps) * D;
      int64_t nk = s.causal ? std::min(s.num_keys, s.start_pos + i + 1) : s.num_keys;
      float mx = -std::numeric_limits<float>::infinity();
      for (int64_t n = 0; n < nk; n++) {
        float sc = dot(qr, kb + n * kv_row, D) * s.scale;
        if (mask) sc += mask[i * s.num_keys + n];
        scores[(size_t)n] = sc;
        mx = std::max(mx, sc);
      }
      std::fill(o, o + D, 0.f);
      if (nk <= 0 || !(mx > -std::numeric_limits<float>::infinity())) continue;  // nothing to attend
      vec_softmax_row(scores.data(), scores.data(), nk);
      for (int64_t n = 0; n < nk; n++)
        if (scores[(size_t)n] != 0.f) axpy(scores[(size_t)n], vb + n * kv_row, o, D);
    }
  });
}

}  // namespace llm
}  // namespace etnp
