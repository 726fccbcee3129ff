// KV-cache validation and row copies for the LLM custom ops (see kv_cache.h).
#include "llm/kv_cache.h"

#include <cstring>
#include <string>

namespace etnp {
namespace llm {

namespace {
std::string op_name(const KernelContext& ctx) { return ctx.op && *ctx.op ? ctx.op : "llama op"; }
}  // namespace

void check_cache_write(const KernelContext& ctx, const Tensor& value, const Tensor& cache, int64_t start_pos,
                       const char* value_name, const char* cache_name) {
  std::string op = op_name(ctx);
  if (value.dim != 4)
    throw_exec(op + ": " + value_name + " must be 4-D [batch, seq, heads, head_dim], got " + value.shape_str());
  if (cache.dim != 4)
    throw_exec(op + ": " + cache_name + " must be 4-D [batch, max_seq, heads, head_dim], got " + cache.shape_str());
  if (value.dtype != cache.dtype)
    throw_exec(op + ": " + value_name + " has dtype " + dtype_name(value.dtype) + " but " + cache_name + " has " +
               dtype_name(cache.dtype));
  for (int d : {0, 2, 3})
    if (value.sizes[d] != cache.sizes[d])
      throw_exec(op + ": " + value_name + " " + value.shape_str() + " does not fit " + cache_name + " " +
                 cache.shape_str() + " (batch, heads and head_dim must match)");
  int64_t max_seq = cache.sizes[1], seq = value.sizes[1];
  if (start_pos < 0 || start_pos >= max_seq)
    throw_exec(op + ": start position " + std::to_string(start_pos) + " is out of range for a cache of " +
               std::to_string(max_seq) + " positions");
  if (start_pos + seq > max_seq)
    throw_exec(op + ": start position " + std::to_string(start_pos) + " + " + std::to_string(seq) +
               " new positions exceed the cache's " + std::to_string(max_seq) + " positions");
  check_contiguous(value, ctx.op);
  check_contiguous(cache, ctx.op);
  check_writable(cache, ctx.op);
  if ((value.numel() && !value.data) || (cache.numel() && !cache.data))
    throw_exec(op + ": " + value_name + " or " + cache_name + " has no memory");
}

void write_cache_rows(const Tensor& value, Tensor& cache, int64_t start_pos) {
  size_t es = dtype_size(value.dtype);
  int64_t row = value.sizes[2] * value.sizes[3];
  int64_t seq = value.sizes[1], max_seq = cache.sizes[1];
  const char* src = (const char*)value.data;
  char* dst = (char*)cache.data;
  for (int64_t b = 0; b < value.sizes[0]; b++) {
    size_t n = (size_t)(seq * row) * es;
    if (n) std::memmove(dst + (size_t)((b * max_seq + start_pos) * row) * es, src + (size_t)(b * seq * row) * es, n);
  }
}

void write_cache_rows_at(const KernelContext& ctx, const Tensor& value, Tensor& cache, const Tensor& indices) {
  std::string op = op_name(ctx);
  if (indices.dtype != DType::I64) throw_exec(op + ": indices must be int64, got " + dtype_name(indices.dtype));
  if (indices.dim != 2 || indices.sizes[0] != value.sizes[0] || indices.sizes[1] != value.sizes[1])
    throw_exec(op + ": indices must be [batch, seq] = [" + std::to_string(value.sizes[0]) + ", " +
               std::to_string(value.sizes[1]) + "], got " + indices.shape_str());
  check_contiguous(indices, ctx.op);
  const int64_t* idx = indices.ptr<int64_t>();
  int64_t seq = value.sizes[1], max_seq = cache.sizes[1];
  for (int64_t i = 0, n = indices.numel(); i < n; i++)  // all checked before anything is written
    if (idx[i] < 0 || idx[i] >= max_seq)
      throw_exec(op + ": index " + std::to_string(idx[i]) + " is out of range for a cache of " +
                 std::to_string(max_seq) + " positions");
  size_t es = dtype_size(value.dtype);
  size_t row = (size_t)(value.sizes[2] * value.sizes[3]) * es;
  const char* src = (const char*)value.data;
  char* dst = (char*)cache.data;
  for (int64_t b = 0; b < value.sizes[0]; b++)
    for (int64_t s = 0; s < seq; s++)
      std::memmove(dst + (size_t)(b * max_seq + idx[b * seq + s]) * row, src + (size_t)(b * seq + s) * row, row);
}

}  // namespace llm
}  // namespace etnp
