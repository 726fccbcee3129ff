// llama::custom_sdpa.out and llama::sdpa_with_kv_cache.out, ExecuTorch's LLM attention ops
// (extension/llm/custom_ops, emitted by examples/models/llama with --use_sdpa_with_kv_cache):
//   custom_sdpa.out(Tensor query, Tensor key, Tensor value, SymInt start_pos, Tensor? attn_mask=None,
//                   float drpout_p=0.0, bool is_causal=False, float? scale=None, *, Tensor(a!) out)
//   sdpa_with_kv_cache.out(Tensor query, Tensor key, Tensor value, Tensor(a!) key_cache,
//                   Tensor(b!) value_cache, SymInt start_pos, SymInt seq_len, Tensor? attn_mask=None,
//                   float drpout_p=0.0, bool is_causal=False, float? scale=None, *, Tensor(c!) out)
// query [B, S, Hq, D]; key/value (custom_sdpa: the caches) [B, max_seq, Hkv, D]. Without a mask
// the first start_pos + S cache rows are attended (causally when is_causal: query i sees keys up to
// start_pos + i); a float mask [S, max_seq] is added to the scores over all rows instead (is_causal
// must then be false). sdpa_with_kv_cache first writes key/value into the caches at start_pos.
// Dropout is ignored (inference), as ExecuTorch's kernel does.
#include <cmath>
#include <string>

#include "kernels/kernel_util.h"
#include "llm/attention.h"
#include "llm/kv_cache.h"
#include "llm/llm_kernels.h"

namespace etnp {
namespace llm {

namespace {
void check_f32_4d(const KernelContext& ctx, const Tensor& t, const char* what) {
  if (t.dtype != DType::F32)
    throw_exec(std::string(ctx.op) + ": " + what + " must be float32, got " + dtype_name(t.dtype));
  if (t.dim != 4) throw_exec(std::string(ctx.op) + ": " + what + " must be 4-D, got " + t.shape_str());
  check_contiguous(t, ctx.op);
  if (t.numel() && !t.data) throw_exec(std::string(ctx.op) + ": " + what + " has no memory");
}

// Validates q [B,S,Hq,D] against caches k/v [B,max_seq,Hkv,D] (and the mask) and returns the
// attention's shape; nothing is written.
AttentionShape plan_sdpa(const KernelContext& ctx, const Tensor& q, const Tensor& k, const Tensor& v,
                         int64_t start_pos, const Tensor* mask, bool causal, EValue* scale_arg) {
  std::string op = ctx.op;
  check_f32_4d(ctx, q, "query");
  check_f32_4d(ctx, k, "key cache");
  check_f32_4d(ctx, v, "value cache");
  if (mask && causal) throw_exec(op + ": attn_mask and is_causal cannot both be set");
  for (int d = 0; d < 4; d++)
    if (k.sizes[d] != v.sizes[d]) throw_exec(op + ": key " + k.shape_str() + " and value " + v.shape_str() + " differ");
  AttentionShape s;
  s.batch = q.sizes[0], s.q_len = q.sizes[1], s.q_heads = q.sizes[2], s.head_dim = q.sizes[3];
  s.kv_rows = k.sizes[1], s.kv_heads = k.sizes[2];
  if (k.sizes[0] != s.batch || k.sizes[3] != s.head_dim)
    throw_exec(op + ": key " + k.shape_str() + " does not match query " + q.shape_str() + " in batch or head_dim");
  if (s.kv_heads <= 0 || s.q_heads % s.kv_heads)
    throw_exec(op + ": query heads (" + std::to_string(s.q_heads) + ") must be a multiple of key heads (" +
               std::to_string(s.kv_heads) + ")");
  if (start_pos < 0) throw_exec(op + ": start position " + std::to_string(start_pos) + " is negative");
  if (mask) {  // the mask covers every cache row
    if (mask->dtype != DType::F32) throw_exec(op + ": attn_mask must be float32, got " + dtype_name(mask->dtype));
    if (mask->dim != 2 || mask->sizes[0] != s.q_len || mask->sizes[1] != s.kv_rows)
      throw_exec(op + ": attn_mask must be [" + std::to_string(s.q_len) + ", " + std::to_string(s.kv_rows) + "], got " +
                 mask->shape_str());
    check_contiguous(*mask, ctx.op);
    s.num_keys = s.kv_rows;
  } else {
    if (start_pos + s.q_len > s.kv_rows)
      throw_exec(op + ": start position " + std::to_string(start_pos) + " + " + std::to_string(s.q_len) +
                 " query positions exceed the cache's " + std::to_string(s.kv_rows) + " positions");
    s.num_keys = start_pos + s.q_len;
  }
  s.start_pos = start_pos;
  s.causal = causal;
  double scale = opt_present(&scale_arg, 0) ? double_arg(&scale_arg, 0) : 1.0 / std::sqrt((double)s.head_dim);
  if (!std::isfinite(scale)) throw_exec(op + ": scale is not finite");
  s.scale = (float)scale;
  return s;
}

void run_sdpa(KernelContext& ctx, const AttentionShape& s, const Tensor& q, const Tensor& k, const Tensor& v,
              const Tensor* mask, Tensor& out) {
  prepare_out(ctx, out, DType::F32, shape_of(q));
  check_contiguous(out, ctx.op);
  if (out.numel() == 0) return;
  attention_f32(ctx, s, q.ptr<float>(), k.ptr<float>(), v.ptr<float>(), mask ? mask->ptr<float>() : nullptr,
                out.ptr<float>());
}
}  // namespace

void custom_sdpa_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor &q = tensor_arg(a, 0), &k = tensor_arg(a, 1), &v = tensor_arg(a, 2);
  const Tensor* mask = opt_tensor_arg(a, 4);
  AttentionShape s = plan_sdpa(ctx, q, k, v, int_arg(a, 3), mask, bool_arg(a, 6), a[7]);
  run_sdpa(ctx, s, q, k, v, mask, tensor_arg(a, 8));
}

void sdpa_with_kv_cache_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor &q = tensor_arg(a, 0), &k = tensor_arg(a, 1), &v = tensor_arg(a, 2);
  Tensor &kc = tensor_arg(a, 3), &vc = tensor_arg(a, 4);
  int64_t start_pos = int_arg(a, 5), seq_len = int_arg(a, 6);
  std::string op = ctx.op;
  if (q.dim != 4) throw_exec(op + ": query must be 4-D, got " + q.shape_str());
  if (seq_len != q.sizes[1] || k.dim != 4 || k.sizes[1] != seq_len || v.dim != 4 || v.sizes[1] != seq_len)
    throw_exec(op + ": seq_len " + std::to_string(seq_len) + " does not match query " + q.shape_str() + ", key " +
               k.shape_str() + " and value " + v.shape_str());
  check_cache_write(ctx, k, kc, start_pos, "key", "key cache");
  check_cache_write(ctx, v, vc, start_pos, "value", "value cache");
  const Tensor* mask = opt_tensor_arg(a, 7);
  AttentionShape s = plan_sdpa(ctx, q, kc, vc, start_pos, mask, bool_arg(a, 9), a[10]);  // all checked first
  prepare_out(ctx, tensor_arg(a, 11), DType::F32, shape_of(q));
  write_cache_rows(k, kc, start_pos);
  write_cache_rows(v, vc, start_pos);
  run_sdpa(ctx, s, q, kc, vc, mask, tensor_arg(a, 11));
}

}  // namespace llm
}  // namespace etnp
