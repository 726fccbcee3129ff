// KV-cache helpers shared by ExecuTorch's LLM custom ops (llama::update_cache*, llama::sdpa_with_kv_cache):
// validation of a [batch, seq, heads, head_dim] value against a [batch, max_seq, heads, head_dim]
// cache and the copy of the value's rows into the cache at a start position.
#pragma once
#include <cstdint>

#include "kernels/kernel_util.h"

namespace etnp {
namespace llm {

// Checks that `value` can be written into `cache` at rows [start_pos, start_pos + value.sizes[1]):
// both 4-D, contiguous, same dtype, batch/heads/head_dim equal, the rows inside the cache, and the
// cache writable. Throws a clear ExecutionError naming `op` otherwise.
void check_cache_write(const KernelContext& ctx, const Tensor& value, const Tensor& cache, int64_t start_pos,
                       const char* value_name, const char* cache_name);

// cache[b, start_pos + s] = value[b, s] for every batch line b and row s (rows are heads*head_dim
// elements). check_cache_write must have passed.
void write_cache_rows(const Tensor& value, Tensor& cache, int64_t start_pos);

// cache[b, indices[b, s]] = value[b, s]; indices is int64 [batch, seq], each in [0, max_seq).
void write_cache_rows_at(const KernelContext& ctx, const Tensor& value, Tensor& cache, const Tensor& indices);

}  // namespace llm
}  // namespace etnp
