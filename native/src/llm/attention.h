// The attention core of ExecuTorch's LLM custom SDPA ops, float32, sequence-major layouts:
// q/out [batch, q_len, q_heads, head_dim], k/v [batch, kv_rows, kv_heads, head_dim] (a KV cache
// of kv_rows positions of which the first num_keys are attended), optional additive float mask
// [q_len, num_keys]. Grouped-query attention: query head h reads kv head h / (q_heads / kv_heads).
// Causal: query i (absolute position start_pos + i) attends keys 0 .. start_pos + i.
#pragma once
#include <cstdint>

#include "kernels/registry.h"

namespace etnp {
namespace llm {

struct AttentionShape {
  int64_t batch = 0, q_len = 0, q_heads = 0, head_dim = 0;
  int64_t kv_heads = 0, kv_rows = 0;  // the key/value tensors' heads and sequence rows
  int64_t num_keys = 0;               // keys [0, num_keys) take part (<= kv_rows)
  int64_t start_pos = 0;              // absolute position of query row 0 (causal masking)
  bool causal = false;
  float scale = 1.f;
};

// Work runs across ctx.pool (attention.cpp); results are the same for any number of threads. A
// row whose keys are all masked (-inf everywhere) yields zeros.
void attention_f32(KernelContext& ctx, const AttentionShape& s, const float* q, const float* k, const float* v,
                   const float* mask, float* out);

}  // namespace llm
}  // namespace etnp
